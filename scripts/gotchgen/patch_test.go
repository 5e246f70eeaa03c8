package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyPatches(t *testing.T) {
	p := sourcePatch{file: "a.go", old: "x := 1\n", new: "x := 2\n"}
	tests := []struct {
		name, src, want, wantErr string
	}{
		{"once", "a\nx := 1\nb\n", "a\nx := 2\nb\n", ""},
		{"absent", "a\nb\n", "", "occurs 0 times"},
		{"twice", "x := 1\nx := 1\n", "", "occurs 2 times"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, p.file)
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			err := applyPatches(dir, []sourcePatch{p})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.want {
				t.Errorf("patched file = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestPatchesMatchGotch checks memo's patches against the pinned gotch in the
// module cache, when it is there: each must apply exactly once.
func TestPatchesMatchGotch(t *testing.T) {
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip("go env GOMODCACHE:", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "github.com/sugarme/gotch@v0.9.1")
	if _, err := os.Stat(src); err != nil {
		t.Skip("gotch v0.9.1 is not in the module cache (scripts/setup.sh downloads it)")
	}
	dir := t.TempDir()
	for _, p := range patches {
		b, err := os.ReadFile(filepath.Join(src, p.file))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p.file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p.file), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := applyPatches(dir, patches); err != nil {
		t.Fatal(err)
	}
}
