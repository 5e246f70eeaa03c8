package model

import (
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

// Backend computes a pass's attention and its float32 products, the two
// places a runner swaps in its own kernels. The exact one is g.Exact();
// the engine adds the CPU decode kernels and the approximations (package
// engine), chosen once when it builds a cache, so that the recipe (gpt.go)
// never asks which device or step it runs on.
type Backend interface {
	// Attend returns the attention of c with the heads merged,
	// [B,T',H·hd] (T' = 1 with c.LastOnly, else T), which the caller owns
	// and the output projection reads.
	Attend(c *AttentionCall) *ts.Tensor
	// Linear is x·wᵀ (+ bias when not nil) for float32 x [..., K] and
	// w [N,K], a new tensor: every float32 product of the pass (the
	// reduced precisions and Conv1D's transposed weights take product's
	// own path).
	Linear(x, w, bias *ts.Tensor) *ts.Tensor
}

// Exact is g's exact backend: c's keys and values go into its cache, if
// any, then ExactAttention; products are ExactLinear.
func (g *GPT) Exact() Backend { return exact{g} }

type exact struct{ g *GPT }

func (exact) Linear(x, w, bias *ts.Tensor) *ts.Tensor { return ExactLinear(x, w, bias) }

// ExactLinear is libtorch's x·wᵀ (+ bias when not nil).
func ExactLinear(x, w, bias *ts.Tensor) *ts.Tensor {
	if bias == nil {
		bias = noBias
	}
	return ts.MustLinear(x, w, bias)
}

func (e exact) Attend(c *AttentionCall) *ts.Tensor {
	k, v := c.K, c.V
	if c.KV != nil {
		k, v = c.KV.Append(c.Layer, k, v)
	}
	return e.g.ExactAttention(c, k, v)
}

// backend is st's backend, the exact one without.
func (g *GPT) backend(st *PassState) Backend {
	if st != nil && st.Backend != nil {
		return st.Backend
	}
	return exact{g}
}

// ExactAttention is c's attention over all keys and values k and v
// [B,KV,S,hd] (owned: it drops them), heads merged: grouped-query heads
// shared by repetition or by the fused kernel's native GQA, in g's
// precision (reducedAttention) or composed (attention).
func (g *GPT) ExactAttention(c *AttentionCall, k, v *ts.Tensor) *ts.Tensor {
	var s scope
	defer s.drop()
	s.keep(k)
	s.keep(v)
	q, mask := c.Q, c.Mask
	size := q.MustSize()
	b, h, t, hd := size[0], size[1], size[2], size[3]
	kvh := int64(g.cfg.KVHeads)
	gqa := kvh < h && c.KV == nil && !c.LastOnly && g.nativeGQA(mask, c.Window)
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
	att, fused := g.reducedAttention(q, k, v, mask, c.Scale, c.Window == 0, gqa)
	if !fused {
		if gqa {
			k, v = s.keep(repeatHeads(k, h/kvh)), s.keep(repeatHeads(v, h/kvh))
		}
		att = attention(q, k, v, mask, c.Scale, c.Softcap)
	}
	s.keep(att) // [B,H,T,hd]
	return att.MustTranspose(1, 2, false).MustReshape([]int64{b, t, h * hd}, true)
}
