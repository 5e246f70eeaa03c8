package extract

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/memo-research/memo/engine"
	"github.com/memo-research/memo/model"
)

// TestStrideWindows: every token but the first is scored exactly once,
// by a window that holds it and at least window − stride tokens before it
// (all of them in the first window); a text that fits is one window.
func TestStrideWindows(t *testing.T) {
	for _, tc := range []struct{ n, window, stride, windows int }{
		{2, 16, 8, 1}, {16, 16, 8, 1}, {17, 16, 8, 2}, {50, 16, 6, 7}, {50, 16, 15, 4}, {100, 64, 1, 37},
	} {
		spans := StrideWindows(tc.n, tc.window, tc.stride)
		if len(spans) != tc.windows {
			t.Errorf("n %d window %d stride %d: %d windows, want %d", tc.n, tc.window, tc.stride, len(spans), tc.windows)
		}
		var scored []int
		for i, s := range spans {
			if s.End-s.Start > tc.window || s.Start != i*tc.stride {
				t.Errorf("n %d: span %+v", tc.n, s)
			}
			for j := s.Keep; j < s.End-s.Start-1; j++ {
				tok := s.Start + j + 1 // window loss j predicts token Start+j+1
				if i > 0 && tok-s.Start < tc.window-tc.stride {
					t.Errorf("n %d: token %d scored with %d tokens before it", tc.n, tok, tok-s.Start)
				}
				scored = append(scored, tok)
			}
		}
		want := make([]int, tc.n-1)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(scored, want) {
			t.Errorf("n %d window %d stride %d: scored tokens %v, want 1..%d once each", tc.n, tc.window, tc.stride, scored, tc.n-1)
		}
	}
	if StrideWindows(1, 16, 8) != nil {
		t.Error("a text of one token has windows")
	}
}

// TestAuditScoreWindows: a window covering the text gives one pass's
// token losses bit for bit; windows of 16 every 6 give, token for token,
// the losses of the window that scores each (the pieces' total is the
// passes' total). Bit for bit one window at a time; batched with other
// windows, libtorch's kernels may sum in another order: to 1e-6.
func TestAuditScoreWindows(t *testing.T) {
	g := newModel(t, model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 3})
	m := &AuditModel{g: g, Context: 64, Vocab: 256}
	docs := opticksDocs(t, 3, 50)
	var in []AuditInput
	for _, d := range docs {
		in = append(in, AuditInput{Where: d.Title, Tokens: d.IDs})
	}
	one, err := m.Score(context.Background(), in, AuditConfig{BatchSize: 1, MinKFraction: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		want, err := engine.TokenNLL(g, [][]int32{d.IDs})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(one[i].Losses, want[0]) || one[i].NWindows != 1 {
			t.Errorf("doc %d: one window's losses differ from one pass's", i)
		}
	}
	strided, err := m.Score(context.Background(), in, AuditConfig{Window: 16, Stride: 6, BatchSize: 1, MinKFraction: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	batched, err := m.Score(context.Background(), in, AuditConfig{Window: 16, Stride: 6, BatchSize: 3, MinKFraction: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range docs {
		var want []float32
		for _, s := range StrideWindows(len(d.IDs), 16, 6) {
			ls, err := engine.TokenNLL(g, [][]int32{d.IDs[s.Start:s.End]})
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, ls[0][s.Keep:]...)
		}
		var sw, sg float64
		for j := range want {
			sw += float64(want[j])
			sg += float64(strided[i].Losses[j])
		}
		if !slices.Equal(strided[i].Losses, want) || sw != sg || strided[i].NWindows != 7 {
			t.Errorf("doc %d: windowed losses (total %v, %d windows) differ from the windows' own passes (total %v)", i, sg, strided[i].NWindows, sw)
		}
		for j := range want {
			if d := math.Abs(float64(batched[i].Losses[j] - want[j])); d > 1e-6*math.Max(1, float64(want[j])) {
				t.Errorf("doc %d token %d: batched %v, alone %v", i, j, batched[i].Losses[j], want[j])
			}
		}
	}
	if _, _, err := m.Windows(AuditConfig{Window: 16, Stride: 16}); err == nil {
		t.Error("stride 16 in a window of 16 accepted")
	}
}
