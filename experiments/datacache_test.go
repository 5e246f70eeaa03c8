package experiments

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memo-research/memo/data"
)

// TestSweepBuildsDatasetOnce: the six points of a goldfish.k sweep, their
// data stages run at once (as `memo sweep -j 6` does), build the dataset
// once into the shared cache; every point's data/ holds that build's files.
func TestSweepBuildsDatasetOnce(t *testing.T) {
	cache := t.TempDir()
	toml := fmt.Sprintf(`name = "k-sweep"
[data]
sources = ["opticks"]
tokenizer = "bpe:300"
targets = 10
controls = 10
validation = 5
cache_dir = %q
[sweep]
"goldfish.k" = [0, 2, 3, 4, 8, 16]
`, cache)
	spec, err := ParseBytes("k-sweep.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 6 {
		t.Fatalf("%d points, want 6", len(pts))
	}
	root := spec.SweepDir(t.TempDir())
	dirs := make([]string, len(pts))
	errs := make([]error, len(pts))
	var wg sync.WaitGroup
	for i, p := range pts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dirs[i], errs[i] = Run(context.Background(), p.Spec, root, Options{Stages: []string{"data"}})
		}()
	}
	wg.Wait()
	built := 0
	var first os.FileInfo
	for i, dir := range dirs {
		if errs[i] != nil {
			t.Fatalf("point %s: %v", pts[i].Spec.Name, errs[i])
		}
		raw, err := os.ReadFile(filepath.Join(dir, "data", data.CacheLinkFile))
		if err != nil {
			t.Fatal(err)
		}
		var l data.CacheLink
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatal(err)
		}
		if !l.Reused {
			built++
		}
		fi, err := os.Stat(filepath.Join(dir, "data", "tokens.arrow"))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = fi
		} else if !os.SameFile(first, fi) {
			t.Errorf("%s: tokens.arrow is not the cached build the other points use", dir)
		}
	}
	if built != 1 {
		t.Errorf("%d of 6 points built the dataset, want 1", built)
	}
	entries, err := data.ListCache(cache)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Runs != 6 {
		t.Errorf("cache entries %+v, want one, linked by 6 runs", entries)
	}
}
