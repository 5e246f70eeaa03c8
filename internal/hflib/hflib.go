// Package hflib runs Hugging Face's tokenizers library (Rust 0.22.2,
// through its Node binding @anush008/tokenizers@0.6.0) on a tokenizer.json,
// for tests that compare memo's ids with the library's. The binding is
// installed in the memo cache by scripts/fetch-hf-tokenizers.sh
// (setup.sh runs it); the tests never download it.
package hflib

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// Result is what the library gives for one text.
type Result struct {
	// IDs is encode(text, addSpecialTokens=false), IDsWithSpecial the same
	// with the post-processor's special tokens.
	IDs            []int32 `json:"ids"`
	IDsWithSpecial []int32 `json:"ids_with_special"`
	// Decoded is decode(IDs, skipSpecialTokens=false).
	Decoded string `json:"decoded"`
}

// ModulesDir is the node_modules directory the binding is installed in:
// $MEMO_CACHE/node_modules, else ~/.cache/memo/node_modules (the cache
// data.ResolveCacheDir uses, which this package does not import).
func ModulesDir() string {
	if d := os.Getenv("MEMO_CACHE"); d != "" {
		return filepath.Join(d, "node_modules")
	}
	h, _ := os.UserHomeDir()
	return filepath.Join(h, ".cache", "memo", "node_modules")
}

// available says why the library cannot run here, or nil.
func available() error {
	if _, err := exec.LookPath("node"); err != nil {
		return errors.New("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(ModulesDir(), "@anush008", ".complete")); err != nil {
		return fmt.Errorf("the tokenizers binding is not in %s: run `bash scripts/fetch-hf-tokenizers.sh`", ModulesDir())
	}
	return nil
}

// Need skips t when the library cannot run here; under CI=true (where
// setup.sh installed it) it fails t instead.
func Need(t testing.TB) {
	t.Helper()
	err := available()
	if err == nil {
		return
	}
	if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
		t.Fatal("CI=true: " + err.Error())
	}
	t.Skip(err.Error())
}

// script loads the tokenizer.json named by argv[2] with Tokenizer.fromFile
// (the library's own reader: it refuses what the library refuses) and
// writes a Result for each text of the JSON file argv[3].
const script = `
const {Tokenizer} = require('@anush008/tokenizers');
const fs = require('fs');
(async () => {
  const t = Tokenizer.fromFile(process.argv[2]);
  const out = [];
  for (const text of JSON.parse(fs.readFileSync(process.argv[3], 'utf8'))) {
    const ids = Array.from((await t.encode(text, null, {addSpecialTokens: false})).getIds());
    const withSpecial = Array.from((await t.encode(text, null, {addSpecialTokens: true})).getIds());
    out.push({ids, ids_with_special: withSpecial, decoded: await t.decode(ids, false)});
  }
  process.stdout.write(JSON.stringify(out));
})().catch(e => { process.stderr.write(String(e && e.message || e)); process.exit(1); });
`

// Encode runs the library on each text with the tokenizer.json at path.
// An error holds what the library said (for a file it refuses, its
// parser's message). Call Need first.
func Encode(path string, texts []string) ([]Result, error) {
	dir, err := os.MkdirTemp("", "hflib-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "texts.json")
	raw, err := json.Marshal(texts)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(in, raw, 0o644); err != nil {
		return nil, err
	}
	js := filepath.Join(dir, "encode.js")
	if err := os.WriteFile(js, []byte(script), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("node", js, path, in)
	cmd.Env = append(os.Environ(), "NODE_PATH="+ModulesDir())
	var stderr limitedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("tokenizers library on %s: %v: %s", path, err, stderr.String())
	}
	var res []Result
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, fmt.Errorf("tokenizers library on %s: %w", path, err)
	}
	if len(res) != len(texts) {
		return nil, fmt.Errorf("tokenizers library on %s: %d results for %d texts", path, len(res), len(texts))
	}
	return res, nil
}

// limitedBuffer keeps the first 4 KB written to it.
type limitedBuffer struct{ b []byte }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := 4096 - len(l.b); room > 0 {
		l.b = append(l.b, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string { return string(l.b) }
