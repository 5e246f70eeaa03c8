package experiments

import (
	"errors"
	"fmt"
	"strings"

	"github.com/memo-research/memo/internal/rankenv"
)

// launchPlace is this process's rank and world size, read by the code dist
// joins its group with (internal/rankenv: flags, then torchrun's variables,
// then Slurm's), so experiments and dist cannot disagree about which
// process is rank 0. A malformed environment reads as a single process
// here; Run refuses it first (checkLaunchEnv).
func launchPlace() rankenv.Config {
	c, err := rankenv.Discover(rankenv.Unset())
	if err != nil {
		return rankenv.Config{Rank: 0, Size: 1}
	}
	return c
}

// processRank and worldSize say whether this is one of several processes
// and which: only rank 0 keeps the run's books.
func processRank() int { return launchPlace().Rank }

func worldSize() int { return launchPlace().Size }

// checkLaunchEnv fails on a launcher environment that cannot be read (a
// RANK that is not a number, a rank outside the world), which would
// otherwise make every process believe it is rank 0 of 1.
func checkLaunchEnv() error {
	if _, err := rankenv.Discover(rankenv.Unset()); err != nil {
		return fmt.Errorf("launcher environment: %w", err)
	}
	return nil
}

// CheckRanks refuses a spec that cannot be trained on n processes — the
// batch must split evenly into n ranks × train.grad_accum micro-batches,
// and train.shard needs two or more —
// before any stage runs, rather than when the ranks start training.
func (s *Spec) CheckRanks(n int) error {
	if n < 1 {
		return fmt.Errorf("%d processes: want >= 1", n)
	}
	if err := s.Train.CheckShardRanks(n); err != nil {
		key := "train.shard"
		if strings.HasPrefix(err.Error(), "train.shard_group") {
			key = "train.shard_group"
		}
		return &ConfigError{File: s.file, Key: key, Msg: err.Error()}
	}
	accum := max(1, s.Train.GradAccum)
	if s.Train.BatchSize%(n*accum) != 0 {
		return &ConfigError{File: s.file, Key: "train.batch_size",
			Msg: fmt.Sprintf("train.batch_size = %d: must be a multiple of %d processes × train.grad_accum = %d to train on %d processes", s.Train.BatchSize, n, accum, n)}
	}
	return nil
}

// CheckRanksEachPoint is CheckRanks for every point of a sweep, or for
// the spec itself when it is none: a grid over train.batch_size or
// train.grad_accum may hold points n processes cannot split, which a
// sweep found only once each point had started.
func (s *Spec) CheckRanksEachPoint(n int) error {
	if !s.IsSweep() {
		return s.CheckRanks(n)
	}
	points, err := s.Expand()
	if err != nil {
		return err
	}
	for _, p := range points {
		if err := p.Spec.CheckRanks(n); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				named := *ce
				named.File, named.Msg = s.file, "sweep point "+p.Name+": "+ce.Msg
				return &named
			}
			return fmt.Errorf("sweep point %s: %w", p.Name, err)
		}
	}
	return nil
}
