package train

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/sugarme/gotch/ts"
)

// Writing a checkpoint. The checkpoint format (layout, state.json, atomic
// writes, verification) is package checkpoint's; what is here is what only
// training knows: the state it records and the thread layout a resume must
// match. Reading one back is resume.go's.

// checkpoint writes metrics.arrow and a checkpoint of the current step (rank 0).
// The checkpoint holds the whole model: the strategy gives it to rank 0
// while it writes.
func (l *loop) checkpoint() error { return l.strat.withWeights(l.writeCheckpoint) }

func (l *loop) writeCheckpoint() error {
	l.lastSaved = l.step
	state, done, err := l.optimizerState()
	if err != nil {
		return fmt.Errorf("checkpoint step %d: %w", l.step, err)
	}
	defer done()
	if l.rank != 0 {
		return nil
	}
	if err := runfiles.WriteMetrics(filepath.Join(l.runDir, runfiles.MetricsFile), l.metrics); err != nil {
		return err
	}
	st := checkpoint.State{Step: l.step, TotalSteps: l.total, DataPosition: l.pos, RowsPerEpoch: l.stream.perEpoch,
		Block: l.block, StreamSeed: l.cfg.Seed, ModelSeed: l.g.Config().Seed, WorldSize: l.size, ElapsedS: l.elapsed, Dataset: l.dataset}
	st.Workers, st.Threads = ThreadLayout(l.cfg.Threads)
	st.Layouts = l.layouts
	if st.DP, err = l.dpCheckpoint(); err != nil {
		return fmt.Errorf("checkpoint step %d: %w", l.step, err)
	}
	dir, err := l.save(state, st) // lora.go
	if err != nil {
		return fmt.Errorf("checkpoint step %d: %w", l.step, err)
	}
	slog.Debug("checkpoint", "dir", dir)
	return nil
}

// optimizerState is the AdamW moments to save, on rank 0, and what frees
// them. A sharded optimizer is gathered into full-size moments on rank 0
// (every rank takes part), so the checkpoint is the one an unsharded run
// writes and reloads on any number of ranks and any train.shard.
func (l *loop) optimizerState() ([]checkpoint.Named, func(), error) {
	o := l.opt
	if o.plan == nil {
		if l.rank != 0 {
			return nil, func() {}, nil
		}
		return o.state(), func() {}, nil
	}
	var m, v []*ts.Tensor
	if l.rank == 0 {
		m, v = fullMoments(o.params, o.plan)
	}
	done := func() { dropAll(m); dropAll(v) }
	if err := o.plan.gatherLocal(l.sharder, m, o.m[0]); err != nil {
		done()
		return nil, nil, fmt.Errorf("gather the optimizer shards: %w", err)
	}
	if err := o.plan.gatherLocal(l.sharder, v, o.v[0]); err != nil {
		done()
		return nil, nil, fmt.Errorf("gather the optimizer shards: %w", err)
	}
	if l.rank != 0 {
		return nil, done, nil
	}
	return namedMoments(o.params, m, v), done, nil
}

// threadLayout is the workers × libtorch threads a run with train.threads
// = threads computes with (see newWorkers); call it on the loop's thread.
// ThreadLayout is the layout, model replicas × libtorch threads in each,
// that training with train.threads = threads runs under in this process,
// as checkpoints record it (checkpoint.State's Workers and Threads).
func ThreadLayout(threads int) (workers, perWorker int) {
	switch {
	case threads > 1:
		return threads, 1
	case threads == 1:
		return 1, 1
	}
	return 1, torchx.Threads()
}
