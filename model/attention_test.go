package model

import (
	"math"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// causalRowMask is the per-row [B,1,T,T] mask of a prompt pass whose row r
// starts (after left padding) at starts[r], as PassState.mask makes it.
func causalRowMask(t *testing.T, starts []int, n int) *ts.Tensor {
	t.Helper()
	ninf := float32(math.Inf(-1))
	m := make([]float32, len(starts)*n*n)
	for r, st := range starts {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if j > i || (j < st && j != i) {
					m[(r*n+i)*n+j] = ninf
				}
			}
		}
	}
	x, err := tensorOf(m, []int64{int64(len(starts)), 1, int64(n), int64(n)}, gotch.CPU)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// plainAttention is softmax(q·kᵀ·scale + mask)·v over every key, the
// cache's prompt pass before it took the blocked path.
func plainAttention(q, k, v, mask *ts.Tensor, scale float64) *ts.Tensor {
	s := q.MustMatmul(k.MustTranspose(-2, -1, false), false).MustMulScalar(ts.FloatScalar(scale), true).MustAdd(mask, true)
	return s.MustSoftmax(-1, gotch.Float, true).MustMatmul(v, true)
}

// The prompt pass's blocked attention under a per-row (padded) mask must
// agree with plain masked attention, and without padding the shared [T,T]
// mask must give exactly what the per-row one gives. A decode step without
// a mask must give exactly what a mask of zeros gives.
func TestMaskedAttentionMatchesPlain(t *testing.T) {
	torchx.NoGrad(func() {
		scale := 1 / math.Sqrt(16)
		for _, n := range []int{40, 64, 256} {
			q := ts.MustRandn([]int64{2, 4, int64(n), 16}, gotch.Float, gotch.CPU)
			k := ts.MustRandn([]int64{2, 4, int64(n), 16}, gotch.Float, gotch.CPU)
			v := ts.MustRandn([]int64{2, 4, int64(n), 16}, gotch.Float, gotch.CPU)
			padded := causalRowMask(t, []int{0, 13}, n)
			// Float rounding only: the blocked products differ in shape.
			d := maxAbsDiff(attention(q, k, v, padded, scale, 0), plainAttention(q, k, v, padded, scale))
			if d > 1e-6 {
				t.Errorf("T=%d, padded: blocked attention differs from plain by %g", n, d)
			}
			t.Logf("T=%d, padded: blocked attention differs from plain by %g", n, d)
			// The shared mask is a view of a longer cached one.
			g := &GPT{device: gotch.CPU}
			g.causalMask(int64(n) + 9).MustDrop()
			shared := g.causalMask(int64(n))
			perRow := causalRowMask(t, []int{0, 0}, n)
			if d := maxAbsDiff(attention(q, k, v, shared, scale, 0), attention(q, k, v, perRow, scale, 0)); d != 0 {
				t.Errorf("T=%d: the shared causal mask differs from per-row masks without padding by %g", n, d)
			}
			q1 := q.MustNarrow(2, int64(n-1), 1, false)
			zeros := ts.MustZeros([]int64{2, 1, 1, int64(n)}, gotch.Float, gotch.CPU)
			if d := maxAbsDiff(attention(q1, k, v, nil, scale, 0), attention(q1, k, v, zeros, scale, 0)); d != 0 {
				t.Errorf("T=%d: a step without a mask differs from one with a mask of zeros by %g", n, d)
			}
		}
	})
}

// Soft-capped attention (Gemma 2) is softmax(cap·tanh(q·kᵀ·scale/cap) +
// mask)·v on the blocked path, the plain path and a decode step, and the
// cap changes the result when scores are large; sliding-window masks keep
// a query's w most recent keys.
func TestGemma2AttentionSoftcap(t *testing.T) {
	torchx.NoGrad(func() {
		const cap, scale = 2.0, 0.5
		for _, n := range []int{8, 64} {
			q := ts.MustRandn([]int64{2, 4, int64(n), 16}, gotch.Float, gotch.CPU)
			k := ts.MustRandn([]int64{2, 4, int64(n), 16}, gotch.Float, gotch.CPU)
			v := ts.MustRandn([]int64{2, 4, int64(n), 16}, gotch.Float, gotch.CPU)
			g := &GPT{device: gotch.CPU}
			mask := newCausalMask(int64(n), 3, g.Device())
			scores := q.MustMatmul(k.MustTranspose(-2, -1, false), false).MustMulScalar(ts.FloatScalar(scale), true)
			capped := scores.MustDivScalar(ts.FloatScalar(cap), false).MustTanh(true).MustMulScalar(ts.FloatScalar(cap), true)
			want := capped.MustAdd(mask, true).MustSoftmax(-1, gotch.Float, true).MustMatmul(v, true)
			if d := maxAbsDiff(attention(q, k, v, mask, scale, cap), want); d > 1e-6 {
				t.Errorf("T=%d: soft-capped attention differs from the formula by %g", n, d)
			}
			if d := maxAbsDiff(attention(q, k, v, mask, scale, 0), want); d < 1e-3 {
				t.Errorf("T=%d: the cap changed nothing (%g)", n, d)
			}
			q1 := q.MustNarrow(2, int64(n-1), 1, false)
			last := mask.MustNarrow(0, int64(n-1), 1, false)
			w1 := want.MustNarrow(2, int64(n-1), 1, false)
			if d := maxAbsDiff(attention(q1, k, v, last, scale, cap), w1); d > 1e-6 {
				t.Errorf("T=%d: a soft-capped decode step differs from the formula by %g", n, d)
			}
			vals := make([]float32, n*n)
			mask.MustContiguous(false).MustCopyData(vals, uint(len(vals)))
			for i := 0; i < n; i++ {
				for j := 0; j < n; j++ {
					if open := !math.IsInf(float64(vals[i*n+j]), -1); open != (j <= i && j > i-3) {
						t.Fatalf("T=%d: window-3 mask at (%d,%d) open=%v", n, i, j, open)
					}
				}
			}
		}
	})
}
