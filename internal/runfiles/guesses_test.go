package runfiles

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestGuessesPath(t *testing.T) {
	for in, want := range map[string]string{
		"run/completions.arrow":                           "run/guesses.arrow",
		"run/checkpoints/step-000010.x.completions.arrow": "run/checkpoints/step-000010.x.guesses.arrow",
		"other.arrow": "other.guesses.arrow",
	} {
		if got := GuessesPath(in); got != filepath.FromSlash(want) {
			t.Errorf("GuessesPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGuessesRoundTrip(t *testing.T) {
	rows := []Guess{
		{DocID: 3, Split: "target", Rank: 0, Sample: 2, Generated: []int32{5, 6}, GeneratedText: "ab", SeqLogProb: -1.5},
		{DocID: 3, Split: "target", Rank: 1, Sample: 0, Generated: []int32{}, GeneratedText: "", SeqLogProb: -7},
	}
	path := filepath.Join(t.TempDir(), "guesses.arrow")
	if err := WriteGuesses(path, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadGuesses(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read %+v, want %+v", got, rows)
	}
	if _, err := ReadGuesses(filepath.Join(t.TempDir(), "none.arrow")); err == nil {
		t.Error("reading a missing file did not fail")
	}
}

func TestBeside(t *testing.T) {
	for _, tc := range []struct{ completions, file, want string }{
		{"run/completions.arrow", ScoresFile, "run/scores.parquet"},
		{"run/k4.completions.arrow", SummaryFile, "run/k4.summary.json"},
		{"out/greedy.arrow", GuessesFile, "out/greedy.guesses.arrow"},
		{"completions.arrow", GuessesFile, "guesses.arrow"},
	} {
		if got := Beside(tc.completions, tc.file); got != tc.want {
			t.Errorf("Beside(%q, %q) = %q, want %q", tc.completions, tc.file, got, tc.want)
		}
	}
	if got := BesideScores("run/k4.scores.parquet", CorpusCountsFile); got != "run/k4.corpus_counts.parquet" {
		t.Errorf("BesideScores = %q", got)
	}
}
