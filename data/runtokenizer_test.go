package data

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// TestOpenTokenizerReport checks that generate's and export's tokenizer
// reader trusts tokenizer.json only through a readable report.json.
func TestOpenTokenizerReport(t *testing.T) {
	ds := buildTest(t, testConfig(t))
	dir := ds.Dir()
	rep, err := ReadReport(dir)
	if err != nil {
		t.Fatalf("ReadReport: %v", err)
	}
	if rep.VocabSize != ds.Report().VocabSize || rep.Tokenizer != ds.Report().Tokenizer {
		t.Errorf("ReadReport = vocab %d tokenizer %q, Open's report vocab %d tokenizer %q", rep.VocabSize, rep.Tokenizer, ds.Report().VocabSize, ds.Report().Tokenizer)
	}
	if _, err := OpenTokenizer(dir); err != nil {
		t.Fatalf("OpenTokenizer of a good build: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, report, want string
	}{
		{"missing", "", "no report.json to verify tokenizer.json against"},
		{"truncated", string(raw[:len(raw)/2]), "report.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "report.json")
			if tc.report == "" {
				os.Remove(p)
			} else if err := os.WriteFile(p, []byte(tc.report), 0o644); err != nil {
				t.Fatal(err)
			}
			defer os.WriteFile(p, raw, 0o644)
			_, err := OpenTokenizer(dir)
			if !errors.Is(err, arrowsafe.ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("OpenTokenizer = %v, want ErrCorrupt naming %q", err, tc.want)
			}
		})
	}
}

// TestLoadTokenizerOfADirectory: a directory given without hf: is named
// with what would do ("read DIR: is a directory" said nothing); with
// hf: its tokenizer.json is read.
func TestLoadTokenizerOfADirectory(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadTokenizer(dir); err == nil || !strings.Contains(err.Error(), "give hf:"+dir+" for its tokenizer.json") {
		t.Errorf("LoadTokenizer of a directory: %v", err)
	}
	src := filepath.Join("..", "testdata", "tokenizers", "opticks-bpe2048.json")
	raw, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadTokenizer("hf:" + dir); err != nil {
		t.Errorf("LoadTokenizer of hf:DIR: %v", err)
	}
}
