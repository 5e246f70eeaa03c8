package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memo-research/memo/internal/outguard"
	"github.com/memo-research/memo/internal/runlock"
)

// TestWritersOutsideTheGuard (issue 43, case 1): --cpu-profile, bench
// corpus --out, export and run --runs never write into a checkpoint, a
// run's data/ or checkpoints/ or the cache, nor replace a file they did
// not write (links resolved): each refusal is one line, exit 2, with every
// file of the run, the cache and the user's own byte-identical.
func TestWritersOutsideTheGuard(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	writeTestFile(t, filepath.Join(dir, "mine.txt"), "the user's own notes\n")
	// The links live outside dir, whose files the test hashes.
	links := t.TempDir()
	for link, to := range map[string]string{
		"summary-link":     "runs/tiny/summary.json",
		"checkpoints-link": "runs/tiny/checkpoints",
	} {
		if err := os.Symlink(filepath.Join(dir, to), filepath.Join(links, link)); err != nil {
			t.Fatal(err)
		}
	}
	summaryLink, checkpointsLink := filepath.Join(links, "summary-link"), filepath.Join(links, "checkpoints-link")
	entries, err := filepath.Glob(filepath.Join(dir, "cache", "datasets", "*", "entry.json"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no dataset-cache entry under %s (%v)", dir, err)
	}
	entry, _ := filepath.Rel(dir, filepath.Dir(entries[0]))
	ckpt := "runs/tiny/checkpoints/step-000006"
	memo := memoIn(t, exe, dir)
	// Another corpus of the same tokenizer, indexed, for eval --counts.
	writeTestFile(t, filepath.Join(dir, "other.toml"), strings.Replace(evalRunSpec, "seed = 1", "seed = 2", 1))
	for _, args := range [][]string{{"data", "build", "other.toml", "--out", "other"}, {"index", "build", "other"}} {
		if r := memo(args...); r.code != 0 {
			t.Fatalf("memo %s: exit %d, %s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	before := treeSums(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"profile over config.toml", []string{"--cpu-profile", "runs/tiny/config.toml", "config", "--defaults"}, "is not a CPU profile"},
		{"profile over the spec it reads", []string{"--cpu-profile", "tiny.toml", "config", "tiny.toml"}, "is not a CPU profile"},
		{"profile over completions", []string{"--cpu-profile", "runs/tiny/completions.arrow", "config", "--defaults"}, "is not a CPU profile"},
		{"profile over the weights", []string{"--cpu-profile", ckpt + "/model.safetensors", "config", "--defaults"}, "is in a checkpoint directory"},
		{"profile into a checkpoint", []string{"--cpu-profile", ckpt + "/cpu.prof", "config", "--defaults"}, "is in a checkpoint directory"},
		{"profile into the cache", []string{"--cpu-profile", "cache/datasets/cpu.prof", "config", "--defaults"}, "is in the cache's datasets/"},
		{"profile through a link", []string{"--cpu-profile", summaryLink, "config", "--defaults"}, "is not a CPU profile"},
		{"profile over the user's file", []string{"--cpu-profile", "mine.txt", "config", "--defaults"}, "is not a CPU profile"},
		{"corpus over config.toml", []string{"bench", "corpus", "--out", "runs/tiny/config.toml"}, "exists; it writes a new file"},
		{"corpus over the user's file", []string{"bench", "corpus", "--out", "mine.txt"}, "exists; it writes a new file"},
		{"corpus through a link", []string{"bench", "corpus", "--out", summaryLink}, "exists; it writes a new file"},
		{"corpus into data/", []string{"bench", "corpus", "--out", "runs/tiny/data/c.jsonl"}, "is in a run's data directory"},
		{"corpus into a cache entry", []string{"bench", "corpus", "--out", entry + "/c.jsonl"}, "is in a dataset-cache entry"},
		{"corpus into checkpoints/ through a link", []string{"bench", "corpus", "--out", checkpointsLink + "/c.jsonl"}, "is in a run's checkpoints/"},
		{"export into checkpoints/", []string{"export", "runs/tiny", "runs/tiny/checkpoints/step-000099"}, "is in a run's checkpoints/"},
		{"export into data/", []string{"export", "runs/tiny", "runs/tiny/data/hf"}, "is in a run's data directory"},
		{"export into the cache", []string{"export", "runs/tiny", "cache/datasets/hf"}, "is in the cache's datasets/"},
		{"export into checkpoints/ through a link", []string{"export", "runs/tiny", checkpointsLink + "/hf"}, "is in a run's checkpoints/"},
		{"data build into the cache", []string{"data", "build", "tiny.toml", "--out", "cache/datasets/mine"}, "is in the cache's datasets/"},
		{"data build into checkpoints/ through a link", []string{"data", "build", "tiny.toml", "--out", checkpointsLink + "/mine"}, "is in a run's checkpoints/"},
		{"audit over the run", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", "runs/tiny"}, "exists; it writes a new directory"},
		{"audit into data/", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", "runs/tiny/data/audit"}, "is in a run's data directory"},
		{"audit into the cache", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", "cache/datasets/audit"}, "is in the cache's datasets/"},
		{"audit into checkpoints/ through a link", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", checkpointsLink + "/audit"}, "is in a run's checkpoints/"},
		{"runs root in data/", []string{"run", "--runs", "runs/tiny/data", "tiny.toml"}, "is in a run's data directory"},
		{"runs root in the cache", []string{"run", "--runs", "cache/datasets", "tiny.toml"}, "is in the cache's datasets/"},
		{"runs root in checkpoints/ through a link", []string{"run", "--runs", checkpointsLink, "tiny.toml"}, "is in a run's checkpoints/"},
		// Its counts would read as how often the run trained on a target.
		{"eval counts of another corpus into the run", []string{"eval", "--counts", "other", "runs/tiny"}, "not the corpus runs/tiny trained on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantOneLine(t, memo(tc.args...), tc.want)
			sameTree(t, dir, before)
		})
	}

	// What the guard lets through: a new profile, then the same profile
	// again; a new corpus file is not refused by the guard (it fails later
	// without fetched corpora, leaving nothing).
	for range 2 {
		if r := memo("--cpu-profile", "cpu.prof", "config", "--defaults"); r.code != 0 {
			t.Fatalf("--cpu-profile cpu.prof: exit %d, %s", r.code, r.stderr)
		}
	}
	if r := memo("bench", "corpus", "--out", "new.jsonl"); strings.Contains(r.stderr, "--out new.jsonl") {
		t.Errorf("bench corpus --out new.jsonl refused by the guard: %s", r.stderr)
	}
}

// TestUsageExitCodes (issue 43, case 5): a command line that names no
// command, no subcommand, an argument a command does not take or lacks a
// required flag is one memo: line and exit 2; output that cannot be
// written (a full device) is exit 1 with one memo: line.
func TestUsageExitCodes(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no command", nil, "want a command (audit, bench, config"},
		{"data without a subcommand", []string{"data"}, "data: want a subcommand (build, inspect"},
		{"bench without a subcommand", []string{"bench"}, "bench: want a subcommand (corpus, train"},
		{"an unknown subcommand", []string{"data", "bogus"}, `data: unknown subcommand "bogus"`},
		{"devices with an argument", []string{"devices", "extra"}, `devices: takes no arguments (got ["extra"])`},
		{"bench corpus without --out", []string{"bench", "corpus"}, "bench corpus: --out FILE is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := execMemo(t, exe, dir, tc.args...)
			wantOneLine(t, r, tc.want)
			if r.stdout != "" {
				t.Errorf("stdout %q; want nothing", r.stdout)
			}
		})
	}
	t.Run("a full device", func(t *testing.T) {
		full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
		if err != nil {
			t.Skip(err)
		}
		defer full.Close()
		// Bare memo config prints the defaults too, as its usage says
		// (docs/COMMANDS.md's example of this contract is bare).
		for _, args := range [][]string{{"config", "--defaults"}, {"config"}} {
			cmd := exec.Command(exe, args...)
			cmd.Dir = dir
			var stderr strings.Builder
			cmd.Stdout, cmd.Stderr = full, &stderr
			err = cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Count(stderr.String(), "\n") != 1 ||
				!strings.HasPrefix(stderr.String(), "memo: write standard output:") {
				t.Errorf("memo %s > /dev/full: %v, stderr %q; want exit 1 and one memo: line", strings.Join(args, " "), err, stderr.String())
			}
		}
	})
}

// TestValuesRefusedByConfig (issue 43, case 4) through the binary: a value
// that cannot work and a key in the wrong case are one line, exit 2.
func TestValuesRefusedByConfig(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	writeTestFile(t, filepath.Join(dir, "x.toml"), "name = \"x\"\n[plots]\nwidth_in = nan\n")
	writeTestFile(t, filepath.Join(dir, "case.toml"), "name = \"x\"\n[train]\nLR = 1e-3\n")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"plots.width_in = nan", []string{"config", "x.toml"}, "x.toml:3: plots.width_in = NaN: must be a finite number"},
		{"--set train.threads = 1e12", []string{"config", "--set", "plots.width_in=3", "--set", "train.threads=1_000_000_000_000", "x.toml"}, "train.threads = 1000000000000: must be in [0, "},
		{"train.LR", []string{"config", "case.toml"}, `case.toml:3: train.LR: unknown key "LR" in [train]; did you mean "lr"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantOneLine(t, execMemo(t, exe, dir, tc.args...), tc.want)
		})
	}
}

// TestDirectoriesMemoMade (issue 43, case 1, the rest): eval --out into
// another run or a place memo made for something else, a sweep onto a
// name that is a single run or a user's folder, a report through a
// symlinked report/ or figures/ or into a folder it did not make: one
// line, exit 2, every file (and every link's target) byte-identical. A
// sweep's own directory and a report's own report/ are written again.
func TestDirectoriesMemoMade(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	elsewhere := t.TempDir() // the links' targets, hashed too
	writeTestFile(t, filepath.Join(elsewhere, "target", "keep.txt"), "the user's own\n")
	for _, d := range []string{"other", "linked", "figlinked", "userreport"} {
		copyTree(t, filepath.Join(dir, "runs", "tiny"), filepath.Join(dir, "runs", d))
	}
	link := func(to, at string) {
		t.Helper()
		if err := os.RemoveAll(filepath.Join(dir, at)); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, filepath.Join(dir, at)); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(elsewhere, "target"), "runs/linked/report")
	writeTestFile(t, filepath.Join(dir, "runs/figlinked/report/table.md"), "| an old report |\n")
	link(filepath.Join(elsewhere, "target"), "runs/figlinked/report/figures")
	if err := os.RemoveAll(filepath.Join(dir, "runs/userreport/report")); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(dir, "runs/userreport/report/notes.md"), "the user's own\n")
	link(filepath.Join(dir, "runs/tiny/checkpoints"), "checkpoints-link")
	writeTestFile(t, filepath.Join(dir, "mine/notes.txt"), "the user's own\n")
	sweep := strings.Replace(evalRunSpec, `name = "tiny"`, `name = "NAME"`, 1) + "\n[sweep]\n\"goldfish.k\" = [2, 4]\n"
	for _, name := range []string{"tiny", "mine", "fresh"} {
		writeTestFile(t, filepath.Join(dir, name+"-sweep.toml"), strings.Replace(sweep, "NAME", name, 1))
	}
	// A sweep's directory, made by memo sweep, and a single run's spec
	// of the same name.
	memo := memoIn(t, exe, dir)
	if r := memo("sweep", "--slurm", "--runs", "runs", "fresh-sweep.toml"); r.code != 0 {
		t.Fatalf("sweep --slurm onto a new name: exit %d, %s", r.code, r.stderr)
	}
	writeTestFile(t, filepath.Join(dir, "fresh.toml"), strings.Replace(evalRunSpec, `name = "tiny"`, `name = "fresh"`, 1))
	before, beforeElsewhere := treeSums(t, dir), treeSums(t, elsewhere)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"eval into another run", []string{"eval", "--out", "runs/other", "runs/tiny"}, "is the run's own summary"},
		{"eval into checkpoints/", []string{"eval", "--out", "runs/tiny/checkpoints", "runs/tiny"}, "is in a run's checkpoints/"},
		{"eval into a checkpoint", []string{"eval", "--out", "runs/other/checkpoints/step-000006", "runs/tiny"}, "is a checkpoint directory"},
		{"eval into checkpoints/ through a link", []string{"eval", "--out", "checkpoints-link/new", "runs/tiny"}, "is in a run's checkpoints/"},
		{"eval into the cache", []string{"eval", "--out", "cache/datasets", "runs/tiny"}, "is in the cache's datasets/"},
		{"eval into a missing tree", []string{"eval", "--out", "no/such/dir", "runs/tiny"}, "eval: --out no/such/dir: directory no/such does not exist"},
		{"sweep onto a single run", []string{"sweep", "--runs", "runs", "tiny-sweep.toml"}, "is a run's directory (it holds config.toml)"},
		{"sweep --slurm onto a single run", []string{"sweep", "--slurm", "--runs", "runs", "tiny-sweep.toml"}, "is a run's directory (it holds config.toml)"},
		{"sweep onto a user's folder", []string{"sweep", "--runs", ".", "mine-sweep.toml"}, "holds no sweep.json"},
		{"run of a sweep onto a single run", []string{"run", "--runs", "runs", "tiny-sweep.toml"}, "is a run's directory (it holds config.toml)"},
		{"run of a sweep, --stages", []string{"run", "--stages", "data", "--runs", "elsewhere-runs", "fresh-sweep.toml"}, "--stages does not go with a sweep"},
		{"run of a sweep, --reuse-train", []string{"run", "--reuse-train", "runs/tiny", "--runs", "elsewhere-runs", "fresh-sweep.toml"}, "--reuse-train does not go with a sweep"},
		{"run onto a sweep's directory", []string{"run", "--runs", "runs", "fresh.toml"}, "is a sweep's directory (it holds sweep.json)"},
		{"report through a linked report/", []string{"report", "runs/linked"}, "report is a symlink"},
		{"report through a linked figures/", []string{"report", "runs/figlinked"}, "figures is a symlink"},
		{"report into a user's report/", []string{"report", "runs/userreport"}, "holds no table.md"},
		{"report into a checkpoint", []string{"report", "runs/tiny/checkpoints/step-000006"}, "is in a checkpoint directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantOneLine(t, memo(tc.args...), tc.want)
			sameTree(t, dir, before)
			sameTree(t, elsewhere, beforeElsewhere)
		})
	}

	// What the guard lets through, again: a sweep's own directory, a
	// report's own report/.
	for range 2 {
		if r := memo("sweep", "--slurm", "--runs", "runs", "fresh-sweep.toml"); r.code != 0 {
			t.Fatalf("sweep --slurm onto a new name: exit %d, %s", r.code, r.stderr)
		}
		if r := memo("report", "runs/tiny"); r.code != 0 {
			t.Fatalf("report runs/tiny: exit %d, %s", r.code, r.stderr)
		}
	}
}

// TestModelAndDataBelongTogether (issue 43, case 3): a model attacked on
// documents of another tokenizer, and a dataset built into a run whose
// checkpoints were trained on other data, are one line, exit 2, nothing
// changed; the run's own [data] rebuilds its deleted data/.
func TestModelAndDataBelongTogether(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	memo := memoIn(t, exe, dir)
	writeTestFile(t, filepath.Join(dir, "other.toml"), strings.Replace(evalRunSpec, `tokenizer = "bpe:300"`, `tokenizer = "bpe:280"`, 1))
	if r := memo("data", "build", "other.toml", "--out", "other"); r.code != 0 {
		t.Fatalf("data build other.toml: exit %d, %s", r.code, r.stderr)
	}
	for _, run := range []string{"nodata", "rebuilt", "swapped"} {
		copyTree(t, filepath.Join(dir, "runs", "tiny"), filepath.Join(dir, "runs", run))
		if err := os.RemoveAll(filepath.Join(dir, "runs", run, "data")); err != nil {
			t.Fatal(err)
		}
	}
	// A run whose data/ was built again since training, with other
	// documents (here another run's).
	copyTree(t, filepath.Join(dir, "other", "data"), filepath.Join(dir, "runs", "swapped", "data"))
	// A run directory another memo process holds (this test, alive).
	if err := os.MkdirAll(filepath.Join(dir, "held"), 0o755); err != nil {
		t.Fatal(err)
	}
	lock, err := runlock.Acquire(filepath.Join(dir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	before := treeSums(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"extract --data of another tokenizer", []string{"extract", "--data", "other", "runs/tiny"}, "used a different tokenizer than other/data"},
		{"extract --model on data of another tokenizer", []string{"extract", "--model", "runs/tiny/checkpoints/step-000006", "--data", "other"}, "used a different tokenizer than other/data"},
		{"data build of other data into a trained run", []string{"data", "build", "other.toml", "--out", "runs/nodata"}, "is a run trained on other [data] settings"},
		{"data build again into a trained run", []string{"data", "build", "tiny.toml", "--out", "runs/tiny"}, "already holds the dataset its checkpoints were trained on"},
		{"data build into a run another process holds", []string{"data", "build", "tiny.toml", "--out", "held"}, "is in use by memo process"},
		{"data build --out empty", []string{"data", "build", "tiny.toml", "--out="}, "--out is empty"},
		{"extract of a run whose data/ was built again", []string{"extract", "runs/swapped"}, "was trained on another dataset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantOneLine(t, memo(tc.args...), tc.want)
			sameTree(t, dir, before)
		})
	}
	if r := memo("data", "build", "tiny.toml", "--out", "runs/rebuilt"); r.code != 0 {
		t.Errorf("data build tiny.toml into its own run whose data/ went: exit %d, %s", r.code, r.stderr)
	}
}

// copyTree copies a directory with cp -a (links and times kept).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// TestPipeSourceRefused (issue 43, case 8): a JSONL source that is a named
// pipe, itself or in a jsonl: directory, is one memo: line, exit 2, from
// config and data build alike, instead of a build that waits forever
// for the pipe's second reading.
func TestPipeSourceRefused(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"docs.jsonl", "docs/more.jsonl"} {
		if err := syscall.Mkfifo(filepath.Join(dir, p), 0o644); err != nil {
			t.Skip("no named pipes here:", err)
		}
	}
	writeTestFile(t, filepath.Join(dir, "docs", "a.jsonl"), `{"text": "one"}`+"\n")
	for _, src := range []string{"docs.jsonl", "docs"} {
		writeTestFile(t, filepath.Join(dir, src+".toml"), "name = \"p\"\n[data]\nsources = [\"jsonl:"+filepath.Join(dir, src)+"\"]\n")
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"config, a pipe", []string{"config", "docs.jsonl.toml"}, "docs.jsonl is a named pipe, device or socket"},
		{"data build, a pipe", []string{"data", "build", "docs.jsonl.toml", "--out", "out"}, "docs.jsonl is a named pipe, device or socket"},
		{"data build, a pipe in a directory", []string{"data", "build", "docs.toml", "--out", "out"}, "more.jsonl is a named pipe, device or socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, tc.args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "MEMO_CACHE="+filepath.Join(dir, "cache"))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			code := 0
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				code = ee.ExitCode()
			}
			if ctx.Err() != nil {
				t.Fatalf("memo %s hung", strings.Join(tc.args, " "))
			}
			wantOneLine(t, memoResult{stderr: stderr.String(), code: code}, tc.want)
			if outguard.Exists(filepath.Join(dir, "out")) {
				t.Errorf("memo %s left out/", strings.Join(tc.args, " "))
			}
		})
	}
}
