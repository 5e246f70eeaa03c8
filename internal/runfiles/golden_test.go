package runfiles

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/memo-research/memo/internal/goldenfile"
)

// TestMetricsAndGuessesGolden: metrics.arrow and guesses.arrow stay byte
// for byte what memo wrote before their columns moved into tagged row
// types (testdata written at 64862cd).
func TestMetricsAndGuessesGolden(t *testing.T) {
	dir := t.TempDir()
	nan := math.NaN()
	metrics := []Metric{
		{Step: 1, LossKept: 4.5, LossAll: 4.75, LossDropped: 5, LR: 1e-3, GradNorm: 2.5, TokensPerS: 1234.5, ValLoss: nan, ElapsedS: 0.5},
		{Step: 2, LossKept: 4.25, LossAll: 4.25, LossDropped: nan, LR: 9e-4, GradNorm: 1.5, TokensPerS: 1300, ValLoss: 4.4, ElapsedS: 1.25},
	}
	path := filepath.Join(dir, MetricsFile)
	if err := WriteMetrics(path, metrics); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, path, "metrics.arrow")
	empty := filepath.Join(dir, "empty-metrics.arrow")
	if err := WriteMetrics(empty, nil); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, empty, "metrics-empty.arrow")

	guesses := []Guess{
		{DocID: 3, Split: "target", Rank: 0, Sample: 2, Generated: []int32{5, 6}, GeneratedText: "ab", SeqLogProb: -1.5},
		{DocID: 3, Split: "target", Rank: 1, Sample: 0, Generated: []int32{}, GeneratedText: "", SeqLogProb: -7},
		{DocID: 9, Split: "control", Rank: 0, Sample: 1, Generated: []int32{1}, GeneratedText: "é", SeqLogProb: math.Inf(-1)},
	}
	path = filepath.Join(dir, "guesses.arrow")
	if err := WriteGuesses(path, guesses); err != nil {
		t.Fatal(err)
	}
	goldenfile.Check(t, path, "guesses.arrow")
}
