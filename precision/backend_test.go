package precision

import (
	"math"
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// The GPU policy, chosen once when the backend is made, is what the
// model asked per call before it moved here: on a GPU in a reduced dtype
// separate products, q, k, v kept reduced and grouped heads left to the
// fused kernel, each only where the kernel runs and the environment lets
// it; on the CPU none of them. No GPU is needed: the backend reads the
// device's kind, not the device.
func TestPolicy(t *testing.T) {
	cuda := gotch.CudaBuilder(0)
	both := kernels{fused: true, fusedGQA: true}
	mask4 := ts.MustZeros([]int64{1, 1, 4, 4}, gotch.Float, gotch.CPU)
	defer mask4.MustDrop()
	mask2 := ts.MustZeros([]int64{4, 4}, gotch.Float, gotch.CPU)
	defer mask2.MustDrop()
	for _, tc := range []struct {
		name                  string
		dev                   gotch.Device
		softcap               float64
		k                     kernels
		keepOff, gqaOff       bool
		separate, keep, inner bool
		grouped               bool
	}{
		{name: "cuda", dev: cuda, k: both, separate: true, keep: true, inner: true, grouped: true},
		{name: "cpu", dev: gotch.CPU, k: both},
		{name: "cuda, MEMO_KEEP_QKV=off", dev: cuda, k: both, keepOff: true, separate: true, inner: true, grouped: true},
		{name: "cuda, MEMO_GQA=off", dev: cuda, k: both, gqaOff: true, separate: true, keep: true, inner: true},
		{name: "cuda, soft-capped", dev: cuda, softcap: 50, k: both, separate: true, inner: true},
		{name: "cuda, no fused kernel", dev: cuda, separate: true, inner: true},
		{name: "cuda, no grouped kernel", dev: cuda, k: kernels{fused: true}, separate: true, keep: true, inner: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wasKeep, wasGQA := keepQKVOff, gqaOn
			keepQKVOff, gqaOn = tc.keepOff, !tc.gqaOff
			defer func() { keepQKVOff, gqaOn = wasKeep, wasGQA }()
			b := newBackend(gotch.BFloat16, tc.dev, tc.softcap, tc.k)
			var l model.Layout = b
			if l.SeparateProducts() != tc.separate || l.KeepsProjections() != tc.keep {
				t.Errorf("separate %v, keeps q/k/v %v; want %v, %v", l.SeparateProducts(), l.KeepsProjections(), tc.separate, tc.keep)
			}
			f := fusedAttention{b}
			if got := f.GroupedHeads(&model.AttentionCall{}); got != tc.grouped {
				t.Errorf("grouped heads under the causal mask: %v, want %v", got, tc.grouped)
			}
			if got := f.GroupedHeads(&model.AttentionCall{Mask: mask2}); got != tc.grouped {
				t.Errorf("grouped heads under a shared 2-D mask: %v, want %v", got, tc.grouped)
			}
			if f.GroupedHeads(&model.AttentionCall{Window: 4}) || f.GroupedHeads(&model.AttentionCall{Mask: mask4}) {
				t.Error("grouped heads under a sliding window or a per-row mask")
			}
			// An inner product stays bf16 on a GPU; an outer one is float32.
			x := ts.MustOnes([]int64{2, 8}, gotch.Float, gotch.CPU)
			defer x.MustDrop()
			for _, p := range []model.Product{model.OuterProduct, model.InnerProduct} {
				y := b.Linear(x, x, nil, p)
				want := gotch.Float
				if p == model.InnerProduct && tc.inner {
					want = gotch.BFloat16
				}
				if y.DType() != want {
					t.Errorf("product %d: %v, want %v", p, y.DType(), want)
				}
				y.MustDrop()
			}
		})
	}
}

// Attention in bf16 through libtorch's fused kernel (2.1 and later: what
// bf16-mixed training and bf16 inference take on a GPU) must agree with
// float32 attention to bfloat16's precision, with the kernel's own causal
// mask, with a padded per-row mask and with a sliding-window [T,T] mask;
// and a soft-capped model must not take it. Skipped where libtorch lacks
// the kernel (Debian's 1.13).
func TestReducedAttentionMatchesFloat(t *testing.T) {
	if !torchx.FusedAttentionAvailable() {
		t.Skip("this libtorch has no scaled_dot_product_attention (1.13): attention stays float32")
	}
	dev := gotch.CPU
	if gotch.CUDA.IsAvailable() {
		dev = gotch.CudaBuilder(0)
	}
	torchx.NoGrad(func() {
		const n = 96
		scale := 1 / math.Sqrt(32)
		rnd := func() *ts.Tensor {
			return ts.MustRandn([]int64{2, 4, n, 32}, gotch.Float, gotch.CPU).MustTo(dev, true)
		}
		q, k, v := rnd(), rnd(), rnd()
		b := newBackend(gotch.BFloat16, dev, 0, kernels{fused: true})
		causal := maskOf(t, []int{0}, n, 0, dev, false)
		window := maskOf(t, []int{0}, n, 16, dev, false)
		padded := maskOf(t, []int{0, 13}, n, 0, dev, true)
		for _, tc := range []struct {
			name       string
			mask       *ts.Tensor
			fullCausal bool
		}{{"causal", causal, true}, {"padded", padded, true}, {"window", window, false}} {
			got, ok := fusedAttention{b}.Attention(q, k, v, tc.mask, scale, tc.fullCausal)
			if !ok {
				t.Fatalf("%s: the fused kernel did not run", tc.name)
			}
			if got.DType() != gotch.BFloat16 {
				t.Errorf("%s: result dtype %v, want bfloat16", tc.name, got.DType())
			}
			want := model.Attention(q, k, v, tc.mask, scale, 0)
			gotF := got.MustTotype(gotch.Float, true)
			// Random unit vectors: outputs of size ~0.3; bf16 keeps 8 bits.
			if d := maxAbsDiff(gotF, want); d > 3e-2 {
				t.Errorf("%s: bf16 fused attention differs from float32 by %g", tc.name, d)
			}
		}
		if capped := newBackend(gotch.BFloat16, dev, 50, kernels{fused: true}); capped.fused {
			t.Error("a soft-capped model took the fused kernel, which has no cap")
		}
	})
}

// maskOf is the additive causal mask of n positions on dev: [n,n], or
// per row [B,1,n,n] with each row's first real position in starts; with
// a window w > 0 a query also ignores keys w or more back.
func maskOf(t *testing.T, starts []int, n, w int, dev gotch.Device, perRow bool) *ts.Tensor {
	t.Helper()
	ninf := float32(math.Inf(-1))
	m := make([]float32, len(starts)*n*n)
	for r, st := range starts {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if j > i || (j < st && j != i) || (w > 0 && j <= i-w) {
					m[(r*n+i)*n+j] = ninf
				}
			}
		}
	}
	dims := []int64{int64(n), int64(n)}
	if perRow {
		dims = []int64{int64(len(starts)), 1, int64(n), int64(n)}
	}
	x, err := model.TensorOf(m, dims, dev)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
