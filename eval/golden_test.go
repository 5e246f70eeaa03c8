package eval

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/memo-research/memo/internal/goldenfile"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
)

// TestScoreFilesGolden: scores.parquet, guess_scores.parquet and
// memorization.parquet stay byte for byte what eval wrote before their
// columns moved into tagged row types (testdata written at 64862cd from
// crafted completions with every column, their guesses, and two steps).
func TestScoreFilesGolden(t *testing.T) {
	dir := t.TempDir()
	comps := crafted()
	for i := range comps {
		c := &comps[i]
		c.Title, c.NTokens, c.Prefix, c.PrefixText = "doc", 7+i, []int32{int32(i)}, "p"
		c.WindowText = c.Text[:len(c.Text)/2+1]
		c.MinKPP, c.PExtract, c.ReCaLL, c.GradNorm = -float64(i)/4, -float64(i), 1+float64(i)/8, math.NaN()
		if i%2 == 0 {
			c.GradNorm = float64(i) * 1.5
		}
	}
	comps[2].PExtract = math.Inf(-1)
	if err := runfiles.WriteCompletions(filepath.Join(dir, "completions.arrow"), comps, nil); err != nil {
		t.Fatal(err)
	}
	guesses := []runfiles.Guess{
		{DocID: 1, Split: "target", Rank: 0, Generated: []int32{1, 2, 3, 4}, GeneratedText: "the cat sat down", SeqLogProb: -0.5},
		{DocID: 2, Split: "target", Rank: 0, Generated: []int32{1, 2, 9, 9}, GeneratedText: "the cat ran away", SeqLogProb: -1},
		{DocID: 2, Split: "target", Rank: 1, Sample: 1, Generated: []int32{1, 2, 3, 4}, GeneratedText: "the cat sat down", SeqLogProb: -3},
		{DocID: 5, Split: "control", Rank: 0, Generated: []int32{3, 4}, GeneratedText: "z w", SeqLogProb: -1},
	}
	if err := runfiles.WriteGuesses(filepath.Join(dir, "guesses.arrow"), guesses); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Bootstrap = 200
	sum, err := Run(cfg, dir, loss.Config{Strategy: "hash-table", K: 4, H: 13}, dir)
	if err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, filepath.Join(dir, "scores.parquet"), "scores.parquet")
	goldenfile.Check(t, filepath.Join(dir, "guess_scores.parquet"), "guess_scores.parquet")

	step := func(n int) *int { return &n }
	early := *sum
	early.Step, early.Checkpoint, early.Guesses = step(10), "c/step-000010", nil
	late := *sum
	late.Step, late.Checkpoint = step(20), "c/step-000020"
	path := filepath.Join(dir, "memorization.parquet")
	if err := WriteMemorization(path, []*Summary{&late, &early}); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, path, "memorization.parquet")
}
