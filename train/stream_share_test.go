package train

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sugarme/gotch/ts"
)

// countingSource is an EpochSource over a textSource's rows that records
// the global stream position of every row read through Epoch.Row.
type countingSource struct {
	textSource
	seed  int64   // the run's train.seed: epoch e is read with seed+e
	reads []int64 // global positions, in the order read
}

func (c *countingSource) Epoch(block int, seed int64) (Epoch, error) {
	rows, err := c.TrainRows(block, seed)
	if err != nil {
		return nil, err
	}
	return &countingEpoch{rows: rows, first: (seed - c.seed) * int64(len(rows)), src: c}, nil
}

type countingEpoch struct {
	rows  [][]int32
	first int64 // global position of row 0
	src   *countingSource
}

func (e *countingEpoch) Len() int { return len(e.rows) }

func (e *countingEpoch) Row(i int, dst []int32) error {
	if i < 0 || i >= len(e.rows) {
		return fmt.Errorf("row %d of %d", i, len(e.rows))
	}
	e.src.reads = append(e.src.reads, e.first+int64(i))
	copy(dst, e.rows[i])
	return nil
}

// soloGroup claims to be rank Rank of Size but talks to no one: its
// collectives leave the tensors as they are. A run on it trains on its
// own share alone, which is enough to see which rows the rank reads.
type soloGroup struct{ rank, size int }

func (g soloGroup) Rank() int                                { return g.rank }
func (g soloGroup) Size() int                                { return g.size }
func (g soloGroup) AllReduceSum(t []*ts.Tensor) error        { return nil }
func (g soloGroup) Broadcast(t []*ts.Tensor, root int) error { return nil }

// TestRankReadsOnlyItsShare: with 2 ranks, a global batch of 8 and 2
// micro-batches, rank r reads rows a*4 + 2r and a*4 + 2r + 1 of each
// micro-batch a, each once, and no other row: over 5 steps (40 rows, across
// three epochs of 12) each rank reads 20 rows and together they read every
// position once.
func TestRankReadsOnlyItsShare(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps, cfg.BatchSize, cfg.GradAccum, cfg.EvalEvery, cfg.CheckpointEvery = 5, 8, 2, 0, 0
	const size = 2
	gm, micro := cfg.BatchSize/cfg.GradAccum, cfg.BatchSize/cfg.GradAccum/size
	ids := opticks(t, 2000)
	var all []int64
	for rank := 0; rank < size; rank++ {
		src := &countingSource{textSource: textSource{ids: ids, rows: 12}, seed: cfg.Seed}
		opts := Options{Group: soloGroup{rank: rank, size: size}}
		if err := Run(context.Background(), cfg, mcfg, lcfg, src, t.TempDir(), opts); err != nil {
			t.Fatalf("rank %d: %v", rank, err)
		}
		var want []int64
		for p := int64(0); p < int64(cfg.Steps*cfg.BatchSize); p++ {
			if in := int(p) % gm; in >= rank*micro && in < (rank+1)*micro {
				want = append(want, p)
			}
		}
		if !slices.Equal(src.reads, want) {
			t.Errorf("rank %d read rows %v, want %v", rank, src.reads, want)
		}
		all = append(all, src.reads...)
	}
	slices.Sort(all)
	for i, p := range all {
		if p != int64(i) {
			t.Fatalf("the ranks together read positions %v, want each of 0..%d once", all, cfg.Steps*cfg.BatchSize-1)
		}
	}
}
