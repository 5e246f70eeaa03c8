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

// TestStrideLossesCoverTheWindow: a model whose context is shorter than a
// window scores every token of it once (a reference model's mean must
// cover the tokens the attacked model's covers): the first context−1
// losses are the full-window forward's (causal attention), and the last
// is that of the last stride window scored alone. A window that fits
// is scored whole.
func TestStrideLossesCoverTheWindow(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	docs := opticksDocs(t, 2, 120)
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 128, Seed: 11})
	const window = 32
	prompts := []Prompt{{Window: docs[0].IDs[:100]}, {Window: docs[1].IDs[:20]}}
	got, err := strideLosses(context.Background(), g, prompts, window, 4, "test")
	if err != nil {
		t.Fatal(err)
	}
	full, err := engine.TokenNLL(g, [][]int32{prompts[0].Window, prompts[1].Window})
	if err != nil {
		t.Fatal(err)
	}
	spans := StrideWindows(100, window, window/2)
	last := spans[len(spans)-1]
	tail, err := engine.TokenNLL(g, [][]int32{prompts[0].Window[last.Start:last.End]})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0]) != 99 || len(got[1]) != 19 {
		t.Fatalf("%d and %d losses, want 99 and 19: one per token after the first", len(got[0]), len(got[1]))
	}
	near := func(a, b float32) bool { return math.Abs(float64(a-b)) <= 1e-5 }
	for j := range window - 1 {
		if !near(got[0][j], full[0][j]) {
			t.Errorf("target %d: %v, want the first window's %v", j+1, got[0][j], full[0][j])
		}
	}
	if want := tail[0][len(tail[0])-1]; !near(got[0][98], want) {
		t.Errorf("last target: %v, want %v (its last window, tokens [%d, 100), alone)", got[0][98], want, last.Start)
	}
	for j := range got[1] {
		if !near(got[1][j], full[1][j]) {
			t.Errorf("short window, target %d: %v, want %v scored whole", j+1, got[1][j], full[1][j])
		}
	}
}
