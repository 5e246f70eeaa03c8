package train

// ZeRO-3 (train.shard = "full"): each rank keeps only its ranges of the
// weights, their gradients and AdamW moments (shardPlan, one unit per stage
// of the forward pass), and the model's parameters hold no memory between
// uses. A micro-batch runs as activation checkpointing (stagedLoss,
// staged.go) with per-stage gathers, which is how FSDP runs without
// autograd hooks (gotch has none):
//
//	forward, no gradients: for each stage, all-gather its weights, run it,
//	    keep its output (the next stage's input), free the weights;
//	the head: gather, forward and backward from the loss, reduce-scatter
//	    its gradients into this rank's ranges, free;
//	each block from the last: gather, recompute it from its saved input
//	    with gradients, backward from the gradient of its output,
//	    reduce-scatter, free; then the embedding the same way.
//
// So a rank holds at once its ranges, the saved block inputs ([B,T,d]
// each) and one stage's gathered weights and gradients: the per-rank state
// is 1/N of the model's, at the price of a second forward pass and of two
// all-gathers of every stage's weights per micro-batch.
//
// With train.shard_group = K every rank also keeps the secondary range its
// place in its group stands for (1/K of the weights, refreshed once a step
// by an all-gather across groups), and gathers each stage from its group's
// secondary ranges alone; the gradients are reduce-scattered within the
// group, then across groups.

import (
	"fmt"
	"runtime/debug"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func init() {
	registerStrategy(ShardFull, func(l *loop) (strategy, error) {
		return newFullState(l, l.opt.plan, l.sharder, l.g)
	})
}

// fullState is one rank's training state under train.shard = "full", and
// its strategy.
type fullState struct {
	l      *loop
	plan   *shardPlan
	sh     Sharder
	params []*ts.Tensor // the model's parameters: empty between uses
	dev    gotch.Device
	// w and g are this rank's ranges of the weights and of their
	// gradients (summed over ranks and micro-batches), at plan.segs' offsets.
	w, g *ts.Tensor
	// second is, with groups, this rank's secondary range of every unit
	// (groups × S_u elements each, at secOff[u]); nil without.
	second *ts.Tensor
	secOff []int64
	heads  []int // the units the head stage reads
}

// newFullState empties the model's parameters (built unset: nothing of the
// whole model is ever resident here) and allocates this rank's vectors,
// zeroed; the weights come from drawWeights or scatterWeights.
func newFullState(l *loop, plan *shardPlan, sh Sharder, g *model.GPT) (*fullState, error) {
	f := &fullState{l: l, plan: plan, sh: sh, params: paramTensors(g.Params()), dev: g.Device(), heads: headUnits(g.Config().Layers, g.Config().Untied)}
	f.w = ts.MustZeros([]int64{plan.local}, plan.dtype, f.dev)
	f.g = ts.MustZeros([]int64{plan.local}, plan.dtype, f.dev)
	if plan.grouped() {
		span := int64(plan.groups())
		var n int64
		for _, u := range plan.units {
			f.secOff = append(f.secOff, n)
			n += span * u.per
		}
		f.second = ts.MustZeros([]int64{n}, plan.dtype, f.dev)
	}
	if err := torchx.ReleaseData(f.params); err != nil {
		return nil, fmt.Errorf("train.shard = full: empty the parameters: %w", err)
	}
	return f, nil
}

// drawWeights fills this rank's ranges with the fresh weights of cfg, drawn
// one weight at a time (model.InitValues, the values model.New would
// draw), and gives the secondary copies theirs.
func (f *fullState) drawWeights(cfg model.Config) error {
	segs := map[int][]segment{}
	for _, s := range f.plan.segs {
		segs[s.param] = append(segs[s.param], s)
	}
	err := model.InitValues(cfg, func(i int, vals []float32) error {
		for _, s := range segs[i] {
			t, err := torchx.TensorOf(vals[s.lo:s.lo+s.n], []int64{s.n})
			if err != nil {
				return err
			}
			if f.dev != gotch.CPU {
				t = t.MustTo(f.dev, true)
			}
			torchx.NoGrad(func() { copyInto(f.w, s.off, t) })
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("draw the weights: %w", err)
	}
	return f.refreshSecondary()
}

// scatterWeights gives every rank its ranges of rank 0's parameters (which
// rank 0 alone filled whole, from a checkpoint or train.init_from; see
// bindWhole), empties rank 0's, and gives the secondary copies theirs.
func (f *fullState) scatterWeights(rank int) error {
	var full []*ts.Tensor
	if rank == 0 {
		full = f.params
	}
	if err := f.plan.scatterLocal(f.sh, full, f.w); err != nil {
		return fmt.Errorf("scatter the weights from rank 0: %w", err)
	}
	if rank == 0 {
		if err := torchx.ReleaseData(f.params); err != nil {
			return err
		}
	}
	return f.refreshSecondary()
}

// bindWhole gives rank 0's emptied parameters whole storage to read
// weights into (start scatters and empties them).
func (f *fullState) bindWhole() error {
	_, err := f.bindParams()
	return err
}

// start fills this rank's ranges: scattered from rank 0 when it read them
// from a checkpoint or train.init_from, drawn from the seed otherwise.
func (f *fullState) start(loaded bool) error {
	var err error
	if loaded {
		err = f.scatterWeights(f.l.rank)
	} else {
		err = f.drawWeights(f.l.g.Config())
	}
	if err != nil {
		return err
	}
	// Hand back the pages rank 0's whole copy held: the C heap keeps freed
	// memory mapped (malloctune), the Go heap the drawn values.
	debug.FreeOSMemory()
	torchx.ReleaseFreeMemory()
	return nil
}

// bindParams gives the parameters whole, zeroed storage (rank 0, to read a
// checkpoint into or to write one from); the caller empties them after.
func (f *fullState) bindParams() ([]*ts.Tensor, error) {
	full := make([]*ts.Tensor, len(f.params))
	for i := range full {
		full[i] = ts.MustZeros(f.plan.shapes[i], f.plan.dtype, f.dev)
	}
	err := torchx.SetData(f.params, full)
	dropAll(full) // the parameters keep the storage
	return f.params, err
}

// copyInto copies src (1-D) into dst at off, and drops src.
func copyInto(dst *ts.Tensor, off int64, src *ts.Tensor) { intoRange(dst, off, src, ts.Copy_) }

// addInto adds src (1-D) into dst at off, and drops src.
func addInto(dst *ts.Tensor, off int64, src *ts.Tensor) { intoRange(dst, off, src, torchx.Add_) }

// intoRange applies op(dst's range at off, src) in place and drops src.
func intoRange(dst *ts.Tensor, off int64, src *ts.Tensor, op func(d, s *ts.Tensor)) {
	d := dst.MustNarrow(0, off, src.MustSize()[0], false)
	op(d, src)
	d.MustDrop()
	src.MustDrop()
}

// gatheredBytes is the most one stage holds while it runs: the gathered
// weights of its units (padded to N ranges each) and their gradients.
func (f *fullState) gatheredBytes() int64 {
	n := int64(f.plan.size)
	per := func(units ...int) int64 {
		var b int64
		for _, ui := range units {
			b += n * f.plan.units[ui].per
		}
		return 2 * b * int64(f.plan.dtype.Size())
	}
	most := per(f.heads...)
	for ui := range f.plan.units {
		most = max(most, per(ui))
	}
	return most
}

// stage gathers the weights of units into the parameters, runs fn and,
// when backward is set, reduce-scatters the gradients fn's backward left
// on them into this rank's ranges; then it empties the parameters again.
func (f *fullState) stage(units []int, backward bool, fn func() error) error {
	var bufs []*ts.Tensor
	defer func() { dropAll(bufs) }()
	var bound []*ts.Tensor
	for _, ui := range units {
		buf, err := f.gather(ui)
		if err != nil {
			_ = torchx.ReleaseData(bound) // the group is broken; leave nothing bound
			return err
		}
		bufs = append(bufs, buf)
		bound = append(bound, unitTensors(f.plan.units[ui], f.params)...)
	}
	err := fn()
	if err == nil && backward {
		for _, ui := range units {
			if err = f.reduceGrads(ui); err != nil {
				break
			}
		}
	}
	torchx.ClearGrads(bound)
	if err2 := torchx.ReleaseData(bound); err == nil && err2 != nil {
		err = fmt.Errorf("empty the parameters: %w", err2)
	}
	return err
}

// gather all-gathers unit ui's weights into one flat buffer and points its
// parameters at it; the caller drops the buffer after emptying them.
func (f *fullState) gather(ui int) (*ts.Tensor, error) {
	p, u := f.plan, f.plan.units[ui]
	buf := ts.MustZeros([]int64{int64(p.size) * u.per}, p.dtype, f.dev)
	var err error
	if p.grouped() {
		// This rank's secondary range is its place's share of the group's
		// all-gather: the group holds all of the unit between its ranks.
		span := int64(p.groups()) * u.per
		src := f.second.MustNarrow(0, f.secOff[ui], span, false)
		copyInto(buf, int64(p.rank%p.group)*span, src)
		err = f.sh.ShardAllGather([]*ts.Tensor{buf}, span, p.inGroup())
	} else {
		src := f.w.MustNarrow(0, u.off, u.per, false)
		copyInto(buf, int64(p.slot)*u.per, src)
		err = f.sh.ShardAllGather([]*ts.Tensor{buf}, u.per, Among{})
	}
	if err != nil {
		buf.MustDrop()
		return nil, fmt.Errorf("all-gather the weights of stage %d: %w", ui, err)
	}
	views := make([]*ts.Tensor, len(u.params))
	var start int64
	for k, i := range u.params {
		n := p.numel(i)
		views[k] = buf.MustNarrow(0, start, n, false).MustView(p.shapes[i], true)
		start += n
	}
	err = torchx.SetData(unitTensors(u, f.params), views)
	dropAll(views)
	if err != nil {
		buf.MustDrop()
		return nil, fmt.Errorf("stage %d: %w", ui, err)
	}
	return buf, nil
}

// reduceGrads reduce-scatters the gradients of unit ui's parameters and
// adds this rank's ranges of the sums into f.g.
func (f *fullState) reduceGrads(ui int) error {
	p, u := f.plan, f.plan.units[ui]
	gs := make([]*ts.Tensor, len(p.shapes))
	var list []*ts.Tensor
	for _, i := range u.params {
		g := f.params[i].MustGrad(false)
		if !g.MustDefined() {
			// A parameter of the unit the stage did not read (the learned
			// positions, in a tied head's stage): no gradient from it.
			g.MustDrop()
			g = ts.MustZeros(p.shapes[i], p.dtype, f.dev)
		}
		gs[i] = g
		list = append(list, g)
	}
	defer dropAll(list)
	var err error
	torchx.NoGrad(func() {
		if !p.grouped() {
			if err = f.sh.ShardReduceScatter(list, u.per, Among{}); err != nil {
				return
			}
			for _, s := range u.segs {
				addInto(f.g, s.off, view(gs[s.param], s.lo, s.n))
			}
			return
		}
		// Within the group first: this rank's secondary range then holds
		// the group's sum, which the ranks at its place in every group
		// reduce-scatter among themselves.
		span := int64(p.groups()) * u.per
		if err = f.sh.ShardReduceScatter(list, span, p.inGroup()); err != nil {
			return
		}
		part := ts.MustZeros([]int64{span}, p.dtype, f.dev)
		defer part.MustDrop()
		lo := int64(p.rank%p.group) * span
		for _, pc := range p.pieces(u, lo, lo+span) {
			copyInto(part, pc.off, view(gs[pc.param], pc.lo, pc.n))
		}
		if err = f.sh.ShardReduceScatter([]*ts.Tensor{part}, u.per, p.acrossGroups()); err != nil {
			return
		}
		addInto(f.g, u.off, part.MustNarrow(0, int64(p.rank/p.group)*u.per, u.per, false))
	})
	if err != nil {
		return fmt.Errorf("reduce-scatter the gradients of stage %d: %w", ui, err)
	}
	return nil
}

// refreshSecondary all-gathers, across groups, the updated ranges that make
// up this rank's secondary range.
func (f *fullState) refreshSecondary() error {
	p := f.plan
	if !p.grouped() {
		return nil
	}
	span := int64(p.groups())
	for ui, u := range p.units {
		sec := f.second.MustNarrow(0, f.secOff[ui], span*u.per, false)
		torchx.NoGrad(func() {
			copyInto(sec, int64(p.rank/p.group)*u.per, f.w.MustNarrow(0, u.off, u.per, false))
		})
		err := f.sh.ShardAllGather([]*ts.Tensor{sec}, u.per, p.acrossGroups())
		sec.MustDrop()
		if err != nil {
			return fmt.Errorf("all-gather the updated weights across groups: %w", err)
		}
	}
	return nil
}

// withWeights gives rank 0's parameters the whole model (gathered from
// every rank's ranges; every rank takes part) while fn runs, for a
// checkpoint; the other ranks run fn with their parameters empty.
func (f *fullState) withWeights(fn func() error) error {
	var full []*ts.Tensor
	if f.l.rank == 0 {
		var err error
		if full, err = f.bindParams(); err != nil {
			return err
		}
		defer torchx.ReleaseData(f.params)
	}
	if err := f.plan.gatherLocal(f.sh, full, f.w); err != nil {
		return fmt.Errorf("gather the weights: %w", err)
	}
	return fn()
}

// drop frees the local vectors.
func (f *fullState) drop() {
	for _, t := range []*ts.Tensor{f.w, f.g, f.second} {
		if t != nil {
			t.MustDrop()
		}
	}
}

func (f *fullState) zeroGrads() { torchx.NoGrad(func() { torchx.Zero_(f.g) }) }

// reduce has nothing to sum: each stage's backward reduce-scattered its
// gradients. It collects the last micro-batch's garbage before the update.
func (f *fullState) reduce() error {
	torchx.Collect()
	return nil
}

// clip clips this rank's ranges by the norm over all ranks'.
func (f *fullState) clip(max float64) (float64, error) {
	var local float64
	torchx.NoGrad(func() {
		// The padding of f.g is never written: it adds zeros.
		s := f.g.MustSquare(false).MustSum(gotch.Double, true)
		local = s.Float64Values()[0]
		s.MustDrop()
	})
	gn, err := globalNorm(f.l.group, local)
	if err != nil {
		return 0, err
	}
	if max > 0 && gn > max {
		torchx.NoGrad(func() { torchx.MulScalar_(f.g, max/(gn+1e-6)) })
	}
	return gn, nil
}

// update steps this rank's ranges and refreshes the secondary copies.
func (f *fullState) update(lr float64) error {
	f.l.opt.update(nil, lr, f.w, f.g)
	return f.refreshSecondary()
}

func (f *fullState) stateBytes(out *StateBytes) {
	b := int64(f.w.Numel()) * int64(f.w.DType().Size())
	out.Params, out.Grads = b, b
	if f.second != nil {
		out.Secondary = int64(f.second.Numel()) * int64(f.second.DType().Size())
	}
	out.Gathered = f.gatheredBytes()
}

// forwardBackward runs rows in one part (see the file's comment), stage by
// stage, each stage's weights gathered for it alone.
func (f *fullState) forwardBackward(rows [][]int32, dropped []bool, lossOf lossFunc) ([]workerLoss, error) {
	res, err := stagedLoss(f.l.g, rows, dropped, f.l.block, lossOf, f.stage, f.heads)
	return []workerLoss{res}, err // res's statistics, even on error, for the step to free
}

// eval is the CE sum and count of rows stage by stage (rows may be empty:
// the gathers still run).
func (f *fullState) eval(rows [][]int32) ([]evalSum, error) {
	l := f.l
	pass, err := l.g.NewPass(int64(l.block))
	if err != nil {
		return nil, err
	}
	defer pass.Drop()
	if len(rows) == 0 {
		// No rows here, but the other ranks' gathers need this rank's.
		_, err := f.forward(pass, nil)
		return nil, err
	}
	var e evalSum
	e.sum, e.n, err = evalLogits(func(ids *ts.Tensor) (*ts.Tensor, error) { return f.forward(pass, ids) }, rows, l.block, l.g.Device())
	return []evalSum{e}, err
}

// forward is the forward pass of ids stage by stage, each stage's weights
// gathered for it alone; with ids nil it takes part in the gathers and
// computes nothing (nil logits).
func (f *fullState) forward(pass *model.Pass, ids *ts.Tensor) (*ts.Tensor, error) {
	var x, logits *ts.Tensor
	defer func() {
		if x != nil {
			x.MustDrop()
		}
	}()
	run := func(units []int, fn func()) error {
		return f.stage(units, false, func() error {
			if ids != nil {
				fn()
			}
			return nil
		})
	}
	if err := run([]int{0}, func() { x = pass.Embed(ids) }); err != nil {
		return nil, err
	}
	for li := 0; li < pass.Blocks(); li++ {
		if err := run([]int{1 + li}, func() {
			y := pass.Block(li, x)
			x.MustDrop()
			x = y
		}); err != nil {
			return nil, err
		}
	}
	err := run(f.heads, func() { logits = pass.Head(x) })
	return logits, err
}
