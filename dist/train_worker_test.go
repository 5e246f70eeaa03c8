package dist

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memo-research/memo/data"
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
	b := data.Opticks()
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

// lazyOpticks serves opticksSource's epochs a row at a time (a
// train.EpochSource, as experiments serves a dataset), making each row
// when it is read, and records the global stream position of every row
// read.
type lazyOpticks struct {
	opticksSource
	seed  int64 // train.seed: epoch e is read with seed+e
	reads []int64
}

func (s *lazyOpticks) Epoch(block int, seed int64) (train.Epoch, error) {
	shift := int(seed%int64(s.rows)+int64(s.rows)) % s.rows
	return &lazyEpoch{src: s, block: block, shift: shift, first: (seed - s.seed) * int64(s.rows)}, nil
}

// lazyEpoch is TrainRows(block, seed) row by row: row i is the
// consecutive row (i+shift) mod rows of the text.
type lazyEpoch struct {
	src          *lazyOpticks
	block, shift int
	first        int64 // global position of row 0
}

func (e *lazyEpoch) Len() int { return e.src.rows }

func (e *lazyEpoch) Row(i int, dst []int32) error {
	if i < 0 || i >= e.src.rows || len(dst) != e.block+1 {
		return fmt.Errorf("row %d of %d into %d ids (block %d)", i, e.src.rows, len(dst), e.block)
	}
	e.src.reads = append(e.src.reads, e.first+int64(i))
	k := (i + e.shift) % e.src.rows
	for j := range dst {
		dst[j] = e.src.ids[(k*e.block+j)%len(e.src.ids)]
	}
	return nil
}

// readsFile is where rank writes the positions it read (MEMO_DIST_READS).
func readsFile(dir string, rank int) string {
	return filepath.Join(dir, fmt.Sprintf("reads-rank-%d.txt", rank))
}

// readReads parses a readsFile.
func readReads(path string) ([]int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int64
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// parityDevice is where the parity runs train, one process and the ranks
// alike: MEMO_DIST_DEVICE, default the CPU. "cuda" on a machine with one GPU
// puts every rank on it over Gloo (scripts/gpu/issue41-next.sh, part g).
func parityDevice() string {
	if d := os.Getenv("MEMO_DIST_DEVICE"); d != "" {
		return d
	}
	return "cpu"
}

// parityTol is how near the ranks' losses and weights must come to one
// process's: on the CPU, rounding (1e-6 relative); on a GPU 1e-4, since
// CUDA's kernels choose their reductions by shape and each rank's half
// batch has another shape than the whole.
func parityTol() float64 {
	if parityDevice() == "cpu" {
		return 1e-6
	}
	return 1e-4
}

// parityRun is the training run shared by the single-process and the
// multi-rank side of TestTrainParity (steps, mask strategy, accumulation
// and train.shard from MEMO_DIST_STEPS, MEMO_DIST_MASK, MEMO_DIST_ACCUM and
// MEMO_DIST_SHARD in workers).
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
	cfg.Device = parityDevice()
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
	cfg.Shard = os.Getenv("MEMO_DIST_SHARD")
	cfg.ShardGroup = envInt("MEMO_DIST_SHARD_GROUP", 0)
	dpFromEnv(&cfg)
	if err := tuneFromEnv(&cfg); err != nil { // dplora_test.go
		return err
	}
	if a := os.Getenv("MEMO_DIST_ARCH"); a == "untied" {
		mcfg.Untied = true
	} else {
		mcfg.Arch = a
	}
	if os.Getenv("MEMO_DIST_LORA") != "" {
		cfg.LoRA = loraParity() // lora_test.go
	}
	opts := train.Options{Group: g, StopAfter: envInt("MEMO_DIST_STOP_AFTER", 0)}
	// MEMO_DIST_INTERRUPT_AT=N: rank 1 alone is interrupted (as by a
	// signal) during step N; the ranks agree to stop after it.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if at := envInt("MEMO_DIST_INTERRUPT_AT", 0); at > 0 && g.Rank() == 1 {
		opts.OnStep = func(m train.Metric) {
			if int(m.Step) == at {
				cancel()
			}
		}
	}
	var rep replicaRecorder // dplora_test.go
	if os.Getenv(replicasEnv) != "" {
		opts.OnEnd = rep.record
	}
	// With MEMO_DIST_READS the rows are read lazily and the positions this
	// rank read are written there.
	readsDir := os.Getenv("MEMO_DIST_READS")
	var from train.Source = src
	lazy := &lazyOpticks{opticksSource: src, seed: cfg.Seed}
	if readsDir != "" {
		from = lazy
	}
	if err := train.Run(ctx, cfg, mcfg, lcfg, from, os.Getenv("MEMO_DIST_DIR"), opts); err != nil {
		return err
	}
	if err := rep.write(g.Rank()); err != nil {
		return err
	}
	if readsDir != "" {
		var b strings.Builder
		for _, p := range lazy.reads {
			fmt.Fprintln(&b, p)
		}
		if err := os.WriteFile(readsFile(readsDir, g.Rank()), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return g.Close()
}
