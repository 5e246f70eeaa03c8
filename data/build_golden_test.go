package data

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestBuildGolden: the streaming build (spooled texts and tokens, bounded
// memory) writes byte for byte the files the in-memory build wrote. The
// hashes were recorded from the in-memory build (commit 49ea6ea) on the
// same configurations: BPE training, chunking, word dedup, control_gap,
// a fixed background count with leak replacement, GPT-2 and "all the rest"
// background, target_sources. They were recorded again when memo's
// tokenizer.json became a plain Hugging Face file (no "memo_native" key,
// the vocabulary in id order): docs.arrow, tokens.arrow, report.json and
// the vocabulary and merges were checked to be the same bytes as before.
func TestBuildGolden(t *testing.T) {
	cases := []struct {
		name   string
		fetch  []string
		cfg    func(*testing.T, Config) Config
		golden string
	}{
		{"opticks-bpe", nil, func(_ *testing.T, c Config) Config { return c }, "21d8f53735f1e6d7"},
		{"mixed-bpe-dedup-gap", []string{"sotu"}, func(_ *testing.T, c Config) Config {
			c.Sources = []string{"opticks", "sotu"}
			c.TargetSources = []string{"sotu"}
			c.ChunkTokens, c.MinTokens, c.DedupWords, c.ControlGap = 128, 100, 20, 1
			c.Targets, c.Controls, c.Validation, c.Background = 60, 60, 10, 150
			return c
			// Recorded again on 2026-12-01, when validation and background
			// with target_sources came from the other sources first
			// (e20ea5b97b7d2225 before: the SOTU leftovers first).
		}, "459201e5a4013095"},
		{"opticks-gpt2-all", []string{"gpt2"}, func(_ *testing.T, c Config) Config {
			c.Sources = []string{"opticks"}
			c.Tokenizer = "gpt2"
			c.ChunkTokens, c.MinTokens = 64, 32
			c.Targets, c.Controls, c.Validation, c.Background = 40, 40, 10, -1
			return c
		}, "1ace0219f958e722"},
		// Issue 27's corpus (paragraphs with [n.j.i] markers): whole
		// documents, every remaining one a would-be background, some of
		// them sharing a window with a target or a control. Hash recorded
		// before the build's window index and parallel checks (commit
		// caaae4c's build, on this corpus).
		{"bench-corpus-gpt2", []string{"gpt2", "moby-dick", "brown", "sotu", "kjv"}, func(t *testing.T, c Config) Config {
			c.Sources = []string{"jsonl:" + benchCorpusFile(t, 3_000_000, 6000)}
			c.Tokenizer = "gpt2"
			c.ChunkTokens, c.MinTokens, c.DedupWords = 0, 100, 0
			c.Targets, c.Controls, c.Validation, c.Background, c.Repetitions = 60, 60, 10, -1, 50
			return c
		}, "916daa683c00155f"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range tc.fetch {
				needFetched(t, f)
			}
			cfg := testConfig(t)
			if tc.fetch != nil {
				cfg.CacheDir = fetchedCache()
			}
			cfg = tc.cfg(t, cfg)
			cfg.CacheDatasets = false
			dir := t.TempDir()
			if err := Build(context.Background(), cfg, dir); err != nil {
				t.Fatal(err)
			}
			got := buildHash(t, filepath.Join(dir, "data"))
			if got != tc.golden {
				t.Errorf("build hash %s, want %s (the in-memory build's)", got, tc.golden)
			}
		})
	}
}

// buildHash hashes docs.arrow, tokens.arrow, tokenizer.json and report.json
// without its timing.
func buildHash(t *testing.T, dir string) string {
	h := sha256.New()
	for _, name := range []string{"docs.arrow", "tokens.arrow", "tokenizer.json"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		h.Write(raw)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep map[string]any
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatal(err)
	}
	delete(rep, "seconds")
	delete(rep, "tokenizer_cache_hit")
	delete(rep, "files") // checksums of the files hashed above (added after the hashes were recorded)
	delete(rep["config"].(map[string]any), "cache_dir")
	b, _ := json.Marshal(rep)
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// benchCorpusFile writes a WriteBenchCorpus corpus (seed 1) into a
// temporary directory it makes the working directory, and returns the
// file's name there: the report names sources, so the name must not vary.
func benchCorpusFile(t *testing.T, bytes int64, docBytes int) string {
	t.Chdir(t.TempDir())
	path := "corpus.jsonl"
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, err := WriteBenchCorpus(f, BenchCorpusConfig{CacheDir: fetchedCache(), Bytes: bytes, DocBytes: docBytes, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	return path
}
