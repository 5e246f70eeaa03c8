package extract

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
)

// TestBenchScanAgreesWithGeneration runs the scan bench on random windows
// of a random model with most suffixes planted from generation: the
// scan's matched length must be generation's on every window, with exact,
// partial and no matches all among them (batches of uneven sizes on both
// sides).
func TestBenchScanAgreesWithGeneration(t *testing.T) {
	for _, tt := range []struct {
		name        string
		batch, genB int
	}{{"batches 5 and 7", 5, 7}, {"one batch", 40, 0}} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := BenchScan(ScanBenchConfig{
				BenchConfig: BenchConfig{Model: model.Config{Preset: "nano", Vocab: 97, Seed: 3}, Prefix: 6, Suffix: 9,
					Batch: tt.batch, Threads: 1, Seed: 5},
				Sequences: 40, Generate: 30, GenBatch: tt.genB, Plant: 0.8,
			})
			if err != nil {
				t.Fatal(err)
			}
			g := res.Generation
			if g == nil {
				t.Fatal("no generation result with Generate 30")
			}
			t.Logf("scan %.0f seq/s, generation %.0f seq/s; planted %d, exact %d, scan exact %d, mean matched %.2f",
				res.SequencesPerS, g.SequencesPerS, g.Planted, g.Exact, res.Exact, res.MeanMatched)
			if g.Differ != 0 || g.DifferExact != 0 {
				t.Errorf("scan and generation differ on %d windows (exact match on %d): %v", g.Differ, g.DifferExact, g.FirstDiffer)
			}
			if g.Planted < 15 || g.Exact == 0 || g.Exact == g.Planted || res.MeanMatched <= 0 {
				t.Errorf("planted %d, exact %d, mean matched %.2f: want exact and partial matches to compare", g.Planted, g.Exact, res.MeanMatched)
			}
			if res.Exact < g.Exact || res.Sequences != 40 || g.Sequences != 30 || res.TokensPerS <= 0 || g.TokensPerS <= 0 || g.ScanSpeedup <= 0 {
				t.Errorf("result %+v, generation %+v: counts or rates wrong", res, *g)
			}
		})
	}
}

// TestBenchScanOnARunsData scans windows of a trained run's documents
// with its own model: matched lengths come from what the model learnt,
// not planting, and agree with generation's.
func TestBenchScanOnARunsData(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a dataset and trains a model")
	}
	dir, _, _ := trainTiny(t, func(d *data.Config) {
		d.Targets, d.Controls, d.Validation, d.Background = 6, 6, 2, 4
		d.Repetitions, d.ChunkTokens, d.MinTokens = 16, 64, 40
	}, func(c *train.Config) {
		c.Steps, c.Block, c.BatchSize, c.WarmupSteps, c.LR = 300, 64, 8, 5, 3e-3
	})
	res, err := BenchScan(ScanBenchConfig{
		BenchConfig: BenchConfig{ModelDir: dir, Prefix: 16, Suffix: 16, Batch: 8, Threads: 1, Seed: 1},
		Sequences:   16, Data: dir, Generate: 16,
	})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Generation
	t.Logf("exact %d of %d, mean matched %.2f", res.Exact, res.Sequences, res.MeanMatched)
	if g.Differ != 0 || g.Planted != 0 {
		t.Errorf("differ on %d windows %v (planted %d, want 0)", g.Differ, g.FirstDiffer, g.Planted)
	}
	if res.MeanMatched < 1 {
		t.Errorf("mean matched %.2f tokens on the training data: the model learnt nothing, or the windows are not its data", res.MeanMatched)
	}
	_, err = BenchScan(ScanBenchConfig{
		BenchConfig: BenchConfig{ModelDir: dir, Prefix: 16, Suffix: 16, Batch: 8, Threads: 1, Seed: 1},
		Sequences:   100000, Data: dir,
	})
	if !badinput.Is(err) {
		t.Errorf("more windows than the data holds: err %v, want bad input", err)
	}
}

// TestPlant checks planting: the window is copied (the source untouched),
// its prefix kept and its tokens in the vocabulary, and fraction 0 plants
// nothing. (That a planted suffix is generation's up to its cut shows in
// TestBenchScanAgreesWithGeneration's exact and partial matches.)
func TestPlant(t *testing.T) {
	src := [][]int32{{1, 2, 3, 4, 5, 6}, {7, 8, 9, 10, 11, 12}, {1, 1, 1, 1, 1, 1}}
	gen := [][]int32{{9, 9, 9, 9}, {0, 1, 2, 3}, {4, 4, 4, 4}}
	for _, frac := range []float64{0, 1} {
		windows := slices.Clone(src)
		n := plant(rand.New(rand.NewPCG(1, 2)), windows, gen, 2, frac, 13)
		if want := int(frac) * len(src); n != want {
			t.Errorf("fraction %g: planted %d, want %d", frac, n, want)
		}
		for i, w := range windows {
			if frac == 0 {
				if !slices.Equal(w, src[i]) {
					t.Errorf("fraction 0: window %d changed to %v", i, w)
				}
				continue
			}
			for _, id := range w[2:] {
				if id < 0 || id >= 13 {
					t.Errorf("window %d: %v holds a token outside the vocabulary [0, 13)", i, w)
				}
			}
			if !slices.Equal(w[:2], src[i][:2]) {
				t.Errorf("window %d: prefix changed: %v", i, w)
			}
			if &w[0] == &src[i][0] {
				t.Errorf("window %d planted in place: the source changed", i)
			}
		}
	}
}
