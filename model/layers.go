package model

import (
	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// scope collects the intermediate tensors of one block so they are freed
// together when it ends, instead of a MustDrop after every use.
type scope []*ts.Tensor

func (s *scope) keep(t *ts.Tensor) *ts.Tensor {
	*s = append(*s, t)
	return t
}

func (s *scope) drop() {
	for _, t := range *s {
		t.MustDrop()
	}
	*s = nil
}

// noBias stands for an absent bias in libtorch's linear.
var noBias = ts.NewTensor()

// repeatHeads maps [B,KV,S,hd] to [B,KV·n,S,hd], key/value head j serving
// heads j·n … j·n+n−1 (Hugging Face's repeat_kv).
func repeatHeads(x *ts.Tensor, n int64) *ts.Tensor {
	sz := x.MustSize()
	e := x.MustUnsqueeze(2, false).MustExpand([]int64{sz[0], sz[1], n, sz[2], sz[3]}, false, true)
	return e.MustReshape([]int64{sz[0], sz[1] * n, sz[2], sz[3]}, true)
}

// attention is softmax(cap(q·kᵀ·scale) + mask)·v with q [B,H,T,hd], k and v
// [B,H,S,hd]. Written with matmul and softmax: libtorch 1.13's fused
// scaled_dot_product_attention is not available here. cap is the
// soft-capping of Gemma 2 (0: none), see softcap. A nil mask attends
// every key (a decode step without padding). Masked self-attention (T == S)
// and shared [T,S] masks take the blocked path of maskedAttention.
func attention(q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor {
	if mask != nil && (mask.Dim() == 2 || q.MustSize()[2] == k.MustSize()[2]) {
		return maskedAttention(q, k, v, mask, scale, cap)
	}
	kt := k.MustTranspose(-2, -1, false)
	s := q.MustMatmul(kt, false)
	kt.MustDrop()
	// In place: the scores are this call's own tensor, and a new one for
	// each op cost an allocation of B·H·T·S floats apiece.
	torchx.MulScalar_(s, scale)
	if cap > 0 {
		s = softcap(s, cap)
	}
	if mask != nil {
		torchx.Add_(s, mask)
	}
	p := s.MustSoftmax(-1, gotch.Float, true)
	out := p.MustMatmul(v, true)
	return out
}

// maskedAttention is attention under a [T,S] mask shared by every row and
// head, or a per-row [B,1,T,S] one: scaling, masking and the score product
// are one baddbmm on [B·H,T,hd]. For causal self-attention (T == S) the
// queries are cut into blocks that attend only to the keys up to their
// block's end, which skips most of the fully masked scores (a quarter of
// the work with two blocks, 3/8 with four): every mask here is causal, a
// padded row's too, so the keys after a block's end are masked for all
// rows.
func maskedAttention(q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor {
	sz := q.MustSize()
	b, h, t, hd := sz[0], sz[1], sz[2], sz[3]
	s := k.MustSize()[2]
	k3 := k.MustReshape([]int64{b * h, s, hd}, false)
	v3 := v.MustReshape([]int64{b * h, s, hd}, false)
	defer k3.MustDrop()
	defer v3.MustDrop()
	blocks := int64(1)
	switch {
	case t == s && t >= 256 && t%4 == 0:
		blocks = 4
	case t == s && t >= 64 && t%2 == 0:
		blocks = 2
	}
	step := t / blocks
	outs := make([]*ts.Tensor, 0, blocks)
	for i := int64(0); i < blocks; i++ {
		lo, n := i*step, step
		keys := s
		if blocks > 1 {
			keys = lo + n // causal: later keys are all masked
		}
		qi := q.MustNarrow(2, lo, n, false).MustReshape([]int64{b * h, n, hd}, true)
		ki := k3.MustNarrow(1, 0, keys, false).MustTranspose(1, 2, true)
		vi := v3.MustNarrow(1, 0, keys, false)
		var mi *ts.Tensor
		if mask.Dim() == 2 {
			mi = mask.MustNarrow(0, lo, n, false).MustNarrow(1, 0, keys, true).MustExpand([]int64{b * h, n, keys}, false, true)
		} else { // [B,1,T,S]: each row's mask for its h heads
			mi = mask.MustNarrow(2, lo, n, false).MustNarrow(3, 0, keys, true).
				MustExpand([]int64{b, h, n, keys}, false, true).MustReshape([]int64{b * h, n, keys}, true)
		}
		var scores *ts.Tensor
		if cap > 0 { // the cap applies before the mask
			scores = softcap(qi.MustBmm(ki, false).MustMulScalar(ts.FloatScalar(scale), true), cap).MustAdd(mi, true)
		} else {
			scores = mi.MustBaddbmm(qi, ki, ts.FloatScalar(1), ts.FloatScalar(scale), false)
		}
		qi.MustDrop()
		ki.MustDrop()
		mi.MustDrop()
		p := scores.MustSoftmax(-1, gotch.Float, true)
		outs = append(outs, p.MustBmm(vi, true))
		vi.MustDrop()
	}
	out := outs[0]
	if blocks > 1 {
		out = ts.MustCat(outs, 1)
		for _, o := range outs {
			o.MustDrop()
		}
	}
	return out.MustView([]int64{b, h, t, hd}, true)
}

// tensorOf copies a Go slice into a tensor of the given shape on dev. The
// tensor owns its storage (it is not a view), so it can become a parameter
// that the optimizer updates in place.
func tensorOf[T float32 | float64 | int64](vals []T, dims []int64, dev gotch.Device) (*ts.Tensor, error) {
	t, err := torchx.TensorOf(vals, dims)
	if err != nil {
		return nil, err
	}
	return torchx.ToDevice(t, dev)
}

// softcap is tanh(x/cap)·cap (Gemma 2's soft-capping of attention scores
// and logits), taking ownership of x.
func softcap(x *ts.Tensor, cap float64) *ts.Tensor {
	return x.MustDivScalar(ts.FloatScalar(cap), true).MustTanh(true).MustMulScalar(ts.FloatScalar(cap), true)
}
