package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBenchScanCLI runs `memo bench scan --json` on a tiny random model
// with generation beside it and most suffixes planted: the JSON describes
// what was asked, the scan agrees with generation on every window, and
// the text form names both rates.
func TestBenchScanCLI(t *testing.T) {
	exe := buildMemo(t)
	args := []string{"bench", "scan", "--preset", "tiny", "--vocab", "64", "--prefix", "5", "--suffix", "7",
		"--sequences", "20", "--batch-size", "6", "--generate", "16", "--gen-batch", "5", "--plant", "0.9", "--threads", "1"}
	r := execMemo(t, exe, t.TempDir(), append(args, "--json")...)
	if r.code != 0 {
		t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
	}
	var got struct {
		Sequences     int      `json:"sequences"`
		Prefix        int      `json:"prefix"`
		Suffix        int      `json:"suffix"`
		Batch         int      `json:"batch"`
		Device        string   `json:"device"`
		SequencesPerS *float64 `json:"sequences_per_s"`
		TokensPerS    *float64 `json:"tokens_per_s"`
		Weights       int64    `json:"weight_bytes"`
		Generation    *struct {
			Sequences, Batch, Planted, Exact, Differ int
			SequencesPerS                            float64 `json:"sequences_per_s"`
		} `json:"generation"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	if got.SequencesPerS == nil || got.TokensPerS == nil || *got.SequencesPerS <= 0 || *got.TokensPerS <= 0 {
		t.Fatalf("sequences_per_s or tokens_per_s missing or not > 0: %s", r.stdout)
	}
	if got.Sequences != 20 || got.Prefix != 5 || got.Suffix != 7 || got.Batch != 6 || got.Device != "cpu" || got.Weights <= 0 {
		t.Errorf("got %s; want 20 windows of 5 + 7, 6 a pass, on the cpu", r.stdout)
	}
	g := got.Generation
	if g == nil || g.Sequences != 16 || g.Batch != 5 || g.SequencesPerS <= 0 {
		t.Fatalf("generation %+v; want 16 windows, 5 a batch, a rate", g)
	}
	if g.Differ != 0 || g.Planted == 0 || g.Exact == 0 {
		t.Errorf("generation %+v: want planted windows, exact matches among them, and no window where the scan differs", *g)
	}
	r = execMemo(t, exe, t.TempDir(), args...)
	for _, want := range []string{"scan ", "sequences/s", "generation ", "differs on 0", "memory "} {
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("text output (exit %d) lacks %q:\n%s%s", r.code, want, r.stdout, r.stderr)
		}
	}
}

// TestBenchScanBadInput: each bad flag is one line naming it, exit 2,
// before any work.
func TestBenchScanBadInput(t *testing.T) {
	exe := buildMemo(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--sequences", "0"}, "--sequences 0: must be >= 1"},
		{[]string{"--suffix", "0"}, "--suffix 0: must be >= 1"},
		{[]string{"--batch-size", "0"}, "--batch-size 0: must be >= 1"},
		{[]string{"--generate", "11"}, "--generate 11: more than --sequences 10"},
		{[]string{"--generate", "5", "--plant", "1.5"}, "--plant 1.5: must be between 0 and 1"},
		{[]string{"--plant", "0.5"}, "--plant needs --generate"},
		{[]string{"--precision", "fp8"}, "bench scan: --precision"},
		{[]string{"--data", t.TempDir()}, "bench scan: --data"},
		{[]string{"--model", t.TempDir()}, "not a Hugging Face directory"},
		{[]string{"--device", "cuda:7"}, "bench scan:"},
		{[]string{"--prefix", "100000"}, "needs at least"},
		{[]string{"--vocab", "1"}, "--vocab 1: must be >= 2"},
	} {
		args := []string{"bench", "scan", "--preset", "tiny", "--vocab", "64", "--sequences", "10"}
		if tt.args[0] == "--model" { // --model takes no shape flags
			args = []string{"bench", "scan"}
		}
		r := execMemo(t, exe, t.TempDir(), append(args, tt.args...)...)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%v: exit code %d, stderr %q; want 2 and one line containing %q", tt.args, r.code, r.stderr, tt.want)
		}
	}
}

// TestBenchDecodeRowsOut: --rows-out writes the prompts decoded and
// greedy's generated ids, one of --suffix tokens per prompt, and refuses
// to replace a file.
func TestBenchDecodeRowsOut(t *testing.T) {
	exe := buildMemo(t)
	dir := t.TempDir()
	f := filepath.Join(dir, "rows.json")
	args := []string{"bench", "decode", "--preset", "tiny", "--vocab", "64", "--prefix", "6", "--suffix", "4",
		"--batch", "3", "--threads", "1", "--reps", "1", "--rows-out", f}
	if r := execMemo(t, exe, dir, args...); r.code != 0 {
		t.Fatalf("exit code %d; stderr %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	var rows decodeRows
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(rows.Prompts) != 3 || len(rows.Generated) != 3 {
		t.Fatalf("%d prompts, %d generated; want 3 and 3: %s", len(rows.Prompts), len(rows.Generated), b)
	}
	for i := range rows.Prompts {
		if len(rows.Prompts[i]) != 6 || len(rows.Generated[i]) != 4 {
			t.Errorf("row %d: %d prompt ids, %d generated; want 6 and 4", i, len(rows.Prompts[i]), len(rows.Generated[i]))
		}
	}
	r := execMemo(t, exe, dir, args...)
	if r.code != 2 || !strings.Contains(r.stderr, "--rows-out") || !strings.Contains(r.stderr, "exists") {
		t.Errorf("rows-out over an existing file: exit code %d, stderr %q; want 2 naming --rows-out", r.code, r.stderr)
	}
}

// TestBenchCheckpointDir: --dir takes a scratch directory anywhere but
// among a run's checkpoints or in the cache, and is left as it was; one
// nothing can be made in is one line, exit 2.
func TestBenchCheckpointDir(t *testing.T) {
	exe := buildMemo(t)
	work := t.TempDir()
	run := filepath.Join(work, "run")
	if err := os.MkdirAll(filepath.Join(run, "checkpoints"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, filepath.Join(run, "config.toml"), "name = \"run\"\n")
	writeTestFile(t, filepath.Join(work, "file"), "x")
	for _, tt := range []struct{ dir, want string }{
		{filepath.Join(run, "checkpoints"), "is in a run's checkpoints/"},
		{filepath.Join(work, "missing"), "does not exist"},
		{filepath.Join(work, "file"), "not a directory"},
		{"/proc", "cannot make the scratch checkpoint's directory"},
	} {
		r := execMemo(t, exe, work, "bench", "checkpoint", "--preset", "nano", "--vocab", "64", "--dir", tt.dir)
		if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("--dir %s: exit code %d, stderr %q; want 2 and one line containing %q", tt.dir, r.code, r.stderr, tt.want)
		}
	}
	scratch := filepath.Join(work, "scratch")
	if err := os.Mkdir(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	if r := execMemo(t, exe, work, "bench", "checkpoint", "--preset", "nano", "--vocab", "64", "--dir", scratch, "--json"); r.code != 0 {
		t.Fatalf("bench checkpoint --dir %s: exit %d\n%s", scratch, r.code, r.stderr)
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("bench checkpoint left %d entries in --dir", len(left))
	}
}
