package train

import (
	"fmt"
	"math"
	"os"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// adamW is AdamW (Loshchilov & Hutter) as PyTorch's torch.optim.AdamW
// computes it, written on tensors so that its moments can be checkpointed:
// gotch's wrapper of libtorch's optimizer cannot save its state.
type adamW struct {
	params []model.Param
	// m and v are the first and second moments: one per param, or, with a
	// shard plan, one vector each of the plan's S elements (this rank's range).
	m, v        []*ts.Tensor
	plan        *shardPlan // nil: unsharded
	step        int        // updates taken
	b1, b2, eps float64
	decay       float64
}

// newAdamW makes the optimizer of params; with a plan it keeps and updates
// only the plan's range of them.
func newAdamW(params []model.Param, cfg Config, plan *shardPlan) *adamW {
	o := &adamW{params: params, plan: plan, b1: cfg.Beta1, b2: cfg.Beta2, eps: cfg.Eps, decay: cfg.WeightDecay}
	if plan != nil {
		dev := params[0].Tensor.MustDevice()
		o.m = []*ts.Tensor{ts.MustZeros([]int64{plan.local}, plan.dtype, dev)}
		o.v = []*ts.Tensor{ts.MustZeros([]int64{plan.local}, plan.dtype, dev)}
		return o
	}
	o.m, o.v = fullMoments(params, nil)
	return o
}

// grads returns each parameter's gradient tensor (sharing storage with it),
// or an error if backward has not produced one.
func grads(params []model.Param) ([]*ts.Tensor, error) {
	out := make([]*ts.Tensor, len(params))
	for i, p := range params {
		g := p.Tensor.MustGrad(false)
		if !g.MustDefined() {
			return nil, fmt.Errorf("parameter %s has no gradient", p.Name)
		}
		out[i] = g
	}
	return out, nil
}

// clipGrads scales the gradients so their global L2 norm is at most clip
// (0: no clipping) and returns the norm before clipping.
func clipGrads(gs []*ts.Tensor, clip float64) float64 {
	if fusedOptimizer(gs) {
		if norm, ok, err := torchx.ForeachGradNorm(gs, clip); ok || err != nil {
			if err != nil {
				panic(err) // libtorch failed on valid gradients, as a Must call would
			}
			return norm
		}
	}
	var norm float64
	torchx.NoGrad(func() {
		sq := make([]*ts.Tensor, len(gs))
		for i, g := range gs {
			sq[i] = g.MustSquare(false).MustSum(gotch.Double, true).MustUnsqueeze(0, true)
		}
		all := ts.MustCat(sq, 0)
		tot := all.MustSum(gotch.Double, true)
		norm = math.Sqrt(tot.Float64Values()[0])
		tot.MustDrop()
		for _, s := range sq {
			s.MustDrop()
		}
		if clip > 0 && norm > clip {
			for _, g := range gs {
				torchx.MulScalar_(g, clip/(norm+1e-6))
			}
		}
	})
	return norm
}

// update takes one AdamW step with learning rate lr on the gradients gs;
// with a shard plan only on this rank's range of the weights (whose
// gradients must be the global ones there). Under train.shard = "full"
// the weights and gradients are this rank's local vectors (fullState),
// passed as local.
func (o *adamW) update(gs []*ts.Tensor, lr float64, local ...*ts.Tensor) {
	o.step++
	bc1 := 1 - math.Pow(o.b1, float64(o.step))
	bc2 := 1 - math.Pow(o.b2, float64(o.step))
	stepSize := lr / bc1
	invSqrtBC2 := 1 / math.Sqrt(bc2)
	apply := func(decay bool, w, g, m, v *ts.Tensor) {
		if decay && o.decay > 0 {
			torchx.MulScalar_(w, 1-lr*o.decay)
		}
		torchx.Lerp_(m, g, 1-o.b1)
		g2 := g.MustMulScalar(ts.FloatScalar(1-o.b2), false)
		torchx.MulScalar_(v, o.b2)
		torchx.Addcmul_(v, g, g2)
		g2.MustDrop()
		denom := v.MustSqrt(false)
		torchx.MulScalar_(denom, invSqrtBC2)
		torchx.AddScalar_(denom, o.eps)
		upd := m.MustDiv(denom, false)
		denom.MustDrop()
		torchx.MulScalar_(upd, -stepSize)
		torchx.Add_(w, upd)
		upd.MustDrop()
	}
	if o.plan == nil && fusedOptimizer(gs) && o.fusedUpdate(gs, lr) {
		return
	}
	torchx.NoGrad(func() {
		if len(local) == 2 {
			// Every segment's weights, gradients and moments sit at one
			// offset of the four local vectors.
			w, g := local[0], local[1]
			for _, s := range o.plan.segs {
				var views []*ts.Tensor
				for _, t := range []*ts.Tensor{w, g, o.m[0], o.v[0]} {
					views = append(views, t.MustNarrow(0, s.off, s.n, false))
				}
				apply(o.plan.decay[s.param], views[0], views[1], views[2], views[3])
				dropAll(views)
			}
			return
		}
		if o.plan != nil {
			// Elementwise, so a range of a parameter gets the bits the
			// whole parameter's update would give it.
			o.plan.eachSeg(o.params, gs, o.m[0], o.v[0], func(s segment, w, g, m, v *ts.Tensor) {
				apply(o.params[s.param].Decay, w, g, m, v)
			})
			return
		}
		for i, p := range o.params {
			apply(p.Decay, p.Tensor, gs[i], o.m[i], o.v[i])
		}
	})
}

// fusedOptimizer reports whether the optimizer step on gradients gs takes
// libtorch's multi-tensor kernels: on a GPU, unless MEMO_FUSED_OPTIM=off
// (to compare). On the CPU it never does, so CPU runs stay bit-identical
// to the per-tensor path: the fused kernel's arithmetic differs from it
// in the last bits.
func fusedOptimizer(gs []*ts.Tensor) bool {
	return len(gs) > 0 && os.Getenv("MEMO_FUSED_OPTIM") != "off" && gs[0].MustDevice().IsCuda()
}

// fusedUpdate is update's step in libtorch's fused AdamW kernel, one call
// for the decayed parameters and one for the others; false (nothing done)
// when this libtorch lacks the kernel.
func (o *adamW) fusedUpdate(gs []*ts.Tensor, lr float64) bool {
	if !torchx.FusedAdamWAvailable() {
		return false
	}
	var groups [2]struct{ p, g, m, v []*ts.Tensor }
	for i, p := range o.params {
		k := 0
		if p.Decay && o.decay > 0 {
			k = 1
		}
		gr := &groups[k]
		gr.p, gr.g = append(gr.p, p.Tensor), append(gr.g, gs[i])
		gr.m, gr.v = append(gr.m, o.m[i]), append(gr.v, o.v[i])
	}
	for k, gr := range groups {
		h := torchx.AdamWHyper{Step: o.step, LR: lr, Beta1: o.b1, Beta2: o.b2, Eps: o.eps}
		if k == 1 {
			h.Decay = o.decay
		}
		ok, err := torchx.FusedAdamW(gr.p, gr.g, gr.m, gr.v, h)
		if err != nil {
			panic(err) // libtorch failed on valid tensors, as a Must call would
		}
		if !ok {
			if k == 1 {
				panic("fused AdamW ran on one group and not the other")
			}
			return false
		}
	}
	return true
}

// zeroGrads clears the accumulated gradients before a step's micro-batches.
// On a GPU it drops them, as PyTorch's zero_grad does by default (less
// memory traffic; the same values, since 0 + g = g); on the CPU it zeroes
// them in place, keeping their memory from step to step.
func zeroGrads(params []model.Param) {
	if len(params) > 0 && params[0].Tensor.MustDevice().IsCuda() {
		torchx.ClearGrads(paramTensors(params))
		return
	}
	torchx.NoGrad(func() {
		for _, p := range params {
			g := p.Tensor.MustGrad(false)
			if g.MustDefined() {
				torchx.Zero_(g)
			}
			g.MustDrop()
		}
	})
}

// state lists the moments of an unsharded optimizer (a sharded one is
// gathered by loop.checkpoint) under
// "<param>.exp_avg" and "<param>.exp_avg_sq", PyTorch's names for them.
func (o *adamW) state() []checkpoint.Named {
	return namedMoments(o.params, o.m, o.v)
}
