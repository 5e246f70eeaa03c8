package train

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/internal/runfiles"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// captureLog sends slog's default logger to a buffer for the test.
func captureLog(t *testing.T) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

// When the newest checkpoint is damaged, resuming falls back to the
// previous good one and still ends with the weights and metrics of an
// uninterrupted run.
func TestCorruptNewestFallsBackAndResumesExactly(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps = 8
	cfg.CheckpointEvery = 2
	src := textSource{ids: opticks(t, 2000), rows: 24}
	whole := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, whole, Options{}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		corrupt func(dir string) error
	}{
		{"truncated weights", func(dir string) error {
			f := filepath.Join(dir, checkpoint.ModelFile)
			info, err := os.Stat(f)
			if err != nil {
				return err
			}
			return os.Truncate(f, info.Size()/2)
		}},
		{"flipped byte in the moments", func(dir string) error {
			f := filepath.Join(dir, checkpoint.OptimizerFile)
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			b[len(b)-3] ^= 0x40
			return os.WriteFile(f, b, 0o644)
		}},
		{"garbled state.json", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, checkpoint.StateFile), []byte(`{"step": 6, "sha`), 0o644)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{StopAfter: 6}); err != nil {
				t.Fatal(err)
			}
			newest := filepath.Join(dir, checkpoint.DirName, checkpoint.StepName(6))
			if err := c.corrupt(newest); err != nil {
				t.Fatal(err)
			}
			if got, st, err := checkpoint.LatestGood(dir); err != nil || st.Step != 4 {
				t.Fatalf("LatestGood = %s step %d (%v), want the step-4 checkpoint", got, st.Step, err)
			}
			logs := captureLog(t)
			if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(logs.String(), "checkpoint refused") || !strings.Contains(logs.String(), checkpoint.StepName(6)) {
				t.Errorf("resume did not say it refused %s:\n%s", checkpoint.StepName(6), logs)
			}
			if a, b := checkpointDigest(t, whole), checkpointDigest(t, dir); a != b {
				t.Errorf("resumed from the previous good checkpoint, weights differ from an uninterrupted run: %s vs %s", b[:12], a[:12])
			}
			sameMetrics(t, readMetrics(t, whole), readMetrics(t, dir))
		})
	}
}

// When every checkpoint is damaged, resuming fails and names each one,
// rather than silently training afresh over them; no_resume starts afresh.
func TestAllCheckpointsCorruptRefusesToResume(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps = 4
	cfg.CheckpointEvery = 2
	src := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []int{2, 4} {
		if err := os.Truncate(filepath.Join(dir, checkpoint.DirName, checkpoint.StepName(s), checkpoint.ModelFile), 100); err != nil {
			t.Fatal(err)
		}
	}
	err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{})
	if err == nil {
		t.Fatal("resumed although every checkpoint is corrupt")
	}
	t.Logf("resume refused:\n%v", err)
	for _, want := range []string{"cannot resume", checkpoint.StepName(2), checkpoint.StepName(4), checkpoint.ModelFile, "truncated or corrupt", "train.no_resume"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, _, _, err := checkpoint.Load(dir, "cpu"); err == nil || !strings.Contains(err.Error(), checkpoint.StepName(4)) {
		t.Errorf("checkpoint.Load of a run whose checkpoints are all corrupt: %v, want an error naming them", err)
	}
	cfg.NoResume = true
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatalf("no_resume = true over corrupt checkpoints: %v", err)
	}
	if _, st, err := checkpoint.LatestGood(dir); err != nil || st.Step != 4 {
		t.Errorf("after a fresh start, latest good checkpoint is step %d (%v), want 4", st.Step, err)
	}
}

// TestStartDiscardsLaterCheckpoints: a run that starts afresh
// (train.no_resume) or resumes from an older checkpoint than the newest
// removes the checkpoints past its start. Left there, a review's no_resume
// restart pruned its own new checkpoint at once (latest named a removed
// directory) and kept the abandoned run's, which export then offered.
func TestStartDiscardsLaterCheckpoints(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps = 8
	cfg.CheckpointEvery = 2
	cfg.KeepCheckpoints = 2
	src := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	steps := func() []string {
		ents, err := os.ReadDir(filepath.Join(dir, checkpoint.DirName))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			if e.IsDir() {
				names = append(names, e.Name())
			}
		}
		return names
	}
	if got := strings.Join(steps(), " "); got != "step-000006 step-000008" {
		t.Fatalf("checkpoints after 8 steps: %s", got)
	}
	fresh := cfg
	fresh.NoResume = true
	logs := captureLog(t)
	if err := Run(context.Background(), fresh, mcfg, lcfg, src, dir, Options{StopAfter: 3}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps(), " "); got != "step-000002" {
		t.Errorf("checkpoints after a no_resume restart stopped at step 3: %s, want step-000002 alone", got)
	}
	if !strings.Contains(logs.String(), "removed checkpoints past the step this run starts from") {
		t.Errorf("the restart did not say it removed the old checkpoints:\n%s", logs)
	}
	if newest, err := checkpoint.Resolve(dir); err != nil || filepath.Base(newest) != "step-000002" {
		t.Errorf("Resolve after the restart = %s (%v), want step-000002", newest, err)
	}
}

// finishedRun trains a 2-step run into a temporary directory and returns
// its configuration, so that a test can damage the run and start it again.
func finishedRun(t *testing.T) (Config, model.Config, loss.Config, textSource, string) {
	t.Helper()
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps = 2
	src := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	return cfg, mcfg, lcfg, src, dir
}

// A finished run whose metrics.arrow is damaged, run again, mends the
// file at once (the rows it lost are gone, and the log says so), for the
// last checkpoint saves nothing more that would rewrite it.
func TestDamagedMetricsOfFinishedRunRewritten(t *testing.T) {
	cfg, mcfg, lcfg, src, dir := finishedRun(t)
	path := filepath.Join(dir, runfiles.MetricsFile)
	if err := os.Truncate(path, 100); err != nil {
		t.Fatal(err)
	}
	log := captureLog(t)
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if rows, err := runfiles.ReadMetrics(path); err != nil || len(rows) != 0 {
		t.Errorf("metrics.arrow after the rerun: %d rows, %v; want a readable empty table", len(rows), err)
	}
	if !strings.Contains(log.String(), "rows up to this step are lost") {
		t.Errorf("no warning of the lost rows:\n%s", log)
	}
}

// A kill during a checkpoint write leaves its temporary directory (and
// maybe latest's temporary copy); the next start removes those, and only
// those.
func TestStaleTempsRemovedOnStart(t *testing.T) {
	cfg, mcfg, lcfg, src, dir := finishedRun(t)
	root := filepath.Join(dir, checkpoint.DirName)
	stale := []string{".tmp-step-000004-2718281828", ".tmp-step-000002-31415"}
	for _, d := range stale {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, d, checkpoint.ModelFile), []byte("half a file"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	staleFile := ".latest.tmp-12345" // atomicfile's temporary copy of latest
	kept := []string{".tmp-notes", "tmp-step-000004-1", ".tmp-step-000004-x", "mine.txt", ".latest"}
	for _, f := range append([]string{staleFile}, kept...) {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, ".tmp-step-000004-9", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, checkpoint.LatestFile), []byte(".tmp-step-000004-9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kept = append(kept, ".tmp-step-000004-9", checkpoint.StepName(2)) // the latest-named one, and the real checkpoint

	if got := checkpoint.RemoveStaleTemps(dir); len(got) != len(stale)+1 {
		t.Errorf("removed %v, want %d paths", got, len(stale)+1)
	}
	for _, f := range append(stale, staleFile) {
		if _, err := os.Stat(filepath.Join(root, f)); !os.IsNotExist(err) {
			t.Errorf("%s survived: %v", f, err)
		}
	}
	for _, f := range kept {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s, not a leftover of ours, was removed: %v", f, err)
		}
	}

	// And Run does it on start.
	if err := os.WriteFile(filepath.Join(root, checkpoint.LatestFile), []byte(checkpoint.StepName(2)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, stale[0]), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, stale[0])); !os.IsNotExist(err) {
		t.Errorf("Run left %s in place: %v", stale[0], err)
	}
}

// state.json records the thread layout; resuming with another one warns.
func TestThreadCountRecordedAndChangeWarned(t *testing.T) {
	cfg, mcfg, lcfg := smallRun()
	cfg.Steps = 6
	cfg.CheckpointEvery = 2
	cfg.Threads = 2
	src := textSource{ids: opticks(t, 2000), rows: 24}
	dir := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{StopAfter: 2}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, checkpoint.DirName, checkpoint.StepName(2), checkpoint.StateFile))
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	if st["workers"] != 2.0 || st["threads"] != 1.0 {
		t.Errorf("state.json records workers %v, threads %v; want 2 × 1", st["workers"], st["threads"])
	}

	cases := []struct {
		threads int
		warn    bool
	}{{2, false}, {1, true}}
	for _, c := range cases {
		logs := captureLog(t)
		cfg.Threads = c.threads
		if err := Run(context.Background(), cfg, mcfg, lcfg, src, dir, Options{StopAfter: 2}); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logs.String(), "DIFFERENT THREAD COUNT")
		t.Logf("train.threads = %d:\n%s", c.threads, logs)
		if warned != c.warn {
			t.Errorf("resume with train.threads = %d after 2: warned %v, want %v:\n%s", c.threads, warned, c.warn, logs)
		}
	}
	// The checkpoints record every layout the run trained under: none
	// while it kept one (step 4), both after the change at step 4.
	for _, tc := range []struct {
		step int
		want []checkpoint.ThreadLayout
	}{
		{4, nil},
		{6, []checkpoint.ThreadLayout{{FromStep: 0, Workers: 2, Threads: 1}, {FromStep: 4, Workers: 1, Threads: 1}}},
	} {
		st, err := checkpoint.ReadState(filepath.Join(dir, checkpoint.DirName, checkpoint.StepName(tc.step)))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(st.Layouts, tc.want) {
			t.Errorf("step %d: state.json layouts %+v, want %+v", tc.step, st.Layouts, tc.want)
		}
	}
}
