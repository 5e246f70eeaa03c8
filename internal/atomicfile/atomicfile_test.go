package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	old := syscall.Umask(0o077) // a strict umask must not make files private
	defer syscall.Umask(old)
	for _, tc := range []struct {
		name  string
		write func(path string) error
	}{
		{"WriteFile", func(p string) error { return WriteFile(p, []byte("new\n")) }},
		{"WriteFileSync", func(p string) error { return WriteFileSync(p, []byte("new\n")) }},
		{"Write", func(p string) error {
			return Write(p, func(w io.Writer) error { _, err := io.WriteString(w, "new\n"); return err })
		}},
		{"Create", func(p string) error {
			return Create(p, func(f *os.File) error { _, err := f.WriteString("new\n"); return err })
		}},
		{"CreateSync", func(p string) error {
			return CreateSync(p, func(f *os.File) error { _, err := f.WriteString("new\n"); return err })
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, path := range []string{
				filepath.Join(dir, "fresh.txt"),            // a new file
				filepath.Join(dir, "sub", "dir", "x.json"), // in a directory not yet made
				filepath.Join(dir, "old.txt"),              // replacing a private file
			} {
				if filepath.Base(path) == "old.txt" {
					if err := os.WriteFile(path, []byte("old\n"), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				if err := tc.write(path); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(path)
				if err != nil || string(b) != "new\n" {
					t.Errorf("%s = %q, %v; want \"new\\n\"", path, b, err)
				}
				st, err := os.Stat(path)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != Mode {
					t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), Mode)
				}
			}
			left, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*"))
			if len(left) > 0 {
				t.Errorf("temporary files left behind: %v", left)
			}
		})
	}
}

func TestWriteFailureLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keep.txt")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want it to wrap %v", err, boom)
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Errorf("after a failed write the file holds %q, want the old content", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("a failed write left files behind: %v", ents)
	}
}

func TestIsTemp(t *testing.T) {
	dir := t.TempDir()
	// The name a write in flight has is one IsTemp recognizes.
	err := Write(filepath.Join(dir, "latest"), func(io.Writer) error {
		ents, _ := os.ReadDir(dir)
		if len(ents) != 1 || !IsTemp(ents[0].Name(), "latest") {
			t.Errorf("temporary file %v not recognized", ents)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		".latest.tmp-123": true, "latest": false, ".latest.tmp-": false, ".latest.tmp-12x": false,
		".other.tmp-123": false, ".latest-123": false, "latest.tmp-123": false,
	} {
		if got := IsTemp(name, "latest"); got != want {
			t.Errorf("IsTemp(%q, latest) = %v, want %v", name, got, want)
		}
	}
}

// TestRemoveTempsCutsAWriteShort: an interrupt handler that exits at once
// removes the temporary file of a write in progress, and that write then
// fails instead of renaming anything into place.
func TestRemoveTempsCutsAWriteShort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		done <- Write(path, func(w io.Writer) error {
			if _, err := w.Write([]byte("half")); err != nil {
				return err
			}
			close(started)
			<-release
			_, err := w.Write([]byte(" and the rest"))
			return err
		})
	}()
	<-started
	if temps, _ := filepath.Glob(filepath.Join(dir, ".out.json.tmp-*")); len(temps) != 1 {
		t.Fatalf("temporary files while writing: %v, want one", temps)
	}
	RemoveTemps()
	close(release)
	if err := <-done; err == nil {
		t.Error("the write whose temporary file was removed succeeded")
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
		t.Errorf("left in the directory: %v, want nothing", left)
	}
	hidden, _ := filepath.Glob(filepath.Join(dir, ".*"))
	if len(hidden) != 0 {
		t.Errorf("left in the directory: %v, want nothing", hidden)
	}
}

// TestMkdirTemp: a directory assembled under a temporary name is
// readable by all once renamed, as a directory MkdirAll makes, where
// os.MkdirTemp's is private (a probe found audits and checkpoints 0700).
func TestMkdirTemp(t *testing.T) {
	dir := t.TempDir()
	tmp, err := MkdirTemp(dir, ".x.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != DirMode {
		t.Errorf("mode %v, want %v", got, DirMode)
	}
	if !strings.HasPrefix(filepath.Base(tmp), ".x.tmp-") {
		t.Errorf("name %s lacks the pattern's prefix", tmp)
	}
	if _, err := MkdirTemp(filepath.Join(dir, "none"), "x"); err == nil {
		t.Error("MkdirTemp in a missing directory: no error")
	}
}

func TestRemoveStale(t *testing.T) {
	dir := t.TempDir()
	if err := RemoveStale(filepath.Join(dir, "none")); err != nil {
		t.Errorf("a missing file: %v, want nil", err)
	}
	p := filepath.Join(dir, "old")
	if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStale(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("%s survived: %v", p, err)
	}
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStale(full); err == nil || !strings.Contains(err.Error(), "remove stale "+full) {
		t.Errorf("a directory with files: %v, want an error naming it", err)
	}
}

// TestRemoveTempsRunsCleanups: an interrupt's RemoveTemps removes the
// directories MkdirTemp made that were not renamed into place (a probe
// found memo report's .report.tmp-N left for good, under a message that
// said it was removed) and runs the clean-ups still registered, not the
// forgotten ones.
func TestRemoveTempsRunsCleanups(t *testing.T) {
	dir := t.TempDir()
	pending, err := MkdirTemp(dir, ".report.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pending, "table.md"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	done, err := MkdirTemp(dir, ".report.tmp-")
	if err != nil {
		t.Fatal(err)
	}
	final := filepath.Join(dir, "report")
	if err := RenameDir(done, final); err != nil {
		t.Fatal(err)
	}
	if _, ok := tempDirs.Load(done); ok {
		t.Error("a directory renamed into place is still to be removed on an interrupt")
	}
	ran, forgottenRan := false, false
	defer AtInterrupt(func() { ran = true })()
	AtInterrupt(func() { forgottenRan = true })()
	RemoveTemps()
	if _, err := os.Stat(pending); !os.IsNotExist(err) {
		t.Errorf("the pending temporary directory is still there: %v", err)
	}
	if _, err := os.Stat(final); err != nil {
		t.Errorf("the directory renamed into place went: %v", err)
	}
	if !ran || forgottenRan {
		t.Errorf("clean-ups: registered ran %v, forgotten ran %v", ran, forgottenRan)
	}
	// A rename that comes after the interrupt's removal fails; it does
	// not put half a directory in place.
	if err := RenameDir(pending, filepath.Join(dir, "late")); err == nil || !strings.Contains(err.Error(), "removed on an interrupt") {
		t.Errorf("RenameDir after the interrupt removed it: %v", err)
	}
}

func TestUnwritable(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"permission", &os.PathError{Op: "open", Path: "/x/memo.lock", Err: syscall.EACCES}, true},
		{"operation not permitted", fmt.Errorf("lock: %w", &os.PathError{Op: "link", Path: "/x", Err: syscall.EPERM}), true},
		{"read-only file system", fmt.Errorf("build index: %w", &os.PathError{Op: "open", Path: "/ro/index", Err: syscall.EROFS}), true},
		{"missing", &os.PathError{Op: "open", Path: "/x", Err: syscall.ENOENT}, false},
		{"disk full", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}, false},
		{"nil", nil, false},
	} {
		if got := Unwritable(tc.err); got != tc.want {
			t.Errorf("%s: Unwritable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
