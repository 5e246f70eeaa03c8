package experiments

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunSweepFailureAndSkip runs a sweep with a stand-in for the memo
// binary that fails on one point: the other point still runs, and a point
// finished before the sweep is skipped.
func TestRunSweepFailureAndSkip(t *testing.T) {
	var calls []string
	none := ""
	fakeStages(t, &calls, &none)
	root := t.TempDir()
	exe := filepath.Join(root, "fake-memo")
	script := "#!/bin/sh\n" +
		"for a in \"$@\"; do last=$a; done\n" +
		"echo \"$@\" >> " + filepath.Join(root, "calls.txt") + "\n" +
		"case \"$last\" in *k=4*) echo 'memo: run k=4: stage train: out of luck' >&2; exit 1;; esac\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseBytes("gvs.toml", []byte("name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4, 8]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	// k=8 finished earlier.
	if _, err := Run(context.Background(), pts[2].Spec, spec.SweepDir(root), Options{}); err != nil {
		t.Fatal(err)
	}
	var progress strings.Builder
	_, res, err := RunSweep(context.Background(), spec, root, SweepOptions{Jobs: 2, Exe: exe, Args: []string{"--threads", "1"}, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range res {
		got[r.Name] = r.Status
	}
	if got["k=0"] != PointDone || got["k=4"] != PointFailed || got["k=8"] != PointSkipped {
		t.Errorf("statuses = %v, want k=0 done, k=4 failed, k=8 skipped", got)
	}
	sum := Summary(res)
	if !strings.Contains(sum, "1 done, 1 already finished, 1 failed") || !strings.Contains(sum, "out of luck") {
		t.Errorf("summary lacks counts or the failure's reason:\n%s", sum)
	}
	b, err := os.ReadFile(filepath.Join(root, "calls.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Errorf("fake memo ran %d times, want 2 (k=8 skipped):\n%s", n, b)
	}
	if !strings.Contains(string(b), "run --runs "+spec.SweepDir(root)+" --threads 1 "+filepath.Join(spec.SweepDir(root), "specs", "k=0.toml")) {
		t.Errorf("subprocess arguments:\n%s", b)
	}
}
