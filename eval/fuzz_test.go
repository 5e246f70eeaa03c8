package eval

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/internal/runfiles"
)

// FuzzReadCompletions: no completions.arrow, however corrupt, makes the
// reader panic; an error names the file. testdata/fuzz/FuzzReadCompletions
// holds any input that once failed.
func FuzzReadCompletions(f *testing.F) {
	path := filepath.Join(f.TempDir(), "completions.arrow")
	writeTestCompletionsMeta(f, path, crafted(), map[string]string{"memo.checkpoint": "step-000010"})
	raw, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	for _, i := range []int{16, 100, 400, len(raw) / 2, len(raw) - 100, len(raw) - 12} {
		c := append([]byte(nil), raw...)
		c[i] ^= 0x41
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		rows, _, err := runfiles.ReadCompletionsFrom("completions.arrow", bytes.NewReader(raw))
		if err != nil {
			if !strings.Contains(err.Error(), "completions.arrow") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, c := range rows {
			_ = len(c.Suffix) + len(c.Generated) + len(c.Text) + len(c.TokenLosses)
		}
	})
}
