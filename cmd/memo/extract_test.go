package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memo-research/memo/extract"
)

// evalRunSpec trains a nano model for a few steps with goldfish k = 4, h = 13:
// enough for extract and eval to have a real checkpoint to work on.
const evalRunSpec = `name = "tiny"
seed = 1

[data]
sources = ["opticks"]
tokenizer = "bpe:300"
targets = 4
controls = 4
validation = 2
background = 4
repetitions = 2
chunk_tokens = 64
min_tokens = 40
dedup_words = 0

[model]
preset = "nano"

[train]
steps = 6
block = 64
batch_size = 8
warmup_steps = 2
eval_every = 0
checkpoint_every = 0

[goldfish]
k = 4
h = 13

[extract]
suffix = 16
batch_size = 8

[eval]
bootstrap = 100
`

// memoCmd runs the memo binary in dir (with its cache in dir/cache) and
// returns its stdout, or its stderr when wantCode, the exit code expected,
// is not 0.
func memoCmd(t *testing.T, exe, dir string, wantCode int, args ...string) string {
	t.Helper()
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMO_CACHE="+filepath.Join(dir, "cache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("memo %s: %v", strings.Join(args, " "), err)
	}
	if code != wantCode {
		t.Fatalf("memo %s: exit %d, want %d\nstdout %s\nstderr %s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
	}
	if wantCode != 0 {
		return stderr.String()
	}
	return stdout.String()
}

// completionsOut is the path `memo extract` reports it wrote.
func completionsOut(t *testing.T, stdout string) string {
	t.Helper()
	for _, line := range strings.Split(stdout, "\n") {
		if p, ok := strings.CutPrefix(line, "completions: "); ok {
			return p
		}
	}
	t.Fatalf("no completions path in %q", stdout)
	return ""
}

type summaryJSON struct {
	Members  struct{ N int }
	Goldfish struct {
		Strategy string
		K, H     int
		Source   string
	}
	Checkpoint string
	Extract    struct{ Mode string }
	Eval       struct{ Bootstrap int }
}

func readSummary(t *testing.T, path string) summaryJSON {
	t.Helper()
	return readJSON[summaryJSON](t, path)
}

// TestExtractAndEvalCLI attacks a tiny trained run again with other
// settings: the run's own completions.arrow is never overwritten by
// another attack, each attack's file and summary sit apart, and every
// summary records the goldfish settings the checkpoint was trained with,
// wherever its completions were written.
func TestExtractAndEvalCLI(t *testing.T) {
	dir := trainedRun(t)
	exe := buildMemo(t)
	run := filepath.Join(dir, "runs", "tiny")
	own := filepath.Join(run, "completions.arrow")
	ownBytes, err := os.ReadFile(own)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(run, "checkpoints", "step-000006")
	other := t.TempDir()
	wantGoldfish := func(t *testing.T, s summaryJSON) {
		t.Helper()
		if s.Goldfish.Strategy != "hash-table" || s.Goldfish.K != 4 || s.Goldfish.H != 13 || s.Goldfish.Source != "checkpoint" {
			t.Errorf("summary goldfish %+v, want the run's hash-table k=4 h=13 from the checkpoint", s.Goldfish)
		}
		if filepath.Base(s.Checkpoint) != "step-000006" || s.Members.N != 4 {
			t.Errorf("summary checkpoint %q, members %d", s.Checkpoint, s.Members.N)
		}
	}

	// Another attack of the run, without --out: beside the checkpoint.
	suffix8 := filepath.Join(dir, completionsOut(t, memoCmd(t, exe, dir, 0, "extract", "--suffix", "8", "runs/tiny")))
	if !strings.HasPrefix(suffix8, ckpt+".reference-s8.greedy.") || !strings.HasSuffix(suffix8, ".completions.arrow") {
		t.Errorf("--suffix 8 wrote %s, want %s.reference-s8.greedy.….completions.arrow", suffix8, ckpt)
	}
	// With --out, where it says.
	memoCmd(t, exe, dir, 0, "extract", "--mode", "fixed", "--prefix", "8", "--suffix", "8", "--out", filepath.Join(other, "attack.arrow"), "runs/tiny/checkpoints")
	for _, p := range []string{suffix8, filepath.Join(other, "attack.arrow")} {
		if _, err := os.Stat(p); err != nil {
			t.Error(err)
		}
	}
	if now, err := os.ReadFile(own); err != nil || !bytes.Equal(now, ownBytes) {
		t.Errorf("another attack changed the run's completions.arrow (%v)", err)
	}

	t.Run("eval a file elsewhere", func(t *testing.T) {
		memoCmd(t, exe, dir, 0, "eval", filepath.Join(other, "attack.arrow"))
		s := readSummary(t, filepath.Join(other, "attack.summary.json"))
		wantGoldfish(t, s)
		if s.Extract.Mode != "fixed" {
			t.Errorf("summary extract mode %q, want fixed", s.Extract.Mode)
		}
		// Not the defaults (1000): the [eval] of the run extract recorded.
		if s.Eval.Bootstrap != 100 {
			t.Errorf("eval.bootstrap %d, want the recorded run's 100", s.Eval.Bootstrap)
		}
		if _, err := os.Stat(filepath.Join(other, "attack.scores.parquet")); err != nil {
			t.Error(err)
		}
	})
	t.Run("eval a file beside the checkpoint", func(t *testing.T) {
		memoCmd(t, exe, dir, 0, "eval", suffix8)
		s := readSummary(t, strings.TrimSuffix(suffix8, "completions.arrow")+"summary.json")
		wantGoldfish(t, s)
		if s.Eval.Bootstrap != 100 {
			t.Errorf("eval.bootstrap %d, want the run's 100", s.Eval.Bootstrap)
		}
	})
	t.Run("eval the run", func(t *testing.T) {
		out := memoCmd(t, exe, dir, 0, "eval", "--out", filepath.Join(other, "run-scores"), "runs/tiny")
		if !strings.Contains(out, "members") {
			t.Errorf("eval printed %q", out)
		}
		wantGoldfish(t, readSummary(t, filepath.Join(other, "run-scores", "summary.json")))
		// The run's own summary again, by_corpus_count and all: only the
		// paths of the completions and of the corpus counted in may
		// differ (the run was copied here), not the corpus's digest.
		again, own := readJSON[map[string]any](t, filepath.Join(other, "run-scores", "summary.json")), readJSON[map[string]any](t, filepath.Join(run, "summary.json"))
		if _, ok := own["by_corpus_count"]; !ok {
			t.Error("the run's summary.json has no by_corpus_count to compare")
		}
		for _, s := range []map[string]any{again, own} {
			delete(s, "completions")
			if c, ok := s["counted_corpus"].(map[string]any); ok {
				delete(c, "dataset")
			}
		}
		if !reflect.DeepEqual(again, own) {
			t.Errorf("memo eval of the run differs from its summary.json:\n%v\n%v", again, own)
		}
	})
	if msg := memoCmd(t, exe, dir, 2, "eval", other); !strings.Contains(msg, "no completions") {
		t.Errorf("eval of a directory without completions: stderr %q", msg)
	}
	// A decoding's own flag under another decoding changed only the file
	// name of the same greedy completions.
	if msg := memoCmd(t, exe, dir, 2, "extract", "--top-k", "40", "runs/tiny"); !strings.Contains(msg, "extract: --top-k is --decoding sample's setting (got --decoding greedy)") {
		t.Errorf("extract --top-k under greedy: stderr %q", msg)
	}
	// Another of the run's Arrow files is named as such, before anything
	// about where its scores would go (it blamed the output guard).
	for _, f := range []string{"runs/tiny/data/tokens.arrow", "runs/tiny/metrics.arrow"} {
		if msg := memoCmd(t, exe, dir, 2, "eval", "--out", filepath.Join(other, "scores-of-"+filepath.Base(f)), f); !strings.Contains(msg, "eval: "+f+" is not a completions file (its columns: ") {
			t.Errorf("eval of %s: stderr %q; want it named as not completions", f, msg)
		}
	}
}

// TestDefaultCompletions: without --out, only the run's own attack writes
// RUN/completions.arrow; every other goes beside its checkpoint under a
// name that changes with any setting that changes the completions.
func TestDefaultCompletions(t *testing.T) {
	run := filepath.Join("runs", "r")
	ckpt := filepath.Join(run, "checkpoints", "step-000100")
	own := extract.DefaultConfig()
	with := func(f func(*extract.Config)) extract.Config {
		c := own
		c.Splits = append([]string(nil), own.Splits...)
		f(&c)
		return c
	}
	beside := func(slug string) string { return ckpt + "." + slug }
	for _, tc := range []struct {
		name        string
		target      string
		cfg         extract.Config
		ownSettings bool
		data        string
		want        string // exact path, or the start of the name beside the checkpoint
	}{
		{"the run's own attack", run, own, true, run, filepath.Join(run, "completions.arrow")},
		{"its checkpoints directory", filepath.Join(run, "checkpoints"), own, true, run, filepath.Join(run, "completions.arrow")},
		{"another batch size", run, with(func(c *extract.Config) { c.BatchSize = 3 }), true, run, filepath.Join(run, "completions.arrow")},
		{"another suffix", run, with(func(c *extract.Config) { c.Suffix = 8 }), true, run, beside("reference-s8.greedy.")},
		{"fixed and beam", run, with(func(c *extract.Config) { c.Mode, c.Prefix, c.Decoding, c.Beams = "fixed", 32, "beam", 3 }), true, run, beside("fixed-p32-s50.beam3.")},
		{"sampling", run, with(func(c *extract.Config) { c.Decoding, c.Temperature, c.TopK, c.TopP = "sample", 0.7, 40, 0.9 }), true, run, beside("reference-s50.sample-t0.7-k40-p0.9-seed1234.")},
		{"pythia", run, with(func(c *extract.Config) { c.Mode = "pythia" }), true, run, beside("pythia.greedy.")},
		{"an explicit checkpoint", ckpt, own, true, run, beside("reference-s50.greedy.")},
		{"no config.toml or other data", run, own, false, "elsewhere", beside("reference-s50.greedy.")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := defaultCompletions(tc.target, run, ckpt, tc.cfg, own, tc.ownSettings, tc.data)
			if !strings.HasPrefix(got, tc.want) || (!strings.HasSuffix(tc.want, ".arrow") && !strings.HasSuffix(got, ".completions.arrow")) {
				t.Errorf("wrote to %s, want %s…", got, tc.want)
			}
		})
	}
	// Settings outside the name (splits, max_docs, data) still change it;
	// the batch size does not.
	base := defaultCompletions(ckpt, run, ckpt, own, own, true, run)
	names := map[string]string{base: "default"}
	for name, c := range map[string]extract.Config{
		"splits":   with(func(c *extract.Config) { c.Splits = []string{"target"} }),
		"max_docs": with(func(c *extract.Config) { c.MaxDocs = 10 }),
		"mink":     with(func(c *extract.Config) { c.MinKFraction = 0.1 }),
	} {
		p := defaultCompletions(ckpt, run, ckpt, c, own, true, run)
		if prev, dup := names[p]; dup {
			t.Errorf("%s and %s share the name %s", name, prev, p)
		}
		names[p] = name
	}
	if p := defaultCompletions(ckpt, run, ckpt, own, own, true, "other-data"); p == base {
		t.Errorf("another data directory kept the name %s", p)
	}
	if p := defaultCompletions(ckpt, run, ckpt, with(func(c *extract.Config) { c.BatchSize = 1 }), own, true, run); p != base {
		t.Errorf("the batch size changed the name: %s, want %s", p, base)
	}
}

// TestDamagedNewestCheckpointRefused (issue 25): when a run's newest
// checkpoint (the one latest names) is damaged, extract, score, generate,
// export and run --reuse-train refuse it by name, exit 2, instead of
// quietly using the previous step; naming the older step directory uses
// it and says so.
func TestDamagedNewestCheckpointRefused(t *testing.T) {
	dir := trainedRun(t)
	exe := buildMemo(t)
	run := filepath.Join(dir, "runs", "tiny")
	before := treeSums(t, run)
	// A newer checkpoint, named by latest, whose weights are corrupt.
	older := filepath.Join(run, "checkpoints", "step-000006")
	newer := filepath.Join(run, "checkpoints", "step-000007")
	copyDir(t, older, newer)
	weights := filepath.Join(newer, "model.safetensors")
	raw, err := os.ReadFile(weights)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-3] ^= 0xff
	if err := os.WriteFile(weights, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run, "checkpoints", "latest"), []byte("step-000007\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before["checkpoints/latest"] = ""
	ids := filepath.Join(dir, "ids.json")
	if err := os.WriteFile(ids, []byte("[[1, 2, 3]]"), 0o644); err != nil {
		t.Fatal(err)
	}
	reuse := strings.Replace(evalRunSpec, `name = "tiny"`, `name = "again"`, 1)
	reuse = strings.Replace(reuse, "suffix = 16", "suffix = 8", 1)
	if err := os.WriteFile(filepath.Join(dir, "again.toml"), []byte(reuse), 0o644); err != nil {
		t.Fatal(err)
	}
	memo := memoIn(t, exe, dir)
	for _, args := range [][]string{
		{"extract", "runs/tiny"},
		{"extract", "runs/tiny/checkpoints/"},
		{"score", "--model", "runs/tiny", "--ids-json", ids},
		{"generate", "--model", "runs/tiny", "--ids-json", ids},
		{"export", "runs/tiny", filepath.Join(dir, "exported")},
		{"run", "--reuse-train", "runs/tiny", "again.toml"},
	} {
		t.Run(strings.Join(args[:1], " "), func(t *testing.T) {
			r := memo(args...)
			last := r.stderr
			if lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n"); len(lines) > 0 {
				last = lines[len(lines)-1] // run logs its start first
			}
			if r.code != 2 || !strings.HasPrefix(last, "memo: ") || !strings.Contains(last, "step-000007: model.safetensors") ||
				!strings.Contains(last, "/checkpoints/step-000006 verifies") || strings.Count(r.stderr, "memo: ") != 1 {
				t.Errorf("memo %s: exit %d, stderr %q; want exit 2 and one memo: line naming the damaged step-000007 and the good step-000006",
					strings.Join(args, " "), r.code, r.stderr)
			}
		})
	}
	if fileExistsTest(filepath.Join(dir, "exported")) {
		t.Error("export wrote the older checkpoint")
	}
	// Asked for by name, the older step is used, and the output says so.
	r := memo("export", older, filepath.Join(dir, "exported"))
	if r.code != 0 || !strings.Contains(r.stderr, "exported "+older) {
		t.Errorf("export of the named older step: exit %d, stderr %q", r.code, r.stderr)
	}
	out := completionsOut(t, memo("extract", older).stdout)
	if !filepath.IsAbs(out) {
		out = filepath.Join(dir, out)
	}
	if !strings.HasPrefix(out, older+".") {
		t.Errorf("the named older step's attack wrote %s, want beside %s", out, older)
	}
	delete(before, "checkpoints/latest")
	after := treeSums(t, run)
	for f, h := range before {
		if after[f] != h {
			t.Errorf("%s changed", f)
		}
	}
}

func fileExistsTest(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestEvalNamesAMissingReference: a --reference that is not there is the
// error, not where the scores of those settings would go (the probe saw
// the second for a run's own summary).
func TestEvalNamesAMissingReference(t *testing.T) {
	dir := trainedRun(t)
	r := memoIn(t, buildMemo(t), dir)("eval", "runs/tiny", "--reference", "no/such/run")
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], "reference no/such/run: no such file or directory") {
		t.Errorf("eval --reference no/such/run: exit %d, stderr %q; want 2 and one line naming the reference", r.code, r.stderr)
	}
}

// readJSON reads the JSON file at path into a T.
func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
