package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memo-research/memo/experiments"
	"github.com/urfave/cli/v2"
)

// runMaskCmd runs `memo mask args...` in-process and returns stdout and the
// error the action returned.
func runMaskCmd(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	return runCommand(maskCommand(), stdin, args...)
}

// runCommand runs one memo command in this process with stdin, returning
// what it printed (stdout and stderr) and its error.
func runCommand(cmd *cli.Command, stdin string, args ...string) (string, error) {
	var out bytes.Buffer
	app := &cli.App{
		Name:           "memo",
		Commands:       []*cli.Command{cmd},
		Reader:         strings.NewReader(stdin),
		Writer:         &out,
		ErrWriter:      &out,
		ExitErrHandler: func(*cli.Context, error) {}, // keep the test process alive
	}
	err := app.Run(append([]string{"memo", cmd.Name}, args...))
	return out.String(), err
}

func TestMaskIDs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ids.json")
	if err := os.WriteFile(file, []byte("[5,5,5,5,5,5,5,5,5,5]"), 0o644); err != nil {
		t.Fatal(err)
	}
	zeros := "[" + strings.TrimSuffix(strings.Repeat("0,", 16), ",") + "]"
	tests := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"static from file", "", []string{"--strategy", "static", "--k", "4", "--start", "1", "--ids-json", file}, "[1,5,9]\n"},
		// key 0 -> table[0] = 0.2337 < 1/4: every position from h-1 drops.
		{"hash-table zeros from stdin", zeros, []string{"--k", "4", "--h", "13", "--ids-json", "-"}, "[12,13,14,15]\n"},
		{"empty array", "[]", []string{"--ids-json", "-"}, "[]\n"},
		// memo tokenize's {"ids": [...]} pipes in (it was refused).
		{"tokenize's object from stdin", `{"ids":` + zeros + "}\n", []string{"--k", "4", "--h", "13", "--ids-json", "-"}, "[12,13,14,15]\n"},
		{"rolling exempt", zeros, []string{"--strategy", "rolling", "--k", "2", "--h", "1", "--exempt", "0", "--ids-json", "-"}, "[]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := runMaskCmd(t, tt.stdin, tt.args...)
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if got != tt.want {
				t.Errorf("stdout %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMaskDefaultSeedIsASpecs: with no --seed, the seeded strategies drop
// what a run with the default seed drops (a probe found --seed 0 against
// a spec's 1234, another mask than training's).
func TestMaskDefaultSeedIsASpecs(t *testing.T) {
	ids := "[" + strings.TrimSuffix(strings.Repeat("7,3,9,", 40), ",") + "]"
	for _, strategy := range []string{"random", "rolling"} {
		spec, err := experiments.ParseBytes("x.toml", []byte("[goldfish]\nstrategy = \""+strategy+"\"\n"))
		if err != nil {
			t.Fatal(err)
		}
		plain, err := runMaskCmd(t, ids, "--strategy", strategy, "--ids-json", "-")
		if err != nil {
			t.Fatal(err)
		}
		seeded, err := runMaskCmd(t, ids, "--strategy", strategy, "--seed", strconv.FormatInt(spec.Goldfish.Seed, 10), "--ids-json", "-")
		if err != nil {
			t.Fatal(err)
		}
		other, err := runMaskCmd(t, ids, "--strategy", strategy, "--seed", "0", "--ids-json", "-")
		if err != nil {
			t.Fatal(err)
		}
		if plain != seeded || plain == other {
			t.Errorf("%s: default %s, the spec's seed %d %s, seed 0 %s: want the default to be the spec's", strategy, plain, spec.Goldfish.Seed, seeded, other)
		}
	}
}

func TestMaskBadInput(t *testing.T) {
	tests := []struct {
		name, stdin string
		args        []string
		want        string // in the one-line message
	}{
		{"k=1", "[1]", []string{"--k", "1", "--ids-json", "-"}, "--k 1: want an integer >= 2"},
		{"k not a number", "[1]", []string{"--k", "x", "--ids-json", "-"}, `--k "x": want an integer >= 2`},
		{"h=0", "[1]", []string{"--h", "0", "--ids-json", "-"}, "--h 0: want an integer >= 1"},
		{"unknown strategy", "[1]", []string{"--strategy", "hash", "--ids-json", "-"}, `--strategy "hash": want one of none, static, hash-table`},
		{"float id", "[1, 2.5]", []string{"--ids-json", "-"}, "--ids-json -: element 1 is 2.5: want an integer token id"},
		{"string id", `["a"]`, []string{"--ids-json", "-"}, `element 0 is "a"`},
		{"missing file", "", []string{"--ids-json", "/nonexistent/ids.json"}, "--ids-json /nonexistent/ids.json"},
		{"no input", "", nil, "no input"},
		{"both inputs", "", []string{"--ids-json", "-", "--text", "x.txt"}, "not both"},
		{"start without static", "[1]", []string{"--start", "3", "--ids-json", "-"}, "--start applies to --strategy static"},
		{"bad exempt", "[1]", []string{"--strategy", "rolling", "--exempt", "1,x", "--ids-json", "-"}, `--exempt "1,x"`},
		{"text without tokenizer", "", []string{"--text", "x.txt"}, "--text needs --tokenizer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := runMaskCmd(t, tt.stdin, tt.args...)
			var exit cli.ExitCoder
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("err = %v, want a usage error (exit 2)", err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tt.want) {
				t.Errorf("message %q, want one line containing %q", msg, tt.want)
			}
			if strings.Contains(out, "[") && !strings.Contains(out, "error") {
				t.Errorf("stdout got output on error: %q", out)
			}
		})
	}
}

// TestMaskBinary builds memo and checks the process contract: only JSON on
// stdout, and exit code 2 with one line on stderr for bad input.
func TestMaskBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	bin := filepath.Join(t.TempDir(), "memo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "mask", "--strategy", "static", "--k", "3", "--ids-json", "-")
	cmd.Stdin = strings.NewReader("[7, 8, 9, 10, 11, 12, 13]")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	if got := stdout.String(); got != "[0,3,6]\n" {
		t.Errorf("stdout %q", got)
	}

	cmd = exec.Command(bin, "mask", "--k", "1", "--ids-json", "-")
	cmd.Stdin = strings.NewReader("[1]")
	stdout.Reset()
	stderr.Reset()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("k=1: err %v, want exit code 2", err)
	}
	if stdout.Len() != 0 || strings.Count(stderr.String(), "\n") != 1 || !strings.Contains(stderr.String(), "--k 1") {
		t.Errorf("k=1: stdout %q, stderr %q; want nothing and one line naming --k", stdout.String(), stderr.String())
	}
}

// byteTokenizerJSON writes a byte-level BPE tokenizer.json with no merges:
// one token per byte, id = byte value, in GPT-2's byte-to-rune alphabet.
func byteTokenizerJSON(t *testing.T, path string) {
	t.Helper()
	vocab := map[string]int{}
	extra := 0
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = rune(256 + extra)
			extra++
		}
		vocab[string(r)] = b
	}
	doc := map[string]any{
		"version":        "1.0",
		"added_tokens":   []any{},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"model":          map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil, "end_of_word_suffix": nil, "fuse_unk": false, "vocab": vocab, "merges": []string{}},
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestMaskText(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tokenizer.json")
	byteTokenizerJSON(t, tok)
	text := filepath.Join(dir, "doc.txt")
	if err := os.WriteFile(text, []byte("The cat sat."), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runMaskCmd(t, "", "--strategy", "static", "--k", "4", "--start", "1", "--text", text, "--tokenizer", tok)
	if err != nil {
		t.Fatal(err)
	}
	want := "T[[h]]e c[[a]]t s[[a]]t.\n\nstatic k=4 h=13: dropped 3 of 12 tokens (25.00%; 1/k = 25.00%)\n"
	if out != want {
		t.Errorf("stdout\n%q\nwant\n%q", out, want)
	}
}
