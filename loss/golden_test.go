package loss

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// goldenFile is the shape of testdata/goldfish-masks.json, made with
// PyTorch 1.13's own generator and the reference's masking code.
type goldenFile struct {
	TableSeed  int64          `json:"table_seed"`
	TableSize  int            `json:"table_size"`
	TableHead  []float64      `json:"table_head"`
	TableLast  float64        `json:"table_last"`
	BelowOverK map[string]int `json:"table_below_1_over_k"`
	Cases      []goldenCase   `json:"cases"`
}

type goldenCase struct {
	Strategy string  `json:"strategy"`
	K        int     `json:"k"`
	H        int     `json:"h"`
	Start    int     `json:"start"`
	Targets  []int32 `json:"targets"`
	Dropped  []int   `json:"dropped"`
}

func loadGolden(t *testing.T) goldenFile {
	t.Helper()
	// A copy of the vectors ships with the tests, so a clone checks the
	// masks against PyTorch's without anything beside the repository.
	path := filepath.Join("testdata", "goldfish-masks.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden vectors: %v", err)
	}
	var g goldenFile
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	if len(g.Cases) == 0 || len(g.TableHead) == 0 || len(g.BelowOverK) == 0 {
		t.Fatalf("%s: no cases, table head or counts: the file's layout changed", path)
	}
	return g
}

func TestGoldenTable(t *testing.T) {
	g := loadGolden(t)
	if g.TableSeed != TableSeed || g.TableSize != TableSize {
		t.Fatalf("golden table seed/size %d/%d, ours %d/%d", g.TableSeed, g.TableSize, TableSeed, TableSize)
	}
	tb := Table()
	for i, want := range g.TableHead {
		if float64(tb[i]) != want {
			t.Errorf("table[%d] = %.17g, want %.17g", i, tb[i], want)
		}
	}
	if got := float64(tb[len(tb)-1]); got != g.TableLast {
		t.Errorf("table[last] = %.17g, want %.17g", got, g.TableLast)
	}
	for ks, want := range g.BelowOverK {
		var k int
		if _, err := fmt.Sscan(ks, &k); err != nil || k < 1 {
			t.Fatalf("count key %q is not a k", ks)
		}
		thr := float32(1.0 / float64(k))
		got := 0
		for _, v := range tb {
			if v < thr {
				got++
			}
		}
		if got != want {
			t.Errorf("entries below 1/%d: %d, want %d", k, got, want)
		}
		bits := tableDropBits(k)
		n := 0
		for _, w := range bits {
			n += popcount(w)
		}
		if n != want {
			t.Errorf("drop bitset for k=%d has %d bits, want %d", k, n, want)
		}
	}
}

func popcount(w uint64) int {
	n := 0
	for ; w != 0; w &= w - 1 {
		n++
	}
	return n
}

func TestGoldenCases(t *testing.T) {
	g := loadGolden(t)
	for i, c := range g.Cases {
		t.Run(fmt.Sprintf("%02d-%s-k%d-h%d-start%d-n%d", i, c.Strategy, c.K, c.H, c.Start, len(c.Targets)), func(t *testing.T) {
			m, err := New(Config{Strategy: c.Strategy, K: c.K, H: c.H, Start: c.Start})
			if err != nil {
				t.Fatal(err)
			}
			dropped := make([]bool, len(c.Targets))
			m.Mask(c.Targets, dropped)
			got := positions(dropped)
			if !slices.Equal(got, c.Dropped) {
				t.Errorf("dropped %v\nwant    %v", got, c.Dropped)
			}
		})
	}
}

func positions(dropped []bool) []int {
	out := []int{}
	for i, d := range dropped {
		if d {
			out = append(out, i)
		}
	}
	return out
}
