package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAuditInterruptedStartsOver: an audit keeps nothing between runs, so
// SIGTERM to it, in its blind baseline or scoring, ends with exit 130 and
// the line that says so ("starts over", not "resumes", which it said
// while nothing it had done survived), and leaves neither --out nor the
// temporary directory it writes --out in.
func TestAuditInterruptedStartsOver(t *testing.T) {
	dir := trainedRun(t)
	exe := buildMemo(t)
	run := filepath.Join(dir, "runs", "tiny")
	// The tiny run's 8 texts 300 times over, scored in windows of 8
	// tokens every token: seconds of baseline and scoring to stop.
	small := filepath.Join(dir, "small.jsonl")
	auditSet(t, run, small)
	b, err := os.ReadFile(small)
	if err != nil {
		t.Fatal(err)
	}
	set := filepath.Join(dir, "set.jsonl")
	writeTestFile(t, set, strings.Repeat(string(b), 300))

	cmd := exec.Command(exe, "audit", "--model", run, "--data", set, "--out", "audit",
		"--window", "8", "--stride", "1", "--bootstrap", "10000", "--threads", "1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMO_CACHE="+filepath.Join(dir, "cache"))
	stderr := &syncBuilder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(120 * time.Second); !strings.Contains(stderr.String(), "audit: blind baseline") && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	err = cmd.Wait()
	t.Logf("exited %.1f s after SIGTERM", time.Since(sent).Seconds())
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	ee, ok := err.(*exec.ExitError)
	if want := "memo: interrupted; nothing was written; the same command starts over"; !ok || ee.ExitCode() != exitInterrupted || lines[len(lines)-1] != want {
		t.Fatalf("SIGTERM to an audit: %v, stderr\n%s\nwant exit %d and last line %q", err, stderr.String(), exitInterrupted, want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "audit" || strings.HasPrefix(e.Name(), ".audit.tmp-") {
			t.Errorf("an interrupted audit left %s behind", e.Name())
		}
	}
}
