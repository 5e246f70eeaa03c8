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
