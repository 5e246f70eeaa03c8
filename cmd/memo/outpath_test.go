package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	tinyOnce sync.Once
	tinyDir  string // a finished run of evalRunSpec, under memoDir
	tinyErr  error
)

// trainedRun is a directory holding tiny.toml, its finished run
// runs/tiny and the corpus cache: a fresh copy for each test, of a run
// trained once per test binary.
func trainedRun(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("trains a tiny model")
	}
	exe := buildMemo(t)
	tinyOnce.Do(func() {
		tinyDir = filepath.Join(memoDir, "tiny")
		if tinyErr = os.MkdirAll(tinyDir, 0o755); tinyErr != nil {
			return
		}
		if tinyErr = os.WriteFile(filepath.Join(tinyDir, "tiny.toml"), []byte(evalRunSpec), 0o644); tinyErr != nil {
			return
		}
		cmd := exec.Command(exe, "--log-level", "warn", "run", "tiny.toml")
		cmd.Dir = tinyDir
		cmd.Env = append(os.Environ(), "MEMO_CACHE="+filepath.Join(tinyDir, "cache"))
		if out, err := cmd.CombinedOutput(); err != nil {
			tinyErr = err
			t.Logf("memo run tiny.toml: %s", out)
		}
	})
	if tinyErr != nil {
		t.Fatal(tinyErr)
	}
	dir := filepath.Join(t.TempDir(), "w")
	if out, err := exec.Command("cp", "-a", tinyDir, dir).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	return dir
}

// memoIn runs memo in dir with the corpus cache dir/cache.
func memoIn(t *testing.T, exe, dir string) func(args ...string) memoResult {
	return func(args ...string) memoResult {
		return execMemoCache(t, exe, dir, filepath.Join(dir, "cache"), args...)
	}
}

// treeSums is the sha256 of every regular file under dir, by relative path.
func treeSums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, f := range treeFiles(t, dir) {
		// A link is its target's name (where it points must not change).
		b, err := os.Readlink(filepath.Join(dir, f))
		if err == nil {
			b = "link to " + b
		} else if b, err = readString(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256([]byte(b))
		sums[f] = hex.EncodeToString(h[:])
	}
	return sums
}

// readString is the file at path as a string.
func readString(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}

// sameTree fails the test where a file under dir changed, appeared or went.
func sameTree(t *testing.T, dir string, before map[string]string) {
	t.Helper()
	after := treeSums(t, dir)
	for f, h := range before {
		if after[f] != h {
			t.Errorf("%s changed or went", f)
		}
	}
	for f := range after {
		if _, ok := before[f]; !ok {
			t.Errorf("%s appeared", f)
		}
	}
}

// wantOneLine checks the bad-input contract: exit 2 and one memo: line
// on stderr containing want (and so no attack, training or scoring logs).
func wantOneLine(t *testing.T, r memoResult, want string) {
	t.Helper()
	if r.code != 2 || strings.Count(r.stderr, "\n") != 1 || !strings.HasPrefix(r.stderr, "memo: ") || !strings.Contains(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want 2 and one memo: line containing %q", r.code, r.stderr, want)
	}
}

// TestOutputNeverReplacesOthers (issue 25): --out of extract, eval and
// data build never replaces a file memo wrote for another purpose (the
// run's config, summary, checkpoints, dataset) nor another attack's or
// scoring's results; each refusal is one line, exit 2, before any work.
// A stage's own outputs are still replaced by the same stage, settings and
// checkpoint.
func TestOutputNeverReplacesOthers(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	other := strings.Replace(evalRunSpec, "targets = 4", "targets = 5", 1)
	if err := os.WriteFile(filepath.Join(dir, "other.toml"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "runs", "tiny")
	before := treeSums(t, run)
	memo := memoIn(t, exe, dir)

	// An attack elsewhere, to score into the run below; written twice.
	for range 2 {
		if r := memo("extract", "--suffix", "8", "runs/tiny", "--out", "elsewhere.arrow"); r.code != 0 {
			t.Fatalf("extract --out elsewhere.arrow: exit %d, %s", r.code, r.stderr)
		}
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"extract over config.toml", []string{"extract", "runs/tiny", "--out", "runs/tiny/config.toml"}, "want a FILE ending in .arrow (completions are Arrow IPC"},
		{"extract over summary.json", []string{"extract", "runs/tiny", "--out", "runs/tiny/summary.json"}, "want a FILE"},
		{"extract over the weights", []string{"extract", "runs/tiny", "--out", "runs/tiny/checkpoints/step-000006/model.safetensors"}, "want a FILE"},
		{"extract into the run directory", []string{"extract", "runs/tiny", "--out", "runs/tiny"}, "is a directory"},
		{"extract into a checkpoint", []string{"extract", "runs/tiny", "--out", "runs/tiny/checkpoints/step-000006/c.arrow"}, "is a checkpoint directory"},
		{"extract into data/", []string{"extract", "runs/tiny", "--out", "runs/tiny/data/tokens.arrow"}, "run's data directory"},
		// checkpoints/ and the cache hold only what memo puts there (a
		// review wrote both through --out).
		{"extract into checkpoints/", []string{"extract", "--suffix", "8", "runs/tiny", "--out", "runs/tiny/checkpoints/mine.arrow"}, "is in a run's checkpoints/"},
		{"scan into checkpoints/", []string{"extract", "--scan", "runs/tiny", "--out", "runs/tiny/checkpoints/mine.scan.parquet"}, "is in a run's checkpoints/"},
		{"extract into the cache", []string{"extract", "--suffix", "8", "runs/tiny", "--out", "cache/datasets/x.completions.arrow"}, "is in the cache's datasets/"},
		{"extract other settings over the run's completions", []string{"extract", "--suffix", "8", "runs/tiny", "--out", "runs/tiny/completions.arrow"}, "the run's own completions"},
		{"extract other settings over another attack", []string{"extract", "--suffix", "4", "runs/tiny", "--out", "elsewhere.arrow"}, "with other settings"},
		{"eval another attack into the run", []string{"eval", "elsewhere.arrow", "--out", "runs/tiny"}, "the run's own summary"},
		{"eval the run with other settings", []string{"eval", "runs/tiny", "--bootstrap", "200"}, "[eval] settings"},
		{"eval into a checkpoint", []string{"eval", "elsewhere.arrow", "--out", "runs/tiny/checkpoints/step-000006"}, "is a checkpoint directory"},
		{"data build of another spec into the run", []string{"data", "build", "other.toml", "--out", "runs/tiny"}, "other [data] settings"},
		{"data build into a file", []string{"data", "build", "other.toml", "--out", "runs/tiny/config.toml"}, "is a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantOneLine(t, memo(tc.args...), tc.want)
			sameTree(t, run, before)
		})
	}
	// The same stage, settings and checkpoint replace their own outputs
	// (with the copied run's own paths recorded in them).
	for _, args := range [][]string{
		{"extract", "runs/tiny", "--out", "runs/tiny/completions.arrow"},
		{"eval", "runs/tiny"},
	} {
		if r := memo(args...); r.code != 0 {
			t.Errorf("memo %s: exit %d, %s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// TestRunRegeneratesMissingOutputs (issue 25): `memo run` on a finished
// run whose completions.arrow and summary.json were deleted, or whose
// summary was edited, runs the stages that wrote them again (exit 0, a
// warning naming the file) instead of printing the stale table.
func TestRunRegeneratesMissingOutputs(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	run := filepath.Join(dir, "runs", "tiny")
	memo := memoIn(t, exe, dir)
	for _, f := range []string{"completions.arrow", "summary.json"} {
		if err := os.Remove(filepath.Join(run, f)); err != nil {
			t.Fatal(err)
		}
	}
	r := memo("run", "tiny.toml")
	if r.code != 0 || !strings.Contains(r.stderr, "completions.arrow is missing") {
		t.Fatalf("memo run after deleting outputs: exit %d, stderr %q", r.code, r.stderr)
	}
	s := readSummary(t, filepath.Join(run, "summary.json"))
	if s.Members.N != 4 || !strings.HasPrefix(s.Checkpoint, run) {
		t.Errorf("regenerated summary: %+v, want 4 members attacked at %s", s, run)
	}
	good, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Edited: scored again, back to what eval writes.
	if err := os.WriteFile(filepath.Join(run, "summary.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = memo("run", "tiny.toml")
	if now, err := os.ReadFile(filepath.Join(run, "summary.json")); r.code != 0 || err != nil || string(now) != string(good) || !strings.Contains(r.stderr, "summary.json") {
		t.Errorf("memo run after editing summary.json: exit %d, stderr %q; summary restored: %v", r.code, r.stderr, string(now) == string(good))
	}
	// checkpoints/latest deleted: training resumes at its final step and
	// marks it latest again (it left latest missing, and the stages
	// after it ran again); the run after that runs nothing.
	if err := os.Remove(filepath.Join(run, "checkpoints", "latest")); err != nil {
		t.Fatal(err)
	}
	if r := memo("run", "tiny.toml"); r.code != 0 || !strings.Contains(r.stderr, "checkpoints/latest is missing") {
		t.Errorf("memo run after deleting checkpoints/latest: exit %d, stderr %q", r.code, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(run, "checkpoints", "latest")); err != nil || strings.TrimSpace(string(b)) != "step-000006" {
		t.Errorf("checkpoints/latest after the run: %q, %v; want step-000006", b, err)
	}
	// Intact: nothing runs.
	before := treeSums(t, run)
	delete(before, "manifest.json")
	if r := memo("run", "tiny.toml"); r.code != 0 || strings.Contains(r.stderr, "stage start") {
		t.Errorf("memo run on an intact finished run: exit %d, stderr %q", r.code, r.stderr)
	}
	after := treeSums(t, run)
	delete(after, "manifest.json")
	for f, h := range before {
		if after[f] != h {
			t.Errorf("%s changed on an intact finished run", f)
		}
	}
}

// TestEditedTokenizerRefused (issue 25): a run's data/tokenizer.json
// edited after the build is refused by its sha256 in generate --prompt and
// export, as extract refuses it, instead of encoding with it.
func TestEditedTokenizerRefused(t *testing.T) {
	exe := buildMemo(t)
	dir := trainedRun(t)
	memo := memoIn(t, exe, dir)
	p := filepath.Join(dir, "runs", "tiny", "data", "tokenizer.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// Same length, another byte: only the checksum can tell.
	i := strings.Index(string(b), `"type"`)
	b[i+1] = 'T'
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--log-level", "warn", "generate", "--model", "runs/tiny", "--prompt", "The light", "--max-new", "2"},
		{"export", "runs/tiny", "exported"},
		{"extract", "runs/tiny", "--out", "x.completions.arrow"},
	} {
		wantOneLine(t, memo(args...), "tokenizer.json: corrupt data: sha256")
	}
	if fileExistsTest(filepath.Join(dir, "exported")) {
		t.Error("export wrote a directory with the edited tokenizer")
	}
}
