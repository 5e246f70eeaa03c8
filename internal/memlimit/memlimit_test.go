package memlimit

import (
	"math"
	"testing"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/model"
)

// TestCheck: a small model passes; the sizes issue 25's probe gave (a
// width of 2^20, a context of 1e12, a vocabulary of 1e11) are refused as
// bad input, in float64 without wrapping around.
func TestCheck(t *testing.T) {
	if Total() == 0 {
		t.Skip("no /proc/meminfo here")
	}
	small := model.Config{Vocab: 320, Dim: 64, Layers: 2, Heads: 4, FFN: 176, Context: 256}
	if err := Check("small", small, 16); err != nil {
		t.Errorf("a 64-wide model: %v", err)
	}
	for name, c := range map[string]model.Config{
		"dim 2^20":     {Vocab: 4096, Dim: 1 << 20, Layers: 2, Heads: 4, FFN: 2796208, Context: 256},
		"context 1e12": {Vocab: 320, Dim: 64, Layers: 2, Heads: 4, FFN: 176, Context: 1e12},
		"vocab 1e11":   {Vocab: 1e11, Dim: 64, Layers: 2, Heads: 4, FFN: 176, Context: 256},
		"all at once":  {Vocab: math.MaxInt32, Dim: math.MaxInt32, Layers: math.MaxInt32, Heads: 1, FFN: math.MaxInt32, Context: math.MaxInt32},
	} {
		if err := Check(name, c, 4); err == nil || !badinput.Is(err) {
			t.Errorf("%s: %v, want a bad-input refusal", name, err)
		}
		if f := Floor(c, 4); f <= 0 || math.IsNaN(f) {
			t.Errorf("%s: Floor = %g", name, f)
		}
	}
}

// TestFloorCountsTheGatedMLP: the floor of a model's weights is at most
// their exact count and, for the gated families, within the norms and
// biases of it; a plain MLP has two matrices, a gated one three.
func TestFloorCountsTheGatedMLP(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    model.Config
	}{
		{"llama2-7b", model.Config{Arch: "llama", Vocab: 32000, Dim: 4096, Layers: 32, Heads: 32, KVHeads: 32, FFN: 11008, Context: 4096, Untied: true}},
		{"tinyllama", model.Config{Arch: "llama", Vocab: 32000, Dim: 2048, Layers: 22, Heads: 32, KVHeads: 4, FFN: 5632, Context: 2048, Untied: true}},
		{"memo's default family", model.Config{Vocab: 320, Dim: 64, Layers: 2, Heads: 4, FFN: 176, Context: 256}},
		{"gpt_neox", model.Config{Arch: "gpt_neox", Vocab: 512, Dim: 64, Layers: 2, Heads: 4, FFN: 256, Context: 128, Untied: true}},
	} {
		r, err := tc.c.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		exact := float64(r.Params())
		floor := Floor(tc.c, 1) - 4*float64(r.Context)*float64(r.HeadDim) // without the rotary tables
		if floor > exact || floor < 0.98*exact {
			t.Errorf("%s: floor %.0f, exact %.0f parameters: want within 2%% below (norms and biases)", tc.name, floor, exact)
		}
	}
}

// TestCheckPass: a pass's mask and logits count beside the weights, so a
// small model with a sequence of 100,000 positions (whose weights Check
// passes, with an 80 GB mask in the pass) is refused, and a bench's usual
// shapes pass.
func TestCheckPass(t *testing.T) {
	if Total() == 0 {
		t.Skip("no /proc/meminfo here")
	}
	nano := model.Config{Vocab: 4096, Dim: 64, Layers: 2, Heads: 4, FFN: 176}
	for _, tc := range []struct {
		name       string
		batch, seq int
		refused    bool
	}{
		{"bench train's default", 16, 256, false},
		{"8 x 2048", 8, 2048, false},
		{"seq 100,000", 1, 100_000, true},
		{"batch 1e6 of 4,096", 1_000_000, 4096, true},
	} {
		c := nano
		c.Context = tc.seq
		if err := Check(tc.name, c, 16); err != nil {
			t.Fatalf("%s: the weights alone refused: %v", tc.name, err)
		}
		err := CheckPass(tc.name, c, 16, tc.batch, tc.seq)
		if tc.refused != (err != nil) || err != nil && !badinput.Is(err) {
			t.Errorf("%s: CheckPass = %v, want refused %v (as bad input)", tc.name, err, tc.refused)
		}
	}
	if got, want := PassFloor(nano, 2, 1000), 8e6+4*2*1000*4096.0; got != want {
		t.Errorf("PassFloor(batch 2, seq 1000) = %g, want %g", got, want)
	}
}
