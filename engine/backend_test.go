package engine

import (
	"testing"

	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/model"
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
	exact := decode(func(c *Cache) { c.backend = g.Exact() })
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
	// Off, the kernels of the products (torchx.LinearRows) are off too:
	// exact attention again, beside it.
	defer torchx.SetKernels(torchx.SetKernels(false))
	compare("decode kernel, kernels off", decode(func(c *Cache) { c.backend = g.Exact() }), decode(nil), 0)
}
