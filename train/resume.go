package train

// Resuming: finding the checkpoint to resume from (or init_from) on rank 0,
// loading it, and handing the starting state to the other ranks.

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/sugarme/gotch/ts"
)

// restore resumes from runDir's newest good checkpoint, or loads init_from.
func (l *loop) restore() error {
	if l.rank == 0 {
		checkpoint.RemoveStaleTemps(l.runDir)
	}
	resumed, err := l.resumeFrom()
	if err != nil {
		return err
	}
	// Checkpoints past where this run starts belong to no trajectory it
	// continues (checkpoint.DiscardAfter).
	removed, err := checkpoint.DiscardAfter(l.runDir, l.step)
	if len(removed) > 0 {
		why := "they were refused and the run resumed from an older one"
		if l.cfg.NoResume {
			why = "train.no_resume = true starts the run afresh"
		}
		slog.Warn("removed checkpoints past the step this run starts from", "step", l.step, "removed", strings.Join(removed, ", "), "why", why)
	}
	if err != nil {
		return err
	}
	if resumed || l.cfg.InitFrom == "" {
		return nil
	}
	return l.initFrom()
}

// resumeFrom resumes from runDir's newest good checkpoint, unless
// train.no_resume is set; resumed is false when it did not (l.step is 0).
func (l *loop) resumeFrom() (resumed bool, err error) {
	if !l.cfg.NoResume {
		dir, st, err := checkpoint.ResumePoint(l.runDir)
		if err != nil {
			return false, err
		}
		if dir != "" {
			saved, err := checkpoint.ReadConfig(dir)
			if err != nil {
				return false, err
			}
			if saved != l.g.Config() {
				return false, badinput.Errorf("%s holds a checkpoint of another model (%v, this run: %v): use a new run directory or train.no_resume = true", l.runDir, saved, l.g.Config())
			}
			if st.Block != l.block || st.TotalSteps != l.total || st.StreamSeed != l.cfg.Seed {
				return false, badinput.Errorf("checkpoint %s was made with block %d, %d steps, seed %d; this run has %d, %d, %d: use a new run directory or train.no_resume = true",
					dir, st.Block, st.TotalSteps, st.StreamSeed, l.block, l.total, l.cfg.Seed)
			}
			if st.Dataset != "" && l.dataset != "" && st.Dataset != l.dataset {
				// The data was built again with other documents (a source
				// file changed, a relative path read elsewhere): resuming
				// would attack a model of the old data with the new
				// targets and controls.
				return false, badinput.Errorf("checkpoint %s was trained on another dataset (digest %.12s; this run's data/ is %.12s, built since): train afresh in a new run directory (another --runs, or move this one aside), or restore the data it was trained on",
					dir, st.Dataset, l.dataset)
			}
			if err := l.strat.bindWhole(); err != nil {
				return false, err
			}
			if err := l.loadWeights(dir, st); err != nil { // lora.go
				return false, err
			}
			l.loadedWeights = true
			if err := l.dpResume(st); err != nil {
				return false, fmt.Errorf("%s: %w", dir, err)
			}
			if err := l.loadOptimizer(dir, st.Step); err != nil {
				return false, err
			}
			l.step, l.pos, l.elapsed, l.lastSaved = st.Step, st.DataPosition, st.ElapsedS, st.Step
			warnThreadChange(dir, st, l.cfg.Threads)
			l.layouts = resumedLayouts(st, l.cfg.Threads)
			metricsPath := filepath.Join(l.runDir, runfiles.MetricsFile)
			old, err := runfiles.ReadMetrics(metricsPath)
			for _, m := range old {
				if m.Step <= int64(l.step) {
					l.metrics = append(l.metrics, m)
				}
			}
			if err != nil && l.rank == 0 {
				// Rewritten now, not at the next save: a finished run
				// resumed only to mend its outputs saves nothing more,
				// and the damaged file would fail the report.
				slog.Warn("metrics.arrow unreadable: its rows up to this step are lost (memo run --force trains again to get them back); starting it afresh",
					"step", l.step, "err", err)
				if err := runfiles.WriteMetrics(metricsPath, l.metrics); err != nil {
					return false, err
				}
			}
			if l.rank == 0 {
				if err := checkpoint.MarkLatest(dir); err != nil {
					return false, err
				}
				slog.Info("resuming", "checkpoint", dir, "step", l.step)
			}
			return true, nil
		}
	}
	return false, nil
}

// initFrom loads train.init_from's weights into a run that starts afresh.
func (l *loop) initFrom() error {
	dir, saved, err := checkpoint.ReadSource(l.cfg.InitFrom)
	if err != nil {
		return fmt.Errorf("train.init_from = %q: %w", l.cfg.InitFrom, err)
	}
	if !saved.SameNetwork(l.g.Config()) {
		return badinput.Errorf("train.init_from = %q: its model (%v) differs from this run's (%v)", l.cfg.InitFrom, saved, l.g.Config())
	}
	if err := l.strat.bindWhole(); err != nil {
		return err
	}
	if err := checkpoint.LoadSourceWeights(l.g, dir); err != nil {
		return fmt.Errorf("train.init_from = %q: %w", l.cfg.InitFrom, err)
	}
	l.loadedWeights = true
	if l.rank == 0 {
		slog.Info("initialised from", "checkpoint", dir)
	}
	return nil
}

// syncStart makes every rank start where rank 0 does. Rank 0 alone read the
// checkpoint (or init_from); its step, data position and Adam step count,
// weights and moments are broadcast (weights that rank 0 did not read are
// the seed's, the same on every rank), so a run resumes with any world size
// and needs no file system shared between machines. The run's length and
// epoch size travel along as a check that all ranks see the same data.
// The strategy gives each rank its weights (strategy.start).
func (l *loop) syncStart() error {
	loaded := int64(0)
	if l.loadedWeights {
		loaded = 1
	}
	ints := ts.MustOfSlice([]int64{int64(l.step), l.pos, int64(l.opt.step), int64(l.total), int64(l.stream.perEpoch), loaded})
	defer ints.MustDrop()
	elapsed := ts.MustOfSlice([]float64{l.elapsed})
	defer elapsed.MustDrop()
	if err := l.group.Broadcast([]*ts.Tensor{ints, elapsed}, 0); err != nil {
		return fmt.Errorf("broadcast the starting state from rank 0: %w", err)
	}
	v := ints.Int64Values()
	if l.opt.plan == nil && v[2] > 0 {
		if err := l.group.Broadcast(append(append([]*ts.Tensor{}, l.opt.m...), l.opt.v...), 0); err != nil {
			return fmt.Errorf("broadcast the optimizer state from rank 0: %w", err)
		}
	}
	if err := l.strat.start(v[5] == 1); err != nil {
		return err
	}
	if p := l.opt.plan; p != nil && v[2] > 0 {
		// Rank 0 read full moments from the checkpoint (written by any
		// number of ranks): each rank receives its range of them.
		m, vv := l.loaded[0], l.loaded[1]
		defer func() { dropAll(m); dropAll(vv); l.loaded = [2][]*ts.Tensor{} }()
		if err := p.scatterLocal(l.sharder, m, l.opt.m[0]); err != nil {
			return fmt.Errorf("scatter the optimizer state from rank 0: %w", err)
		}
		if err := p.scatterLocal(l.sharder, vv, l.opt.v[0]); err != nil {
			return fmt.Errorf("scatter the optimizer state from rank 0: %w", err)
		}
	}
	if int(v[3]) != l.total || int(v[4]) != l.stream.perEpoch {
		return fmt.Errorf("rank 0 trains %d steps over %d rows per epoch, this rank %d steps over %d rows: the ranks read different data or configs",
			v[3], v[4], l.total, l.stream.perEpoch)
	}
	l.step, l.pos, l.opt.step = int(v[0]), v[1], int(v[2])
	l.lastSaved = l.step
	l.elapsed = elapsed.Float64Values()[0]
	return nil
}

// loadOptimizer restores the AdamW moments from dir and sets the step
// count. A sharded optimizer's full moments are held in l.loaded until
// syncStart scatters them to the ranks.
func (l *loop) loadOptimizer(dir string, step int) error {
	state := l.opt.state
	if l.opt.plan != nil {
		m, v := fullMoments(l.opt.params, l.opt.plan)
		l.loaded = [2][]*ts.Tensor{m, v}
		state = func() []checkpoint.Named { return namedMoments(l.opt.params, m, v) }
	}
	if err := checkpoint.ReadInto(filepath.Join(dir, checkpoint.OptimizerFile), state()); err != nil {
		return err
	}
	l.opt.step = step
	return nil
}

// warnThreadChange warns when a run resumes from dir with another thread
// layout than the checkpoint was written with: the run goes on, but its
// result is no longer bit-identical to an uninterrupted run's.
// resumedLayouts is State.Layouts for a run resumed from st with
// train.threads = threads: st's, with this layout appended when it is
// another (nil while the run keeps one layout).
func resumedLayouts(st checkpoint.State, threads int) []checkpoint.ThreadLayout {
	workers, perWorker := ThreadLayout(threads)
	layouts := st.Layouts
	if st.Workers == 0 || st.Workers == workers && st.Threads == perWorker {
		return layouts
	}
	if len(layouts) == 0 {
		layouts = []checkpoint.ThreadLayout{{FromStep: 0, Workers: st.Workers, Threads: st.Threads}}
	}
	return append(slices.Clone(layouts), checkpoint.ThreadLayout{FromStep: st.Step, Workers: workers, Threads: perWorker})
}

func warnThreadChange(dir string, st checkpoint.State, threads int) {
	workers, perWorker := ThreadLayout(threads)
	switch {
	case st.Workers == 0:
		slog.Warn("checkpoint records no thread count: cannot check that this resume keeps the run bit-identical (it does only with the same count)",
			"checkpoint", dir)
	case st.Workers != workers || st.Threads != perWorker:
		slog.Warn(fmt.Sprintf("RESUMING WITH A DIFFERENT THREAD COUNT: the checkpoint was written by %d worker(s) × %d libtorch thread(s), this run uses %d × %d (train.threads = %d). "+
			"Training continues, but the result will not be bit-identical to an uninterrupted run: determinism holds only for the same thread count.",
			st.Workers, st.Threads, workers, perWorker, threads),
			"checkpoint", dir)
	}
}
