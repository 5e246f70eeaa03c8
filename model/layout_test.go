package model

import (
	"testing"

	"github.com/sugarme/gotch/ts"
)

// layoutBackend is a backend that says it keeps q, k, v reduced and
// multiplies separately, as a reduced precision's does on a GPU.
type layoutBackend struct{ Backend }

func (layoutBackend) SeparateProducts() bool { return true }
func (layoutBackend) KeepsProjections() bool { return true }

// nullStore is a KV store that is never written: its pass is cached.
type nullStore struct{}

func (nullStore) Append(int, *ts.Tensor, *ts.Tensor) (*ts.Tensor, *ts.Tensor) { return nil, nil }

// The recipe follows its backend's layout (Layout) only where it holds:
// an uncached pass; for q, k, v kept reduced, a family with nothing
// between the products and the attention that needs float32; for
// separate products, a model whose layers are not joined. A backend
// without Layout (the CPU's) gets concatenated float32 products.
func TestRecipeAsksTheLayout(t *testing.T) {
	gpu := layoutBackend{}
	cached := &PassState{KV: nullStore{}}
	for _, tc := range []struct {
		name           string
		cfg            Config
		st             *PassState
		be             Backend
		keep, separate bool
	}{
		{"llama", Config{Preset: "nano", Vocab: 61, Context: 16}, nil, gpu, true, true},
		{"llama, cached", Config{Preset: "nano", Vocab: 61, Context: 16}, cached, gpu, false, false},
		{"llama, no layout", Config{Preset: "nano", Vocab: 61, Context: 16}, nil, exact{}, false, false},
		{"llama, clipped q/k/v", Config{Preset: "nano", Vocab: 61, Context: 16, QKVClip: 8}, nil, gpu, false, true},
		{"qwen3, q/k norms", Config{Arch: "qwen3", Preset: "nano", Vocab: 61, Context: 16}, nil, gpu, false, true},
		{"gpt-neox, partial rotary", Config{Arch: "gpt_neox", Preset: "nano", Vocab: 61, Context: 16, RotaryPct: 0.5}, nil, gpu, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newTest(t, tc.cfg)
			if got := keepsProjections(g, tc.st, tc.be); got != tc.keep {
				t.Errorf("keepsProjections = %v, want %v", got, tc.keep)
			}
			if got := separateProducts(g, tc.st, tc.be); got != tc.separate {
				t.Errorf("separateProducts = %v, want %v", got, tc.separate)
			}
		})
	}
	if (exact{cuda: true}).SeparateProducts() != true || (exact{}).SeparateProducts() || (exact{cuda: true}).KeepsProjections() {
		t.Error("the float32 backend: separate products on a GPU only, q, k, v never kept")
	}
}
