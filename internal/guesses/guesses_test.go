package guesses

import (
	"path/filepath"
	"reflect"
	"testing"
)

func TestPath(t *testing.T) {
	for in, want := range map[string]string{
		"run/completions.arrow":                           "run/guesses.arrow",
		"run/checkpoints/step-000010.x.completions.arrow": "run/checkpoints/step-000010.x.guesses.arrow",
		"other.arrow": "other.guesses.arrow",
	} {
		if got := Path(in); got != filepath.FromSlash(want) {
			t.Errorf("Path(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	rows := []Row{
		{DocID: 3, Split: "target", Rank: 0, Sample: 2, Generated: []int32{5, 6}, GeneratedText: "ab", SeqLogProb: -1.5},
		{DocID: 3, Split: "target", Rank: 1, Sample: 0, Generated: []int32{}, GeneratedText: "", SeqLogProb: -7},
	}
	path := filepath.Join(t.TempDir(), "guesses.arrow")
	if err := Write(path, rows); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, rows) {
		t.Fatalf("read %+v, want %+v", got, rows)
	}
	if _, err := Read(filepath.Join(t.TempDir(), "none.arrow")); err == nil {
		t.Error("reading a missing file did not fail")
	}
}
