package train

// Sharded data parallelism (train.shard, ZeRO stages 1 and 2 of Rajbhandari
// et al., arXiv 1910.02054): the parameters are read as one flat vector in
// Params order, cut into N contiguous ranges of S = ceil(P/N) elements, and
// rank r keeps the AdamW moments of range r only and updates only those
// weights; the updated ranges are then all-gathered so that every rank
// holds the whole model for the next forward pass. A contiguous cut of the
// flat vector (not whole parameters per rank) keeps every rank within
// N-1 padding elements of P/N: whole parameters would leave the rank that
// owns the embedding far above it.

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
	// ShardFull (ZeRO-3) is refused: parameters gathered per layer.
	ShardFull = "full"
)

// ShardModes are the train.shard values memo implements.
var ShardModes = []string{ShardNone, ShardOptimizer, ShardGradients}

// Sharder is what a Group must also do to train with train.shard other
// than "none" (package dist's Group does).
type Sharder interface {
	// ShardAllGather copies every rank's owned range of t into every rank's t.
	ShardAllGather(t []*ts.Tensor, shard int64) error
	// ShardReduceScatter sums the ranks' t into this rank's owned range.
	ShardReduceScatter(t []*ts.Tensor, shard int64) error
	// ShardGather copies each rank's local vector into root's full tensors.
	ShardGather(full []*ts.Tensor, local *ts.Tensor, shard int64, root int) error
	// ShardScatter copies each rank's owned range of root's full tensors
	// into its local vector.
	ShardScatter(full []*ts.Tensor, local *ts.Tensor, shard int64, root int) error
}

// Traffic is one collective's tally on one rank: calls, the bytes of the
// tensors handed to it, and the bytes this rank sends under the
// collective's schedule (ring all-reduce: 2(N-1)/N of the payload, the
// count Gloo's ring algorithm sends; all-gather and reduce-scatter: N-1
// shards).
type Traffic struct {
	Op           string  `json:"op"`
	Calls        int64   `json:"calls"`
	PayloadBytes int64   `json:"payload_bytes"`
	SentBytes    float64 `json:"sent_bytes"`
}

// segment is the part of one parameter inside this rank's range.
type segment struct {
	param int   // index in Params
	lo, n int64 // the elements [lo, lo+n) of the parameter's flat view
	off   int64 // their position in the rank's shard
}

// shardPlan is the cut of the flat parameter vector over the ranks.
type shardPlan struct {
	mode       string
	rank, size int
	total      int64 // P: elements of all parameters
	per        int64 // S = ceil(P/N): elements each rank owns (the last is padded)
	segs       []segment
	dtype      gotch.DType
}

// newShardPlan cuts params over size ranks; every parameter must have one
// dtype (float32 master weights, also under bf16-mixed) and be contiguous.
func newShardPlan(mode string, params []model.Param, rank, size int) (*shardPlan, error) {
	if len(params) == 0 {
		return nil, fmt.Errorf("train.shard = %q: the model has no parameters", mode)
	}
	p := &shardPlan{mode: mode, rank: rank, size: size, dtype: params[0].Tensor.DType()}
	for _, q := range params {
		if q.Tensor.DType() != p.dtype {
			return nil, fmt.Errorf("train.shard = %q: parameters of two dtypes (%v, %s is %v): sharding needs one", mode, p.dtype, q.Name, q.Tensor.DType())
		}
		if !q.Tensor.MustIsContiguous() {
			return nil, fmt.Errorf("train.shard = %q: parameter %s is not contiguous", mode, q.Name)
		}
		p.total += int64(q.Tensor.Numel())
	}
	p.per = (p.total + int64(size) - 1) / int64(size)
	lo, hi := int64(rank)*p.per, min(int64(rank+1)*p.per, p.total)
	var start int64
	for i, q := range params {
		end := start + int64(q.Tensor.Numel())
		if a, b := max(lo, start), min(hi, end); a < b {
			p.segs = append(p.segs, segment{param: i, lo: a - start, n: b - a, off: a - lo})
		}
		start = end
	}
	return p, nil
}

// owned is how many real (not padding) elements this rank owns.
func (p *shardPlan) owned() int64 {
	var n int64
	for _, s := range p.segs {
		n += s.n
	}
	return n
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
	t := ts.MustOfSlice([]float64{local})
	defer t.MustDrop()
	if err := group.AllReduceSum([]*ts.Tensor{t}); err != nil {
		return 0, fmt.Errorf("all-reduce the gradient norm: %w", err)
	}
	norm := math.Sqrt(t.Float64Values()[0])
	if clip > 0 && norm > clip {
		torchx.NoGrad(func() {
			p.eachSeg(nil, gs, nil, nil, func(_ segment, _, g, _, _ *ts.Tensor) {
				torchx.MulScalar_(g, clip/(norm+1e-6))
			})
		})
	}
	return norm, nil
}

// StateBytes are one rank's bytes of training state.
type StateBytes struct {
	// Params are the weights (every rank holds all of them under shard
	// "optimizer" and "gradients").
	Params int64 `json:"params"`
	// Grads are the gradients autograd accumulates: full-size on every rank
	// in every mode (memo has no backward hooks to free a bucket once it is
	// reduced), even where only this rank's range of them is reduced.
	Grads int64 `json:"grads"`
	// Optimizer is the AdamW moments this rank keeps.
	Optimizer int64 `json:"optimizer"`
	// Padding is the elements the last rank's range is padded with (N·S - P).
	Padding int64 `json:"padding_elems"`
}

// stateBytes counts this rank's state bytes under the optimizer's plan.
func (o *adamW) stateBytes() StateBytes {
	var out StateBytes
	for _, p := range o.params {
		b := int64(p.Tensor.Numel()) * int64(p.Tensor.DType().Size())
		out.Params += b
		out.Grads += b
	}
	for _, t := range append(append([]*ts.Tensor{}, o.m...), o.v...) {
		out.Optimizer += int64(t.Numel()) * int64(t.DType().Size())
	}
	if o.plan != nil {
		out.Padding = o.plan.per*int64(o.plan.size) - o.plan.total
	}
	return out
}

// fullMoments allocates zeroed full-size moments, one per parameter, for
// rank 0 to gather a sharded optimizer into or read a checkpoint's into.
func fullMoments(params []model.Param) (m, v []*ts.Tensor) {
	for _, p := range params {
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
