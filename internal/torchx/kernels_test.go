package torchx_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

func requireKernels(t *testing.T) {
	t.Helper()
	torchx.Init(1, 7)
	if !torchx.KernelsEnabled() {
		t.Skip("decode-step kernels off (no AVX2/FMA, or MEMO_KERNELS=off)")
	}
}

// maxRelDiff is max |a−b| / max(1, |b|) over two tensors of one shape.
func maxRelDiff(t *testing.T, a, b *ts.Tensor) float64 {
	t.Helper()
	av, bv := a.Float64Values(), b.Float64Values()
	if len(av) != len(bv) {
		t.Fatalf("%d values against %d", len(av), len(bv))
	}
	worst := 0.0
	for i := range av {
		worst = max(worst, math.Abs(av[i]-bv[i])/max(1, math.Abs(bv[i])))
	}
	return worst
}

// LinearRows must compute libtorch's linear (to float32 rounding) for
// every blocking edge: odd rows, weight rows not a multiple of 4, a bias,
// a 3-d input; and each row's result must not depend on the rows batched
// with it (bit for bit).
func TestLinearRowsMatchesLinear(t *testing.T) {
	requireKernels(t)
	for _, c := range []struct {
		dims    []int64 // x's
		n       int64
		hasBias bool
	}{
		{[]int64{8, 256}, 768, false},
		{[]int64{1, 64}, 5, true},
		{[]int64{7, 24}, 13, false},
		{[]int64{2, 8, 40}, 36, true},
		{[]int64{16, 688}, 257, false},
	} {
		t.Run(fmt.Sprintf("%v-n%d-bias%v", c.dims, c.n, c.hasBias), func(t *testing.T) {
			k := c.dims[len(c.dims)-1]
			x := ts.MustRandn(c.dims, gotch.Float, gotch.CPU)
			w := ts.MustRandn([]int64{c.n, k}, gotch.Float, gotch.CPU).MustMulScalar(ts.FloatScalar(0.1), true)
			var bias *ts.Tensor
			want := ts.NewTensor()
			if c.hasBias {
				bias = ts.MustRandn([]int64{c.n}, gotch.Float, gotch.CPU)
				want = bias
			}
			torchx.NoGrad(func() {
				got, ok := torchx.LinearRows(x, w, bias)
				if !ok {
					t.Fatal("kernel did not apply")
				}
				ref := ts.MustLinear(x, w, want)
				if d := maxRelDiff(t, got, ref); d > 1e-5 {
					t.Errorf("max relative difference from libtorch's linear %g", d)
				}
				// Each row alone gives the same bits as in the batch.
				x2 := x.MustReshape([]int64{-1, k}, false)
				g2 := got.MustReshape([]int64{-1, c.n}, false)
				rows := x2.MustSize()[0]
				for r := int64(0); r < rows; r++ {
					alone, _ := torchx.LinearRows(x2.MustNarrow(0, r, 1, false), w, bias)
					if !alone.MustEqual(g2.MustNarrow(0, r, 1, false), false) {
						t.Fatalf("row %d alone differs from row %d in the batch", r, r)
					}
				}
			})
		})
	}
}

// LinearRows declines what it does not compute: gradients on, too many
// rows, an inner size not a multiple of 8, a float64 input.
func TestLinearRowsDeclines(t *testing.T) {
	requireKernels(t)
	w := ts.MustRandn([]int64{4, 16}, gotch.Float, gotch.CPU)
	if _, ok := torchx.LinearRows(ts.MustRandn([]int64{2, 16}, gotch.Float, gotch.CPU), w, nil); ok {
		t.Error("applied with gradients on")
	}
	torchx.NoGrad(func() {
		for name, x := range map[string]*ts.Tensor{
			"rows":    ts.MustRandn([]int64{torchx.MaxKernelRows + 1, 16}, gotch.Float, gotch.CPU),
			"inner":   ts.MustRandn([]int64{2, 12}, gotch.Float, gotch.CPU),
			"float64": ts.MustRandn([]int64{2, 16}, gotch.Double, gotch.CPU),
		} {
			ww := w
			if name == "inner" {
				ww = ts.MustRandn([]int64{4, 12}, gotch.Float, gotch.CPU)
			}
			if _, ok := torchx.LinearRows(x, ww, nil); ok {
				t.Errorf("%s: applied", name)
			}
		}
	})
}

// attentionReference is softmax(q·kᵀ·scale + mask)·v with heads repeated
// for grouped queries, in libtorch's general ops.
func attentionReference(q, k, v, mask *ts.Tensor, scale float64) *ts.Tensor {
	h, kv := q.MustSize()[1], k.MustSize()[1]
	if kv < h {
		k = k.MustRepeatInterleaveSelfInt(h/kv, []int64{1}, []int64{}, false)
		v = v.MustRepeatInterleaveSelfInt(h/kv, []int64{1}, []int64{}, false)
	}
	s := q.MustMatmul(k.MustTranspose(-2, -1, false), false).MustMulScalar(ts.FloatScalar(scale), true)
	if mask != nil {
		s = s.MustAdd(mask, true)
	}
	return s.MustSoftmax(-1, gotch.Float, true).MustMatmul(v, true)
}

// AttendOne must be attention's result (to float32 rounding) over a
// narrowed cache (k and v views of a longer buffer), with grouped-query
// heads, a padding mask, and key counts that are and are not multiples of
// 8; and it must decline a query of two positions.
func TestAttendOneMatchesAttention(t *testing.T) {
	requireKernels(t)
	for _, c := range []struct{ b, h, kv, s, hd int64 }{
		{8, 8, 8, 300, 32},
		{3, 4, 2, 13, 16},
		{1, 6, 1, 8, 64},
		{2, 2, 2, 1, 8},
	} {
		for _, masked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%+v-mask%v", c, masked), func(t *testing.T) {
				q := ts.MustRandn([]int64{c.b, c.h, 1, c.hd}, gotch.Float, gotch.CPU)
				cacheK := ts.MustRandn([]int64{c.b, c.kv, c.s + 5, c.hd}, gotch.Float, gotch.CPU)
				cacheV := ts.MustRandn([]int64{c.b, c.kv, c.s + 5, c.hd}, gotch.Float, gotch.CPU)
				k, v := cacheK.MustNarrow(2, 0, c.s, false), cacheV.MustNarrow(2, 0, c.s, false)
				var mask *ts.Tensor
				if masked { // row r's first r keys are padding
					m := make([]float32, c.b*c.s)
					for r := int64(0); r < c.b; r++ {
						for j := int64(0); j < min(r, c.s-1); j++ {
							m[r*c.s+j] = float32(math.Inf(-1))
						}
					}
					var err error
					if mask, err = torchx.TensorOf(m, []int64{c.b, 1, 1, c.s}); err != nil {
						t.Fatal(err)
					}
				}
				scale := 1 / math.Sqrt(float64(c.hd))
				torchx.NoGrad(func() {
					got, ok := torchx.AttendOne(q, k, v, mask, scale)
					if !ok {
						t.Fatal("kernel did not apply")
					}
					if d := maxRelDiff(t, got, attentionReference(q, k, v, mask, scale)); d > 1e-5 {
						t.Errorf("max relative difference from attention %g", d)
					}
					q2 := ts.MustRandn([]int64{c.b, c.h, 2, c.hd}, gotch.Float, gotch.CPU)
					if _, ok := torchx.AttendOne(q2, k, v, nil, scale); ok {
						t.Error("applied to two query positions")
					}
				})
			})
		}
	}
}
