package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
)

// sourcePatch is one exact edit of a gotch source file. It applies only
// when old occurs exactly once, so a different gotch release fails the
// setup loudly instead of building an unpatched or half-patched copy.
type sourcePatch struct {
	file     string // relative to the module root
	old, new string
}

// patches are memo's edits of gotch's Go sources.
//
// gotch's ts.newTensor allocates a zeroed 100 KB Go array (bigStruct) with
// every tensor so that Go's collector, which cannot see libtorch's memory,
// runs often enough to free tensors through their finalizers. memo does not
// rely on that: it pauses the collector and frees tensors itself, collecting
// only at step boundaries (internal/torchx, docs/ARCHITECTURE.md), so the
// array is pure cost: a decode step makes hundreds of tensors, and zeroing
// and later collecting 100 KB for each halved decoding throughput
// (docs/DESIGN.md, "Facts measured for the second round"). Training, whose
// tensors are few and large, was unchanged by removing it.
var patches = []sourcePatch{{
	file: "ts/tensor.go",
	old: "\tx.ctensor = ctensor\n" +
		"\tx.d = new(bigStruct)\n",
	new: "\tx.ctensor = ctensor\n" +
		"\t// memo (scripts/gotchgen/patch.go): no 100 KB bigStruct per tensor;\n" +
		"\t// memo frees tensors itself and collects at step boundaries.\n",
}}

// applyPatches edits the copy in dir.
func applyPatches(dir string, ps []sourcePatch) error {
	for _, p := range ps {
		path := filepath.Join(dir, p.file)
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("patch gotch: %w", err)
		}
		src := string(b)
		if n := strings.Count(src, p.old); n != 1 {
			return fmt.Errorf("patch gotch %s: the text to replace occurs %d times, want exactly 1 "+
				"(a gotch release other than the one scripts/gotchgen/patch.go was written for?):\n%s", p.file, n, p.old)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(src, p.old, p.new, 1)), 0o644); err != nil {
			return fmt.Errorf("patch gotch: %w", err)
		}
	}
	return nil
}

// runtimeAlias names the runtime package in the files holdThreadForErrors
// edits; an alias of memo's own cannot clash with an import gotch already has.
const runtimeAlias = "memoruntime"

// holdThreadForErrors edits every function of gotch's ts package that reads
// libtorch's error (a call of TorchErr) to hold its goroutine's OS thread
// from its first statement to its return.
//
// libtorch's C wrappers record a failure in a thread-local slot, and gotch
// reads that slot in a second C call after the failing one. Between the two
// calls Go may move the goroutine to another OS thread: it then misses its
// error (and uses an unwritten result as a tensor, which crashed CI in
// at_free), and the next goroutine to read an error on the first thread gets
// this one as its own. Holding the thread for the wrapper's whole body keeps
// the call and the read together; locks nest, so callers that hold the
// thread themselves are unaffected. Each edit stays on the line it changes,
// so line numbers in gotch's panics still match its sources.
//
// It returns the number of functions edited.
func holdThreadForErrors(dir string) (int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "ts", "*.go"))
	if err != nil {
		return 0, err
	}
	total := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return 0, fmt.Errorf("hold thread: %w", err)
		}
		out, n, err := holdThreadInSource(path, src)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			continue
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return 0, fmt.Errorf("hold thread: %w", err)
		}
		total += n
	}
	if total == 0 {
		return 0, fmt.Errorf("hold thread: no function in %s reads TorchErr "+
			"(a gotch release other than the one scripts/gotchgen/patch.go was written for?)", filepath.Join(dir, "ts"))
	}
	return total, nil
}

// holdThreadInSource is holdThreadForErrors on one file's source.
func holdThreadInSource(name string, src []byte) ([]byte, int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, 0, fmt.Errorf("hold thread: %w", err)
	}
	for _, imp := range f.Imports {
		if imp.Name != nil && imp.Name.Name == runtimeAlias {
			return nil, 0, fmt.Errorf("hold thread: %s already imports %s (edited twice?)", name, runtimeAlias)
		}
	}
	// Offsets just after each edited function's opening brace, and after
	// the last import declaration.
	var at []int
	lastImport := -1
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			if d.Tok == token.IMPORT {
				lastImport = fset.Position(d.End()).Offset
			}
		case *ast.FuncDecl:
			if d.Body != nil && readsTorchErr(d.Body) {
				at = append(at, fset.Position(d.Body.Lbrace).Offset+1)
			}
		}
	}
	if len(at) == 0 {
		return src, 0, nil
	}
	if lastImport < 0 {
		return nil, 0, fmt.Errorf("hold thread: %s reads TorchErr but imports nothing", name)
	}
	var b bytes.Buffer
	prev := 0
	emit := func(off int, text string) {
		b.Write(src[prev:off])
		b.WriteString(text)
		prev = off
	}
	emit(lastImport, fmt.Sprintf("; import %s \"runtime\"", runtimeAlias))
	for _, off := range at {
		emit(off, fmt.Sprintf(" %[1]s.LockOSThread(); defer %[1]s.UnlockOSThread();", runtimeAlias))
	}
	b.Write(src[prev:])
	return b.Bytes(), len(at), nil
}

// readsTorchErr says whether body calls TorchErr (gotch's reader of
// libtorch's last error), directly or in a closure it contains.
func readsTorchErr(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "TorchErr" {
				found = true
			}
		}
		return !found
	})
	return found
}
