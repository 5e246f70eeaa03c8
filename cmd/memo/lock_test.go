package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/runlock"
)

// TestRunLock: `memo run` on a run directory another live memo process holds
// refuses with one line naming the holder and exit code 2, writing nothing;
// a lock left by a process that is gone is taken over with a log line.
func TestRunLock(t *testing.T) {
	exe := buildMemo(t)
	host, _ := os.Hostname()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("cannot start a process: %v", err)
	}
	for _, tc := range []struct {
		name string
		pid  int
		code int
		want string
	}{
		{"held by a live process", os.Getpid(), 2, fmt.Sprintf("is in use by memo process %d on %s", os.Getpid(), host)},
		{"stale", gone.Process.Pid, 0, "taking over a stale lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			spec := tinySpec(t, dir)
			runDir := filepath.Join(dir, "runs", "tiny")
			if err := os.MkdirAll(runDir, 0o755); err != nil {
				t.Fatal(err)
			}
			raw, _ := json.Marshal(runlock.Holder{PID: tc.pid, Host: host})
			lockFile := filepath.Join(runDir, runlock.FileName)
			if err := os.WriteFile(lockFile, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			r := execMemo(t, exe, dir, "run", "--stages", "data", spec)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit code %d, stderr %q; want %d and %q", r.code, r.stderr, tc.code, tc.want)
			}
			if tc.code == 2 {
				if msg := strings.TrimSuffix(r.stderr, "\n"); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "memo: ") {
					t.Errorf("stderr %q: want one memo: line", r.stderr)
				}
				onlyFiles(t, runDir, runlock.FileName)
				return
			}
			if _, err := os.Stat(lockFile); !os.IsNotExist(err) {
				t.Errorf("lock file after the run: %v", err)
			}
			if _, err := os.Stat(filepath.Join(runDir, "data", "tokens.arrow")); err != nil {
				t.Errorf("the run that took over did not build the data: %v", err)
			}
		})
	}
}
