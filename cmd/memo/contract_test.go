package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memo-research/memo/internal/runlock"
	"github.com/memo-research/memo/internal/torchx"
	"github.com/memo-research/memo/precision"
	"github.com/sugarme/gotch"
)

// TestInputErrorContract (issue 25): each input error the second probe
// found answered with exit 1, a Go "out of memory" dump, help text on
// stdout or a pass from `memo config` ends with one memo: line, exit 2,
// nothing on stdout, no run directory and no memo.lock left behind.
func TestInputErrorContract(t *testing.T) {
	exe := buildMemo(t)
	src, _ := hfGolden(t, "llama-gqa-tied")
	hfWith := func(key string, value float64) func(*testing.T, string) {
		return func(t *testing.T, dir string) {
			copyDir(t, src, dir)
			editJSONFile(t, filepath.Join(dir, "config.json"), func(c map[string]any) { c[key] = value })
		}
	}
	truncated := func(t *testing.T, dir string) {
		copyDir(t, src, dir)
		truncateBy(t, filepath.Join(dir, "model.safetensors"), 100)
	}
	files := map[string]string{
		"plain.toml":  "name = \"x\"\n",
		"axis.toml":   "name = \"x\"\n[sweep]\n\"goldfish.k\" = [0, \"four\"]\n",
		"repeat.toml": "name = \"x\"\n[sweep]\n\"goldfish.k\" = [4, 4]\n",
		"cuda.toml":   "name = \"x\"\n[train]\ndevice = \"cuda\"\n",
		"gpu.toml":    "name = \"x\"\ndevice = \"cuda:1\"\n",
		"fp16.toml":   "name = \"x\"\n[extract]\nprecision = \"fp16\"\n",
		"import.toml": "name = \"x\"\n[data]\ntokenizer = \"bpe:300\"\n[model]\ninit_from = \"hf:cut\"\n",
		"ids.json":    "[[1, 2, 3]]",
		"bad.json":    `[[1, 2], [3, "a"]]`,
		"one.json":    "[[1, 2], [5]]",
		"vocab.json":  "[[1, 2, 999999]]",
		"jp.toml":     "name = \"実験\"\n",
		"grid.toml":   "name = \"g\"\n[sweep]\n\"goldfish.k\" = [2, 4]\n",
	}
	dirs := map[string]func(*testing.T, string){
		"context": hfWith("max_position_embeddings", 1e12),
		"vocab":   hfWith("vocab_size", 1e11),
		"ffn":     hfWith("intermediate_size", 1e12),
		"cut":     truncated,
		"hf":      func(t *testing.T, dir string) { copyDir(t, src, dir) },
	}
	_, cudaErr := torchx.ResolveDevice("cuda")
	fp16Err := precision.Check(precision.FP16, false, gotch.CPU) // Debian's CPU libtorch has no float16 products
	for _, tc := range []struct {
		name string
		args []string
		want string
		skip bool
	}{
		{"config: a sweep value of the wrong type", []string{"config", "axis.toml"}, "grid point k=four", false},
		{"config: a repeated sweep point", []string{"config", "repeat.toml"}, `both named "k=4"`, false},
		{"config: CUDA without CUDA", []string{"config", "cuda.toml"}, `train.device = "cuda": CUDA is not available`, cudaErr == nil},
		{"run: CUDA without CUDA", []string{"run", "cuda.toml"}, `train.device = "cuda": CUDA is not available`, cudaErr == nil},
		{"config: the top-level device named as set", []string{"config", "gpu.toml"}, `gpu.toml:2: device = "cuda:1": CUDA is not available`, cudaErr == nil},
		{"run: the top-level device named as set", []string{"run", "gpu.toml"}, `gpu.toml:2: device = "cuda:1"`, cudaErr == nil},
		{"config: an fp16 attack where the CPU has no float16 products", []string{"config", "fp16.toml"}, `extract.precision = "fp16": precision fp16 on cpu: libtorch computes no float16 matrix products`, fp16Err == nil},
		{"run: an fp16 attack where the CPU has no float16 products", []string{"run", "fp16.toml"}, `extract.precision = "fp16"`, fp16Err == nil},
		{"score --precision fp16 there, before loading", []string{"score", "--model", "hf", "--ids-json", "ids.json", "--precision", "fp16"}, "score: --precision: precision fp16 on cpu", fp16Err == nil},
		{"config: a model past the machine", []string{"config", "--set", "model.dim=1048576", "plain.toml"}, "dim 1048576", false},
		{"run: a model past the machine", []string{"run", "--set", "model.dim=1048576", "plain.toml"}, "needs at least", false},
		{"config: model.init_from at a truncated file", []string{"config", "import.toml"}, "truncated", false},
		{"config --nproc 0", []string{"config", "--nproc", "0", "plain.toml"}, "--nproc 0: want >= 1", false},
		{"score: max_position_embeddings 1e12", []string{"score", "--model", "context", "--ids-json", "ids.json"}, "context 1000000000000", false},
		{"generate: vocab_size 1e11", []string{"generate", "--model", "vocab", "--ids-json", "ids.json"}, "vocab 100000000000", false},
		{"score: intermediate_size 1e12", []string{"score", "--model", "ffn", "--ids-json", "ids.json"}, "ffn 1000000000000", false},
		{"score without --model", []string{"score", "--ids-json", "ids.json"}, "score: give --model DIR", false},
		{"generate without --model", []string{"generate", "--ids-json", "ids.json"}, "generate: give --model DIR", false},
		{"score: an extra argument", []string{"score", "--model", "hf", "--ids-json", "ids.json", "other"}, `unexpected argument "other"`, false},
		{"score: a value that is no id", []string{"score", "--model", "hf", "--ids-json", "bad.json"}, `row 1, position 1: "a" is not a token id`, false},
		{"score: a one-token row", []string{"score", "--model", "hf", "--ids-json", "one.json"}, "row 1 has one token", false},
		// Rows are checked against config.json before the weights load:
		// "cut" has truncated weights, which loading would name instead.
		{"score: an id past the vocabulary, before loading", []string{"score", "--model", "cut", "--ids-json", "vocab.json"}, "row 0, token 2: id 999999 is outside the model's vocabulary", false},
		{"score: a one-token row, before loading", []string{"score", "--model", "cut", "--ids-json", "one.json"}, "row 1 has one token", false},
		{"generate: an id past the vocabulary, before loading", []string{"generate", "--model", "cut", "--ids-json", "vocab.json"}, "row 0, token 2: id 999999 is outside the model's vocabulary", false},
		{"score: --device, not train.device", []string{"score", "--model", "hf", "--ids-json", "ids.json", "--device", "cuda"}, `--device "cuda": CUDA is not available`, cudaErr == nil},
		{"extract --set of a training key", []string{"extract", "--model", "hf", "--data", "nodata", "--set", "train.lr=1"}, "extract takes only extract.KEY=VALUE; train.lr is not an attack setting", false},
		{"extract --set extract.checkpoints", []string{"extract", "--model", "hf", "--data", "nodata", "--set", "extract.checkpoints=[5,10]"}, "memo extract attacks one model: name the checkpoint", false},
		{"a run name in another script", []string{"config", "jp.toml"}, "use ASCII letters", false},
		{"sweep --slurm: --runs with a space", []string{"sweep", "--slurm", "--dry-run", "--runs", "dir with space", "grid.toml"}, "holds a space", false},
		{"sweep --nproc a batch cannot split", []string{"sweep", "--nproc", "3", "grid.toml"}, "sweep point k=2: train.batch_size = ", false},
		{"sweep --slurm over nodes a batch cannot split", []string{"sweep", "--slurm", "--dry-run", "--nodes", "3", "grid.toml"}, "to train on 3 processes", false},
		{"run --nproc of a sweep a batch cannot split", []string{"run", "--nproc", "3", "grid.toml"}, "sweep point k=2: train.batch_size = ", false},
		{"sweep --slurm: --runs with a backslash", []string{"sweep", "--slurm", "--dry-run", "--runs", `dir\x`, "grid.toml"}, "holds a space, quote or backslash", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case in its own directory, with its own copies
			if tc.skip {
				t.Skip("this libtorch has what the case needs missing (CUDA, float16 products on the CPU)")
			}
			dir := t.TempDir()
			for name, content := range files {
				writeTestFile(t, filepath.Join(dir, name), content)
			}
			for name, make := range dirs {
				make(t, filepath.Join(dir, name))
			}
			r := execMemo(t, exe, dir, append([]string{"--log-level", "warn"}, tc.args...)...)
			wantOneLine(t, r, tc.want)
			if r.stdout != "" {
				t.Errorf("stdout %.200q, want nothing", r.stdout)
			}
			if strings.Contains(r.stderr, "goroutine") {
				t.Errorf("a stack trace: %s", r.stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs")); err == nil {
				filepath.WalkDir(filepath.Join(dir, "runs"), func(p string, d fs.DirEntry, err error) error {
					if err == nil && d.Name() == runlock.FileName {
						t.Errorf("%s left behind", p)
					}
					return nil
				})
				t.Errorf("a refused command made %s", filepath.Join(dir, "runs"))
			}
		})
	}
}

// TestStdoutWriteErrors: output that cannot be written (a full disk)
// fails the command (exit 1, one line) instead of exiting 0.
func TestStdoutWriteErrors(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here")
	}
	defer full.Close()
	exe := buildMemo(t)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "plain.toml"), "name = \"x\"\n")
	for _, args := range [][]string{{"config", "plain.toml"}, {"--help"}} {
		cmd := exec.Command(exe, args...)
		cmd.Dir = dir
		cmd.Stdout = full
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 1 || !strings.HasPrefix(stderr.String(), "memo: write standard output") {
			t.Errorf("memo %s > /dev/full: %v, stderr %q; want exit 1 and one line", strings.Join(args, " "), err, stderr.String())
		}
	}
}

// TestSIGTERMLikeSIGINT: a command without a save of its own to make
// (score, waiting here for its input) ends on SIGTERM and SIGHUP (an ssh
// session dropped) as on SIGINT: one memo: line and exit code 130, where
// SIGTERM killed it silently (143) and SIGHUP too (129).
func TestSIGTERMLikeSIGINT(t *testing.T) {
	exe := buildMemo(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		// --model must exist (it is looked for first); it is never loaded.
		cmd := exec.Command(exe, "score", "--model", t.TempDir(), "--ids-json", "-")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waitReadingStdin(t, cmd.Process.Pid) // its handlers are in place once it reads
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		err = cmd.Wait()
		stdin.Close()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != exitInterrupted || strings.TrimSpace(stderr.String()) != "memo: "+errInterruptedAtOnce.Error() {
			t.Errorf("%v: %v, stderr %q; want exit %d and the interrupted line", sig, err, stderr.String(), exitInterrupted)
		}
	}
}

// waitReadingStdin waits until process pid blocks reading its standard
// input, which memo does only after its signal handlers are in place. A
// fixed sleep was not enough: on a loaded machine, loading libtorch twice
// (memo restarts itself with its allocator settings) took longer than
// 5 s, and a signal in that window killed it before memo could answer.
// Linux shows each thread's current system call in /proc (read is 0 on
// x86-64, with fd 0 its first argument); elsewhere it waits 5 s as before.
func waitReadingStdin(t *testing.T, pid int) {
	t.Helper()
	tasks := fmt.Sprintf("/proc/%d/task", pid)
	if _, err := os.Stat(tasks); err != nil || runtime.GOARCH != "amd64" {
		time.Sleep(5 * time.Second)
		return
	}
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ids, _ := os.ReadDir(tasks)
		for _, id := range ids {
			if b, err := os.ReadFile(filepath.Join(tasks, id.Name(), "syscall")); err == nil && strings.HasPrefix(string(b), "0 0x0 ") {
				return
			}
		}
	}
	t.Fatalf("memo (pid %d) did not start reading its input within 2 minutes", pid)
}

// TestSweepSIGTERMInterrupted: SIGTERM to `memo run -j 2` on a sweep
// stops its runs as interrupted, not failed, and ends with the
// interrupted line and exit 130 (it said "2 of 2 sweep runs failed").
func TestSweepSIGTERMInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("trains two models")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	spec := strings.Replace(evalRunSpec, "\nsteps = 6\n", "\nsteps = 100000\n", 1) + "\n[sweep]\n\"goldfish.k\" = [0, 4]\n"
	writeTestFile(t, filepath.Join(dir, "sw.toml"), spec)
	cmd := exec.Command(exe, "--log-level", "warn", "run", "-j", "2", "sw.toml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMO_CACHE="+filepath.Join(dir, "cache"))
	var stdout strings.Builder
	stderr := &syncBuilder{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(60 * time.Second); strings.Count(stderr.String(), ": started") < 2 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(3 * time.Second) // into their first stages
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if !ok || ee.ExitCode() != exitInterrupted || lines[len(lines)-1] != "memo: interrupted; the same command resumes" ||
		strings.Contains(stderr.String(), "FAILED") || !strings.Contains(stdout.String(), "0 failed, 2 interrupted") {
		t.Errorf("SIGTERM to a sweep: %v\nstdout %s\nstderr %s", err, stdout.String(), stderr.String())
	}
	// No point finished: --require-all's verdict is a failure of the
	// points (exit 1), as with some finished; it was exit 2, bad input.
	r := execMemoCache(t, exe, dir, filepath.Join(dir, "cache"), "report", "--require-all", filepath.Join("runs", "tiny"))
	if r.code != exitFailure || !strings.Contains(r.stderr, "2 grid point(s) of runs/tiny did not finish") {
		t.Errorf("report --require-all of a sweep with no point finished: exit %d, stderr %q; want 1 naming both points", r.code, r.stderr)
	}
}

// syncBuilder is a strings.Builder a process writes while a test reads it.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestNohupKeepsSIGHUPIgnored: a process started ignoring SIGHUP (nohup)
// does not ask for it, which would undo the ignoring and let a logout
// stop the run (a review caught it); otherwise SIGHUP interrupts.
func TestNohupKeepsSIGHUPIgnored(t *testing.T) {
	has := func() bool { return slices.Contains(interruptSignals(), os.Signal(syscall.SIGHUP)) }
	if !signal.Ignored(syscall.SIGHUP) && !has() { // go test itself may run under nohup
		t.Fatal("SIGHUP is not among the interrupts of a process that does not ignore it")
	}
	signal.Ignore(syscall.SIGHUP)
	defer signal.Reset(syscall.SIGHUP)
	if has() {
		t.Error("SIGHUP is asked for in a process started ignoring it")
	}
}
