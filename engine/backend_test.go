package engine

import (
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"
	"github.com/sugarme/gotch/ts"
)

// exactApprox is an Approximation that changes nothing: it stores keys and
// values as they are and attends exactly.
type exactApprox struct{}

func (exactApprox) Store(x *ts.Tensor) *ts.Tensor { return x }
func (exactApprox) Attend(_ *Cache, _ int, q, k, v, mask *ts.Tensor, scale, cap float64) *ts.Tensor {
	return model.Attention(q, k, v, mask, scale, cap)
}
func (exactApprox) Reorder([]int) {}
func (exactApprox) Drop()         {}

// A cache picks its attention backend once, when it is made: the decode
// kernel on the CPU, an approximation's under one. Each backend decodes
// what the model's exact attention decodes: the kernel to float32
// rounding (its sums run in another order) and bit for bit where it
// declines (kernels off), an approximation that changes nothing to
// float32 rounding, over a left-padded prompt pass and decode steps.
func TestCacheBackends(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 4})
	prompt := ids(t, [][]int64{{0, 0, 5, 9, 2}, {4, 4, 0, 12, 33}})
	steps := []*ts.Tensor{ids(t, [][]int64{{7}, {8}}), ids(t, [][]int64{{1}, {60}}), ids(t, [][]int64{{3}, {3}})}
	decode := func(pick func(c *Cache)) []*ts.Tensor {
		c, err := NewCache(g, 2, 8)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Drop()
		if err := c.SetStarts([]int{2, 0}); err != nil {
			t.Fatal(err)
		}
		if pick != nil {
			pick(c)
		}
		out := []*ts.Tensor{c.ForwardLast(prompt)}
		for _, s := range steps {
			out = append(out, c.Forward(s))
		}
		return out
	}
	kc, _ := NewCache(g, 1, 4)
	if _, ok := kc.backend.(decodeKernel); !ok {
		t.Errorf("a CPU cache's backend is %T, want decodeKernel", kc.backend)
	}
	kc.under(exactApprox{})
	if _, ok := kc.backend.(approxBackend); !ok {
		t.Errorf("a cache under an approximation has backend %T, want approxBackend", kc.backend)
	}
	kc.Drop()
	exact := decode(func(c *Cache) { c.backend = g.Backend() })
	compare := func(name string, exact, got []*ts.Tensor, tol float64) {
		t.Helper()
		for i := range exact {
			if d := maxAbsDiff(exact[i], got[i]); d > tol {
				t.Errorf("%s: pass %d differs from exact attention by %g (tolerance %g)", name, i, d, tol)
			}
		}
	}
	compare("decode kernel", exact, decode(nil), 1e-5)
	compare("exact approximation", exact, decode(func(c *Cache) { c.under(exactApprox{}) }), 1e-5)
	// Off, the decode kernels (torchx.AttendOne and torchx.LinearRows)
	// decline, and the CPU backend is the exact one bit for bit.
	defer torchx.SetKernels(torchx.SetKernels(false))
	compare("decode kernel, kernels off", decode(func(c *Cache) { c.backend = g.Backend() }), decode(nil), 0)
}

// The engine's uncached passes pick their backend as a cache does (the
// decode kernels on the CPU): under the exact backend ForwardWith without
// a KV store is Forward bit for bit, and under the kernels a short
// window's few rows (at most torchx.MaxKernelRows) agree with it to
// float32 rounding.
func TestUncachedPassBackend(t *testing.T) {
	g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 4})
	in := ids(t, [][]int64{{5, 9, 2, 7, 1, 33}, {4, 4, 0, 12, 33, 8}}) // 12 rows
	st := uncached(g)
	if _, ok := st.Backend.(decodeKernel); !ok {
		t.Errorf("a CPU model's uncached backend is %T, want decodeKernel", st.Backend)
	}
	var want *ts.Tensor
	torchx.NoGrad(func() { want = g.Forward(in) })
	exact := g.ForwardWith(in, &model.PassState{Backend: g.Backend()})
	if d := maxAbsDiff(want, exact); d != 0 {
		t.Errorf("ForwardWith without a cache, exact backend: differs from Forward by %g", d)
	}
	if d := maxAbsDiff(want, g.ForwardWith(in, st)); d > 1e-5 {
		t.Errorf("ForwardWith without a cache, decode kernels: differs from Forward by %g (tolerance 1e-5)", d)
	}
}

// The engine's backends wrap the model's own (g.Backend(), float32 or the
// precision a runner set): the row kernel takes float32 products only,
// of weights whose rows lie packed, so a reduced precision's products
// (bf16-mixed keeps float32 weights: the kernel would take them) and
// Conv1D's transposed weights are the model's own, bit for bit, as they
// were when the model computed them itself.
func TestBackendsWrapTheModels(t *testing.T) {
	x := ts.MustRandn([]int64{2, 64}, gotch.Float, gotch.CPU)
	defer x.MustDrop()
	w := ts.MustRandn([]int64{32, 64}, gotch.Float, gotch.CPU)
	defer w.MustDrop()
	// A Conv1D weight [in, out], transposed as the recipe hands it over.
	conv := ts.MustRandn([]int64{64, 32}, gotch.Float, gotch.CPU)
	defer conv.MustDrop()
	wt := conv.MustT(false)
	defer wt.MustDrop()
	for _, tc := range []struct {
		name      string
		prec      string
		w         *ts.Tensor
		rowKernel bool // the backend's products are the row kernel's
		same      bool // and this one is the model's own, bit for bit
	}{
		{"fp32", precision.FP32, w, true, false},
		{"fp32, transposed weight", precision.FP32, wt, true, true},
		{"bf16-mixed", precision.BF16Mixed, w, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTest(t, model.Config{Preset: "nano", Vocab: 61, Context: 32, Seed: 4})
			if err := precision.Set(g, tc.prec, true); err != nil {
				t.Fatal(err)
			}
			be := newDecodeKernel(g)
			if _, ok := be.products.(rowKernel); ok != tc.rowKernel {
				t.Fatalf("products %T, want the row kernel: %v", be.products, tc.rowKernel)
			}
			torchx.NoGrad(func() {
				got := be.Linear(x, tc.w, nil, model.OuterProduct)
				want := g.Backend().Linear(x, tc.w, nil, model.OuterProduct)
				if d := maxAbsDiff(got, want); tc.same && d != 0 {
					t.Errorf("the decode backend's product differs from the model's own by %g", d)
				}
			})
		})
	}
}
