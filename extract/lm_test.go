package extract

import (
	"context"
	"math"
	"runtime"
	"testing"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/model"
)

// TestRightPaddedLossesMatchOneAtATime: windows of different lengths
// right-padded into one batch give each token the loss it gets when its
// window is scored alone (causal attention never looks at the padding
// after a position, and the padded targets are ignored).
func TestRightPaddedLossesMatchOneAtATime(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	docs := opticksDocs(t, 5, 120)
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 128, Seed: 11})
	lengths := []int{120, 1, 37, 2, 90}
	windows := make([][]int32, len(docs))
	for i, d := range docs {
		windows[i] = d.IDs[:lengths[i]]
	}
	alone := make([][]float32, len(windows))
	for i, w := range windows {
		ls, err := engine.TokenNLL(g, [][]int32{w})
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = ls[0]
	}
	batched, err := engine.TokenNLL(g, windows)
	if err != nil {
		t.Fatal(err)
	}
	// windowLosses sorts by length and batches: the same losses, in order.
	prompts := make([]Prompt, len(windows))
	for i, w := range windows {
		prompts[i] = Prompt{Window: w}
	}
	viaBatches, err := windowLosses(context.Background(), g, prompts, 3, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		got  [][]float32
	}{{"one batch", batched}, {"windowLosses, batches of 3", viaBatches}} {
		t.Run(tc.name, func(t *testing.T) {
			for i, w := range windows {
				if want := max(len(w)-1, 0); len(tc.got[i]) != want || len(alone[i]) != want {
					t.Fatalf("window %d of %d tokens: %d losses batched, %d alone, want %d", i, len(w), len(tc.got[i]), len(alone[i]), want)
				}
				for j := range tc.got[i] {
					if d := math.Abs(float64(tc.got[i][j] - alone[i][j])); d > 1e-5 || math.IsNaN(d) {
						t.Errorf("window %d (%d tokens), target %d: loss %v batched, %v alone (|Δ| %.2g > 1e-5)", i, len(w), j+1, tc.got[i][j], alone[i][j], d)
					}
				}
			}
		})
	}
}
