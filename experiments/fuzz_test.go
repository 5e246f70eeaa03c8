package experiments

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseSpec feeds arbitrary documents to the spec decoder: it never
// panics, a refusal is one *ConfigError line, and an accepted spec renders to
// a document that is accepted again as the same spec (config.toml of a run
// must reproduce the run). Seeds: the shipped experiments and the error
// cases of the tests; make fuzz runs it longer.
func FuzzParseSpec(f *testing.F) {
	shipped, _ := filepath.Glob("../exp/*.toml")
	for _, p := range shipped {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{
		"name = 'x'\n[train]\nsteps = 10\nlearning_rat = 1e-3\n",
		"[goldfish]\nk = 1\n",
		"\ufeffname = \"bom\"\n[sweep]\n\"goldfish.k\" = [0, 4]\n",
		"[model]\npreset = 'tiny'\n[extract]\nmode = 'fixed'\nprefix = 200\nsuffix = 100\n",
		"[data]\nsources = 'opticks'\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		spec, err := ParseBytes("f.toml", doc)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("refusal is not one ConfigError line: %T %q", err, err)
			}
			return
		}
		if spec.IsSweep() {
			if _, err := spec.Expand(); err != nil {
				var ce *ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("sweep expansion error is not a ConfigError: %T %q", err, err)
				}
			}
			return
		}
		out, err := spec.TOML()
		if err != nil {
			t.Fatalf("accepted spec does not render: %v", err)
		}
		again, err := ParseBytes("f.toml", out)
		if err != nil {
			t.Fatalf("rendered spec is refused: %v\n%s", err, out)
		}
		h1, err1 := spec.Hash()
		h2, err2 := again.Hash()
		if err1 != nil || err2 != nil || h1 != h2 {
			t.Fatalf("rendered spec differs from the original (%v %v)\n%s", err1, err2, out)
		}
	})
}
