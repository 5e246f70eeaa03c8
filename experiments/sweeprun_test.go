package experiments

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

	// Run again, k=4 fails again: its log keeps the first attempt's
	// output above the second's, each under its own header.
	if _, _, err := RunSweep(context.Background(), spec, root, SweepOptions{Jobs: 2, Exe: exe, Args: []string{"--threads", "1"}, Progress: io.Discard}); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(spec.SweepDir(root), "logs", "k=4.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(log), "== memo sweep, ") != 2 || strings.Count(string(log), "out of luck") != 2 {
		t.Errorf("k=4.log after two failed attempts:\n%s\nwant both, each under a header", log)
	}
}

// TestSweepKilledInterruptsItsRuns: a sweep killed with SIGKILL cannot
// forward a signal; its runs get SIGINT from the kernel all the same.
func TestSweepKilledInterruptsItsRuns(t *testing.T) {
	if dir := os.Getenv("MEMO_TEST_SWEEP_ROOT"); dir != "" {
		sweepForever(t, dir) // the process the test kills
		return
	}
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSweepKilledInterruptsItsRuns$")
	cmd.Env = append(os.Environ(), "MEMO_TEST_SWEEP_ROOT="+root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pidFile, got := filepath.Join(root, "pid"), filepath.Join(root, "interrupted")
	deadline := time.Now().Add(30 * time.Second)
	for !fileExistsTest(pidFile) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the sweep's run never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for !fileExistsTest(got) {
		if time.Now().After(deadline) {
			t.Fatal("the run of a killed sweep was not interrupted")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sweepForever runs a one-point sweep in root whose run records its pid
// and waits, writing root/interrupted when SIGINT comes.
func sweepForever(t *testing.T, root string) {
	exe := filepath.Join(root, "fake-memo")
	script := "#!/bin/sh\ntrap 'touch " + filepath.Join(root, "interrupted") + "; exit 130' INT\n" +
		"echo $$ > " + filepath.Join(root, "pid") + "\nwhile :; do sleep 0.05; done\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseBytes("one.toml", []byte("name = \"one\"\n[sweep]\n\"goldfish.k\" = [0]\n"))
	if err != nil {
		t.Fatal(err)
	}
	RunSweep(context.Background(), spec, root, SweepOptions{Jobs: 1, Exe: exe, Progress: io.Discard})
}

func fileExistsTest(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestRunSweepInterrupted: a sweep stopped while its first run goes has
// that run interrupted (it resumes) and the others not started, said as
// such, not as runs that failed with "context canceled".
func TestRunSweepInterrupted(t *testing.T) {
	root := t.TempDir()
	exe := filepath.Join(root, "fake-memo")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseBytes("gvs.toml", []byte("name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4, 8]\n"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	progress := &startWatcher{started: make(chan struct{}, 3)}
	go func() {
		<-progress.started
		cancel()
	}()
	_, res, err := RunSweep(ctx, spec, root, SweepOptions{Jobs: 1, Exe: exe, Progress: progress})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range res {
		count[r.Status]++
	}
	if count[PointInterrupted] != 1 || count[PointNotStarted] != 2 {
		t.Errorf("statuses %v, want 1 interrupted and 2 not started", count)
	}
	sum := Summary(res)
	if !strings.Contains(sum, "0 failed, 1 interrupted (the same command resumes them), 2 not started") || strings.Count(sum, "context canceled") > 1 {
		t.Errorf("summary:\n%s", sum)
	}
}

// startWatcher is a sweep's progress writer that signals each started run.
type startWatcher struct{ started chan struct{} }

func (w *startWatcher) Write(p []byte) (int, error) {
	if strings.Contains(string(p), ": started") {
		w.started <- struct{}{}
	}
	return len(p), nil
}

// TestRunSweepRedoesBrokenPoint: a finished point whose recorded output
// was deleted since is run again, not skipped as finished while the
// sweep's report leaves it out as unfinished.
func TestRunSweepRedoesBrokenPoint(t *testing.T) {
	old := stageFunc
	t.Cleanup(func() { stageFunc = old })
	stageFunc = func(ctx context.Context, stage string, spec *Spec, dir string, opt Options) error {
		return os.WriteFile(filepath.Join(dir, "out-"+stage), []byte(stage), 0o644)
	}
	root := t.TempDir()
	exe := filepath.Join(root, "fake-memo")
	script := "#!/bin/sh\necho \"$@\" >> " + filepath.Join(root, "calls.txt") + "\n"
	if err := os.WriteFile(exe, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	spec, err := ParseBytes("gvs.toml", []byte("name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 8]\n"))
	if err != nil {
		t.Fatal(err)
	}
	pts, err := spec.Expand()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		if _, err := Run(context.Background(), p.Spec, spec.SweepDir(root), Options{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(spec.SweepDir(root), "k=8", "out-eval")); err != nil {
		t.Fatal(err)
	}
	_, res, err := RunSweep(context.Background(), spec, root, SweepOptions{Jobs: 1, Exe: exe, Progress: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "calls.txt"))
	if len(res) != 2 || res[0].Status != PointSkipped || res[1].Status == PointSkipped || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "k=8.toml") {
		t.Errorf("results %+v, memo ran: %q; want k=0 skipped and k=8 run again", res, b)
	}
}
