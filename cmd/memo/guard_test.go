package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	before := treeSums(t, dir)
	memo := memoIn(t, exe, dir)
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
		{"audit over the run", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", "runs/tiny"}, "exists; it writes a new file"},
		{"audit into data/", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", "runs/tiny/data/audit"}, "is in a run's data directory"},
		{"audit into the cache", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", "cache/datasets/audit"}, "is in the cache's datasets/"},
		{"audit into checkpoints/ through a link", []string{"audit", "--model", "runs/tiny", "--data", "set.jsonl", "--out", checkpointsLink + "/audit"}, "is in a run's checkpoints/"},
		{"runs root in data/", []string{"run", "--runs", "runs/tiny/data", "tiny.toml"}, "is in a run's data directory"},
		{"runs root in the cache", []string{"run", "--runs", "cache/datasets", "tiny.toml"}, "is in the cache's datasets/"},
		{"runs root in checkpoints/ through a link", []string{"run", "--runs", checkpointsLink, "tiny.toml"}, "is in a run's checkpoints/"},
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
		cmd := exec.Command(exe, "config", "--defaults")
		cmd.Dir = dir
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = full, &stderr
		err = cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || strings.Count(stderr.String(), "\n") != 1 ||
			!strings.HasPrefix(stderr.String(), "memo: write standard output:") {
			t.Errorf("config --defaults > /dev/full: %v, stderr %q; want exit 1 and one memo: line", err, stderr.String())
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
