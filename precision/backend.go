package precision

import (
	"os"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// New is g's backend for products in dt: the model's float32 one
// (model.Float32) for float32, else a Backend in dt, its choices made
// here once from g's device and configuration and from what this libtorch
// has.
func New(g *model.GPT, dt gotch.DType) model.Base {
	if dt == gotch.Float {
		return model.Float32(g)
	}
	return newBackend(dt, g.Device(), g.Config().AttnSoftcap, kernels{
		fused:    torchx.FusedAttentionAvailable(),
		fusedGQA: torchx.FusedAttentionGQAAvailable(),
	})
}

// kernels says which of libtorch's fused attention kernels this build has.
type kernels struct{ fused, fusedGQA bool }

// Backend is a reduced precision's (bf16-mixed, bf16, fp16): products
// and, where libtorch has its fused kernel, attention in its dtype, as
// torch.autocast runs them; norms, the softmax over the vocabulary and the
// loss stay float32.
type Backend struct {
	dt gotch.DType
	// keepInner: InnerProduct results stay in dt (on a GPU), halving the
	// memory-bound work between products there. On the CPU every product
	// returns float32, which keeps CPU results as they were.
	keepInner bool
	// keepLogits: a LossLogits product (the head of a training pass)
	// stays in dt, for the loss's kernel to read (torchx.CrossEntropy): on
	// a GPU in bfloat16. The loss casts them itself where its kernel does
	// not run (MEMO_KERNELS=off), so the values are the same either way.
	keepLogits bool
	// separate is Layout.SeparateProducts: on a GPU.
	separate bool
	// keepQKV is Layout.KeepsProjections: on a GPU whose attention takes
	// the fused kernel (which casts q, k, v itself), MEMO_KEEP_QKV not off.
	keepQKV bool
	// fused: attention takes libtorch's fused kernel (no soft-cap, which
	// the kernel lacks; libtorch 2.1 or later, not Debian's 1.13).
	fused bool
	// gqa: the fused kernel may take grouped heads (GroupedHeads).
	gqa bool
}

// newBackend is New's Backend for dt on dev, for a model whose attention
// scores are soft-capped at softcap (0: none), with libtorch's kernels k.
func newBackend(dt gotch.DType, dev gotch.Device, softcap float64, k kernels) *Backend {
	cuda := dev.IsCuda()
	fused := softcap == 0 && k.fused
	return &Backend{
		dt:         dt,
		keepInner:  cuda,
		keepLogits: cuda && dt == gotch.BFloat16,
		separate:   cuda,
		keepQKV:    cuda && fused && !keepQKVOff,
		fused:      fused,
		gqa:        cuda && fused && k.fusedGQA && gqaOn,
	}
}

// keepQKVOff is MEMO_KEEP_QKV=off in the environment, read once: q, k
// and v go to float32 after their products on a GPU too, to compare.
var keepQKVOff = os.Getenv("MEMO_KEEP_QKV") == "off"

// gqaOn is MEMO_GQA != off, read once (see GroupedHeads).
var gqaOn = os.Getenv("MEMO_GQA") != "off"

// noBias stands for an absent bias in libtorch's linear.
var noBias = ts.NewTensor()

// DType is the products' dtype.
func (b *Backend) DType() gotch.DType { return b.dt }

// SeparateProducts is true on a GPU (model.Layout).
func (b *Backend) SeparateProducts() bool { return b.separate }

// KeepsProjections is true on a GPU whose attention is fused, unless
// MEMO_KEEP_QKV=off (model.Layout).
func (b *Backend) KeepsProjections() bool { return b.keepQKV }

// Linear is x·wᵀ + bias in b's dtype: x, w and the bias cast to it (a
// product kept in it feeds the next as it is), returned in float32 or,
// an InnerProduct on a GPU (a LossLogits product on a GPU in bfloat16),
// in b's dtype.
func (b *Backend) Linear(x, w, bias *ts.Tensor, p model.Product) *ts.Tensor {
	var s model.Scope
	defer s.Drop()
	if w.DType() != b.dt {
		w = s.Keep(w.MustTotype(b.dt, false))
	}
	if x.DType() != b.dt {
		x = s.Keep(x.MustTotype(b.dt, false))
	}
	if bias != nil {
		bias = s.Keep(bias.MustTotype(b.dt, false))
	} else {
		bias = noBias
	}
	y := ts.MustLinear(x, w, bias)
	if (p == model.InnerProduct && b.keepInner) || (p == model.LossLogits && b.keepLogits) {
		return y
	}
	return y.MustTotype(gotch.Float, true)
}

// Attend stores c's keys and values in its cache, if any, then AttendOver.
func (b *Backend) Attend(c *model.AttentionCall) *ts.Tensor {
	k, v := c.K, c.V
	if c.KV != nil {
		k, v = c.KV.Append(c.Layer, k, v)
	}
	return b.AttendOver(c, k, v)
}

// AttendOver is c's attention over k and v through libtorch's fused
// kernel where it runs, else float32 (model.ExactAttention).
func (b *Backend) AttendOver(c *model.AttentionCall, k, v *ts.Tensor) *ts.Tensor {
	if !b.fused {
		return model.ExactAttention(c, k, v)
	}
	return model.AttendWith(c, k, v, fusedAttention{b})
}

// fusedAttention is b's fused attention (model.Fused).
type fusedAttention struct{ b *Backend }

// GroupedHeads says whether grouped-query attention (a full pass's, or a
// decoding step's of one query over the cache without padding: see
// model.AttendWith) leaves k and v unrepeated for libtorch's fused kernel
// to share (enable_gqa), saving the H/KV-fold copies (and in training
// their backward's sums): on a GPU in
// reduced precision under the plain causal mask, where the flash kernel
// takes grouped heads itself (a padding or window mask would send it to a
// kernel that does not). The CPU always repeats, so its results stay bit
// for bit those of before. MEMO_GQA=off in the environment repeats on a
// GPU too.
func (f fusedAttention) GroupedHeads(c *model.AttentionCall) bool {
	return f.b.gqa && c.Window == 0 && (c.Mask == nil || c.Mask.Dim() == 2)
}

// Attention is attention in b's dtype through libtorch's fused
// scaled_dot_product_attention, as torch.autocast runs it: q, k, v and
// the mask cast to that dtype, the [T,S] scores never stored on a GPU.
// fullCausal says the mask, when it is the shared 2-D one, is the plain
// causal mask (no sliding window), which the kernel then applies itself.
// k and v with fewer heads than q go to the kernel's grouped-query form.
// The approximate-inference methods (engine/approx) read the scores and
// never come here.
func (f fusedAttention) Attention(q, k, v, mask *ts.Tensor, scale float64, fullCausal bool) (*ts.Tensor, bool) {
	dt := f.b.dt
	var s model.Scope
	defer s.Drop()
	cast := func(x *ts.Tensor) *ts.Tensor {
		if x.DType() == dt {
			return x
		}
		return s.Keep(x.MustTotype(dt, false))
	}
	causal := false
	if mask != nil && mask.Dim() == 2 && fullCausal && q.MustSize()[2] == k.MustSize()[2] {
		causal, mask = true, nil
	} else if mask != nil {
		mask = cast(mask)
	}
	if k.MustSize()[1] < q.MustSize()[1] {
		return torchx.FusedAttentionGQA(cast(q), cast(k), cast(v), mask, scale, causal)
	}
	return torchx.FusedAttention(cast(q), cast(k), cast(v), mask, scale, causal)
}
