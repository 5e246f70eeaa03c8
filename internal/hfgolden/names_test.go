package hfgolden

import (
	"bytes"
	"os"
	"testing"
)

// TestNamesGenerated fails when a golden directory was added or removed
// without `go generate ./internal/hfgolden/`.
func TestNamesGenerated(t *testing.T) {
	want, err := NamesSource("../..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("names_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("names_generated.go is stale: run `go generate ./internal/hfgolden/`")
	}
}
