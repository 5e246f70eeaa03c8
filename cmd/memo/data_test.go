package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
)

// runMemo runs the memo binary in dir with a private cache and returns its
// stdout, stderr and exit code.
func runMemo(t *testing.T, exe, dir, cache string, args ...string) (string, string, int) {
	t.Helper()
	r := execMemoCache(t, exe, dir, cache, args...)
	return r.stdout, r.stderr, r.code
}

// TestDataBuildInspectCLI: `memo data build x.toml --out DIR` writes the
// dataset, and `memo data inspect` reads it back (from DIR or DIR/data):
// split sizes, repetition counts, a too-short document by name, the length
// histogram and examples. Bad input exits 2 with one line on stderr.
func TestDataBuildInspectCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memo binary")
	}
	exe := buildMemo(t)
	work, cache := t.TempDir(), t.TempDir()
	writeTestFile(t, filepath.Join(work, "extra", "tiny.txt"), "Too short to attack.\n")
	writeTestFile(t, filepath.Join(work, "smoke.toml"), `name = "smoke"
seed = 7

[data]
sources = ["opticks", "txt:extra"]
tokenizer = "bpe:512"
targets = 6
controls = 4
validation = 3
background = 20
repetition_groups = [1, 4]
chunk_tokens = 128
min_tokens = 100
`)
	out := filepath.Join(work, "run")
	stdout, stderr, code := runMemo(t, exe, work, cache, "data", "build", "smoke.toml", "--out", out)
	if code != 0 {
		t.Fatalf("data build: exit %d\n%s", code, stderr)
	}
	if want := "wrote " + filepath.Join(out, "data") + "\n"; stdout != want {
		t.Errorf("data build stdout %q, want %q", stdout, want)
	}
	for _, f := range []string{"docs.arrow", "tokens.arrow", "tokenizer.json", "report.json"} {
		if _, err := os.Stat(filepath.Join(out, "data", f)); err != nil {
			t.Errorf("data build: %v", err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "tokenizers", "bpe512-*.json")); len(m) != 1 {
		t.Errorf("tokenizer cache under MEMO_CACHE: %v, want one bpe512 file", m)
	}

	for _, arg := range []string{out, filepath.Join(out, "data")} {
		stdout, stderr, code = runMemo(t, exe, work, cache, "data", "inspect", "--examples", "1", arg)
		if code != 0 {
			t.Fatalf("data inspect %s: exit %d\n%s", arg, code, stderr)
		}
		for _, want := range []string{
			"dataset " + filepath.Join(out, "data"),
			"tokenizer bpe:512: vocab 512, eos 511; layout padded; seed 7",
			"\n  target           6 docs",
			"\n  control          4 docs",
			"\n  validation       3 docs",
			"\n  background      20 docs",
			"targets by repetitions: 1x:3 4x:3\n",
			`txt:extra "tiny.txt": too short:`,
			"document length (tokens):",
			"\n[target] doc ",
			"\n[control] doc ",
		} {
			if !strings.Contains(stdout, want) {
				t.Errorf("data inspect %s: output lacks %q:\n%s", arg, want, stdout)
			}
		}
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"unknown data key", []string{"data", "build", "typo.toml"}, `typo.toml:2: data.targetz: unknown key "targetz" in [data]`},
		{"invalid value", []string{"data", "build", "invalid.toml"}, "data.layout"},
		{"a sweep", []string{"data", "build", "sweep.toml"}, "sweep.toml is a sweep (it has [sweep] or [[sweep_points]])"},
		{"no dataset", []string{"data", "inspect", "nowhere"}, "memo data build"},
		{"unknown corpus", []string{"data", "fetch", "wikipedia"}, `unknown corpus "wikipedia"`},
	}
	writeTestFile(t, filepath.Join(work, "typo.toml"), "[data]\ntargetz = 3\n")
	writeTestFile(t, filepath.Join(work, "sweep.toml"), "[sweep]\n\"data.repetitions\" = [1, 4]\n")
	writeTestFile(t, filepath.Join(work, "invalid.toml"), "[data]\nlayout = \"stacked\"\n")
	for _, b := range bad {
		stdout, stderr, code := runMemo(t, exe, work, cache, b.args...)
		msg := strings.TrimSuffix(stderr, "\n")
		if code != 2 || stdout != "" || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "memo: ") || !strings.Contains(msg, b.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 and one stderr line containing %q", b.name, code, stdout, stderr, b.want)
		}
	}
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHistogramBins: document lengths of 42 to 62 tokens (the smoke
// spec's) make seven bins of three, the last ending at 62; a probe saw
// three more past it, labelled 63-62, 66-62 and 69-62.
func TestHistogramBins(t *testing.T) {
	var docs []data.Doc
	for _, n := range []int{42, 44, 45, 50, 53, 62} {
		docs = append(docs, data.Doc{IDs: make([]int32, n)})
	}
	var buf strings.Builder
	old := stdout
	stdout = &checkedWriter{w: &buf}
	defer func() { stdout = old }()
	printHistogram(docs)
	var bins []string
	for _, line := range strings.Split(buf.String(), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 2 {
			bins = append(bins, f[0]+":"+f[1])
		}
	}
	want := []string{"42-44:2", "45-47:1", "48-50:1", "51-53:1", "54-56:0", "57-59:0", "60-62:1"}
	if strings.Join(bins, " ") != strings.Join(want, " ") {
		t.Errorf("bins %v, want %v", bins, want)
	}
}
