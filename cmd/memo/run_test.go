package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memo-research/memo/experiments"
)

var (
	memoOnce sync.Once
	memoDir  string // holds the test binary; TestMain removes it
	memoExe  string
	memoErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if memoDir != "" {
		os.RemoveAll(memoDir)
	}
	os.Exit(code)
}

// buildMemo builds the memo binary once per test run (linking against
// libtorch takes a while) and returns its path.
func buildMemo(t *testing.T) string {
	t.Helper()
	memoOnce.Do(func() {
		if memoDir, memoErr = os.MkdirTemp("", "memo-test-"); memoErr != nil {
			return
		}
		memoExe = filepath.Join(memoDir, "memo")
		if out, err := exec.Command("go", "build", "-o", memoExe, ".").CombinedOutput(); err != nil {
			memoErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if memoErr != nil {
		t.Fatal(memoErr)
	}
	return memoExe
}

// memoResult is how one memo command ended.
type memoResult struct {
	stdout, stderr string
	code           int
}

// execMemo runs memo in dir with an empty corpus cache of its own (so no
// test depends on what `memo data fetch` put in the user's cache).
func execMemo(t *testing.T, exe, dir string, args ...string) memoResult {
	t.Helper()
	return execMemoCache(t, exe, dir, t.TempDir(), args...)
}

// execMemoCache runs memo in dir with MEMO_CACHE=cache and returns what it
// printed and its exit code.
func execMemoCache(t *testing.T, exe, dir, cache string, args ...string) memoResult {
	t.Helper()
	return execMemoStdin(t, exe, dir, cache, "", args...)
}

// execMemoStdin is execMemoCache with stdin.
func execMemoStdin(t *testing.T, exe, dir, cache, stdin string, args ...string) memoResult {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMO_CACHE="+cache)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return memoResult{stdout.String(), stderr.String(), 0}
	case errors.As(err, &ee):
		return memoResult{stdout.String(), stderr.String(), ee.ExitCode()}
	}
	t.Fatalf("memo %v: %v", args, err)
	return memoResult{}
}

// onlyFiles fails the test unless dir holds exactly the named entries:
// a command that must write nothing left nothing behind.
func onlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("%s holds %v, want only %v", dir, got, names)
	}
}

// wantUsageError checks the contract for bad input: exit code 2, one line
// on stderr that starts with the file (and line) and contains want.
func wantUsageError(t *testing.T, r memoResult, file, want string) {
	t.Helper()
	if r.code != 2 {
		t.Fatalf("exit code %d, want 2; stderr %q", r.code, r.stderr)
	}
	msg := strings.TrimSuffix(r.stderr, "\n")
	if !strings.HasPrefix(msg, "memo: "+file+":") {
		t.Errorf("stderr = %q, want it to start with the file and line", msg)
	}
	if strings.Contains(msg, "\n") || !strings.Contains(msg, want) {
		t.Errorf("stderr = %q, want one line containing %q", msg, want)
	}
}

// TestRunConfigErrors: each bad spec is one line on stderr, exit code 2,
// and no run directory.
func TestRunConfigErrors(t *testing.T) {
	exe := buildMemo(t)
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown key", "[goldfish]\nkk = 4\n", `bad.toml:2: goldfish.kk: unknown key "kk" in [goldfish]; did you mean "k"?`},
		{"wrong type", "[goldfish]\nk = \"four\"\n", "bad.toml:2: goldfish.k: wrong type"},
		{"k below 2", "[goldfish]\nk = 1\n", "bad.toml:2: goldfish.k = 1: must be 0 (standard loss) or >= 2"},
		{"missing data file", "[data]\nsources = [\"jsonl:nope.jsonl\"]\n", `bad.toml:2: data.sources: "jsonl:nope.jsonl": no such file or directory`},
		{"corpus not fetched", "[data]\nsources = [\"opticks\", \"moby-dick\"]\n", "bad.toml:2: data.sources: \"moby-dick\": not fetched into "},
		{"corpus not fetched says how", "[data]\nsources = [\"moby-dick\"]\n", "run `memo data fetch moby-dick` first"},
		{"prefix+suffix over context", "[model]\npreset = \"tiny\"\n[extract]\nmode = \"fixed\"\nprefix = 200\nsuffix = 100\n", "prefix 200 + suffix 100 = 300 tokens exceed the model context 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			wantUsageError(t, execMemo(t, exe, dir, "run", "bad.toml"), "bad.toml", tc.want)
			onlyFiles(t, dir, "bad.toml")
		})
	}
}

// TestSweepValueErrors: a sweep value its key does not accept is a config
// error whichever command meets it: one line naming the file, the axis line
// and key, exit code 2, nothing written.
func TestSweepValueErrors(t *testing.T) {
	exe := buildMemo(t)
	docs := []struct{ name, doc, want string }{
		{"k below 2", "seed = 3\n[goldfish]\nh = 13\n[sweep]\n\"goldfish.k\" = [0, 1]\n",
			"bad.toml:5: sweep.goldfish.k: grid point k=1: goldfish.k = 1: must be 0 (standard loss) or >= 2"},
		{"wrong type", "[sweep]\n\"goldfish.k\" = [0, \"four\"]\n",
			"bad.toml:2: sweep.goldfish.k: grid point k=four: goldfish.k: wrong type"},
	}
	cmds := [][]string{
		{"run"},
		{"sweep"},
		{"sweep", "-j", "2"},
		{"sweep", "--slurm"},
		{"sweep", "--slurm", "--dry-run"},
	}
	for _, d := range docs {
		for _, c := range cmds {
			t.Run(d.name+"/"+strings.Join(c, " "), func(t *testing.T) {
				dir := t.TempDir()
				if err := os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(d.doc), 0o644); err != nil {
					t.Fatal(err)
				}
				r := execMemo(t, exe, dir, append(c, "bad.toml")...)
				wantUsageError(t, r, "bad.toml", d.want)
				onlyFiles(t, dir, "bad.toml")
			})
		}
	}
}

// TestSweepRefusedPointsExit2: a sweep whose every failed point refused its
// input (here run directories holding checkpoints of unknown settings)
// exits 2, as each point did, not 1 as for a failure. Points whose
// config.toml is another spec's refuse the sweep before it rewrites its
// sweep.json (which made the finished sweep's report refuse every point).
func TestSweepRefusedPointsExit2(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "sw.toml"), "name = \"sw\"\n[data]\nsources = [\"opticks\"]\n[sweep]\n\"goldfish.k\" = [0, 4]\n")
	// A sweep stopped at once leaves its sweep.json: the directory is its own.
	first := exec.Command(exe, "sweep", "--runs", "runs", "-j", "1", "--threads", "1", "sw.toml")
	first.Dir, first.Env = dir, append(os.Environ(), "MEMO_CACHE="+t.TempDir())
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	_ = first.Process.Signal(os.Interrupt)
	_ = first.Wait()
	for _, p := range []string{"k=0", "k=4"} {
		if err := os.RemoveAll(filepath.Join(dir, "runs", "sw", p)); err != nil {
			t.Fatal(err)
		}
		writeTestFile(t, filepath.Join(dir, "runs", "sw", p, "checkpoints", "latest"), "step-000001\n")
	}
	r := execMemo(t, exe, dir, "sweep", "--runs", "runs", "-j", "1", "--threads", "1", "sw.toml")
	if r.code != 2 || !strings.Contains(r.stderr, "memo: 2 of 2 sweep runs refused their input") {
		t.Errorf("a sweep of refused points: exit %d, stderr %s; want 2", r.code, r.stderr)
	}
	index := filepath.Join(dir, "runs", "sw", "specs", "k=4.toml")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "runs", "sw", "k=0", "config.toml"), "name = \"other\"\n")
	r = execMemo(t, exe, dir, "sweep", "--runs", "runs", "-j", "1", "--threads", "1", "--set", "train.lr=7e-4", "sw.toml")
	if r.code != 2 || !strings.Contains(r.stderr, "1 of 2 points (k=0) were run from another spec; pass --force") {
		t.Errorf("a sweep over a point of another spec: exit %d, stderr %s; want 2 naming k=0", r.code, r.stderr)
	}
	if after, err := os.ReadFile(index); err != nil || !bytes.Equal(before, after) {
		t.Errorf("the refused sweep rewrote its points' specs (%v)", err)
	}
}

// TestSweepSlurmDryRun: --dry-run prints the job array with the Slurm
// options asked for, one task per grid point, and writes nothing.
func TestSweepSlurmDryRun(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	doc := "name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4, 8]\n\"model.preset\" = [\"nano\", \"tiny\"]\n"
	if err := os.WriteFile(filepath.Join(dir, "gvs.toml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	r := execMemo(t, exe, dir, "sweep", "--slurm", "--dry-run", "--force", "--threads", "3",
		"--account", "proj42", "--partition", "gpu", "--time", "02:30:00", "--gpus", "4", "gvs.toml")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr %q", r.code, r.stderr)
	}
	for _, want := range []string{
		"#!/bin/bash\n",
		"#SBATCH --job-name=memo-gvs\n",
		"#SBATCH --array=0-5\n",
		"#SBATCH --account=proj42\n",
		"#SBATCH --partition=gpu\n",
		"#SBATCH --time=02:30:00\n",
		"#SBATCH --gpus-per-node=4\n",
		"'k=0_preset=nano.toml'",
		"'k=8_preset=tiny.toml'",
		filepath.Join(dir, "runs", "gvs"),
		// A rerun with --force after a spec change refused every point
		// when the flag stayed on the command line that wrote the script.
		`"$MEMO" run --force --threads 3 --runs "$SWEEP" "$SPEC"`,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("script lacks %q:\n%s", want, r.stdout)
		}
	}
	onlyFiles(t, dir, "gvs.toml")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-j", "2"}, "sweep --slurm: -j runs points at once on this machine"},
		{[]string{"--account", "a b"}, `--account "a b": no spaces, quotes or $ allowed`},
	} {
		r := execMemo(t, exe, dir, append(append([]string{"sweep", "--slurm", "--dry-run"}, tc.args...), "gvs.toml")...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}

	// Flags after FILE are read too (cmd/memo/cliargs.go): the same dry run.
	r = execMemo(t, exe, dir, "sweep", "gvs.toml", "--slurm", "--dry-run")
	if r.code != 0 || !strings.Contains(r.stdout, "#SBATCH --array=0-5\n") {
		t.Errorf("flags after FILE: exit %d, stderr %q, stdout:\n%s", r.code, r.stderr, r.stdout)
	}
	onlyFiles(t, dir, "gvs.toml")
}

// TestConfigDefaultsParses: `memo config --defaults` is a valid spec: it
// parses back to the defaults, and `memo config` accepts it.
func TestConfigDefaultsParses(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	r := execMemo(t, exe, dir, "config", "--defaults")
	if r.code != 0 {
		t.Fatalf("config --defaults: exit code %d; stderr %q", r.code, r.stderr)
	}
	path := filepath.Join(dir, "defaults.toml")
	if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := experiments.Parse(path)
	if err != nil {
		t.Fatalf("the printed defaults do not parse: %v", err)
	}
	// What a spec of a name alone resolves to: the defaults, the
	// top-level seed copied into every stage table.
	want, err := experiments.ParseBytes(path, []byte("name = \"x\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	want.Name = got.Name // --defaults prints a placeholder name
	gb, err := got.TOML()
	if err != nil {
		t.Fatal(err)
	}
	wb, err := want.TOML()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gb, wb) {
		t.Errorf("defaults parsed back differ from an empty spec's:\n%s\nwant:\n%s", gb, wb)
	}
	if r := execMemo(t, exe, dir, "config", "defaults.toml"); r.code != 0 {
		t.Errorf("memo config defaults.toml: exit code %d; stderr %q", r.code, r.stderr)
	}
}

// TestRunFinishedDoesNothing: running a finished run again runs no stage,
// leaves its report as it was and prints it.
func TestRunFinishedDoesNothing(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	specPath := filepath.Join(dir, "done.toml")
	if err := os.WriteFile(specPath, []byte("[goldfish]\nk = 4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec, err := experiments.Parse(specPath)
	if err != nil {
		t.Fatal(err)
	}
	// A finished run as Run leaves it: the resolved spec, every stage done
	// in the manifest, and the report.
	run := experiments.RunDir(spec, filepath.Join(dir, "runs"))
	conf, err := spec.TOML()
	if err != nil {
		t.Fatal(err)
	}
	hash, err := spec.Hash()
	if err != nil {
		t.Fatal(err)
	}
	m := experiments.Manifest{Name: spec.Name, ConfigHash: hash}
	for _, st := range experiments.Stages {
		m.Stages = append(m.Stages, experiments.StageRecord{Name: st, Status: experiments.StatusDone})
	}
	mb, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	const table = "| run | exact match |\n|---|---|\n| done | 0.42 |\n"
	for name, b := range map[string][]byte{"config.toml": conf, "manifest.json": mb, "report/table.md": []byte(table)} {
		writeTestFileBytes(t, filepath.Join(run, name), b)
	}
	before := treeFiles(t, run)
	mtimes := map[string]time.Time{}
	for _, f := range before {
		st, err := os.Stat(filepath.Join(run, f))
		if err != nil {
			t.Fatal(err)
		}
		mtimes[f] = st.ModTime()
	}

	r := execMemo(t, exe, dir, "run", "done.toml")
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, table) {
		t.Errorf("stdout does not show the report table:\n%s", r.stdout)
	}
	if after := treeFiles(t, run); !slices.Equal(after, before) {
		t.Errorf("the finished run's files changed:\nbefore %v\nafter  %v", before, after)
	}
	for f, mt := range mtimes {
		if st, err := os.Stat(filepath.Join(run, f)); err != nil || !st.ModTime().Equal(mt) {
			t.Errorf("%s was rewritten", f)
		}
	}
}

func writeTestFileBytes(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// treeFiles lists the regular files under dir, relative to it, sorted.
func treeFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		out = append(out, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSweepSlurmSubmitTwice: --submit records the array's job id in the
// sweep's directory; while squeue shows a task of it queued or running, a
// second memo sweep --slurm refuses before it rewrites specs/ (which the
// pending tasks read when they start) or submits the points again; once
// squeue shows the job ended, or forgot it, the sweep is written again.
func TestSweepSlurmSubmitTwice(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	doc := "name = \"gvs\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n"
	if err := os.WriteFile(filepath.Join(dir, "gvs.toml"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	// sbatch prints a job id (41, then 42 for the report job); squeue
	// prints what $SQUEUE_OUT holds and exits $SQUEUE_RC.
	bin := t.TempDir()
	stand := map[string]string{
		"sbatch": "#!/bin/sh\nn=$(cat \"$0.n\" 2>/dev/null || echo 41)\necho $((n + 1)) > \"$0.n\"\necho \"Submitted batch job $n\"\n",
		"squeue": "#!/bin/sh\necho \"$@\" > \"$0.args\"\nprintf '%b' \"$SQUEUE_OUT\"\nprintf '%b' \"$SQUEUE_ERR\" >&2\nexit ${SQUEUE_RC:-0}\n",
	}
	for name, body := range stand {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	r := execMemo(t, exe, dir, "sweep", "--slurm", "--submit", "gvs.toml")
	if r.code != 0 || !strings.Contains(r.stdout, "Submitted batch job 41") {
		t.Fatalf("first submission: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	sweep := filepath.Join(dir, "runs", "gvs")
	// The array's id and the report job's: the report job waiting alone
	// would report on a rewritten sweep.
	if b, err := os.ReadFile(filepath.Join(sweep, slurmJobsFile)); err != nil || string(b) != "41:42\n" {
		t.Fatalf("%s = %q (%v), want the array's and the report job's ids 41:42", slurmJobsFile, b, err)
	}
	tests := []struct {
		name, out, stderr, rc string
		want                  string // in the refusal; "" when the script is written
	}{
		{"a task running, others pending", "41_0 RUNNING\n41_[1] PENDING\n", "", "0",
			"was submitted as job 41, 42, whose tasks 41_0, 41_[1] are still queued or running: wait for them or scancel 41 42"},
		{"only the report job waits", "42 PENDING\n", "", "0", "whose tasks 42 are still queued or running"},
		{"every task ended", "41_0 COMPLETED\n41_1 CANCELLED\n42 COMPLETED\n", "", "0", ""},
		{"squeue forgot the jobs", "", "slurm_load_jobs error: Invalid job id specified\n", "1", ""},
		{"controller unreachable", "", "squeue: error: Unable to contact slurm controller (connect failure)\n", "1",
			"and squeue cannot say whether it still runs (squeue: exit status 1: squeue: error: Unable to contact slurm controller (connect failure)): once `squeue -j 41,42` shows it ended, remove "},
	}
	for _, tt := range tests {
		t.Setenv("SQUEUE_OUT", tt.out)
		t.Setenv("SQUEUE_ERR", tt.stderr)
		t.Setenv("SQUEUE_RC", tt.rc)
		r := execMemo(t, exe, dir, "sweep", "--slurm", "gvs.toml")
		if tt.want != "" && (r.code != 2 || !strings.Contains(r.stderr, tt.want)) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tt.name, r.code, r.stderr, tt.want)
		}
		if tt.want == "" && r.code != 0 {
			t.Errorf("%s: exit %d, stderr %q; want the script written", tt.name, r.code, r.stderr)
		}
		if args, err := os.ReadFile(filepath.Join(bin, "squeue.args")); err != nil || !strings.Contains(string(args), "-j 41,42") {
			t.Errorf("%s: squeue ran with %q (%v), want -j 41,42", tt.name, args, err)
		}
	}
	// Past the squeue check the sweep's own refusals still stand (the
	// check's error once shadowed PrepareSweep's): a point run from
	// another spec.
	t.Setenv("SQUEUE_OUT", "")
	t.Setenv("SQUEUE_RC", "0")
	writeTestFile(t, filepath.Join(sweep, "k=0", "config.toml"), "name = \"other\"\n")
	if r := execMemo(t, exe, dir, "sweep", "--slurm", "gvs.toml"); r.code != 2 || !strings.Contains(r.stderr, "(k=0) were run from another spec; pass --force") {
		t.Errorf("a --slurm sweep over a point of another spec: exit %d, stderr %q; want 2 naming k=0", r.code, r.stderr)
	}
}
