package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/runfiles"
)

// tinySpec is exp/smoke.toml cut to 6 steps: every stage runs in seconds.
func tinySpec(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "exp", "smoke.toml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "\nsteps = 20\n", "\nsteps = 6\n", 1)
	s = strings.Replace(s, `name = "smoke"`, `name = "tiny"`, 1)
	if !strings.Contains(s, "\nsteps = 6\n") || !strings.Contains(s, `name = "tiny"`) {
		t.Fatal("exp/smoke.toml changed shape: cannot shorten it")
	}
	path := filepath.Join(dir, "tiny.toml")
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// combined runs cmd in the directory of its last argument (a spec or a
// script) and returns its stdout and stderr together; it fails the test
// when cmd fails.
func combined(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	if len(cmd.Args) > 0 {
		cmd.Dir = filepath.Dir(cmd.Args[len(cmd.Args)-1])
	}
	start := time.Now()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
	}
	t.Logf("%s: %v", strings.Join(cmd.Args[1:], " "), time.Since(start).Round(time.Millisecond))
	return out.String()
}

// files lists the regular files under dir, relative to it.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// TestRunNproc2 runs the whole pipeline with training on two ranks and on
// one process: the run directories must hold the same files (rank 1 writes
// nothing of its own) and training must log the same losses.
func TestRunNproc2(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memo and runs the pipeline twice (-short)")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	spec := tinySpec(t, dir)
	run := func(runs string, nproc string) string {
		return combined(t, exec.Command(exe, "run", "--runs", filepath.Join(dir, runs), "--nproc", nproc, "--threads", "2", spec))
	}
	out2 := run("two", "2")
	run("one", "1")
	if !strings.Contains(out2, "[rank 0] ") || !strings.Contains(out2, "processes=2") {
		t.Errorf("no rank-prefixed training log from two processes:\n%s", out2)
	}
	one, two := filepath.Join(dir, "one", "tiny"), filepath.Join(dir, "two", "tiny")
	f1, f2 := files(t, one), files(t, two)
	if strings.Join(f1, "\n") != strings.Join(f2, "\n") {
		t.Errorf("run directories differ:\none process: %v\ntwo ranks:   %v", f1, f2)
	}
	m1, err := runfiles.ReadMetrics(filepath.Join(one, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := runfiles.ReadMetrics(filepath.Join(two, runfiles.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(m1) != 6 || len(m2) != 6 {
		t.Fatalf("metric rows: %d (one process), %d (two ranks); want 6", len(m1), len(m2))
	}
	// One process uses two libtorch threads, each rank one: the sums are
	// ordered differently, so allow more than rounding of one order.
	for i := range m1 {
		if rel := math.Abs(m1[i].LossKept-m2[i].LossKept) / m1[i].LossKept; !(rel < 1e-4) {
			t.Errorf("step %d: loss %.7g (one process) vs %.7g (two ranks)", i+1, m1[i].LossKept, m2[i].LossKept)
		}
	}
	if !(m2[5].LossKept < m2[0].LossKept) {
		t.Errorf("two-rank loss did not fall: %.4g -> %.4g", m2[0].LossKept, m2[5].LossKept)
	}
	// The manifest says the ranks trained on a thread each while this
	// process extracted and scored on both.
	man, err := experiments.ReadManifest(two)
	if err != nil {
		t.Fatal(err)
	}
	if l := man.Launch; l == nil || l.Launcher != "memo" || l.WorldSize != 2 || l.Threads != 1 || l.StageThreads != 2 {
		t.Errorf("manifest launch = %+v, want launcher memo, world 2, threads 1, stage_threads 2", l)
	}
}

// fakeJobID is a stand-in Slurm job id unique to this test process. memo
// derives its rendezvous port and token from the job id, so two test runs
// on one machine (two CIs) that used one fixed id would derive the same
// ports, and one's rank could join the other's group.
func fakeJobID(n int) string {
	return fmt.Sprintf("%d%03d", os.Getpid(), n)
}

// fakeSlurm writes srun and scontrol stand-ins into a directory for PATH:
// srun starts $SLURM_NTASKS copies of its command with SLURM_PROCID and
// SLURM_LOCALID set, as one node would, and fails when one fails.
func fakeSlurm(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	srun := `#!/bin/bash
while [[ "$1" == --* ]]; do shift; done
pids=()
for ((r = 0; r < SLURM_NTASKS; r++)); do
  SLURM_STEP_ID=0 SLURM_PROCID=$r SLURM_LOCALID=$r "$@" 2>&1 | sed "s/^/$r: /" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
`
	scontrol := "#!/bin/sh\necho 127.0.0.1\n"
	for name, body := range map[string]string{"srun": srun, "scontrol": scontrol} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestSlurmScriptTrainsOnRanks runs the job-array script `memo sweep
// --slurm --nproc 2` writes, under stand-ins for srun and scontrol: data on
// one task, training on two ranks that find their place from SLURM_*
// variables, the later stages on one task again.
func TestSlurmScriptTrainsOnRanks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memo and runs the pipeline (-short)")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	spec := tinySpec(t, dir)
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, append(b, "\n[sweep]\n\"goldfish.k\" = [4]\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(dir, "runs")
	combined(t, exec.Command(exe, "sweep", "--slurm", "--nproc", "2", "--runs", runs, spec))
	cmd := exec.Command("bash", filepath.Join(runs, "tiny", "slurm.sh"))
	// The batch shell's view of a one-node, two-task allocation.
	cmd.Env = append(os.Environ(), "PATH="+fakeSlurm(t)+":"+os.Getenv("PATH"),
		"SLURM_ARRAY_TASK_ID=0", "SLURM_ARRAY_JOB_ID="+fakeJobID(1), "SLURM_JOB_ID="+fakeJobID(1), "SLURM_JOB_NODELIST=localhost",
		"SLURM_NTASKS=2", "SLURM_PROCID=0", "SLURM_LOCALID=0")
	out := combined(t, cmd)
	if !strings.Contains(out, "processes=2") {
		t.Errorf("training did not run on two ranks:\n%s", out)
	}
	ents, err := filepath.Glob(filepath.Join(runs, "tiny", "*", runfiles.MetricsFile))
	if err != nil || len(ents) != 1 {
		t.Fatalf("metrics files: %v, %v\n%s", ents, err, out)
	}
	m, err := runfiles.ReadMetrics(ents[0])
	if err != nil || len(m) != 6 {
		t.Fatalf("metrics: %d rows, %v; want 6", len(m), err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ents[0]), "summary.json")); err != nil {
		t.Errorf("the later stages did not run: %v\n%s", err, out)
	}
}

// TestSrunRunsTheWholeRun is `srun -n2 memo run FILE` as a cluster user
// writes it (under the srun stand-in): rank 0 builds the data, both ranks
// train, rank 0 alone attacks, scores and reports, and the table equals
// `memo run --nproc 2`'s, and so does --nproc 2 inside one srun task.
// --nproc against srun's task count is refused by rank 0 alone, in one
// line.
func TestSrunRunsTheWholeRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memo and runs the pipeline (-short)")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	spec := tinySpec(t, dir)
	fake := fakeSlurm(t)
	job := fakeJobID(77)
	env := append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"),
		"SLURM_JOB_ID="+job, "SLURM_JOB_NODELIST=localhost", "SLURM_NTASKS=2", "SLURM_STEP_TASKS_PER_NODE=2", "SLURM_NODEID=0")
	srun := exec.Command(filepath.Join(fake, "srun"), exe, "run", "--runs", filepath.Join(dir, "srun"), spec)
	srun.Env = env
	out := combined(t, srun)
	if !strings.Contains(out, "processes=2") || strings.Count(out, "| run |") != 1 {
		t.Errorf("want training on two ranks and one table:\n%s", out)
	}
	combined(t, exec.Command(exe, "run", "--runs", filepath.Join(dir, "nproc"), "--nproc", "2", spec))
	a, err1 := os.ReadFile(filepath.Join(dir, "srun", "tiny", "report", "table.md"))
	b, err2 := os.ReadFile(filepath.Join(dir, "nproc", "tiny", "report", "table.md"))
	if err := errors.Join(err1, err2); err != nil || !bytes.Equal(a, b) {
		t.Errorf("tables differ (%v):\n%s\n%s", err, a, b)
	}
	m, err := os.ReadFile(filepath.Join(dir, "srun", "tiny", "manifest.json"))
	if err != nil || !strings.Contains(string(m), `"launcher": "slurm"`) || !strings.Contains(string(m), `"threads": 1`) || !strings.Contains(string(m), `"slurm_job_id": "`+job+`"`) {
		t.Errorf("manifest.json does not record the launch (slurm, 1 thread, job %s):\n%s", job, m)
	}
	// One task (srun --pty bash, srun -n1 -c2) leaves the ranks to --nproc.
	one := exec.Command(exe, "run", "--runs", filepath.Join(dir, "onetask"), "--nproc", "2", spec)
	one.Env = append(os.Environ(), "SLURM_JOB_ID="+job, "SLURM_JOB_NODELIST=localhost", "SLURM_NTASKS=1",
		"SLURM_STEP_TASKS_PER_NODE=1", "SLURM_NODEID=0", "SLURM_STEP_ID=0", "SLURM_PROCID=0", "SLURM_LOCALID=0")
	if out := combined(t, one); !strings.Contains(out, "processes=2") {
		t.Errorf("srun -n1 memo run --nproc 2: want training on two ranks:\n%s", out)
	}
	if c, err := os.ReadFile(filepath.Join(dir, "onetask", "tiny", "report", "table.md")); err != nil || !bytes.Equal(c, b) {
		t.Errorf("srun -n1 memo run --nproc 2's table differs from --nproc 2's (%v):\n%s\n%s", err, c, b)
	}
	bad := exec.Command(filepath.Join(fake, "srun"), exe, "run", "--runs", filepath.Join(dir, "bad"), "--nproc", "3", spec)
	bad.Env = env
	o, _ := bad.CombinedOutput() // the stand-in's exit status is sed's
	if strings.Count(string(o), "memo: ") != 1 || !strings.Contains(string(o), "--nproc 3") {
		t.Errorf("srun -n2 memo run --nproc 3: want one memo: line naming --nproc 3:\n%s", o)
	}
	for r := 0; r < 2; r++ {
		one := exec.Command(exe, "run", "--runs", filepath.Join(dir, "bad"), "--nproc", "3", spec)
		one.Env = append(env, "SLURM_STEP_ID=0", fmt.Sprintf("SLURM_PROCID=%d", r))
		if err := one.Run(); err == nil || one.ProcessState.ExitCode() != 2 {
			t.Errorf("rank %d of srun -n2 memo run --nproc 3: %v, want exit 2", r, err)
		}
	}
}

// TestSrunStagesMeet is `srun -n2 memo run --stages ...`: the ranks meet
// as for a whole run. Rank 0 alone runs a stage that is not training, and
// a refusal of rank 0's reaches rank 1 at once with its exit code; rank 1
// used to run every stage itself, and to wait in the c10d rendezvous for
// 30 minutes for a rank 0 that had refused.
func TestSrunStagesMeet(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memo (-short)")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	spec := tinySpec(t, dir)
	runs := filepath.Join(dir, "runs")
	job := fakeJobID(78)
	// ranks runs both ranks of one srun step at once, as srun does.
	ranks := func(stages string) (outs [2]string, codes [2]int) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		for r := range 2 {
			cmd := exec.CommandContext(ctx, exe, "run", "--runs", runs, "--stages", stages, spec)
			cmd.Env = append(os.Environ(), "SLURM_JOB_ID="+job, "SLURM_JOB_NODELIST=localhost", "SLURM_NTASKS=2",
				"SLURM_STEP_TASKS_PER_NODE=2", "SLURM_NODEID=0", "SLURM_STEP_ID=0",
				fmt.Sprintf("SLURM_PROCID=%d", r), fmt.Sprintf("SLURM_LOCALID=%d", r))
			wg.Add(1)
			go func() {
				defer wg.Done()
				out, _ := cmd.CombinedOutput()
				outs[r], codes[r] = string(out), cmd.ProcessState.ExitCode()
			}()
		}
		wg.Wait()
		if ctx.Err() != nil {
			t.Fatalf("--stages %s: the ranks were still running after 2 minutes:\n0: %s\n1: %s", stages, outs[0], outs[1])
		}
		return outs, codes
	}
	// Training before the data is refused by rank 0; rank 1 says nothing.
	outs, codes := ranks("train")
	if codes != [2]int{2, 2} || !strings.Contains(outs[0], "memo: --stages train") || strings.Contains(outs[1], "memo:") {
		t.Errorf("--stages train before data: exit codes %v, want 2 and 2, one line from rank 0:\n0: %s\n1: %s", codes, outs[0], outs[1])
	}
	outs, codes = ranks("data")
	if codes != [2]int{0, 0} || !strings.Contains(outs[0], "stage=data") || strings.Contains(outs[1], "stage=data") {
		t.Errorf("--stages data: exit codes %v, want 0 and 0, data on rank 0 alone:\n0: %s\n1: %s", codes, outs[0], outs[1])
	}
}

// TestNprocGivenPortTaken: `memo run --nproc 2 --master-port P` with P
// taken is refused before the data stage, not after it.
func TestNprocGivenPortTaken(t *testing.T) {
	if testing.Short() {
		t.Skip("builds memo (-short)")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	spec := tinySpec(t, dir)
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	cmd := exec.Command(exe, "run", "--runs", filepath.Join(dir, "runs"), "--nproc", "2", "--master-port", p, spec)
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "rendezvous port "+p+" is in use") {
		t.Errorf("--master-port %s taken: %v, want exit 2 naming the port:\n%s", p, err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "tiny", "data")); err == nil {
		t.Error("the data stage ran before the port was found taken")
	}
}

// TestSrunMasterPortRefusedOnce: a --master-port out of range under srun
// -n2 is said once, by rank 0 (each rank printed it).
func TestSrunMasterPortRefusedOnce(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(fakeSlurm(t), "srun"), "--ntasks=2", exe, "run", "--master-port", "0", tinySpec(t, dir))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURM_NTASKS=2", "SLURM_JOB_ID="+fakeJobID(2), "SLURM_JOB_NODELIST=localhost", "MEMO_CACHE="+t.TempDir())
	out, _ := cmd.CombinedOutput()
	if n := strings.Count(string(out), "memo: --master-port 0: must be in 1..65535"); n != 1 || !strings.Contains(string(out), "0: memo: --master-port 0") {
		t.Errorf("srun -n2 memo run --master-port 0 said it %d times, want once by rank 0:\n%s", n, out)
	}
}
