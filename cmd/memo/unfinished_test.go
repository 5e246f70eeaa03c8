package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunOutputsNeedAFinishedRun: a run directory whose training stopped
// early, or whose config.toml is gone, gets no completions, scores or
// summary of its own from extract and eval (a probe saw both write them,
// from step 17 of 20 and from the default settings): one line, exit 2,
// nothing written; the stopped run's checkpoint can still be attacked by
// name, beside it.
func TestRunOutputsNeedAFinishedRun(t *testing.T) {
	exe := buildMemo(t)
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, run string)
		remove []string // the outputs the run has not made yet
		cmds   [][]string
		want   string
	}{
		{"training interrupted", stopTraining, []string{"completions.arrow", "scores.parquet", "summary.json"},
			[][]string{{"extract", "runs/tiny"}, {"extract", "--scan", "runs/tiny"}}, "runs/tiny has not finished training (manifest.json: train failed: interrupted at step 3 of 4"},
		{"config.toml gone", func(t *testing.T, run string) {
			if err := os.Remove(filepath.Join(run, "config.toml")); err != nil {
				t.Fatal(err)
			}
		}, []string{"scores.parquet", "summary.json"},
			[][]string{{"extract", "runs/tiny"}, {"eval", "runs/tiny"}, {"report", "runs/tiny"}}, "runs/tiny/config.toml: missing from a run directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := trainedRun(t)
			run := filepath.Join(dir, "runs", "tiny")
			for _, f := range tc.remove {
				if err := os.Remove(filepath.Join(run, f)); err != nil {
					t.Fatal(err)
				}
			}
			tc.damage(t, run)
			before := treeSums(t, run)
			memo := memoIn(t, exe, dir)
			for _, args := range tc.cmds {
				r := memo(args...)
				if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], tc.want) {
					t.Errorf("memo %s: exit %d, stderr %q; want 2 and one line containing %q", strings.Join(args, " "), r.code, r.stderr, tc.want)
				}
			}
			if after := treeSums(t, run); len(after) != len(before) {
				t.Errorf("the refused commands wrote %d files into the run; want none", len(after)-len(before))
			}
		})
	}
	// export (and score, generate, audit, through the same call) go on
	// with the stopped run's newest checkpoint, saying it is not a
	// finished model; named by its step directory it says nothing.
	t.Run("export says the model is unfinished", func(t *testing.T) {
		dir := trainedRun(t)
		run := filepath.Join(dir, "runs", "tiny")
		stopTraining(t, run)
		memo := memoIn(t, exe, dir)
		r := memo("export", "runs/tiny", "out")
		if r.code != 0 || !strings.Contains(r.stderr, "export: the run has not finished training") {
			t.Errorf("memo export of a stopped run: exit %d, stderr %q; want 0 and a warning", r.code, r.stderr)
		}
		steps, _ := filepath.Glob(filepath.Join(run, "checkpoints", "step-*"))
		if len(steps) == 0 {
			t.Fatal("no checkpoint")
		}
		if r := memo("export", steps[len(steps)-1], "out2"); r.code != 0 || strings.Contains(r.stderr, "not finished") {
			t.Errorf("memo export of a named checkpoint: exit %d, stderr %q; want 0 and no warning", r.code, r.stderr)
		}
	})
	t.Run("the stopped run's checkpoint by name", func(t *testing.T) {
		dir := trainedRun(t)
		run := filepath.Join(dir, "runs", "tiny")
		stopTraining(t, run)
		steps, err := filepath.Glob(filepath.Join(run, "checkpoints", "step-*"))
		if err != nil || len(steps) == 0 {
			t.Fatalf("no checkpoint in %s: %v", run, err)
		}
		r := memoIn(t, exe, dir)("extract", steps[len(steps)-1])
		if r.code != 0 || !strings.Contains(r.stdout, filepath.Base(steps[len(steps)-1])+".") {
			t.Errorf("memo extract %s: exit %d, stdout %q, stderr %q; want 0 and completions beside the checkpoint", steps[len(steps)-1], r.code, r.stdout, r.stderr)
		}
	})
}

// stopTraining marks run's training as stopped early in its manifest, as
// an interrupted `memo run` leaves it.
func stopTraining(t *testing.T, run string) {
	t.Helper()
	path := filepath.Join(run, "manifest.json")
	m := readJSON[map[string]any](t, path)
	for _, s := range m["stages"].([]any) {
		if st := s.(map[string]any); st["name"] == "train" {
			st["status"], st["error"] = "failed", "interrupted at step 3 of 4: context canceled"
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
