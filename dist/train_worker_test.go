package dist

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
	"github.com/memo-research/memo/train"
)

// opticksSource serves byte-level rows (vocabulary 256) of the Opticks text
// that ships with Go, held in memory.
type opticksSource struct {
	ids  []int32
	rows int
}

func newOpticks(n, rows int) (opticksSource, error) {
	b, err := os.ReadFile(filepath.Join(runtime.GOROOT(), "src", "testdata", "Isaac.Newton-Opticks.txt"))
	if err != nil {
		return opticksSource{}, err
	}
	if len(b) < 2000+n {
		return opticksSource{}, fmt.Errorf("Opticks text has %d bytes, need %d", len(b), 2000+n)
	}
	ids := make([]int32, n)
	for i := range ids {
		ids[i] = int32(b[2000+i]) // past the Gutenberg header
	}
	return opticksSource{ids: ids, rows: rows}, nil
}

// TrainRows cuts consecutive rows of block+1 ids and rotates their order by
// the seed, so each epoch sees another order.
func (s opticksSource) TrainRows(block int, seed int64) ([][]int32, error) {
	rows := make([][]int32, s.rows)
	for i := range rows {
		r := make([]int32, block+1)
		for j := range r {
			r[j] = s.ids[(i*block+j)%len(s.ids)]
		}
		rows[i] = r
	}
	k := int(seed%int64(len(rows))+int64(len(rows))) % len(rows)
	return append(rows[k:], rows[:k]...), nil
}

func (s opticksSource) ValRows(block int) ([][]int32, error) {
	rows, err := s.TrainRows(block, 0)
	return rows[:2], err
}

// parityRun is the training run shared by the single-process and the
// two-rank side of TestTrainParity (steps, mask strategy and accumulation
// from MEMO_DIST_STEPS, MEMO_DIST_MASK and MEMO_DIST_ACCUM in workers).
func parityRun(steps int, strategy string, accum int) (train.Config, model.Config, loss.Config) {
	cfg := train.DefaultConfig()
	cfg.Steps = steps
	cfg.Block = 32
	cfg.BatchSize = 8
	cfg.GradAccum = accum
	cfg.WarmupSteps = 3
	cfg.EvalEvery = 10
	cfg.CheckpointEvery = steps
	cfg.KeepCheckpoints = 0
	cfg.LogEvery = 5
	cfg.Seed = 7
	cfg.Threads = 1
	mcfg := model.Config{Preset: "nano", Vocab: 256, Context: 64, Seed: 3}
	// Hash masks keep different numbers of targets per row: the ranks must
	// normalise by the global micro-batch's kept count to match one process.
	lcfg := loss.Config{Strategy: strategy, K: 4}
	if strategy == loss.StrategyHashTable {
		lcfg.H = 13
	}
	return cfg, mcfg, lcfg
}

func workerTrain(g *Group) error {
	src, err := newOpticks(4000, 64)
	if err != nil {
		return err
	}
	mask := os.Getenv("MEMO_DIST_MASK")
	if mask == "" {
		mask = loss.StrategyStatic
	}
	cfg, mcfg, lcfg := parityRun(envInt("MEMO_DIST_STEPS", 20), mask, envInt("MEMO_DIST_ACCUM", 1))
	cfg.CheckpointEvery = envInt("MEMO_DIST_CHECKPOINT_EVERY", cfg.CheckpointEvery)
	opts := train.Options{Group: g, StopAfter: envInt("MEMO_DIST_STOP_AFTER", 0)}
	if err := train.Run(context.Background(), cfg, mcfg, lcfg, src, os.Getenv("MEMO_DIST_DIR"), opts); err != nil {
		return err
	}
	return g.Close()
}
