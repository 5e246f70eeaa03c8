package experiments

import (
	"bytes"
	"os"
	"testing"

	"github.com/memo-research/memo/experiments/internal/keydoc"
)

// TestKeyDocsFresh fails when a Config comment changed without
// `go generate ./experiments/`, so --defaults never prints stale docs.
func TestKeyDocsFresh(t *testing.T) {
	want, err := keydoc.Generate("..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("keydocs_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("keydocs_generated.go is stale: run `go generate ./experiments/`")
	}
}
