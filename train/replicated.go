package train

// train.shard = "none": every rank holds the whole model, its gradients
// and AdamW state; a micro-batch is split over the workers (replicas on
// their own threads, workers.go) and the gradients are all-reduced.

import (
	"fmt"

	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch/ts"
)

func init() {
	registerStrategy(ShardNone, func(l *loop) (strategy, error) { return &replicated{l: l}, nil })
}

// replicated is the strategy of train.shard = "none", and the base of the
// ZeRO-1/2 one (shardedOptimizer).
type replicated struct {
	l  *loop
	gs []*ts.Tensor // the step's gradients, from reduce to update
}

func (r *replicated) bindWhole() error { return nil }

// start broadcasts rank 0's weights when it read them; unread ones are the
// seed's on every rank already.
func (r *replicated) start(loaded bool) error {
	if !loaded {
		return nil
	}
	if err := r.l.group.Broadcast(paramTensors(r.l.g.Params()), 0); err != nil {
		return fmt.Errorf("broadcast the weights from rank 0: %w", err)
	}
	return nil
}

func (r *replicated) zeroGrads() { r.l.work.zeroGrads() }

// forwardBackward splits rows over the workers, each running the whole
// model on its part.
func (r *replicated) forwardBackward(rows [][]int32, dropped []bool, lossOf lossFunc) ([]workerLoss, error) {
	l := r.l
	k := min(l.work.n(), len(rows))
	res := make([]workerLoss, k)
	l.work.run(func(w int, g *model.GPT) {
		if w >= k {
			return
		}
		lo, hi := split(len(rows), k, w)
		res[w] = forwardLoss(g, rows[lo:hi], dropped[lo*l.block:hi*l.block], l.block, l.cfg.ActivationCheckpointing, lossOf)
	})
	return res, nil
}

// forwardLoss is one worker's part of a micro-batch: its forward pass and
// lossOf its logits; with checkpoint, by activation checkpointing
// (stagedLoss).
func forwardLoss(g *model.GPT, rows [][]int32, dropped []bool, block int, checkpoint bool, lossOf lossFunc) (out workerLoss) {
	if checkpoint {
		res, err := stagedLoss(g, rows, dropped, block, lossOf, boundStages, nil)
		if err != nil && res.err == nil {
			res.err = err
		}
		return res
	}
	return rowsLoss(g, rows, dropped, block, lossOf)
}

// rowsLoss is lossOf the logits of rows (dropped: their goldfish mask,
// block decisions a row) under m, with the ids, targets and mask moved to
// m's device: a worker's part of a micro-batch, or one DP-SGD row.
func rowsLoss(m RowModel, rows [][]int32, dropped []bool, block int, lossOf lossFunc) (out workerLoss) {
	inp, tgt, _ := batchTensors(rows, block, m.Device())
	defer inp.MustDrop()
	defer tgt.MustDrop()
	dt, err := boolTensor(dropped, []int64{int64(len(rows)), int64(block)}, m.Device())
	if err != nil {
		out.err = err
		return out
	}
	defer dt.MustDrop()
	logits := m.ForwardForLoss(inp)
	defer logits.MustDrop()
	return lossOf(logits, tgt, dt, countTargets(rows, dropped, block))
}

// reduce adds the workers' gradients into the model's and all-reduces them
// over the ranks.
func (r *replicated) reduce() error {
	if err := r.collect(); err != nil {
		return err
	}
	if l := r.l; l.group != nil && l.size > 1 {
		if err := l.group.AllReduceSum(r.gs); err != nil {
			return fmt.Errorf("all-reduce gradients: %w", err)
		}
	}
	return nil
}

// collect adds the workers' gradients into the model's and takes the
// trainable parameters' gradients as the step's (r.gs).
func (r *replicated) collect() error {
	r.l.work.reduceGrads()
	gs, err := grads(r.l.opt.params)
	r.gs = gs
	return err
}

func (r *replicated) clip(max float64) (float64, error) { return clipGrads(r.gs, max), nil }

func (r *replicated) update(lr float64) error {
	r.l.opt.update(r.gs, lr)
	r.dropGrads()
	return nil
}

// dropGrads drops the step's handles on the gradients.
func (r *replicated) dropGrads() {
	for _, g := range r.gs {
		if g != nil {
			g.MustDrop()
		}
	}
	r.gs = nil
}

// eval splits rows over the workers.
func (r *replicated) eval(rows [][]int32) ([]evalSum, error) {
	l := r.l
	k := min(l.work.n(), len(rows))
	sums := make([]evalSum, k)
	errs := make([]error, k)
	l.work.run(func(w int, g *model.GPT) {
		if w >= k {
			return
		}
		lo, hi := split(len(rows), k, w)
		sums[w].sum, sums[w].n, errs[w] = evalRows(g, rows[lo:hi], l.block)
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return sums, nil
}

func (r *replicated) withWeights(fn func() error) error { return fn() }

func (r *replicated) stateBytes(out *StateBytes) {
	for _, p := range r.l.opt.params {
		b := int64(p.Tensor.Numel()) * int64(p.Tensor.DType().Size())
		out.Params += b
		out.Grads += b
	}
}

func (r *replicated) drop() { r.dropGrads() }
