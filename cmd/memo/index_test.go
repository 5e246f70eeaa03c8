package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/data/tokindex"
	"github.com/memo-research/memo/eval"
	"github.com/memo-research/memo/internal/runfiles"
)

// TestIndexCLI: `memo index build` indexes a run's dataset into its cache
// entry; `memo index count` counts a target's text (its repetitions), its
// ids, locates it, and times random windows; bad input exits 2 with one
// line.
func TestIndexCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	work, cache := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(work, "ix.toml"), `name = "ix"
seed = 7

[data]
sources = ["opticks"]
tokenizer = "bpe:512"
targets = 6
controls = 4
validation = 3
background = 20
repetition_groups = [1, 4, 16]
chunk_tokens = 128
min_tokens = 100
`)
	run := filepath.Join(work, "run")
	if r := execMemoCache(t, exe, work, cache, "data", "build", "ix.toml", "--out", run); r.code != 0 {
		t.Fatalf("data build: exit %d\n%s", r.code, r.stderr)
	}
	r := execMemoCache(t, exe, work, cache, "index", "count", run)
	if r.code != 2 || !strings.Contains(r.stderr, "memo index build") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
		t.Fatalf("count before build: exit %d, stderr %q; want 2 and one line", r.code, r.stderr)
	}
	r = execMemoCache(t, exe, work, cache, "index", "build", run)
	if r.code != 0 || !strings.Contains(r.stdout, "wrote "+filepath.Join(cache, "datasets")) || !strings.Contains(r.stderr, "index: sort suffixes") {
		t.Fatalf("index build: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	ds, err := data.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	targets, err := ds.Docs(data.SplitTarget)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range targets {
		r := execMemoStdin(t, exe, work, cache, d.Text, "index", "count", "--json", run)
		var got struct{ Count, Occurrences int64 }
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil {
			t.Fatalf("count: exit %d %q %s", r.code, r.stdout, r.stderr)
		}
		if got.Count != int64(d.Repetitions) || got.Occurrences != 1 {
			t.Errorf("target %d (%d repetitions): %+v", d.ID, d.Repetitions, got)
		}
	}
	d := targets[0]
	ids, _ := json.Marshal(map[string]any{"ids": d.IDs[3:20]})
	r = execMemoStdin(t, exe, work, cache, string(ids), "index", "count", "--ids-json", "--locate", filepath.Join(run, "data"))
	if want := "doc_id " + strconv.FormatInt(d.ID, 10) + " offset 3 repetitions " + strconv.Itoa(d.Repetitions); r.code != 0 || !strings.Contains(r.stdout, want) {
		t.Errorf("locate: exit %d %q %s; want %q", r.code, r.stdout, r.stderr, want)
	}
	// A bare array, as memo mask takes, counts the same.
	bare, _ := json.Marshal(d.IDs[3:20])
	if rb := execMemoStdin(t, exe, work, cache, string(bare), "index", "count", "--ids-json", "--locate", filepath.Join(run, "data")); rb.code != 0 || rb.stdout != r.stdout {
		t.Errorf("count of a bare array: exit %d, stdout %q; want the object's %q", rb.code, rb.stdout, r.stdout)
	}
	// --locate --json with no occurrence says so with an empty list.
	r = execMemoStdin(t, exe, work, cache, `{"ids": [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1]}`, "index", "count", "--ids-json", "--locate", "--json", run)
	if r.code != 0 || !strings.Contains(r.stdout, `"occurrences":0,"locations":[]`) {
		t.Errorf("locate nothing: exit %d %q %s; want an empty locations list", r.code, r.stdout, r.stderr)
	}
	r = execMemoCache(t, exe, work, cache, "index", "count", "--random", "50", "--json", run)
	if r.code != 0 || !strings.Contains(r.stdout, `"queries":50`) {
		t.Errorf("random: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	r = execMemoCache(t, exe, work, cache, "index", "count", "--random", "5", "--window", "100000", run)
	if r.code != 2 || !strings.Contains(r.stderr, "--window 100000: the index answers windows of at most") {
		t.Errorf("random windows past the index's longest: exit %d %s; want 2", r.code, r.stderr)
	}
	// An audit: memo eval --counts counts other completions' windows in
	// this corpus.
	var comps []runfiles.Completion
	for _, d := range targets {
		comps = append(comps, runfiles.Completion{DocID: d.ID, Split: "target", Status: "ok", Repetitions: d.Repetitions,
			Prefix: d.IDs[:32], Suffix: d.IDs[32:64], Generated: d.IDs[32:64], Text: d.Text, SuffixText: "s", GeneratedText: "s",
			TokenLosses: []float32{1, 1}, Loss: 1, RefLoss: math.NaN()})
	}
	audit := filepath.Join(work, "audit")
	if err := runfiles.WriteCompletions(filepath.Join(audit, "completions.arrow"), comps, nil); err != nil {
		t.Fatal(err)
	}
	if r := execMemoCache(t, exe, work, cache, "eval", "--counts", run, audit); r.code != 0 {
		t.Fatalf("eval --counts: exit %d\n%s", r.code, r.stderr)
	}
	// Its summary.json names the corpus it counted in.
	var sum eval.Summary
	if raw, err := os.ReadFile(filepath.Join(audit, "summary.json")); err != nil || json.Unmarshal(raw, &sum) != nil {
		t.Fatalf("audit summary.json: %v", err)
	}
	if id, err := tokindex.DatasetIdentity(ds); err != nil || sum.CountedCorpus == nil || sum.CountedCorpus.Digest != id.Digest || !filepath.IsAbs(sum.CountedCorpus.Dataset) {
		t.Errorf("audit summary.json counted_corpus %+v; the corpus is %+v (%v)", sum.CountedCorpus, id, err)
	}
	counted, err := eval.CorpusCounts.ReadParquet(filepath.Join(audit, "corpus_counts.parquet"))
	if err != nil || len(counted) != len(targets) {
		t.Fatalf("corpus_counts.parquet: %d rows, %v", len(counted), err)
	}
	for _, c := range counted {
		if c.WindowCount != int64(c.Repetitions) || c.SuffixCount < c.WindowCount {
			t.Errorf("audit: doc %d window %d suffix %d, repetitions %d", c.DocID, c.WindowCount, c.SuffixCount, c.Repetitions)
		}
	}
	long, _ := json.Marshal(map[string]any{"ids": make([]int, 100000)})
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"no directory", "", []string{"index", "count"}},
		{"not a dataset", "x", []string{"index", "count", work}},
		{"bad ids", "{\"ids\": [1, 99999]}", []string{"index", "count", "--ids-json", run}},
		{"not JSON", "the", []string{"index", "count", "--ids-json", run}},
		{"longer than the corpus", string(long), []string{"index", "count", "--ids-json", run}},
		{"no text", "", []string{"index", "count", run}},
		// Another mode's flag was dropped without a word.
		{"--window without --random", " the", []string{"index", "count", "--window", "5", run}},
		{"--limit without --locate", " the", []string{"index", "count", "--limit", "5", run}},
		{"--locate with --random", "", []string{"index", "count", "--random", "2", "--locate", run}},
	} {
		r := execMemoStdin(t, exe, work, cache, tc.stdin, tc.args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "memo: ") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one memo: line", tc.name, r.code, r.stderr)
		}
	}
	// A truncated index is bad input, never a count.
	idx := filepath.Join(cache, "datasets")
	m, _ := filepath.Glob(filepath.Join(idx, "*", "tokens.idx"))
	if len(m) != 1 {
		t.Fatalf("index files %v, want one in the cache entry", m)
	}
	fi, _ := os.Stat(m[0])
	if err := os.Truncate(m[0], fi.Size()-9); err != nil {
		t.Fatal(err)
	}
	r = execMemoStdin(t, exe, work, cache, d.Text, "index", "count", run)
	if r.code != 2 || !strings.Contains(r.stderr, "truncated") {
		t.Errorf("truncated index: exit %d, stderr %q", r.code, r.stderr)
	}
}
