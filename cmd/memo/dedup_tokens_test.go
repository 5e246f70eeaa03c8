package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDataDedupTokensCLI: a build with data.dedup_tokens says what the
// dedup removed in `memo data inspect` and `memo data ls`; a window below
// 0 is refused before any work, one memo: line and exit 2.
func TestDataDedupTokensCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	work, cache := t.TempDir(), t.TempDir()
	spec := "name = \"d\"\n[data]\ntokenizer = \"bpe:300\"\ntargets = 5\ncontrols = 5\nvalidation = 2\ndedup_words = 0\ndedup_tokens = 8\n"
	writeTestFile(t, filepath.Join(work, "d.toml"), spec)
	if _, stderr, code := runMemo(t, exe, work, cache, "data", "build", "d.toml", "--out", "run"); code != 0 {
		t.Fatalf("data build: exit %d\n%s", code, stderr)
	}
	for _, args := range [][]string{{"data", "inspect", "run"}, {"data", "ls"}} {
		stdout, stderr, code := runMemo(t, exe, work, cache, args...)
		if code != 0 || !strings.Contains(stdout, "data.dedup_tokens = 8 removed ") || strings.Contains(stdout, "removed 0 of") {
			t.Errorf("%v: exit %d\n%s%s\nwant the tokens data.dedup_tokens = 8 removed", args, code, stdout, stderr)
		}
	}
	writeTestFile(t, filepath.Join(work, "bad.toml"), strings.Replace(spec, "dedup_tokens = 8", "dedup_tokens = -3", 1))
	_, stderr, code := runMemo(t, exe, work, cache, "data", "build", "bad.toml", "--out", "bad")
	if code != 2 || !strings.HasPrefix(stderr, "memo: ") || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, "data.dedup_tokens = -3") {
		t.Errorf("dedup_tokens = -3: exit %d, stderr %q; want 2 and one memo: line naming the key", code, stderr)
	}
}
