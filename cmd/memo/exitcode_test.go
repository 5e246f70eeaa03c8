package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memo-research/memo/experiments"
	"github.com/memo-research/memo/internal/arrowsafe"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/train"
	"github.com/urfave/cli/v2"
)

// TestFailure: the exit code and line of each kind of error, without
// running the binary.
func TestFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		code int
		want string
	}{
		{"machine", errors.New("write x: no space left on device"), 1, "write x: no space left on device"},
		{"bad input, two lines", fmt.Errorf("run x: %w", badinput.Errorf("first\nsecond")), 2, "run x: first; second"},
		{"config", &experiments.ConfigError{File: "a.toml", Line: 3, Key: "goldfish.k", Msg: "must be >= 2"}, 2, "a.toml:3: goldfish.k: must be >= 2"},
		{"corrupt arrow", fmt.Errorf("read d/tokens.arrow: %w: x", arrowsafe.ErrCorrupt), 2, "read d/tokens.arrow"},
		{"spec changed", fmt.Errorf("%w: runs/x", experiments.ErrSpecChanged), 2, "runs/x"},
		{"interrupted in training", fmt.Errorf("run x: stage train: %w", &train.InterruptedError{Step: 7, Total: 20, Err: context.Canceled}), 130,
			"interrupted at step 7 of 20 (saved); the same command resumes"},
		{"libtorch exception", fmt.Errorf("score: %w", errors.New("Libtorch API Error: index out of range in self\nException raised from operator() at ../aten/src/ATen/native/TensorAdvancedIndexing.cpp:1189\nframe #0: c10::Error::Error\n\ngoroutine 1 [running]:\nruntime/debug.Stack()")), 1,
			"score: libtorch: index out of range in self"},
		{"interrupted elsewhere", fmt.Errorf("run x: stage data: %w", context.Canceled), 130, "interrupted; the same command resumes"},
		// extract and export keep nothing: they start over (a probe read
		// "resumes" from extract, which then took as long as a fresh one).
		{"interrupted, keeping nothing", errInterruptedAtOnce, 130, "interrupted; what it was writing was removed; the same command starts over"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, code := failure(tc.err)
			if code != tc.code || !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("failure = %q, %d; want one line containing %q, %d", msg, code, tc.want, tc.code)
			}
		})
	}
}

// TestChildExitIsNotMemos: a child process's exit status wrapped in an
// error (npm pack, sbatch) is memo's failure, exit 1 with its line, not
// the child's code.
func TestChildExitIsNotMemos(t *testing.T) {
	childErr := exec.Command("sh", "-c", "exit 130").Run()
	err := fmt.Errorf("fetch brown: npm pack: %w", childErr)
	if _, ok := cliExit(err); ok {
		t.Errorf("a child's exit 130 taken as memo's own exit")
	}
	if msg, code := failure(err); code != exitFailure || !strings.Contains(msg, "npm pack: exit status 130") {
		t.Errorf("failure = %q, %d; want the line and exit %d", msg, code, exitFailure)
	}
	if _, ok := cliExit(fmt.Errorf("x: %w", cli.Exit("asked", 3))); !ok {
		t.Errorf("cli.Exit not taken as memo's exit")
	}
}

// TestStartsOver: a command that keeps nothing reports any failure under
// a cancelled context as starting over, and anything else unchanged.
func TestStartsOver(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	diskFull := errors.New("write x: no space left on device")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"finished", context.Background(), nil, nil},
		{"failed", context.Background(), diskFull, diskFull},
		{"interrupted", cancelled, fmt.Errorf("scan: %w", context.Canceled), errInterruptedAtOnce},
		{"interrupted mid-write", cancelled, diskFull, errInterruptedAtOnce},
		{"finished as the signal came", cancelled, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := startsOver(tc.ctx, tc.err); got != tc.want {
				t.Errorf("startsOver = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestExitCodes runs the binary on bad input of every kind the contract
// names: each ends with one memo: line and exit code 2, and writes no run.
func TestExitCodes(t *testing.T) {
	exe := buildMemo(t)
	otherModel, err := filepath.Abs(filepath.Join("..", "..", "testdata", "hf", "llama-gqa-tied"))
	if err != nil {
		t.Fatal(err)
	}
	spec := func(sources, extra string) string {
		return "name = \"x\"\n[data]\nsources = [" + sources + "]\ntokenizer = \"bpe:300\"\nchunk_tokens = 64\nmin_tokens = 40\n" + extra
	}
	files := map[string]string{
		"fake.parquet":              "this is text\n",
		"empty.jsonl":               "",
		"one.jsonl":                 "{\"text\": \"hello world, a document long enough to keep\"}\n",
		"ids.json":                  "[[1, 2, 3]]\n",
		"text.arrow":                "not arrow either\n",
		"emptydir/":                 "",
		"unfinished/config.toml":    "name = \"unfinished\"\n",
		"dirrun/completions.arrow/": "",
		"empty.toml":                "# truncated\n",
		"bom.toml":                  "\ufeffname = \"bom\"\n[goldfish]\nk = 1\n",
		"warmup.toml":               "name = \"w\"\n[train]\nsteps = 10\nwarmup_steps = 50\n",
		"parquet.toml":              spec(`"parquet:fake.parquet"`, ""),
		"emptytxt.toml":             spec(`"txt:emptydir"`, ""),
		"emptyjsonl.toml":           spec(`"jsonl:empty.jsonl"`, ""),
		"field.toml":                spec(`"jsonl:one.jsonl#body"`, ""),
		"targets.toml":              spec(`"opticks"`, "targets = 100000\n"),
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown command", []string{"bogus"}, `unknown command "bogus"`},
		{"unknown flag of run", []string{"run", "--bogus", "parquet.toml"}, "run: unknown flag --bogus; see `memo run --help`"},
		{"a flag's value of the wrong kind", []string{"run", "--nproc", "two", "parquet.toml"}, `run: --nproc "two": want an integer`},
		{"unknown flag of a subcommand", []string{"data", "build", "--bogus"}, "data build: unknown flag --bogus; see `memo data build --help`"},
		{"text file named .parquet", []string{"data", "build", "--out", "out", "parquet.toml"}, `data.sources: "parquet:fake.parquet": read fake.parquet`},
		{"spec without keys", []string{"run", "empty.toml"}, "empty.toml: the spec sets no key"},
		{"empty txt directory", []string{"data", "build", "--out", "out", "emptytxt.toml"}, "no .txt files under emptydir"},
		{"empty JSONL", []string{"data", "build", "--out", "out", "emptyjsonl.toml"}, "data.sources: \"jsonl:empty.jsonl\": empty.jsonl is empty"},
		{"wrong #field", []string{"data", "build", "--out", "out/a/b", "field.toml"}, `no usable documents (1 rejected: 1 no text field (first at one.jsonl:1: no "body" field)`},
		{"more targets than the corpus", []string{"data", "build", "--out", "out", "targets.toml"}, "data.targets + data.controls = 100050"},
		{"run: text file named .parquet", []string{"run", "parquet.toml"}, `parquet.toml:3: data.sources: "parquet:fake.parquet": read fake.parquet: parquet: file is smaller than indicated metadata size (is it a Parquet file?)`},
		{"export of a Hugging Face directory", []string{"export", otherModel, "out"}, "is a Hugging Face directory already: export writes one from a memo checkpoint or run"},
		{"export of nothing", []string{"export", "emptydir", "out"}, "export: emptydir: no complete checkpoint"},
		{"completions that are a directory", []string{"eval", "dirrun"}, "is a directory, not the completions file extract writes"},
		{"eval of a text file", []string{"eval", "text.arrow"}, "text.arrow"},
		{"eval of a spec", []string{"eval", "parquet.toml"}, "eval: parquet.toml: not a run directory nor a completions .arrow file"},
		// A newline in an argument stays inside the one line, as \n.
		{"a newline in a path", []string{"eval", "no\nsuch"}, `eval: no\nsuch: no such file or directory`},
		{"a newline in a spec's path", []string{"run", "no\nsuch.toml"}, `no\nsuch.toml: cannot read the spec`},
		{"report of a run that has not finished", []string{"report", "unfinished"}, "report unfinished: the run has not finished: no scores.parquet yet"},
		{"report of a directory without scores", []string{"report", "emptydir"}, "report emptydir: holds neither a run's config.toml, a sweep's sweep.json nor memo eval's scores.parquet"},
		{"a spec with a BOM is read (and checked)", []string{"config", "bom.toml"}, "bom.toml:3: goldfish.k = 1"},
		{"negative threads", []string{"run", "--threads", "-4", "parquet.toml"}, "run: --threads -4: must be in [0, "},
		{"threads past 64 a core", []string{"extract", "--threads", "100000", "x"}, "extract: --threads 100000: must be in [0, "},
		{"-j 0 without a sweep", []string{"run", "-j", "0", "parquet.toml"}, "-j 0: want >= 1"},
		{"negative examples", []string{"data", "inspect", "--examples", "-1", "emptydir"}, "--examples -1: want >= 0"},
		{"extract --out into a missing tree", []string{"extract", "--out", "no/such/dir/c.arrow", "emptydir"}, "directory no/such/dir does not exist"},
		{"help on an unknown command", []string{"help", "bogus"}, `help: unknown command "bogus"`},
		{"flags after the spec file are read as flags", []string{"run", "parquet.toml", "--threads", "-4"}, "run: --threads -4: must be in [0, "},
		{"a batch the ranks cannot split", []string{"config", "warmup.toml", "--nproc", "3", "--set", "train.steps=100"}, "train.batch_size = 16: must be a multiple of 3 processes"},
		{"warm-up longer than the run", []string{"config", "warmup.toml"}, "warmup.toml:4: train.warmup_steps = 50: must be <= train.steps = 10"},
		{"a shard setting on one process", []string{"config", "warmup.toml", "--set", "train.steps=100", "--set", "train.shard=optimizer"}, `train.shard = "optimizer": shards the training state over the ranks and needs 2 or more processes`},
		{"ZeRO-3 on one process", []string{"config", "warmup.toml", "--set", "train.steps=100", "--set", "train.shard=full"}, `train.shard = "full": shards the training state over the ranks and needs 2 or more processes`},
		{"a group size that does not divide the ranks", []string{"config", "warmup.toml", "--nproc", "4", "--set", "train.steps=100", "--set", "train.shard=full", "--set", "train.shard_group=3"}, "train.shard_group = 3: must divide the 4 ranks into groups of equal size (one of 1, 2, 4)"},
		{"groups without ZeRO-3", []string{"config", "warmup.toml", "--nproc", "4", "--set", "train.steps=100", "--set", "train.shard=gradients", "--set", "train.shard_group=2"}, `train.shard_group = 2: keeps a secondary copy of the gathered weights, which only train.shard = "full" gathers`},
		{"a checkpoint of another model", []string{"config", "warmup.toml", "--nproc", "2", "--set", "train.steps=100", "--set", "train.shard=full", "--set", `train.init_from="` + otherModel + `"`}, "the weights do not fit"},
		{"an unknown shard setting", []string{"config", "warmup.toml", "--nproc", "2", "--set", "train.shard=zero3"}, `train.shard = "zero3": must be none, optimizer (ZeRO-1), gradients (ZeRO-2) or full (ZeRO-3)`},
		// A file where a directory goes, and flags a sibling command
		// refuses: each the user's to mend (a probe saw exit 1 or a
		// silent default).
		{"a file as --runs", []string{"run", "--runs", "one.jsonl", "warmup.toml", "--set", "train.steps=100"}, "--runs one.jsonl: not a directory"},
		{"a file as the cache", []string{"data", "ls", "--cache", "one.jsonl"}, "data ls: the cache one.jsonl is not a directory"},
		// A probe's run trained to its end and failed saving it.
		{"a --runs past the path limit", []string{"run", "--runs", strings.Repeat("d/", 1900), "warmup.toml", "--set", "train.steps=100"}, "the files memo writes under it would pass the system's 4096-byte path limit"},
		{"a cache that is not there", []string{"data", "ls", "--cache", "no/such/cache"}, "data ls: --cache no/such/cache does not exist"},
		{"a file as a run directory", []string{"data", "inspect", "one.jsonl"}, "open dataset: one.jsonl is a file: want a run directory, its data/ or a dataset cache entry"},
		{"an unknown stage", []string{"run", "--stages", "data,bogus", "warmup.toml", "--set", "train.steps=100"}, `--stages data,bogus: unknown stage "bogus"`},
		{"no stage", []string{"run", "--stages", "", "warmup.toml", "--set", "train.steps=100"}, `run: --stages "": name the stages to run`},
		{"a stage before what it reads", []string{"run", "--stages", "extract", "warmup.toml", "--set", "train.steps=100"}, "extract reads what train writes, which has not run in runs/w"},
		// The references' signals are the target model's: a probe trained
		// every reference before failing on the missing target.
		{"references before the target", []string{"run", "--stages", "data,references", "warmup.toml", "--set", "train.steps=100", "--set", "mia.references=2", "--set", "data.validation=4"}, "references reads what train writes, which has not run in runs/w"},
		{"a Slurm flag on a local sweep", []string{"sweep", "--account", "proj", "--set", `sweep."goldfish.k"=[0, 4]`, "--set", "train.steps=100", "warmup.toml"}, "sweep: --account is a Slurm setting: add --slurm"},
		{"--nodes on a local sweep", []string{"sweep", "--nodes", "2", "--set", `sweep."goldfish.k"=[0, 4]`, "--set", "train.steps=100", "warmup.toml"}, "sweep: --nodes is a Slurm setting: add --slurm"},
		{"submit and dry-run", []string{"sweep", "--slurm", "--submit", "--dry-run", "--set", `sweep."goldfish.k"=[0, 4]`, "--set", "train.steps=100", "warmup.toml"}, "--submit and --dry-run exclude each other"},
		{"no ranks for a sweep", []string{"sweep", "--nproc", "0", "--set", `sweep."goldfish.k"=[0, 4]`, "--set", "train.steps=100", "warmup.toml"}, "sweep: --nproc 0: must be >= 1"},
		{"--defaults with --set", []string{"config", "--defaults", "--set", "train.lr=-1"}, "--defaults prints the built-in defaults alone"},
		{"an audit window below 0", []string{"audit", "--model", "m", "--out", "o", "--data", "one.jsonl", "--window", "-1"}, "audit: --window -1: must be >= 0"},
		{"an infinite dcpdd cap", []string{"audit", "--model", "m", "--out", "o", "--data", "one.jsonl", "--dcpdd-cap", "inf"}, "audit: --dcpdd-cap +Inf: must be a finite number > 0"},
		{"an infinite decode temperature", []string{"bench", "decode", "--decoding", "sample", "--temperature", "inf"}, "bench decode: --temperature +Inf: must be a finite number > 0"},
		{"a top-k under greedy decoding", []string{"bench", "decode", "--top-k", "5"}, "bench decode: --top-k is --decoding sample's setting (got --decoding greedy)"},
		{"beams under sampling", []string{"bench", "decode", "--decoding", "sample", "--beams", "2"}, "bench decode: --beams is --decoding beam's setting (got --decoding sample)"},
		{"--replicate with one sample", []string{"bench", "decode", "--decoding", "sample", "--replicate"}, "bench decode: --replicate runs the prompt once per sample: it needs --samples > 1"},
		{"a NaN share of planted windows", []string{"bench", "scan", "--plant", "nan"}, "bench scan: --plant NaN: must be between 0 and 1"},
		{"an endless spec", []string{"config", "/dev/zero"}, "/dev/zero: cannot read the spec: longer than 16 MiB: not a spec"},
		{"endless ids", []string{"generate", "--model", "emptydir", "--ids-json", "/dev/zero"}, "generate: --ids-json /dev/zero: longer than 256 MiB"},
		{"logits to standard output", []string{"score", "--model", otherModel, "--ids-json", "ids.json", "--logits-out", "-"}, "score: --logits-out -: writes a file, not standard output"},
		{"logits into a missing directory", []string{"score", "--model", otherModel, "--ids-json", "ids.json", "--logits-out", "nodir/l.json"}, "score: --logits-out nodir/l.json: directory nodir does not exist"},
		{"an audit into an existing directory", []string{"audit", "--model", "m", "--out", "emptydir", "--data", "one.jsonl"}, "audit: --out emptydir: exists; it writes a new directory"},
		{"mask with a missing tokenizer", []string{"mask", "--text", "one.jsonl", "--tokenizer", "no/such.json"}, "mask: --tokenizer no/such.json: load tokenizer"},
		{"an index window of 0", []string{"index", "count", "--window", "0", "emptydir"}, "index count: --window 0: must be >= 1"},
		{"noise the accountant cannot bound", []string{"dp-epsilon", "--sample-rate", "0.04", "--noise", "1e-160", "--steps", "10", "--delta", "1e-5"}, "--noise 1e-160: the RDP accountant cannot bound"},
		{"noise whose RDP overflows", []string{"dp-epsilon", "--sample-rate", "1", "--noise", "1e-300", "--steps", "10", "--delta", "1e-5"}, "--noise 1e-300: the RDP accountant cannot bound"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each case in its own directory
			dir := t.TempDir()
			for name, content := range files {
				if strings.HasSuffix(name, "/") {
					if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
						t.Fatal(err)
					}
					continue
				}
				writeTestFile(t, filepath.Join(dir, name), content)
			}
			r := execMemo(t, exe, dir, tc.args...)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			if r.code != 2 || !strings.HasPrefix(last, "memo: ") || !strings.Contains(last, tc.want) || strings.Count(r.stderr, "memo: ") != 1 {
				t.Fatalf("exit %d, stderr %q; want 2 and one memo: line containing %q", r.code, r.stderr, tc.want)
			}
			if _, err := os.Stat(filepath.Join(dir, "runs", "x", "data", "report.json")); err == nil {
				t.Error("a refused run left a built dataset")
			}
			if tc.args[0] == "data" && tc.args[1] == "build" {
				// A review found an empty --out DIR after a refused build.
				if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
					t.Error("a refused data build left its --out directory")
				}
			}
		})
	}
}

// TestInterruptedRun: SIGINT during training saves a checkpoint and ends
// with exit code 130 and the step and resume hint on one line.
func TestInterruptedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	exe := buildMemo(t)
	dir := t.TempDir()
	path := tinySpec(t, dir)
	b, _ := os.ReadFile(path)
	// Long enough to be interrupted mid-training.
	writeTestFile(t, path, strings.Replace(string(b), "\nsteps = 6\n", "\nsteps = 100000\n", 1))
	cmd := exec.Command(exe, "run", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMO_CACHE="+t.TempDir())
	// Read while the child writes: a strings.Builder would race.
	stderr := &syncBuilder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ckpts := filepath.Join(dir, "runs", "tiny", "metrics.arrow")
	deadline := time.Now().Add(3 * time.Minute)
	// Wait for the training stage to be under way.
	for !strings.Contains(stderr.String(), "stage=train") && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130; stderr %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "memo: interrupted at step ") || !strings.HasSuffix(last, "; the same command resumes") {
		t.Errorf("last line %q, want the step and the resume hint", last)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ckpts), "checkpoints", "latest")); err != nil {
		t.Errorf("no checkpoint saved on interruption: %v", err)
	}
}

// TestInterruptThenResumeIsExact: a run interrupted mid-training (exit 130)
// and resumed by the same command ends with the same weights, bit for bit,
// as the same run left alone — the promise of the resume hint.
func TestInterruptThenResumeIsExact(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model three times")
	}
	exe := buildMemo(t)
	spec := func(dir string) string {
		path := tinySpec(t, dir)
		b, _ := os.ReadFile(path)
		s := strings.Replace(string(b), "\nsteps = 6\n", "\nsteps = 150\n", 1)
		s = strings.Replace(s, "\nlog_every = 5\n", "\nlog_every = 1\n", 1)
		if !strings.Contains(s, "\nlog_every = 1\n") {
			t.Fatal("exp/smoke.toml changed shape: cannot set log_every")
		}
		writeTestFile(t, path, s)
		return path
	}
	weights := func(dir string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "runs", "tiny", "checkpoints", "step-000150", "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cache := t.TempDir()
	run := func(path string) *exec.Cmd {
		cmd := exec.Command(exe, "run", path)
		cmd.Dir = filepath.Dir(path)
		cmd.Env = append(os.Environ(), "MEMO_CACHE="+cache)
		return cmd
	}

	interrupted := t.TempDir()
	path := spec(interrupted)
	cmd := run(path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// metrics.arrow appears after the first step (log_every = 1).
	metrics := filepath.Join(interrupted, "runs", "tiny", "metrics.arrow")
	for deadline := time.Now().Add(3 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(metrics); err == nil {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130 (interrupted before the 150 steps ended); stderr %s", err, stderr.String())
	}
	t.Logf("interrupted: %s", strings.TrimSpace(stderr.String()[strings.LastIndex(strings.TrimSpace(stderr.String()), "\n")+1:]))
	combined(t, run(path))

	alone := t.TempDir()
	combined(t, run(spec(alone)))
	if !bytes.Equal(weights(interrupted), weights(alone)) {
		t.Error("the resumed run's final weights differ from the uninterrupted run's")
	}
}

// TestProfileOfAUsageError: a command refused for its flags leaves no
// --cpu-profile file, not even an empty one under the name asked for;
// a command that runs leaves a whole profile and no temporary file.
func TestProfileOfAUsageError(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	r := execMemo(t, exe, dir, "--cpu-profile", "bad.prof", "dp-epsilon", "--sample-rate", "5")
	if r.code != 2 {
		t.Fatalf("exit %d, want 2: %s", r.code, r.stderr)
	}
	// A directory that does not exist is the user's typo, exit 2, as
	// for every other output flag (--logits-out, --rows-out).
	r = execMemo(t, exe, dir, "--cpu-profile", "no/such/dir/p.prof", "config", "--defaults")
	if r.code != 2 || !strings.Contains(r.stderr, "--cpu-profile no/such/dir/p.prof: directory no/such/dir does not exist") {
		t.Errorf("a profile into a missing directory: exit %d, %q; want 2 naming the directory", r.code, r.stderr)
	}
	r = execMemo(t, exe, dir, "--cpu-profile", "good.prof", "dp-epsilon", "--sample-rate", "0.01", "--steps", "100", "--delta", "1e-5", "--noise", "1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 1 || names[0] != "good.prof" {
		t.Errorf("files left: %v, want good.prof alone", names)
	}
}
