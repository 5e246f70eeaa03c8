package runfiles

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the testdata/ goldens")

// checkGolden compares the file at path with testdata/name byte for byte
// (rewriting testdata/name under -update): the run files' bytes are a
// contract with the readers of runs written before.
func checkGolden(t *testing.T, path, name string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: wrote %d bytes that differ from %s's %d", path, len(got), golden, len(want))
	}
}

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
	checkGolden(t, path, "metrics.arrow")
	empty := filepath.Join(dir, "empty-metrics.arrow")
	if err := WriteMetrics(empty, nil); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, empty, "metrics-empty.arrow")

	guesses := []Guess{
		{DocID: 3, Split: "target", Rank: 0, Sample: 2, Generated: []int32{5, 6}, GeneratedText: "ab", SeqLogProb: -1.5},
		{DocID: 3, Split: "target", Rank: 1, Sample: 0, Generated: []int32{}, GeneratedText: "", SeqLogProb: -7},
		{DocID: 9, Split: "control", Rank: 0, Sample: 1, Generated: []int32{1}, GeneratedText: "é", SeqLogProb: math.Inf(-1)},
	}
	path = filepath.Join(dir, "guesses.arrow")
	if err := WriteGuesses(path, guesses); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, path, "guesses.arrow")
}
