package outguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInside: the places memo made for one purpose, found through links
// and from paths that do not exist yet; a run directory's own top level
// and a user's files are no such place.
func TestInside(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"runs/r/config.toml", "runs/r/checkpoints/step-000001/state.json",
		"runs/r/data/tokens.arrow", "cache/datasets/k1/entry.json", "cache/datasets/k1/tokens.arrow", "notes.txt"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(root, "runs/r/checkpoints"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(root, "cache")
	for path, want := range map[string]string{
		"runs/r/cpu.prof":                       "",
		"notes.txt":                             "",
		"notes.txt/x":                           "",
		"runs/r/checkpoints/step-000099":        "a run's checkpoints/",
		"runs/r/checkpoints/step-000001/x.prof": "a checkpoint directory",
		"runs/r/data/new/x":                     "a run's data directory",
		"cache/datasets/k1/x.jsonl":             "a dataset-cache entry",
		"cache/datasets":                        "the cache's datasets/",
		"cache/tokenizers/x":                    "the cache's tokenizers/",
		"cache/runs":                            "",
		"link/hf":                               "a run's checkpoints/",
	} {
		got := Inside(filepath.Join(root, path), cache)
		if want == "" && got != "" || !strings.HasPrefix(got, want) {
			t.Errorf("Inside(%s) = %q; want %q", path, got, want)
		}
	}
}

// TestClaim: a directory memo makes for one purpose is written into when
// new, empty or marked; never when it is a link, a file, a run or a
// user's folder, nor inside a place Inside knows.
func TestClaim(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"sweep/sweep.json", "run/config.toml", "user/notes.txt", "file",
		"runs/r/config.toml", "runs/r/checkpoints/step-000001/state.json"} {
		p := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "sweep"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	marked := []string{"sweep.json"}
	for _, tc := range []struct {
		dir     string
		markers []string
		want    string
	}{
		{"new", marked, ""},
		{"empty", marked, ""},
		{"sweep", marked, ""},
		{"user", nil, ""},
		{"link", marked, "is a symlink"},
		{"link", nil, "is a symlink"},
		{"file", marked, "is a file"},
		{"run", marked, "is a run's directory"},
		{"user", marked, "holds no sweep.json"},
		{"runs/r/checkpoints/new", nil, "is in a run's checkpoints/"},
		{"runs/r/checkpoints/step-000001", marked, "is in a checkpoint directory"},
	} {
		got := Claim(filepath.Join(root, tc.dir), tc.markers)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("Claim(%s, %v) = %q; want %q", tc.dir, tc.markers, got, tc.want)
		}
	}
}

func TestExists(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "gone"), dangling); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		want bool
	}{
		{"a file", file, true},
		{"a directory", dir, true},
		{"a dangling link", dangling, true},
		{"nothing", filepath.Join(dir, "none"), false},
		{"under a file", filepath.Join(file, "out"), false},
	}
	for _, tt := range tests {
		if got := Exists(tt.path); got != tt.want {
			t.Errorf("%s: Exists(%s) = %v, want %v", tt.name, tt.path, got, tt.want)
		}
	}
}
