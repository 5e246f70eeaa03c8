package data

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchCorpus: the corpus is the same bytes for the same config, its
// documents are JSONL of the asked size with a marker every 20 words, and
// a GPT-2 build of it rejects few documents, and only for a shared window
// (see benchMarkerWords).
func TestBenchCorpus(t *testing.T) {
	for _, name := range []string{"moby-dick", "brown", "sotu", "kjv", "gpt2"} {
		needFetched(t, name)
	}
	cfg := BenchCorpusConfig{CacheDir: fetchedCache(), Bytes: 300_000, DocBytes: 3000, Seed: 7}
	var a, b bytes.Buffer
	docs, n, err := WriteBenchCorpus(&a, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := WriteBenchCorpus(&b, cfg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two corpora of the same config differ")
	}
	if n != int64(a.Len()) || n < cfg.Bytes || docs < 50 {
		t.Fatalf("%d documents, %d bytes reported, %d written, want >= %d", docs, n, a.Len(), cfg.Bytes)
	}
	marker := regexp.MustCompile(`^\[\d+\.\d+\.\d+\]$`)
	sc := bufio.NewScanner(bytes.NewReader(a.Bytes()))
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		var d struct{ Title, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("line %d: %v", lines+1, err)
		}
		if len(d.Text) < cfg.DocBytes/2 || len(d.Text) > cfg.DocBytes*3/2+200 {
			t.Errorf("%s: %d bytes of text, want about %d", d.Title, len(d.Text), cfg.DocBytes)
		}
		since := 0
		for _, w := range strings.Fields(d.Text) {
			if marker.MatchString(w) {
				since = 0
			} else if since++; since > benchMarkerWords {
				t.Fatalf("%s: more than %d words without a marker", d.Title, benchMarkerWords)
			}
		}
		lines++
	}
	if lines != docs {
		t.Fatalf("%d lines, %d documents reported", lines, docs)
	}

	path := filepath.Join(t.TempDir(), "corpus.jsonl")
	if err := os.WriteFile(path, a.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	bc := testConfig(t)
	bc.CacheDir, bc.CacheDatasets = fetchedCache(), false
	bc.Sources, bc.Tokenizer = []string{"jsonl:" + path}, "gpt2"
	bc.Targets, bc.Controls, bc.Validation, bc.Background = 20, 20, 5, -1
	bc.ChunkTokens, bc.MinTokens, bc.DedupWords = 0, 100, 0 // the issue-27 spec
	rep := buildTest(t, bc).Report()
	n = 0
	for reason, k := range rep.RejectedBy {
		if !strings.Contains(reason, "overlaps") {
			t.Errorf("%d rejected for %q, want only shared windows", k, reason)
		}
		n += int64(k)
	}
	if n > int64(docs)/5 {
		t.Errorf("rejected %v of %d documents, want under a fifth", rep.RejectedBy, docs)
	}
}
