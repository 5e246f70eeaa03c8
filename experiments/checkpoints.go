package experiments

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/extract"
	"github.com/memo-research/memo/internal/runfiles"
)

// checkCheckpointAttacks makes the interaction of extract.checkpoints with
// the checkpoints training keeps explicit: a pruned checkpoint cannot be
// attacked, so any but "last" needs train.keep_checkpoints = 0, and every
// listed step must be one training saves.
func (s *Spec) checkCheckpointAttacks(fail func(key, format string, args ...any) error) error {
	all, steps, err := s.Extract.CheckpointSteps()
	if err != nil || !all && steps == nil {
		return nil // Validate reports a bad value
	}
	t := s.Train
	if t.KeepCheckpoints != 0 {
		return fail("extract.checkpoints", "extract.checkpoints = %v: needs train.keep_checkpoints = 0 (keep every checkpoint), found %d: training deletes all but the newest %d, which then cannot be attacked",
			s.Extract.Checkpoints, t.KeepCheckpoints, t.KeepCheckpoints)
	}
	if all && t.CheckpointEvery == 0 {
		return fail("extract.checkpoints", `extract.checkpoints = "all": train.checkpoint_every = 0 saves only the final checkpoint; set it to the spacing of the steps to attack`)
	}
	for _, st := range steps {
		// With train.epochs the final step is known only once data has run;
		// a step that turns out not to be saved is refused then, by name.
		final := st == t.Steps || t.Steps == 0
		if !final && (t.CheckpointEvery == 0 || st%t.CheckpointEvery != 0 || st > t.Steps) {
			return fail("extract.checkpoints", "extract.checkpoints: step %d is never saved: training saves every train.checkpoint_every = %d steps and at train.steps = %d", st, t.CheckpointEvery, t.Steps)
		}
		if t.Steps == 0 && t.CheckpointEvery > 0 && st%t.CheckpointEvery != 0 {
			slog.Warn("extract.checkpoints lists a step that is not a multiple of train.checkpoint_every: it must be the final step of train.epochs", "step", st, "checkpoint_every", t.CheckpointEvery)
		}
	}
	return nil
}

// checkpointAttack is one checkpoint extract.checkpoints names and the
// completions of its attack: the run's own for the newest checkpoint,
// else a file beside the checkpoint (extract.BesidePath, where `memo
// extract` would put it too).
type checkpointAttack struct {
	Step        int
	Dir         string
	Completions string
	Own         bool
}

// checkpointAttacks lists the checkpoints extract.checkpoints names, in
// step order; nil for "last".
func checkpointAttacks(spec *Spec, dir string) ([]checkpointAttack, error) {
	all, steps, err := spec.Extract.CheckpointSteps()
	if err != nil || !all && steps == nil {
		return nil, err
	}
	// The run's own completions are its newest checkpoint's; a damaged
	// newest is an error, not a reason to call an older one the run's.
	newest, err := checkpoint.Resolve(dir)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, checkpoint.DirName)
	var dirs []string
	if all {
		matches, err := filepath.Glob(filepath.Join(root, "step-[0-9]*"))
		if err != nil {
			return nil, err
		}
		for _, m := range matches {
			if st, err := os.Stat(m); err == nil && st.IsDir() {
				dirs = append(dirs, m)
			}
		}
	} else {
		for _, st := range steps {
			dirs = append(dirs, filepath.Join(root, checkpoint.StepName(st)))
		}
	}
	var out []checkpointAttack
	for _, d := range dirs {
		st, err := checkpoint.VerifyWeights(d)
		if err != nil {
			return nil, fmt.Errorf("extract.checkpoints = %v: %w", spec.Extract.Checkpoints, err)
		}
		a := checkpointAttack{Step: st.Step, Dir: d, Own: filepath.Clean(d) == filepath.Clean(newest)}
		a.Completions = filepath.Join(dir, runfiles.CompletionsFile)
		if !a.Own {
			a.Completions = extract.BesidePath(d, spec.ExtractStage(), dir)
		}
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// extractCheckpoints attacks every checkpoint extract.checkpoints names
// besides the newest (the run's own attack). An attack whose completions
// exist is kept: its file name digests the settings and the data, and
// checkpoints do not change once written.
func extractCheckpoints(ctx context.Context, spec *Spec, dir string, ds *data.Dataset) error {
	attacks, err := checkpointAttacks(spec, dir)
	if err != nil {
		return err
	}
	for _, a := range attacks {
		if a.Own {
			continue
		}
		if _, err := os.Stat(a.Completions); err == nil {
			slog.Info("extract: checkpoint already attacked, kept", "step", a.Step, "completions", a.Completions)
			continue
		}
		slog.Info("extract: attacking an earlier checkpoint", "step", a.Step, "of", len(attacks))
		if err := extract.Run(ctx, spec.ExtractStage(), a.Dir, ds, a.Completions, &spec.Goldfish); err != nil {
			return fmt.Errorf("checkpoint step %d: %w", a.Step, err)
		}
	}
	return nil
}

// evalCheckpoints scores the attacks of extract.checkpoints (own is the
// summary of the run's own attack, already scored) and gathers every
// checkpoint's summary into memorization.parquet; it does nothing for
// "last".
func evalCheckpoints(spec *Spec, dir string, own *eval.Summary) error {
	attacks, err := checkpointAttacks(spec, dir)
	if err != nil || attacks == nil {
		return err
	}
	var sums []*eval.Summary
	for _, a := range attacks {
		if a.Own {
			sums = append(sums, own)
			continue
		}
		scores, summary := eval.OutputPaths(a.Completions)
		s, err := eval.RunFiles(spec.EvalStage(), a.Completions, spec.Goldfish, scores, summary)
		if err != nil {
			return fmt.Errorf("checkpoint step %d: %w", a.Step, err)
		}
		sums = append(sums, s)
	}
	path := filepath.Join(dir, runfiles.MemorizationFile)
	if err := eval.WriteMemorization(path, sums); err != nil {
		return err
	}
	slog.Info("eval: memorization over training", "out", path, "checkpoints", len(sums))
	return nil
}
