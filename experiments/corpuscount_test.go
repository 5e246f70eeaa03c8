package experiments

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memo-research/memo/data"
)

// TestCatastrophicCounts: the dataset of exp/catastrophic.toml (repetition
// groups 1 to 128, background seen once, in pretraining) gets an index
// from the eval stage's counter, and each target's tokens count exactly
// the repetitions the spec asked for; a background chunk counts at least
// its one pretraining pass.
func TestCatastrophicCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset")
	}
	t.Chdir("..")
	spec, err := Parse(filepath.Join("exp", "catastrophic.toml"))
	if err != nil {
		t.Skipf("exp/catastrophic.toml: %v (its corpora need `memo data fetch`)", err)
	}
	cfg := spec.Data
	cfg.CacheDatasets = false
	run := t.TempDir()
	if err := data.Build(context.Background(), cfg, run); err != nil {
		t.Skipf("build its dataset: %v (its corpora need `memo data fetch`)", err)
	}
	count, release, err := corpusCounter(run)
	if err != nil || count == nil {
		t.Fatalf("counter: %v", err)
	}
	defer release()
	ds, err := data.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := ds.Docs(data.SplitTarget)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, d := range targets {
		n, err := count(d.IDs)
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(d.Repetitions) {
			t.Errorf("target %d: counted %d, the spec asked for %d repetitions", d.ID, n, d.Repetitions)
		}
		seen[d.Repetitions]++
	}
	if len(seen) != len(cfg.RepetitionGroups) {
		t.Errorf("repetitions %v, want the groups %v", seen, cfg.RepetitionGroups)
	}
	bg, err := ds.Docs(data.SplitBackground)
	if err != nil || len(bg) == 0 {
		t.Fatalf("background: %d, %v", len(bg), err)
	}
	if n, err := count(bg[0].IDs); err != nil || n < 1 {
		t.Errorf("a background chunk counted %d (%v), want >= 1", n, err)
	}
}
