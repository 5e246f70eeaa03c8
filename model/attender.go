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

// Attender is an attention backend: it returns the attention of c with
// the heads merged, [B,T',H·hd] (T' = 1 with c.LastOnly, else T), which
// the caller owns and the output projection reads. The exact one is
// g.Exact(); the engine adds the CPU decode kernel and the approximations
// (package engine), chosen once when it builds a cache.
type Attender interface {
	Attend(c *AttentionCall) *ts.Tensor
}

// Exact is g's exact attention backend: c's keys and values go into its
// cache, if any, then ExactAttention.
func (g *GPT) Exact() Attender { return exact{g} }

type exact struct{ g *GPT }

func (e exact) Attend(c *AttentionCall) *ts.Tensor {
	k, v := c.K, c.V
	if c.KV != nil {
		k, v = c.KV.Append(c.Layer, k, v)
	}
	return e.g.ExactAttention(c, k, v)
}

// attender is st's backend, the exact one without.
func (g *GPT) attender(st *PassState) Attender {
	if st != nil && st.Attender != nil {
		return st.Attender
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
