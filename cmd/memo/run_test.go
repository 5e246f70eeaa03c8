package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// buildMemo builds the memo binary once per test run.
func buildMemo(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "memo")
	out, err := exec.Command("go", "build", "-o", exe, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return exe
}

// TestRunConfigErrors: each bad spec is one line on stderr, exit code 2,
// and no run directory.
func TestRunConfigErrors(t *testing.T) {
	exe := buildMemo(t)
	for _, tc := range []struct {
		name, doc, want string
	}{
		{"unknown key", "[goldfish]\nkk = 4\n", `bad.toml:2: goldfish.kk: unknown key "kk" in [goldfish]; did you mean "k"?`},
		{"wrong type", "[goldfish]\nk = \"four\"\n", "bad.toml:2: goldfish.k: wrong type"},
		{"k below 2", "[goldfish]\nk = 1\n", "bad.toml:2: goldfish.k = 1: must be 0 (standard loss) or >= 2"},
		{"missing data file", "[data]\nsources = [\"jsonl:nope.jsonl\"]\n", `bad.toml:2: data.sources: "jsonl:nope.jsonl": no such file or directory`},
		{"prefix+suffix over context", "[model]\npreset = \"tiny\"\n[extract]\nmode = \"fixed\"\nprefix = 200\nsuffix = 100\n", "prefix 200 + suffix 100 = 300 tokens exceed the model context 256"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "bad.toml"), []byte(tc.doc), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, "run", "bad.toml")
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit = %v, want code 2; stderr %q", err, stderr.String())
			}
			msg := strings.TrimSuffix(stderr.String(), "\n")
			if !strings.HasPrefix(msg, "memo: bad.toml:") {
				t.Errorf("stderr = %q, want it to start with the file and line", msg)
			}
			if strings.Contains(msg, "\n") || !strings.Contains(msg, tc.want) {
				t.Errorf("stderr = %q, want one line containing %q", msg, tc.want)
			}
			ents, _ := os.ReadDir(dir)
			if len(ents) != 1 {
				t.Errorf("bad spec left files behind: %v", ents)
			}
		})
	}
}
