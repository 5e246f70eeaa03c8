package train

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/torchx"
)

// The checkpoint format (layout, state.json, atomic writes, verification)
// is package checkpoint's; what stays here is what only training knows:
// the optimizer's tensors and the thread layout a resume must match.

// loadOptimizer restores the AdamW moments from dir and sets the step count.
func loadOptimizer(opt *adamW, dir string, step int) error {
	if err := checkpoint.ReadInto(filepath.Join(dir, checkpoint.OptimizerFile), opt.state()); err != nil {
		return err
	}
	opt.step = step
	return nil
}

// threadLayout is the workers × libtorch threads a run with train.threads
// = threads computes with (see newWorkers); call it on the loop's thread.
func threadLayout(threads int) (workers, perWorker int) {
	switch {
	case threads > 1:
		return threads, 1
	case threads == 1:
		return 1, 1
	}
	return 1, torchx.Threads()
}

// warnThreadChange warns when a run resumes from dir with another thread
// layout than the checkpoint was written with: the run goes on, but its
// result is no longer bit-identical to an uninterrupted run's.
func warnThreadChange(dir string, st checkpoint.State, threads int) {
	workers, perWorker := threadLayout(threads)
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
