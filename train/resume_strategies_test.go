package train

import (
	"context"
	"testing"

	"github.com/memo-research/memo/checkpoint"
	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// Every goldfish strategy resumes exactly: a run stopped after 6 steps (its
// last checkpoint at step 4) and started again ends with the weights and
// metrics of an uninterrupted run. The random strategy keys its masks on
// each row's position in the training stream; when it numbered rows by
// counting its own calls, the resumed run masked stream rows 16 onwards as
// rows 0 onwards and this test failed for it alone.
func TestResumeIsExactEveryStrategy(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 18 small runs")
	}
	for _, strategy := range loss.Strategies {
		t.Run(strategy, func(t *testing.T) {
			cfg, mcfg, lcfg := smallRun()
			cfg.Steps = 8
			lcfg = loss.Config{Strategy: strategy, K: 3, H: 4, Start: 1, Seed: 11}
			if strategy == loss.StrategyNone {
				lcfg.K = 0
			}
			checkResumeExact(t, cfg, mcfg, lcfg)
		})
	}
}

// checkResumeExact trains cfg (whose checkpoint_every is 4) once without a
// break and once stopped after 6 steps (as by kill -9: the last checkpoint
// is step 4) and started again, and fails unless both end with the same
// weights, optimizer state and metrics.
func checkResumeExact(t *testing.T, cfg Config, mcfg model.Config, lcfg loss.Config) {
	t.Helper()
	src := textSource{ids: opticks(t, 2000), rows: 24}
	whole, broken := t.TempDir(), t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, whole, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, broken, Options{StopAfter: 6}); err != nil {
		t.Fatal(err)
	}
	if _, st, _ := checkpoint.LatestGood(broken); st.Step != 4 {
		t.Fatalf("after stopping at step 6 the latest checkpoint is step %d, want 4", st.Step)
	}
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, broken, Options{}); err != nil {
		t.Fatal(err)
	}
	if a, b := checkpointDigest(t, whole), checkpointDigest(t, broken); a != b {
		t.Errorf("resumed run ends with different weights: %s vs %s", b[:12], a[:12])
	}
	sameMetrics(t, readMetrics(t, whole), readMetrics(t, broken))
}
