package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memo-research/memo/data"
)

// TestDataBuildOutFolderOfRuns: `memo data build --out` refuses a folder
// of runs (a runs root, a sweep's directory), whose data/ no run would
// read, and takes a new DIR or a run's own.
func TestDataBuildOutFolderOfRuns(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string, files ...string) string {
		dir := filepath.Join(root, rel)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	mk("runs/a", "config.toml")
	mk("runs/sw", "sweep.json")
	mk("runs/sw/k=4", "config.toml")
	mk("empty")
	mk("notes/plain", "readme.txt")
	tests := []struct {
		out, want string
	}{
		{"runs", "holds runs (a, sw), not a run's files"},
		{"runs/sw", "is a sweep's directory (it holds sweep.json"},
		{"runs/a", ""},      // a run's own directory
		{"runs/sw/k=4", ""}, // a sweep's point is a run
		{"empty", ""},
		{"notes", ""}, // a folder of something else
		{"new", ""},   // absent: made by the build
	}
	for _, tt := range tests {
		out := filepath.Join(root, tt.out)
		if got := folderOfRuns(out); !strings.Contains(got, tt.want) || (tt.want == "") != (got == "") {
			t.Errorf("folderOfRuns(%s) = %q, want %q", tt.out, got, tt.want)
		}
		err := checkDataOut(out, "x", true, data.DefaultConfig())
		if (err != nil) != (tt.want != "") {
			t.Errorf("checkDataOut(%s): %v", tt.out, err)
		} else if err != nil && !strings.Contains(err.Error(), "such as --out "+filepath.Join(out, "x")) {
			t.Errorf("checkDataOut(%s) = %q, want a suggested run DIR", tt.out, err)
		}
	}
	// Without --out the refusal says the default was refused, not a flag.
	out := filepath.Join(root, "runs", "sw")
	if err := checkDataOut(out, "x", false, data.DefaultConfig()); err == nil || !strings.Contains(err.Error(), "data build: the default --out "+out+" is a sweep's directory") {
		t.Errorf("checkDataOut(%s, default) = %v, want it named as the default", out, err)
	}
}
