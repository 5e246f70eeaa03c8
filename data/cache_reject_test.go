package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenizerCacheHit: a trained tokenizer is cached by a hash of the
// corpus text and the vocabulary size, not of the rest of the config: the
// same corpus under another seed or split sizes is a hit and gives the same
// tokenizer.json; another vocabulary or another corpus is a miss and adds a
// cache file; an unreadable cache file is retrained and replaced.
func TestTokenizerCacheHit(t *testing.T) {
	base := testConfig(t) // its own empty cache directory
	// Every step builds: a reused dataset would carry the first build's
	// tokenizer_cache_hit (the dataset cache is tested in dscache_test.go).
	base.CacheDatasets = false
	extra := t.TempDir()
	writeFile(t, filepath.Join(extra, "note.txt"), strings.Repeat("A short note added to the corpus changes its hash. ", 20))
	cacheFiles := func() []string {
		m, _ := filepath.Glob(filepath.Join(base.CacheDir, "tokenizers", "*.json"))
		return m
	}
	var first []byte // tokenizer.json of the first build
	steps := []struct {
		name  string
		edit  func(*Config)
		hit   bool
		files int // cache files after the step
	}{
		{"first build trains", func(*Config) {}, false, 1},
		{"same corpus again", func(*Config) {}, true, 1},
		{"other seed and splits", func(c *Config) { c.Seed, c.Targets, c.Repetitions = 99, 10, 3 }, true, 1},
		{"other vocabulary", func(c *Config) { c.Tokenizer = "bpe:1000" }, false, 2},
		{"other corpus", func(c *Config) { c.Sources = []string{"opticks", "txt:" + extra} }, false, 3},
		{"corrupt cache file", func(*Config) {
			for _, f := range cacheFiles() {
				if strings.HasPrefix(filepath.Base(f), "bpe1024-") {
					writeFile(t, f, "{not json")
				}
			}
		}, false, 3},
		{"rewritten after corruption", func(*Config) {}, true, 3},
	}
	for _, s := range steps {
		cfg := base
		s.edit(&cfg)
		ds := buildTest(t, cfg)
		if got := ds.Report().TokenizerHit; got != s.hit {
			t.Errorf("%s: tokenizer_cache_hit = %v, want %v", s.name, got, s.hit)
		}
		if got := len(cacheFiles()); got != s.files {
			t.Errorf("%s: %d cached tokenizers %v, want %d", s.name, got, cacheFiles(), s.files)
		}
		raw, err := os.ReadFile(filepath.Join(ds.Dir(), "tokenizer.json"))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = raw
		} else if cfg.Tokenizer == base.Tokenizer && len(cfg.Sources) == 1 && string(raw) != string(first) {
			t.Errorf("%s: tokenizer.json differs from the first build's on the same corpus", s.name)
		}
	}
}

// TestShortDocumentsRejectedByName: documents with fewer tokens than
// data.min_tokens (prefix + suffix of the extraction attack: 50 + 50) are
// left out of every split, and each is reported by source, name and reason
// in report.json and counted under its source.
func TestShortDocumentsRejectedByName(t *testing.T) {
	dir := t.TempDir()
	n := 0
	for _, p := range strings.Split(opticksText(t), "\n\n") {
		if n < 12 && len(p) > 1500 {
			writeFile(t, filepath.Join(dir, fmt.Sprintf("long%02d.txt", n)), p)
			n++
		}
	}
	short := map[string]string{
		"tiny.txt":        "Too short to attack.\n",
		"sub/a-verse.txt": "And God said, Let there be light: and there was light.\n",
	}
	for name, text := range short {
		writeFile(t, filepath.Join(dir, name), text)
	}
	cfg := testConfig(t)
	cfg.Sources = []string{"txt:" + dir}
	cfg.Tokenizer = "bpe:512"
	cfg.ChunkTokens, cfg.MinTokens, cfg.DedupWords = 0, 100, 0
	cfg.Targets, cfg.Controls, cfg.Validation = 4, 4, 0
	ds := buildTest(t, cfg)
	rep := ds.Report()

	src := "txt:" + dir
	got := map[string]string{}
	for _, r := range rep.Rejected {
		if r.Source != src {
			t.Errorf("rejection %+v: source %q, want %q", r, r.Source, src)
		}
		got[r.Title] = r.Reason
	}
	for name := range short {
		reason, ok := got[name]
		if !ok {
			t.Errorf("%s: not reported (rejected: %v)", name, got)
			continue
		}
		if !strings.HasPrefix(reason, "too short: ") || !strings.HasSuffix(reason, " tokens < data.min_tokens = 100") {
			t.Errorf("%s: reason %q, want \"too short: N tokens < data.min_tokens = 100\"", name, reason)
		}
	}
	if len(got) != len(short) || rep.RejectedBy["too short"] != len(short) {
		t.Errorf("rejected %v (by reason %v), want exactly %d too short", got, rep.RejectedBy, len(short))
	}
	if sc := rep.Sources[src]; sc == nil || sc.Documents != n+len(short) || sc.Rejected != len(short) || sc.Kept != n {
		t.Errorf("source counts %+v, want %d documents, %d rejected, %d kept", sc, n+len(short), len(short), n)
	}
	docs, err := ds.Docs("")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if _, ok := short[d.Title]; ok || len(d.IDs) < cfg.MinTokens {
			t.Errorf("%q (%d tokens) is in split %s", d.Title, len(d.IDs), d.Split)
		}
	}
}
