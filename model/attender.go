package model

import (
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// AttentionCall is one layer's attention in a forward pass, what the
// recipe (attend: projections, norms, rotary) hands to the backend.
type AttentionCall struct {
	// Layer is the block's index.
	Layer int
	// Q are the queries [B,H,T,hd], after rotary.
	Q *ts.Tensor
	// K and V are this pass's keys and values [B,KV,T,hd]; the backend
	// takes ownership of them (it stores them in KV, when there is one).
	K, V *ts.Tensor
	// Mask is the pass's additive mask for the layer's window: nil (every
	// key), a shared [T,S] or a per-row [B,1,T,S].
	Mask *ts.Tensor
	// Window is the layer's sliding-window length, 0 for full attention.
	Window int
	// Scale multiplies the scores; Softcap caps them (0: none).
	Scale, Softcap float64
	// Past is the number of positions cached before this pass (0 without
	// a cache).
	Past int
	// LastOnly asks for the last query's output only.
	LastOnly bool
	// KV is the cache this pass appends to (nil: an uncached pass).
	KV KVStore
}

// Backend computes a pass's attention and its matrix products, the places
// a runner swaps in its own kernels or dtype. A model's own backend is
// g.Backend(): float32, or the one a runner set once with SetBackend (the
// reduced precisions of package precision). The engine adds the CPU decode
// kernels and the approximations, wrapping the model's own for what they
// do not override, chosen once when it builds a cache, so that the recipe
// (gpt.go) never asks which device, dtype or step it runs on.
type Backend interface {
	// Attend returns the attention of c with the heads merged,
	// [B,T',H·hd] (T' = 1 with c.LastOnly, else T), which the caller owns
	// and the output projection reads.
	Attend(c *AttentionCall) *ts.Tensor
	// Linear is x·wᵀ (+ bias when not nil) for x [..., K] and w [N,K], one
	// of the recipe's products, of kind p: a new tensor, float32 unless p
	// is InnerProduct and the backend leaves those in its own dtype.
	Linear(x, w, bias *ts.Tensor, p Product) *ts.Tensor
}

// Product says where a product's result goes: all a backend in a reduced
// dtype needs to know of it.
type Product uint8

const (
	// OuterProduct's result is read in float32: the logits, and q, k, v
	// where norms, rotary or a float32 attention read them.
	OuterProduct Product = iota
	// InnerProduct's result feeds only the next product, the MLP's
	// activation or a residual sum (a sum with float32 x is float32): a
	// backend may leave it in its dtype, as torch.autocast leaves a
	// product.
	InnerProduct
	// LossLogits is the LM head's product in a pass whose only reader of
	// the logits is the training loss (ForwardForLoss), which takes them
	// in bfloat16 (torchx.CrossEntropy): a backend may leave the logits in
	// its dtype, sparing the float32 copy of [B,T,V] and its gradient.
	LossLogits
)

// Base is a model's own backend (GPT.Backend): a Backend whose attention also
// runs over keys and values that a wrapping backend already took from
// the cache (AttendOver), and that says the dtype of its products, so a
// wrapping backend knows whether its float32 kernels apply.
type Base interface {
	Backend
	// AttendOver is c's attention over all keys and values k and v
	// [B,KV,S,hd] (owned: it drops them), heads merged; c.KV is not
	// touched.
	AttendOver(c *AttentionCall, k, v *ts.Tensor) *ts.Tensor
	// DType is the dtype its products compute in.
	DType() gotch.DType
}

// Layout is what a backend may say of how the recipe lays out an
// uncached pass's products, answered once from its device and dtype. A
// backend without it gets the CPU's layout: q|k|v and gate|up
// concatenated, every q, k, v product float32.
type Layout interface {
	// SeparateProducts reports whether an uncached pass multiplies by
	// separate q, k, v (gate, up) weights one at a time rather than by
	// their concatenation: on a GPU, where concatenating the weights at
	// every forward pass (and splitting their gradients) costs more
	// memory traffic than the one larger product saves. On the CPU, when
	// decoding (the cache keeps a concatenated copy) and for a joined
	// model (NewForInference), whose concatenation costs nothing, the one
	// product is faster; the recipe checks those two itself.
	SeparateProducts() bool
	// KeepsProjections reports whether an uncached pass's q, k and v
	// products may leave their results in the backend's dtype, as
	// torch.autocast does, rather than cast them to float32 for the
	// attention's fused kernel to cast back. The recipe asks it only when
	// nothing between the products and the kernel needs float32 inputs.
	KeepsProjections() bool
}

// Backend is g's own backend: the one SetBackend set, else float32 — c's
// keys and values go into its cache, if any, then ExactAttention;
// products are ExactLinear.
func (g *GPT) Backend() Base {
	if g.be != nil {
		return g.be
	}
	return Float32(g)
}

// SetBackend makes b g's own backend (Backend), which every pass without
// one of its own runs: package precision's, chosen once by the runner.
func (g *GPT) SetBackend(b Base) { g.be = b }

// Float32 is g's float32 backend, Backend's unless SetBackend chose another.
func Float32(g *GPT) Base { return exact{cuda: g.device.IsCuda()} }

// exact is the float32 backend; on a GPU it multiplies separately.
type exact struct{ cuda bool }

// Linear widens a weight held reduced (a LoRA base in bf16 under fp32
// products, LoRA.HoldBase) exactly.
func (exact) Linear(x, w, bias *ts.Tensor, _ Product) *ts.Tensor {
	if w.DType() != gotch.Float {
		w = w.MustTotype(gotch.Float, false)
		defer w.MustDrop()
	}
	return ExactLinear(x, w, bias)
}

// ExactLinear is libtorch's x·wᵀ (+ bias when not nil).
func ExactLinear(x, w, bias *ts.Tensor) *ts.Tensor {
	if bias == nil {
		bias = noBias
	}
	return ts.MustLinear(x, w, bias)
}

func (exact) Attend(c *AttentionCall) *ts.Tensor {
	k, v := c.K, c.V
	if c.KV != nil {
		k, v = c.KV.Append(c.Layer, k, v)
	}
	return ExactAttention(c, k, v)
}

func (exact) AttendOver(c *AttentionCall, k, v *ts.Tensor) *ts.Tensor {
	return ExactAttention(c, k, v)
}

func (exact) DType() gotch.DType { return gotch.Float }

func (e exact) SeparateProducts() bool { return e.cuda }

func (exact) KeepsProjections() bool { return false }

// backend is st's backend, g's own without.
func (g *GPT) backend(st *PassState) Backend {
	if st != nil && st.Backend != nil {
		return st.Backend
	}
	return g.Backend()
}

// Fused is a backend's one-kernel attention (package precision's), to
// which AttendWith hands the prepared queries, keys, values and mask.
type Fused interface {
	// GroupedHeads reports whether the kernel takes c's grouped-query
	// keys and values unrepeated; asked only of a full uncached pass with
	// fewer key/value heads than query heads.
	GroupedHeads(c *AttentionCall) bool
	// Attention is softmax(q·kᵀ·scale + mask)·v [B,H,T,hd] for k and v of
	// H heads, or of fewer where GroupedHeads said so; fullCausal says a
	// shared 2-D mask is the plain causal one. ok false: the kernel
	// declines, nothing computed.
	Attention(q, k, v, mask *ts.Tensor, scale float64, fullCausal bool) (att *ts.Tensor, ok bool)
}

// ExactAttention is c's attention over all keys and values k and v
// [B,KV,S,hd] (owned: it drops them), heads merged, composed in float32.
func ExactAttention(c *AttentionCall, k, v *ts.Tensor) *ts.Tensor {
	return AttendWith(c, k, v, nil)
}

// AttendWith is ExactAttention with f's fused kernel where it takes the
// pass (nil: none): grouped-query heads shared by repetition or by the
// kernel's native GQA, the last query alone with c.LastOnly.
func AttendWith(c *AttentionCall, k, v *ts.Tensor, f Fused) *ts.Tensor {
	var s scope
	defer s.drop()
	s.keep(k)
	s.keep(v)
	q, mask := c.Q, c.Mask
	size := q.MustSize()
	b, h, t, hd := size[0], size[1], size[2], size[3]
	kvh := k.MustSize()[1]
	// Grouped heads go to the kernel in a full pass, and in a decoding
	// step of one query over the cache without a mask, where repeating
	// would copy every key and value of the cache each step (at batch 256
	// on TinyLlama's shape, 32 + 32 tokens, some 2 GB written a step and
	// read again, beside 2.2 GB of weights).
	step := t == 1 && mask == nil
	gqa := f != nil && kvh < h && (c.KV == nil && !c.LastOnly || step) && f.GroupedHeads(c)
	if kvh < h && !gqa { // each key/value head serves h/kvh query heads in a row
		k, v = s.keep(repeatHeads(k, h/kvh)), s.keep(repeatHeads(v, h/kvh))
	}
	if c.LastOnly && t > 1 {
		q = s.keep(q.MustNarrow(2, t-1, 1, false))
		switch {
		case mask == nil:
		case mask.Dim() == 2 && c.Window == 0: // shared causal: the last query attends every key
			mask = nil
		default:
			mask = s.keep(mask.MustNarrow(int64(mask.Dim())-2, t-1, 1, false))
		}
		t = 1
	}
	var att *ts.Tensor
	fused := false
	if f != nil {
		att, fused = f.Attention(q, k, v, mask, c.Scale, c.Window == 0)
	}
	if !fused {
		if gqa {
			k, v = s.keep(repeatHeads(k, h/kvh)), s.keep(repeatHeads(v, h/kvh))
		}
		att = attention(q, k, v, mask, c.Scale, c.Softcap)
	}
	s.keep(att) // [B,H,T,hd]
	return att.MustTranspose(1, 2, false).MustReshape([]int64{b, t, h * hd}, true)
}
