// Package goldenfile compares files a test wrote with the byte goldens in
// its package's testdata/, for the tests of files whose bytes are a
// contract with readers of runs written before (run files, scores).
package goldenfile

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the -update flag of every test binary that checks goldens.
var update = flag.Bool("update", false, "rewrite the testdata/ goldens")

// Check compares the file at path with testdata/name byte for byte
// (rewriting testdata/name first under -update).
func Check(t testing.TB, path, name string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: wrote %d bytes that differ from %s's %d", path, len(got), golden, len(want))
	}
}
