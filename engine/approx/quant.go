package approx

import (
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// quantGroupSize is the number of consecutive elements of a key, value or
// weight row sharing one scale and minimum (QuantSpec and KIVI use 32–128).
const quantGroupSize = 32

// quantGroup is the group size used for rows of n elements: 32, or the
// whole row when 32 does not divide it.
func quantGroup(n int) int {
	if n%quantGroupSize == 0 {
		return quantGroupSize
	}
	return n
}

// quantize returns x with every group of its last dimension quantized to
// bits (8 or 4) and dequantized again, in the hierarchical layout of
// QuantSpec (Tiwari et al. 2025, arXiv 2502.10424): an 8-bit code is an
// upper 4-bit code, the group's round-to-nearest 4-bit quantization, and a
// lower 4-bit code that quantizes the upper code's residual; the 4-bit
// cache the draft reads is the upper half alone. With the group's minimum
// m and range R:
//
//	s = R/15, u = round((x − m)/s) ∈ [0, 15]        (upper; |x − m − u·s| ≤ s/2)
//	l = round((x − m − u·s + s/2)/(s/15)) ∈ [0, 15] (lower)
//	x₄ = m + u·s,  x₈ = m + u·s − s/2 + l·s/15
//
// so |x − x₄| ≤ R/30 and |x − x₈| ≤ R/450 (half a lower step, s/30),
// up to fp32 rounding. A constant group (R = 0) comes back exact.
func quantize(x *ts.Tensor, bits int) *ts.Tensor {
	var out *ts.Tensor
	torchx.NoGrad(func() {
		size := x.MustSize()
		n := size[len(size)-1]
		g := int64(quantGroup(int(n)))
		grouped := append(append([]int64{}, size[:len(size)-1]...), n/g, g)
		xg := x.MustContiguous(false).MustView(grouped, true)
		lo := xg.MustAmin([]int64{-1}, true, false)
		hi := xg.MustAmax([]int64{-1}, true, false)
		rng := hi.MustSub(lo, true)
		// A constant group: any nonzero step reproduces it exactly.
		zero := rng.MustEq(ts.FloatScalar(0), false)
		s := rng.MustDivScalar(ts.FloatScalar(15), true).MustMaskedFill(zero, ts.FloatScalar(1), true)
		rel := xg.MustSub(lo, false)
		u := rel.MustDiv(s, false).MustRound(true).MustClamp(ts.FloatScalar(0), ts.FloatScalar(15), true)
		up := u.MustMul(s, true) // u·s
		var q *ts.Tensor
		if bits == 4 {
			q = up.MustAdd(lo, true)
		} else {
			half := s.MustDivScalar(ts.FloatScalar(2), false)
			step := s.MustDivScalar(ts.FloatScalar(15), false)
			res := rel.MustSub(up, false).MustAdd(half, true) // residual + s/2 ∈ [0, s]
			l := res.MustDiv(step, true).MustRound(true).MustClamp(ts.FloatScalar(0), ts.FloatScalar(15), true)
			// Constant groups have no residual to code.
			nonzero := zero.MustLogicalNot(false).MustTotype(gotch.Float, true)
			lower := l.MustMul(step, true).MustSub(half, true).MustMul(nonzero, true)
			nonzero.MustDrop()
			q = up.MustAdd(lo, true).MustAdd(lower, true)
			lower.MustDrop()
			half.MustDrop()
			step.MustDrop()
		}
		rel.MustDrop()
		for _, t := range []*ts.Tensor{xg, lo, s, zero} {
			t.MustDrop()
		}
		out = q.MustView(size, true)
	})
	return out
}

// QuantizedCopy returns a GPT whose block matrices are quantized to bits
// (8 or 4) group-wise along their input dimension (quantize), sharing the
// norms, embedding and LM head with g: QuantSpec's draft keeps those in
// full precision too. It is for decoding only.
func QuantizedCopy(g *model.GPT, bits int) *model.GPT {
	return g.WithMatrices(func(w *ts.Tensor) *ts.Tensor { return quantize(w, bits) })
}

// Store quantizes keys or values [B,KV,t,hd] for the cache (KVBits 8 or
// 4), taking ownership of x.
func (st *state) Store(x *ts.Tensor) *ts.Tensor {
	bits := st.a.KVBits
	if bits == 0 || bits == 16 {
		return x
	}
	q := quantize(x, bits)
	x.MustDrop()
	return q
}
