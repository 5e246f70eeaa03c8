package experiments

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runlock"
	"github.com/memo-research/memo/internal/torchx"
)

func TestMain(m *testing.M) {
	torchx.Init(2, 1)
	os.Exit(m.Run())
}

// TestSmokeEndToEnd runs exp/smoke.toml through every real stage. It takes
// well under a minute on 2 cores; -short skips it.
func TestSmokeEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run; skipped with -short")
	}
	spec, err := Parse(filepath.Join("..", "exp", "smoke.toml"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	start := time.Now()
	dir, err := Run(context.Background(), spec, root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("smoke run took %v", time.Since(start).Round(time.Millisecond))
	for _, f := range []string{"config.toml", "manifest.json", "data/docs.arrow", "data/tokens.arrow", "metrics.arrow",
		"completions.arrow", "scores.parquet", "corpus_counts.parquet", "summary.json", "figures/exact-match-vs-k.png", "figures/loss.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing artifact: %v", err)
		}
	}
	// The eval stage indexed the run's dataset: each attacked target's
	// window occurs in the training corpus exactly its repetitions.
	counts, err := eval.CorpusCounts.ReadParquet(filepath.Join(dir, "corpus_counts.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	targets := 0
	for _, c := range counts {
		if c.Split == "target" && c.WindowCount >= 0 {
			targets++
			if c.WindowCount != int64(c.Repetitions) {
				t.Errorf("target %d: window counted %d times, trained %d", c.DocID, c.WindowCount, c.Repetitions)
			}
		}
	}
	if targets == 0 {
		t.Error("corpus_counts.parquet counts no target")
	}
	m, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Done(Stages) {
		t.Errorf("manifest stages = %+v, want all done", m.Stages)
	}
	// Each stage names the memo that ran it (a run another binary
	// resumes says which stages that one ran).
	for _, st := range m.Stages {
		if st.Memo == "" || st.Memo != stageRevision() {
			t.Errorf("stage %s records memo %q, want this build's %q", st.Name, st.Memo, stageRevision())
		}
	}
	// A second run of the finished spec does nothing.
	before, _ := os.Stat(filepath.Join(dir, "scores.parquet"))
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(filepath.Join(dir, "scores.parquet"))
	if !before.ModTime().Equal(after.ModTime()) {
		t.Error("re-running a finished run rewrote scores.parquet")
	}

	// On read-only storage (its lock cannot be taken) a finished run is
	// left as it is, not refused; one with a changed output is refused.
	saved := acquireRunLock
	t.Cleanup(func() { acquireRunLock = saved })
	acquireRunLock = func(dir string, _ time.Duration) (*runlock.Lock, error) {
		return nil, fmt.Errorf("lock %s: %w", dir, &fs.PathError{Op: "open", Path: filepath.Join(dir, "memo.lock.tmp-1"), Err: fs.ErrPermission})
	}
	if _, err := Run(context.Background(), spec, root, Options{}); err != nil {
		t.Errorf("a finished run whose lock cannot be taken: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "summary.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), spec, root, Options{}); err == nil || !errors.Is(err, fs.ErrPermission) {
		t.Errorf("a changed run whose lock cannot be taken: %v; want the lock's error", err)
	}
}
