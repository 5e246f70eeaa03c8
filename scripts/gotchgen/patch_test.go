package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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
	src := pinnedGotch(t)
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

func TestHoldThreadInSource(t *testing.T) {
	src := `package ts

// #include "stdlib.h"
import "C"

import (
	"fmt"
	"runtime"
)

func Reads() (err error) {
	if err = TorchErr(); err != nil {
		return fmt.Errorf("Reads() failed: %w", err)
	}
	runtime.Gosched()
	return nil
}

func Quiet() int { return 1 }

func (t *T) InClosure() error {
	f := func() error { return TorchErr() }
	return f()
}
`
	out, n, err := holdThreadInSource("a.go", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("edited %d functions, want 2 (Reads and InClosure)", n)
	}
	if strings.Count(string(out), "\n") != strings.Count(src, "\n") {
		t.Errorf("the edit changed the number of lines:\n%s", out)
	}
	f, err := parser.ParseFile(token.NewFileSet(), "a.go", out, 0)
	if err != nil {
		t.Fatalf("edited source does not parse: %v\n%s", err, out)
	}
	held := map[string]bool{}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || len(fd.Body.List) < 2 {
			continue
		}
		lock, ok1 := fd.Body.List[0].(*ast.ExprStmt)
		unlock, ok2 := fd.Body.List[1].(*ast.DeferStmt)
		held[fd.Name.Name] = ok1 && ok2 &&
			types.ExprString(lock.X) == runtimeAlias+".LockOSThread()" &&
			types.ExprString(unlock.Call) == runtimeAlias+".UnlockOSThread()"
	}
	want := map[string]bool{"Reads": true, "InClosure": true, "Quiet": false}
	for name, w := range want {
		if held[name] != w {
			t.Errorf("%s holds its thread: %v, want %v\n%s", name, held[name], w, out)
		}
	}
	if _, _, err := holdThreadInSource("a.go", out); err == nil || !strings.Contains(err.Error(), "edited twice") {
		t.Errorf("editing an edited source: err = %v, want one saying it was edited twice", err)
	}
}

// TestHoldThreadMatchesGotch edits the ts package of the pinned gotch in the
// module cache, when it is there: nearly every generated wrapper reads
// TorchErr, and every edited file must still parse.
func TestHoldThreadMatchesGotch(t *testing.T) {
	src := pinnedGotch(t)
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "ts"), os.DirFS(filepath.Join(src, "ts"))); err != nil {
		t.Fatal(err)
	}
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			err = os.Chmod(p, 0o755)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	n, err := holdThreadForErrors(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2400 {
		t.Errorf("%d functions hold their thread, want at least the 2,400 generated wrappers that read TorchErr", n)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "ts", "*.go"))
	for _, f := range files {
		if _, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution); err != nil {
			t.Errorf("edited %s does not parse: %v", filepath.Base(f), err)
		}
	}
}

// pinnedGotch is the module cache's copy of the gotch memo pins, or skips the
// test when it is not there.
func pinnedGotch(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Skip("go env GOMODCACHE:", err)
	}
	src := filepath.Join(strings.TrimSpace(string(out)), "github.com/sugarme/gotch@v0.9.1")
	if _, err := os.Stat(src); err != nil {
		t.Skip("gotch v0.9.1 is not in the module cache (scripts/setup.sh downloads it)")
	}
	return src
}

//go:noinline
func callPlain(x int) int { return x + 1 }

//go:noinline
func callHeld(x int) int {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return x + 1
}

// BenchmarkHoldThread is what holding the thread adds to each edited
// wrapper: the lock and the deferred unlock, beside a plain call
// (go test -run - -bench HoldThread ./scripts/gotchgen).
func BenchmarkHoldThread(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    func(int) int
	}{{"plain", callPlain}, {"held", callHeld}} {
		b.Run(bc.name, func(b *testing.B) {
			s := 0
			for b.Loop() {
				s = bc.f(s)
			}
			_ = s
		})
	}
}
