package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScoreLogitsOut: memo score --logits-out writes every position's
// logits of each row, [row][position][vocab] for positions 0 … len−2; at
// position 5 they are the reference checkpoint's (transformers') logits to
// its tolerance, and at every position their log-softmax at the next token
// is the NLL printed, so the file and the scores are one pass's. A file
// that exists is refused, one memo: line, exit 2.
func TestScoreLogitsOut(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	dir, want := hfGolden(t, "llama-gqa-tied")
	work := t.TempDir()
	writeJSONFile(t, filepath.Join(work, "ids.json"), want.IDs)
	out := filepath.Join(work, "logits.json")
	r := execMemo(t, exe, work, "score", "--model", dir, "--ids-json", "ids.json", "--batch", "1", "--logits-out", out)
	if r.code != 0 {
		t.Fatalf("score --logits-out exited %d: %s", r.code, r.stderr)
	}
	var scored struct{ NLL [][]float64 }
	if err := json.Unmarshal([]byte(r.stdout), &scored); err != nil {
		t.Fatalf("score printed %q: %v", r.stdout, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		IDs    [][]int32     `json:"ids"`
		Logits [][][]float64 `json:"logits"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("--logits-out wrote %.200q: %v", b, err)
	}
	if len(got.Logits) != len(want.IDs) || len(got.IDs) != len(want.IDs) {
		t.Fatalf("%d rows of logits and %d of ids, want %d", len(got.Logits), len(got.IDs), len(want.IDs))
	}
	for i, row := range want.IDs {
		if len(got.Logits[i]) != len(row)-1 {
			t.Fatalf("row %d: %d positions, want %d", i, len(got.Logits[i]), len(row)-1)
		}
		for j, v := range want.LogitsPos5[i] {
			if d := math.Abs(got.Logits[i][5][j] - v); !(d <= want.LogitsTol()) {
				t.Fatalf("row %d position 5 logit %d: %v, transformers %v", i, j, got.Logits[i][5][j], v)
			}
		}
		for p, lg := range got.Logits[i] {
			if len(lg) != 320 {
				t.Fatalf("row %d position %d: %d logits, want the vocabulary's 320", i, p, len(lg))
			}
			top := lg[0]
			for _, v := range lg {
				top = math.Max(top, v)
			}
			var z float64
			for _, v := range lg {
				z += math.Exp(v - top)
			}
			nll := top + math.Log(z) - lg[row[p+1]]
			if d := math.Abs(nll - scored.NLL[i][p]); d > 1e-4 {
				t.Errorf("row %d position %d: log-softmax of the logits gives NLL %v, score printed %v", i, p, nll, scored.NLL[i][p])
			}
		}
	}
	r = execMemo(t, exe, work, "score", "--model", dir, "--ids-json", "ids.json", "--logits-out", out)
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "--logits-out") || !strings.Contains(lines[0], "exists") {
		t.Errorf("--logits-out over an existing file: exit %d, stderr %q; want 2 and one line naming --logits-out", r.code, r.stderr)
	}
}
