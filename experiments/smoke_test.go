package experiments

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memo-research/memo/eval"
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
}
