package experiments

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/data/tokindex"
)

// TestShippedCounts: the datasets of the shipped experiments with
// repetition groups get an index from the eval stage's counter, and each
// target's tokens count exactly the repetitions the spec asked for (issue
// 42): exp/catastrophic.toml (groups 1 to 128, background seen once, in
// pretraining; a background chunk counts at least that pass) and every
// point of exp/repetition-counts.toml (groups 1 to 128, no background,
// without and with data.dedup_tokens).
func TestShippedCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds datasets")
	}
	t.Chdir("..")
	for _, name := range []string{"catastrophic", "repetition-counts"} {
		t.Run(name, func(t *testing.T) {
			spec, err := Parse(filepath.Join("exp", name+".toml"))
			if err != nil {
				t.Skipf("exp/%s.toml: %v (its corpora need `memo data fetch`)", name, err)
			}
			cfgs := map[string]data.Config{name: spec.Data}
			if spec.IsSweep() {
				points, err := spec.Expand()
				if err != nil {
					t.Fatal(err)
				}
				// One build for the points that share a [data] table.
				cfgs = map[string]data.Config{}
				seen := map[string]bool{}
				for _, p := range points {
					if key := fmt.Sprintf("%+v", p.Spec.Data); !seen[key] {
						seen[key] = true
						cfgs[p.Name] = p.Spec.Data
					}
				}
			}
			for point, cfg := range cfgs {
				t.Run(point, func(t *testing.T) { checkCounts(t, cfg) })
			}
		})
	}
}

// checkCounts builds cfg's dataset and counts its targets and a
// background chunk with the eval stage's counter.
func checkCounts(t *testing.T, cfg data.Config) {
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
	// The counter names its corpus: summary.json records which it was.
	if id, err := tokindex.DatasetIdentity(ds); err != nil || count.Corpus.Digest != id.Digest || count.Corpus.Tokenizer != id.Tokenizer || !filepath.IsAbs(count.Corpus.Dataset) {
		t.Errorf("counter names %+v; the dataset is %+v (%v)", count.Corpus, id, err)
	}
	targets, err := ds.Docs(data.SplitTarget)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, d := range targets {
		n, err := count.Count(d.IDs)
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
	if cfg.DedupTokens > 0 && ds.Report().DedupTokens == nil {
		t.Errorf("data.dedup_tokens = %d but report.json says nothing of it", cfg.DedupTokens)
	}
	if cfg.Background == 0 {
		return
	}
	bg, err := ds.Docs(data.SplitBackground)
	if err != nil || len(bg) == 0 {
		t.Fatalf("background: %d, %v", len(bg), err)
	}
	if n, err := count.Count(bg[0].IDs); err != nil || n < 1 {
		t.Errorf("a background chunk counted %d (%v), want >= 1", n, err)
	}
}

// TestNarrowIndexRebuilt: a small corpus indexed with a short max_window
// (memo index build --max-window 4) is rebuilt by the eval stage's counter
// rather than answering no window, which left a run without its counts and
// with a warning alone.
func TestNarrowIndexRebuilt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset")
	}
	t.Chdir("..")
	spec, err := Parse(filepath.Join("exp", "repetition-counts.toml"))
	if err != nil {
		t.Skipf("exp/repetition-counts.toml: %v (its corpora need `memo data fetch`)", err)
	}
	points, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	cfg := points[0].Spec.Data
	cfg.CacheDatasets = false
	run := t.TempDir()
	if err := data.Build(context.Background(), cfg, run); err != nil {
		t.Skipf("build its dataset: %v (its corpora need `memo data fetch`)", err)
	}
	ds, err := data.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokindex.BuildDataset(ds, tokindex.PathFor(ds), 4, nil); err != nil {
		t.Fatal(err)
	}
	count, release, err := corpusCounter(run)
	if err != nil || count == nil {
		t.Fatalf("counter: %v", err)
	}
	defer release()
	targets, err := ds.Docs(data.SplitTarget)
	if err != nil || len(targets) == 0 {
		t.Fatalf("targets: %d, %v", len(targets), err)
	}
	if n, err := count.Count(targets[0].IDs); err != nil || n != int64(targets[0].Repetitions) {
		t.Errorf("a target of %d tokens seen %d times counted %d (%v) over an index of max_window 4", len(targets[0].IDs), targets[0].Repetitions, n, err)
	}
}
