package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDataCacheCLI: two `memo data build`s of one config share one cache
// entry, which `memo data ls` lists with both runs; `memo data gc --unused`
// keeps it while runs link it and removes it once they are gone; extra
// arguments exit 2.
func TestDataCacheCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	work, cache := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(work, "c.toml"), "name = \"c\"\n[data]\ntokenizer = \"bpe:300\"\ntargets = 5\ncontrols = 5\nvalidation = 2\n")
	for _, out := range []string{"a", "b"} {
		if _, stderr, code := runMemo(t, exe, work, cache, "data", "build", "c.toml", "--out", out); code != 0 {
			t.Fatalf("data build --out %s: exit %d\n%s", out, code, stderr)
		}
	}
	stdout, stderr, code := runMemo(t, exe, work, cache, "data", "ls")
	if code != 0 {
		t.Fatalf("data ls: exit %d\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 5 || !strings.HasSuffix(lines[0], ": 1 entries") || !strings.Contains(lines[2], " 2 ") || !strings.HasSuffix(lines[2], "bpe:300    opticks") ||
		!strings.HasPrefix(lines[4], "trained tokenizers: 1 files, ") {
		t.Errorf("data ls:\n%s\nwant one entry linked by 2 runs, tokenizer bpe:300, source opticks, and one trained tokenizer", stdout)
	}
	// memo data inspect reads an entry data ls lists, as memo index does.
	entries, _ := filepath.Glob(filepath.Join(cache, "datasets", "*", "report.json"))
	if len(entries) != 1 {
		t.Fatalf("cache entries %v, want one", entries)
	}
	if stdout, stderr, code := runMemo(t, exe, work, cache, "data", "inspect", filepath.Dir(entries[0])); code != 0 || !strings.Contains(stdout, "dataset "+filepath.Dir(entries[0])) {
		t.Errorf("data inspect of the cache entry: exit %d\n%s%s", code, stdout, stderr)
	}
	stdout, _, code = runMemo(t, exe, work, cache, "data", "gc", "--unused")
	if code != 0 || !strings.Contains(stdout, "removed 0 entries") {
		t.Errorf("gc --unused with two runs linked: exit %d\n%s", code, stdout)
	}
	for _, out := range []string{"a", "b"} {
		if err := os.RemoveAll(filepath.Join(work, out)); err != nil {
			t.Fatal(err)
		}
	}
	stdout, _, code = runMemo(t, exe, work, cache, "data", "gc", "--unused")
	if code != 0 || !strings.Contains(stdout, "removed 1 entries") {
		t.Errorf("gc --unused with no run left: exit %d\n%s", code, stdout)
	}
	if _, stderr, code := runMemo(t, exe, work, cache, "data", "ls", "extra"); code != 2 || !strings.Contains(stderr, "takes no arguments") {
		t.Errorf("data ls extra: exit %d, stderr %q; want 2 naming the mistake", code, stderr)
	}
}

// TestDataGCLeavesForeignFiles (issue 43, case 2): `memo data gc`, plain,
// --unused and --all, removes only entries that carry the cache's marker
// (entry.json naming their key) and hold only the files memo writes there,
// and only the tokenizers it named; a user's files in every cache
// subdirectory, a folder of them under datasets/, a run directory there,
// an entry with a file memo did not write, and links out of the cache all
// survive byte-identical. --dry-run lists what would go and removes
// nothing.
func TestDataGCLeavesForeignFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	work, cache, outside := t.TempDir(), t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(work, "c.toml"), "name = \"c\"\n[data]\ntokenizer = \"bpe:300\"\ntargets = 5\ncontrols = 5\nvalidation = 2\n")
	writeTestFile(t, filepath.Join(work, "d.toml"), "name = \"c\"\nseed = 2\n[data]\ntokenizer = \"bpe:300\"\ntargets = 5\ncontrols = 5\nvalidation = 2\n")
	for _, b := range [][]string{{"c.toml", "a"}, {"d.toml", "b"}} {
		if _, stderr, code := runMemo(t, exe, work, cache, "data", "build", b[0], "--out", b[1]); code != 0 {
			t.Fatalf("data build %s: exit %d\n%s", b[0], code, stderr)
		}
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "datasets", "*", "entry.json"))
	toks, _ := filepath.Glob(filepath.Join(cache, "tokenizers", "*.json"))
	if len(entries) != 2 || len(toks) != 1 {
		t.Fatalf("cache holds entries %v and tokenizers %v; want 2 and 1", entries, toks)
	}
	own, touched := filepath.Dir(entries[0]), filepath.Dir(entries[1])
	writeTestFile(t, filepath.Join(outside, "keep.txt"), "outside the cache\n")
	for _, f := range []string{
		"datasets/myproject/important.txt", "datasets/notes.txt", "datasets/.locks/notes.txt",
		"datasets/.tmp-abc-1/important.txt", "datasets/runs/tiny/config.toml",
		"datasets/runs/tiny/data/tokens.arrow", "tokenizers/mine.json", "tokenizers/bpe-notes.json",
		"corpora/mine.txt", "references/mine.txt", "mine.txt",
	} {
		writeTestFile(t, filepath.Join(cache, f), "the user's own "+f+"\n")
	}
	rel, _ := filepath.Rel(cache, touched)
	writeTestFile(t, filepath.Join(touched, "mine.txt"), "the user's note in an entry\n")
	if raw, err := os.ReadFile(filepath.Join(own, "entry.json")); err == nil {
		// A copy of an entry under another name: its entry.json names another key.
		writeTestFileBytes(t, filepath.Join(cache, "datasets", "copy", "entry.json"), raw)
	}
	for link, to := range map[string]string{"datasets/link": outside, "datasets/linked/tokens.arrow": filepath.Join(outside, "keep.txt")} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(cache, link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(to, filepath.Join(cache, link)); err != nil {
			t.Fatal(err)
		}
	}
	before, beforeOutside := treeSums(t, cache), treeSums(t, outside)
	mine := map[string]bool{}
	for f := range before {
		if !strings.HasPrefix(f, filepath.Join("datasets", filepath.Base(own))+"/") && f != filepath.Join("tokenizers", filepath.Base(toks[0])) {
			mine[f] = true
		}
	}
	if !mine[filepath.Join(rel, "tokens.arrow")] {
		t.Fatalf("the touched entry %s is not among the user's files", rel)
	}

	// Runs a and b still link both entries: only --all removes memo's own.
	stdout, stderr, code := runMemo(t, exe, work, cache, "data", "gc", "--all", "--dry-run")
	if code != 0 || !strings.Contains(stdout, "would remove "+own+" ") || !strings.Contains(stdout, "would remove "+toks[0]+" ") ||
		strings.Count(stdout, "would remove /") != 2 {
		t.Errorf("gc --all --dry-run: exit %d\n%s%s\nwant the entry %s and the tokenizer listed, nothing else", code, stdout, stderr, own)
	}
	sameTree(t, cache, before)
	for _, mode := range [][]string{nil, {"--unused"}, {"--all"}} {
		stdout, stderr, code := runMemo(t, exe, work, cache, append([]string{"data", "gc"}, mode...)...)
		if code != 0 {
			t.Fatalf("gc %v: exit %d\n%s%s", mode, code, stdout, stderr)
		}
		after := treeSums(t, cache)
		for f := range mine {
			if after[f] != before[f] {
				t.Errorf("gc %v: %s changed or went", mode, f)
			}
		}
		sameTree(t, outside, beforeOutside)
	}
	if _, err := os.Stat(own); err == nil {
		t.Errorf("gc --all left memo's own entry %s", own)
	}
	if _, err := os.Stat(toks[0]); err == nil {
		t.Errorf("gc --all left the trained tokenizer %s", toks[0])
	}
	stdout, _, _ = runMemo(t, exe, work, cache, "data", "ls")
	if !strings.Contains(stdout, "not memo's, left alone: it holds mine.txt") {
		t.Errorf("data ls does not say why the touched entry is left alone:\n%s", stdout)
	}
}
