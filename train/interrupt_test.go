package train

import (
	"context"
	"errors"
	"testing"

	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// TestInterruptNamesTheSavedStep (issue 43, case 9): a signal during any
// step, the last included, ends Run with an InterruptedError naming the
// step it saved, never with a bare context error that the command line
// would report without the step.
func TestInterruptNamesTheSavedStep(t *testing.T) {
	const steps = 4
	for _, at := range []int{2, steps} {
		cfg := DefaultConfig()
		cfg.Steps, cfg.Block, cfg.BatchSize, cfg.Seed = steps, 32, 4, 5
		cfg.EvalEvery, cfg.CheckpointEvery = 0, 0
		ctx, cancel := context.WithCancel(context.Background())
		err := Run(ctx, cfg, model.Config{Preset: "tiny", Vocab: 256, Context: 32, Seed: 2},
			loss.Config{Strategy: loss.StrategyHashTable, K: 4, H: 13}, textSource{ids: opticks(t, 4000), rows: 60}, t.TempDir(),
			Options{OnStep: func(m Metric) {
				if int(m.Step) == at {
					cancel() // as SIGTERM does, while the step is in flight
				}
			}})
		cancel()
		var intr *InterruptedError
		if !errors.As(err, &intr) || intr.Step != at || intr.Total != steps {
			t.Errorf("cancelled during step %d: %v; want interrupted at step %d of %d", at, err, at, steps)
		}
	}
}
