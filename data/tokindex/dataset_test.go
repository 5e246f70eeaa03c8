package tokindex

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/badinput"
)

// buildDataset builds a small dataset of Opticks (no download) with
// repetition groups, as exp/catastrophic.toml asks for them.
func buildDataset(t *testing.T, seed int64) *data.Dataset {
	t.Helper()
	cfg := data.DefaultConfig()
	cfg.Targets, cfg.Controls, cfg.Validation = 12, 6, 4
	cfg.RepetitionGroups = []int{1, 2, 4, 8, 16, 32}
	cfg.Repetitions = 0
	cfg.ChunkTokens, cfg.MinTokens = 64, 48
	cfg.Tokenizer = "bpe:1024"
	cfg.Seed = seed
	cfg.CacheDir = t.TempDir()
	return buildConfig(t, cfg)
}

// buildConfig builds cfg's dataset into a temporary run directory and opens it.
func buildConfig(t *testing.T, cfg data.Config) *data.Dataset {
	t.Helper()
	dir := t.TempDir()
	if err := data.Build(context.Background(), cfg, dir); err != nil {
		t.Fatal(err)
	}
	ds, err := data.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// TestDatasetCountsAreRepetitions: each target's tokens, and its last 32
// tokens alone, occur in the indexed training corpus exactly the
// repetitions the spec asked for; controls and validation documents, never
// trained on, are not in it.
func TestDatasetCountsAreRepetitions(t *testing.T) {
	ds := buildDataset(t, 1)
	path := PathFor(ds)
	if _, err := BuildDataset(ds, path, 0, nil); err != nil {
		t.Fatal(err)
	}
	ix, err := OpenDataset(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	targets, err := ds.Docs(data.SplitTarget)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, d := range targets {
		for _, w := range [][]int32{d.IDs, d.IDs[len(d.IDs)-32:]} {
			c, err := ix.Count(w)
			if err != nil {
				t.Fatal(err)
			}
			if c.Count != int64(d.Repetitions) || c.Occurrences != 1 {
				t.Errorf("target %d (%d repetitions): a %d-token window counts %+v", d.ID, d.Repetitions, len(w), c)
			}
		}
		seen[d.Repetitions] = true
	}
	if len(seen) != 6 {
		t.Errorf("repetitions seen %v, want the 6 groups", seen)
	}
	for _, split := range []string{data.SplitControl, data.SplitValidation} {
		docs, err := ds.Docs(split)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			c, err := ix.Count(d.IDs)
			if err != nil || c.Count != 0 {
				t.Errorf("%s %d: %+v, %v; want 0", split, d.ID, c, err)
			}
		}
	}
}

// TestDatasetOtherBuild: the index of one build of a corpus refuses
// another build's dataset (another seed: other splits, other files).
func TestDatasetOtherBuild(t *testing.T) {
	a, b := buildDataset(t, 1), buildDataset(t, 2)
	if _, err := BuildDataset(a, PathFor(b), 0, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDataset(b); !badinput.Is(err) {
		t.Fatalf("opened another build's index: %v", err)
	}
	// A dataset without one is bad input for the user and "not there"
	// for the eval stage, which goes on without corpus counts.
	if _, err := OpenDataset(a); !badinput.Is(err) || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "has no index") {
		t.Fatalf("a dataset without an index: %v, want bad input and fs.ErrNotExist", err)
	}
}
