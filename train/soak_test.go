package train

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memo-research/memo/loss"
	"github.com/memo-research/memo/model"
)

// procStatus reads a "kB" field of /proc/self/status in MB.
func procStatus(t *testing.T, field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	t.Fatalf("%s not in /proc/self/status", field)
	return 0
}

// soak trains a tiny model for steps optimizer steps and returns RSS (MB)
// after step early and after the last step, and the peak.
func soak(t *testing.T, steps, early int) (rssEarly, rssEnd, peak float64, wall time.Duration) {
	cfg := DefaultConfig()
	cfg.Steps = steps
	cfg.Block = 64
	cfg.BatchSize = 8
	cfg.EvalEvery = steps / 4
	cfg.CheckpointEvery = steps / 4
	cfg.Seed = 11
	src := textSource{ids: opticks(t, 40000), rows: 600}
	start := time.Now()
	err := Run(context.Background(), cfg, model.Config{Preset: "tiny", Vocab: 256, Context: 64, Seed: 2},
		loss.Config{Strategy: loss.StrategyHashTable, K: 4, H: 13}, src, t.TempDir(), Options{OnStep: func(m Metric) {
			switch int(m.Step) {
			case early:
				rssEarly = procStatus(t, "VmRSS")
			case steps:
				rssEnd = procStatus(t, "VmRSS")
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	return rssEarly, rssEnd, procStatus(t, "VmHWM"), time.Since(start)
}

// A short soak in the regular suite: memory stays flat over 200 steps.
func TestSoakShort(t *testing.T) {
	early, end, peak, wall := soak(t, 200, 50)
	t.Logf("200 steps in %v: RSS %.0f MB at step 50, %.0f MB at 200, peak %.0f MB", wall.Round(time.Millisecond), early, end, peak)
	if end > early+64 {
		t.Errorf("RSS grew from %.0f MB (step 50) to %.0f MB (step 200)", early, end)
	}
}

// The full soak of issue 2: MEMO_SOAK=1 go test ./train -run SoakFull -v
func TestSoakFull(t *testing.T) {
	if os.Getenv("MEMO_SOAK") == "" {
		t.Skip("set MEMO_SOAK=1 for the 3,000-step soak")
	}
	early, end, peak, wall := soak(t, 3000, 500)
	t.Logf("3000 steps in %v: RSS %.0f MB at step 500, %.0f MB at 3000, peak %.0f MB", wall.Round(time.Second), early, end, peak)
	// gotch's generated wrappers leak one malloc(0) chunk per op call
	// (~20 KB a step here, ~50 MB over the run); anything beyond that is ours.
	if end > early+100 {
		t.Errorf("RSS grew from %.0f MB (step 500) to %.0f MB (step 3000)", early, end)
	}
}
