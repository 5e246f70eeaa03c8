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
