package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/memo-research/memo/data"
)

// tokenizerDir is the models directory of a fetched Hugging Face tokenizer
// pack. Missing, the test fails under CI=true (setup.sh fetches it) and is
// skipped otherwise.
func tokenizerDir(t *testing.T, corpus string) string {
	t.Helper()
	dir := filepath.Join(data.ResolveCacheDir(""), "corpora", corpus, "package", "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		msg := err.Error() + ": run `bash scripts/fetch-corpora.sh " + corpus + "`"
		if ci, _ := strconv.ParseBool(os.Getenv("CI")); ci {
			t.Fatal("CI=true: " + msg)
		}
		t.Skip(msg)
	}
	return dir
}

// runTokenizeCmd runs `memo tokenize ARGS` in this process with stdin.
func runTokenizeCmd(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return runCommand(tokenizeCommand(), stdin, args...)
}

type idsOut struct {
	IDs    []int32  `json:"ids"`
	Tokens []string `json:"tokens"`
}

func encodeCLI(t *testing.T, spec, text string, args ...string) idsOut {
	t.Helper()
	out, err := runTokenizeCmd(t, text, append([]string{"--tokenizer", spec}, args...)...)
	if err != nil {
		t.Fatalf("tokenize %q: %v", text, err)
	}
	var got idsOut
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("want one line of JSON, got %q", out)
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("output %q: %v", out, err)
	}
	return got
}

func decodeCLI(t *testing.T, spec string, ids []int32, args ...string) string {
	t.Helper()
	in, _ := json.Marshal(map[string][]int32{"ids": ids})
	out, err := runTokenizeCmd(t, string(in), append([]string{"--tokenizer", spec, "--decode"}, args...)...)
	if err != nil {
		t.Fatalf("decode %v: %v", ids, err)
	}
	return out
}

// TestTokenizeCLI: ids of the Hugging Face library (data/hftok/testdata),
// special tokens on request, vocabulary entries with --json, and decode
// giving back the text, for Llama 3 (spec: the directory) and Llama 2-style
// (spec: the file).
func TestTokenizeCLI(t *testing.T) {
	l3 := "hf:" + tokenizerDir(t, "llama3-tokenizer")
	l2 := "hf:" + filepath.Join(tokenizerDir(t, "llama2-tokenizer"), "tokenizer.json")
	const hello = "Hello world!"
	for _, tc := range []struct {
		spec, text string
		args       []string
		want       []int32
		tokens     []string
		decodeArgs []string
		decoded    string
	}{
		{l3, hello, nil, []int32{9906, 1917, 0}, nil, nil, hello},
		{l3, hello, []string{"--special"}, []int32{9906, 1917, 0}, nil, nil, hello},
		{l2, hello, nil, []int32{22557, 1526, 28808}, nil, nil, hello},
		{l2, hello, []string{"--special", "--json"}, []int32{1, 22557, 1526, 28808}, []string{"<s>", "▁Hello", "▁world", "!"}, nil, hello},
		// <s> in the text is the special token, as in the library, and the
		// text after it gains its own "▁" (so decoding gives "a b"); decode
		// drops <s> unless --special. The library's output, quirks included.
		{l2, "a<s>b", nil, []int32{264, 1, 287}, nil, nil, "a b"},
		{l2, "a<s>b", nil, []int32{264, 1, 287}, nil, []string{"--special"}, "a<s> b"},
		{l3, "<|begin_of_text|>hi<|eot_id|>", nil, []int32{128000, 6151, 128009}, nil, nil, "hi"},
	} {
		got := encodeCLI(t, tc.spec, tc.text, tc.args...)
		if !reflect.DeepEqual(got.IDs, tc.want) || !reflect.DeepEqual(got.Tokens, tc.tokens) {
			t.Errorf("%s %v %q: ids %v tokens %q, want %v %q", tc.spec, tc.args, tc.text, got.IDs, got.Tokens, tc.want, tc.tokens)
		}
		if dec := decodeCLI(t, tc.spec, tc.want, tc.decodeArgs...); dec != tc.decoded {
			t.Errorf("%s decode %v %v = %q, want %q", tc.spec, tc.want, tc.decodeArgs, dec, tc.decoded)
		}
	}
	// A long, multi-line text round-trips through the command.
	text := strings.Repeat("Light is refracted.\n\n  Query 31. ", 20) + "naïve café 日本語 🙂"
	for _, spec := range []string{l3, l2} {
		ids := encodeCLI(t, spec, text).IDs
		if got := decodeCLI(t, spec, ids); got != text {
			t.Errorf("%s: round trip gave %q", spec, got)
		}
		out, err := runTokenizeCmd(t, `{"ids": [1, 2]}`, "--tokenizer", spec, "--decode", "--json", "--special")
		var js struct{ Text *string }
		if err != nil || json.Unmarshal([]byte(out), &js) != nil || js.Text == nil {
			t.Errorf("%s --decode --json: %q, %v", spec, out, err)
		}
	}
}

// TestTokenizeBadInput: each bad input is one line and exit code 2.
func TestTokenizeBadInput(t *testing.T) {
	l2 := "hf:" + tokenizerDir(t, "llama2-tokenizer")
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "not.json")
	scripts := filepath.Join(dir, "scripts.json")
	writeTestFile(t, notJSON, "vocab: no\n")
	writeTestFile(t, scripts, `{"version":"1.0","added_tokens":[],"normalizer":null,"pre_tokenizer":{"type":"UnicodeScripts"},
"post_processor":null,"decoder":null,"model":{"type":"WordLevel","vocab":{"<unk>":0},"unk_token":"<unk>"}}`)
	for _, tc := range []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"no tokenizer", "x", nil, "--tokenizer SPEC is required"},
		{"missing file", "x", []string{"--tokenizer", "hf:" + filepath.Join(dir, "missing.json")}, "missing.json: no such file"},
		{"tokenizer not JSON", "x", []string{"--tokenizer", "hf:" + notJSON}, "not a tokenizer.json"},
		{"unsupported component", "x", []string{"--tokenizer", "hf:" + scripts}, `pre_tokenizer type "UnicodeScripts" is not supported`},
		{"ids not JSON", "1 2 3", []string{"--tokenizer", l2, "--decode"}, `want {"ids": [...]}`},
		{"no ids key", `{"id": [1]}`, []string{"--tokenizer", l2, "--decode"}, `no "ids" array`},
		{"float id", `{"ids": [1.5]}`, []string{"--tokenizer", l2, "--decode"}, `want {"ids": [...]}`},
		{"id outside the vocabulary", `{"ids": [1, 32000]}`, []string{"--tokenizer", l2, "--decode"}, "ids[1] = 32000 is not in the vocabulary"},
		{"negative id", `{"ids": [-1]}`, []string{"--tokenizer", l2, "--decode"}, "ids[0] = -1 is not in the vocabulary"},
		{"stray argument", "x", []string{"--tokenizer", l2, "file.txt"}, `unexpected argument "file.txt"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runTokenizeCmd(t, tc.stdin, tc.args...)
			var exit cli.ExitCoder
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("err = %v, want a usage error (exit 2)", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("message %q, want one line containing %q", msg, tc.want)
			}
			if out != "" {
				t.Errorf("printed %q on error", out)
			}
		})
	}
}

// TestTokenizeBinary: the built memo reads stdin and prints ids, and exits
// 2 with one line on stderr for an id outside the vocabulary.
func TestTokenizeBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	l3 := "hf:" + tokenizerDir(t, "llama3-tokenizer")
	exe := buildMemo(t)
	run := func(stdin string, args ...string) memoResult {
		cmd := exec.Command(exe, append([]string{"tokenize", "--tokenizer", l3}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return memoResult{stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()}
	}
	if r := run("Hello world!"); r.code != 0 || r.stdout != `{"ids":[9906,1917,0]}`+"\n" {
		t.Errorf("encode: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
	r := run(`{"ids":[9906,1917,0,999999]}`, "--decode")
	if r.code != 2 || r.stdout != "" || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 || !strings.Contains(r.stderr, "ids[3] = 999999") {
		t.Errorf("bad id: code %d stdout %q stderr %q", r.code, r.stdout, r.stderr)
	}
}
