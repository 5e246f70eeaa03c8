package train

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/memo-research/memo/checkpoint"
)

const killChildEnv = "MEMO_TRAIN_KILL_CHILD"

func killRunConfig() Config {
	cfg, _, _ := smallRun()
	cfg.Steps = 40
	cfg.CheckpointEvery = 5
	cfg.KeepCheckpoints = 2
	return cfg
}

// TestKillChild is the child process of TestKillNineResume: it trains into
// the directory named by the environment until killed.
func TestKillChild(t *testing.T) {
	dir := os.Getenv(killChildEnv)
	if dir == "" {
		t.Skip("child of TestKillNineResume")
	}
	_, mcfg, lcfg := smallRun()
	src := textSource{ids: opticks(t, 2000), rows: 24}
	if err := Run(context.Background(), killRunConfig(), mcfg, lcfg, src, dir, Options{}); err != nil {
		t.Fatal(err)
	}
}

// A training process killed with SIGKILL mid-run, then started again on
// the same run directory, ends with the weights of an uninterrupted run.
func TestKillNineResume(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a training subprocess")
	}
	_, mcfg, lcfg := smallRun()
	cfg := killRunConfig()
	src := textSource{ids: opticks(t, 2000), rows: 24}
	killed := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), killChildEnv+"="+killed)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(killed, checkpoint.DirName, checkpoint.StepName(10))); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("child wrote no step-10 checkpoint within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(30 * time.Millisecond) // somewhere inside a later step
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	_, st, _ := checkpoint.LatestGood(killed)
	if st.Step >= cfg.Steps {
		t.Skipf("child finished (step %d) before the kill; machine too fast for this timing", st.Step)
	}
	t.Logf("killed after checkpoint step %d", st.Step)
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, killed, Options{}); err != nil {
		t.Fatal(err)
	}
	if left, _ := filepath.Glob(filepath.Join(killed, checkpoint.DirName, ".tmp-*")); len(left) > 0 {
		t.Errorf("temporary checkpoint directories left after the resumed run: %v", left)
	}
	whole := t.TempDir()
	if err := Run(context.Background(), cfg, mcfg, lcfg, src, whole, Options{}); err != nil {
		t.Fatal(err)
	}
	if a, b := checkpointDigest(t, whole), checkpointDigest(t, killed); a != b {
		t.Errorf("after kill -9 and resume, weights differ from an uninterrupted run: %s vs %s", b[:12], a[:12])
	}
	sameMetrics(t, readMetrics(t, whole), readMetrics(t, killed))
}
