package train

// Sharded data parallelism (train.shard, the ZeRO stages of Rajbhandari et
// al., arXiv 1910.02054). The parameters are grouped into units — all of
// them for "optimizer" and "gradients", one unit per stage of the forward
// pass for "full" (the embedding, each block, the head; stageUnits) —
// and each unit is read as one flat vector of P_u elements in Params order,
// cut into N contiguous ranges of S_u = ceil(P_u/N) elements. Each rank owns
// one range of every unit: it keeps that range's AdamW moments (and under
// "full" its weights and gradients) and updates only it. A contiguous cut
// of the flat vector, not whole parameters per rank, keeps every rank
// within N-1 padding elements of P_u/N per unit: whole parameters would
// leave the rank that owns the embedding far above it.
//
// With train.shard_group = K the ranks form N/K groups of K consecutive
// ranks, and rank r = g·K + j (group g, place j in it) owns range
// j·(N/K) + g: the N/K ranges of the j-th ranks of all groups are
// adjacent, so that together they are the j-th of K secondary ranges, the
// copy of the weights each rank keeps for its group's all-gathers.

import (
	"fmt"
	"math"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// train.shard values.
const (
	// ShardNone keeps a full copy of the weights, gradients and AdamW state
	// on every rank and all-reduces the gradients.
	ShardNone = "none"
	// ShardOptimizer (ZeRO-1): each rank keeps and updates 1/N of the AdamW
	// state; gradients are all-reduced, updated weights all-gathered.
	ShardOptimizer = "optimizer"
	// ShardGradients (ZeRO-2): as ShardOptimizer, but the gradients are
	// reduce-scattered, each rank receiving the sum of its own range only.
	ShardGradients = "gradients"
	// ShardFull (ZeRO-3): weights, gradients and AdamW state are all cut;
	// each stage's weights are all-gathered for its forward and backward.
	ShardFull = "full"
)

// ShardModes are the train.shard values.
var ShardModes = []string{ShardNone, ShardOptimizer, ShardGradients, ShardFull}

// Sharder is what a Group must also do to train with train.shard other
// than "none" (package dist's Group does).
type Sharder interface {
	// ShardAllGather copies every rank's owned range of t into every
	// rank's t, among the ranks among names.
	ShardAllGather(t []*ts.Tensor, shard int64, among Among) error
	// ShardReduceScatter sums the ranks' t into this rank's owned range.
	ShardReduceScatter(t []*ts.Tensor, shard int64, among Among) error
	// ShardGather copies each rank's local vector into root's full tensors,
	// at range slots[rank] (nil slots: range rank).
	ShardGather(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, slots []int) error
	// ShardScatter copies each rank's owned range of root's full tensors
	// into its local vector.
	ShardScatter(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, slots []int) error
}

// Among names the ranks a sharded collective runs among, in the order of
// the ranges they own (nil: every rank, in rank order), and the scope its
// traffic is reported under.
type Among struct {
	Ranks []int
	Scope string
}

// Traffic scopes: every rank (""), the ranks of one group, or the ranks of
// the same place in every group (train.shard_group).
const (
	ScopeGroup  = "within group"
	ScopeAcross = "across groups"
)

// Traffic is one collective's tally on one rank: calls, the bytes of the
// tensors handed to it, and the bytes this rank sends under the
// collective's schedule (ring all-reduce: 2(N-1)/N of the payload, the
// count Gloo's ring algorithm sends; all-gather and reduce-scatter among
// n ranks: n-1 ranges).
type Traffic struct {
	Op           string  `json:"op"`
	Scope        string  `json:"scope,omitempty"`
	Calls        int64   `json:"calls"`
	PayloadBytes int64   `json:"payload_bytes"`
	SentBytes    float64 `json:"sent_bytes"`
}

// segment is the part of one parameter inside a rank's range.
type segment struct {
	param int   // index in Params
	lo, n int64 // the elements [lo, lo+n) of the parameter's flat view
	off   int64 // their position in the rank's local vectors
}

// shardUnit is one unit's cut.
type shardUnit struct {
	params []int // indices in Params, consecutive
	total  int64 // P_u: elements of the unit's parameters
	per    int64 // S_u = ceil(P_u/N): elements of one range
	off    int64 // where this rank's range starts in its local vectors
	segs   []segment
}

// shardPlan is the cut of the parameters over the ranks.
type shardPlan struct {
	mode       string
	rank, size int
	group      int // K: ranks per group (size when there are no groups)
	slot       int // the range this rank owns in every unit
	units      []shardUnit
	segs       []segment // this rank's pieces of every unit, in order
	local      int64     // Σ S_u: the length of this rank's local vectors
	total      int64     // P: elements of all parameters
	shapes     [][]int64 // each parameter's shape (emptied between uses under "full")
	decay      []bool    // each parameter's weight decay
	dtype      gotch.DType
}

// newShardPlan cuts params, grouped into units (indices into params; nil:
// one unit of all), over size ranks in groups of group ranks (0: one
// group). Every parameter must have one dtype (float32 master weights,
// also under bf16-mixed) and be contiguous.
func newShardPlan(mode string, params []model.Param, units [][]int, rank, size, group int) (*shardPlan, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("train.shard = %q: the model has no parameters", mode)
	}
	if group <= 0 {
		group = size
	}
	if size%group != 0 {
		return nil, fmt.Errorf("train.shard_group = %d: does not divide %d ranks", group, size)
	}
	groups := size / group
	p := &shardPlan{mode: mode, rank: rank, size: size, group: group, slot: (rank%group)*groups + rank/group,
		dtype: params[0].Tensor.DType()}
	for _, q := range params {
		if q.Tensor.DType() != p.dtype {
			return nil, fmt.Errorf("train.shard = %q: parameters of two dtypes (%v, %s is %v): sharding needs one", mode, p.dtype, q.Name, q.Tensor.DType())
		}
		if !q.Tensor.MustIsContiguous() {
			return nil, fmt.Errorf("train.shard = %q: parameter %s is not contiguous", mode, q.Name)
		}
		p.shapes = append(p.shapes, q.Tensor.MustSize())
		p.decay = append(p.decay, q.Decay)
	}
	if units == nil {
		all := make([]int, len(params))
		for i := range all {
			all[i] = i
		}
		units = [][]int{all}
	}
	for _, idx := range units {
		u := shardUnit{params: idx, off: p.local}
		for _, i := range idx {
			u.total += p.numel(i)
		}
		u.per = max(1, (u.total+int64(size)-1)/int64(size))
		lo := int64(p.slot) * u.per
		for _, pc := range p.pieces(u, lo, lo+u.per) {
			pc.off += u.off
			u.segs = append(u.segs, pc)
		}
		p.segs = append(p.segs, u.segs...)
		p.local += u.per
		p.total += u.total
		p.units = append(p.units, u)
	}
	return p, nil
}

// numel is parameter i's element count.
func (p *shardPlan) numel(i int) int64 {
	n := int64(1)
	for _, d := range p.shapes[i] {
		n *= d
	}
	return n
}

// pieces are the parts of unit u's parameters inside the unit-flat range
// [lo, hi), each with its offset from lo.
func (p *shardPlan) pieces(u shardUnit, lo, hi int64) []segment {
	var out []segment
	var start int64
	for _, i := range u.params {
		end := start + p.numel(i)
		if a, b := max(lo, start), min(hi, end); a < b {
			out = append(out, segment{param: i, lo: a - start, n: b - a, off: a - lo})
		}
		start = end
	}
	return out
}

// groups is the number of groups (N/K).
func (p *shardPlan) groups() int { return p.size / p.group }

// grouped reports whether train.shard_group splits the ranks.
func (p *shardPlan) grouped() bool { return p.group < p.size }

// inGroup is this rank's group, in the order of its secondary ranges.
func (p *shardPlan) inGroup() Among {
	g := p.rank / p.group
	r := make([]int, p.group)
	for j := range r {
		r[j] = g*p.group + j
	}
	return Among{Ranks: r, Scope: ScopeGroup}
}

// acrossGroups is the ranks at this rank's place in every group, in the
// order of their ranges within the secondary range they share.
func (p *shardPlan) acrossGroups() Among {
	j := p.rank % p.group
	r := make([]int, p.groups())
	for g := range r {
		r[g] = g*p.group + j
	}
	return Among{Ranks: r, Scope: ScopeAcross}
}

// slots is the range each rank owns (nil when rank r owns range r).
func (p *shardPlan) slots() []int {
	if !p.grouped() {
		return nil
	}
	out := make([]int, p.size)
	for r := range out {
		out[r] = (r%p.group)*p.groups() + r/p.group
	}
	return out
}

// owned is how many real (not padding) elements this rank owns.
func (p *shardPlan) owned() int64 {
	var n int64
	for _, s := range p.segs {
		n += s.n
	}
	return n
}

// padding is the elements the ranges are padded with (Σ N·S_u - P_u).
func (p *shardPlan) padding() int64 {
	var n int64
	for _, u := range p.units {
		n += u.per*int64(p.size) - u.total
	}
	return n
}

// unitTensors are the tensors of unit u's parameters among ts (one per parameter).
func unitTensors(u shardUnit, all []*ts.Tensor) []*ts.Tensor {
	out := make([]*ts.Tensor, len(u.params))
	for k, i := range u.params {
		out[k] = all[i]
	}
	return out
}

// gatherLocal copies every rank's local vector into root's full tensors
// (one per parameter; nil on the other ranks), unit by unit.
func (p *shardPlan) gatherLocal(sh Sharder, full []*ts.Tensor, local *ts.Tensor) error {
	return p.eachUnitRoot(full, local, sh.ShardGather)
}

// scatterLocal is gatherLocal's inverse: each rank's local vector receives
// its ranges of root's full tensors.
func (p *shardPlan) scatterLocal(sh Sharder, full []*ts.Tensor, local *ts.Tensor) error {
	return p.eachUnitRoot(full, local, sh.ShardScatter)
}

// eachUnitRoot runs a root collective (Sharder.ShardGather or
// ShardScatter, root 0) on each unit's tensors and range of local.
func (p *shardPlan) eachUnitRoot(full []*ts.Tensor, local *ts.Tensor,
	op func(full []*ts.Tensor, local *ts.Tensor, shard int64, root int, slots []int) error) error {
	for _, u := range p.units {
		var f []*ts.Tensor
		if full != nil {
			f = unitTensors(u, full)
		}
		loc := local.MustNarrow(0, u.off, u.per, false)
		err := op(f, loc, u.per, 0, p.slots())
		loc.MustDrop()
		if err != nil {
			return err
		}
	}
	return nil
}

// view is elements [lo, lo+n) of t's flat view (shares its storage).
func view(t *ts.Tensor, lo, n int64) *ts.Tensor {
	f := t.MustView([]int64{-1}, false)
	return f.MustNarrow(0, lo, n, true)
}

// eachSeg calls fn with views of this rank's range of the parameters, the
// gradients gs and the shard vectors m, v (nil skips one).
func (p *shardPlan) eachSeg(params []model.Param, gs []*ts.Tensor, m, v *ts.Tensor, fn func(s segment, w, g, m, v *ts.Tensor)) {
	for _, s := range p.segs {
		var w, g, mv, vv *ts.Tensor
		if params != nil {
			w = view(params[s.param].Tensor, s.lo, s.n)
		}
		if gs != nil {
			g = view(gs[s.param], s.lo, s.n)
		}
		if m != nil {
			mv = m.MustNarrow(0, s.off, s.n, false)
		}
		if v != nil {
			vv = v.MustNarrow(0, s.off, s.n, false)
		}
		fn(s, w, g, mv, vv)
		for _, t := range []*ts.Tensor{w, g, mv, vv} {
			if t != nil {
				t.MustDrop()
			}
		}
	}
}

// clipShard is clipGrads for reduce-scattered gradients, of which this
// rank holds only its range: the squares are summed per range, the sums
// all-reduced into the global norm, and each rank scales its own range.
func clipShard(p *shardPlan, gs []*ts.Tensor, clip float64, group Group) (float64, error) {
	var local float64
	torchx.NoGrad(func() {
		p.eachSeg(nil, gs, nil, nil, func(_ segment, _, g, _, _ *ts.Tensor) {
			s := g.MustSquare(false).MustSum(gotch.Double, true)
			local += s.Float64Values()[0]
			s.MustDrop()
		})
	})
	norm, err := globalNorm(group, local)
	if err != nil {
		return 0, err
	}
	if clip > 0 && norm > clip {
		torchx.NoGrad(func() {
			p.eachSeg(nil, gs, nil, nil, func(_ segment, _, g, _, _ *ts.Tensor) {
				torchx.MulScalar_(g, clip/(norm+1e-6))
			})
		})
	}
	return norm, nil
}

// globalNorm is the L2 norm of gradients cut over the ranks, from this
// rank's sum of squares of its part.
func globalNorm(group Group, localSquares float64) (float64, error) {
	t := ts.MustOfSlice([]float64{localSquares})
	defer t.MustDrop()
	if err := group.AllReduceSum([]*ts.Tensor{t}); err != nil {
		return 0, fmt.Errorf("all-reduce the gradient norm: %w", err)
	}
	return math.Sqrt(t.Float64Values()[0]), nil
}

// StateBytes are one rank's bytes of training state.
type StateBytes struct {
	// Params are the weights this rank keeps between steps: all of them
	// under shard "none", "optimizer" and "gradients"; its ranges under
	// "full".
	Params int64 `json:"params"`
	// Secondary is the copy of its group's range of the weights a rank
	// keeps with train.shard_group (1/K of them).
	Secondary int64 `json:"secondary,omitempty"`
	// Grads are the gradients kept between backward passes: full-size
	// under "none", "optimizer" and "gradients" (autograd accumulates
	// every parameter's; memo has no backward hooks to free a bucket once
	// it is reduced), this rank's ranges under "full".
	Grads int64 `json:"grads"`
	// Optimizer is the AdamW moments this rank keeps.
	Optimizer int64 `json:"optimizer"`
	// Gathered is, under "full", the most a stage holds while it runs:
	// its gathered weights and their gradients (freed after the stage).
	Gathered int64 `json:"gathered,omitempty"`
	// Padding is the elements the ranges are padded with (Σ N·S_u - P_u).
	Padding int64 `json:"padding_elems"`
}

// stateBytes counts this rank's state bytes.
func (l *loop) stateBytes() StateBytes {
	var out StateBytes
	o := l.opt
	l.strat.stateBytes(&out)
	for _, t := range append(append([]*ts.Tensor{}, o.m...), o.v...) {
		out.Optimizer += int64(t.Numel()) * int64(t.DType().Size())
	}
	if o.plan != nil {
		out.Padding = o.plan.padding()
	}
	return out
}

// fullMoments allocates zeroed full-size moments, one per parameter (of
// the plan's shapes when there is one: "full" empties the parameters),
// for rank 0 to gather a sharded optimizer into or read a checkpoint's into.
func fullMoments(params []model.Param, plan *shardPlan) (m, v []*ts.Tensor) {
	for i, p := range params {
		if plan != nil {
			dev := p.Tensor.MustDevice()
			m = append(m, ts.MustZeros(plan.shapes[i], plan.dtype, dev))
			v = append(v, ts.MustZeros(plan.shapes[i], plan.dtype, dev))
			continue
		}
		m = append(m, p.Tensor.MustZerosLike(false))
		v = append(v, p.Tensor.MustZerosLike(false))
	}
	return m, v
}

// namedMoments names moments as checkpoints store them: "<param>.exp_avg"
// and "<param>.exp_avg_sq", PyTorch's names.
func namedMoments(params []model.Param, m, v []*ts.Tensor) []checkpoint.Named {
	out := make([]checkpoint.Named, 0, 2*len(params))
	for i, p := range params {
		out = append(out, checkpoint.Named{Name: p.Name + ".exp_avg", Tensor: m[i]}, checkpoint.Named{Name: p.Name + ".exp_avg_sq", Tensor: v[i]})
	}
	return out
}

func dropAll(ts []*ts.Tensor) {
	for _, t := range ts {
		t.MustDrop()
	}
}
