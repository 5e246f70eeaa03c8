package keydoc

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ArchNames are the model families declared in dir's arch_*.go files
// (dir is package model's directory), sorted: the Name of each Arch
// literal passed to register, a string or a string constant of the
// package. Read from the source, because model links libtorch and
// generating docs should not. A test in experiments holds these to
// model.Architectures(), the registry the program uses.
func ArchNames(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		return nil, err
	}
	// Constants first: a Name may be one declared in any file.
	consts := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
					for _, s := range gd.Specs {
						vs := s.(*ast.ValueSpec)
						for i, n := range vs.Names {
							if v, ok := stringLit(valueAt(vs.Values, i)); ok {
								consts[n.Name] = v
							}
						}
					}
				}
			}
		}
	}
	var names []string
	var bad error
	for _, p := range pkgs {
		for path, f := range p.Files {
			if !strings.HasPrefix(filepath.Base(path), "arch_") {
				continue
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit := registeredArch(n)
				if lit == nil {
					return true
				}
				name := ""
				for _, e := range lit.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok && isIdent(kv.Key, "Name") {
						name = exprString(kv.Value, consts)
					}
				}
				if name == "" && bad == nil {
					bad = fmt.Errorf("%s: an Arch registered without a Name that is a string or a constant", fset.Position(lit.Pos()))
				}
				names = append(names, name)
				return true
			})
		}
	}
	if bad != nil {
		return nil, bad
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no register(&Arch{...}) in %s/arch_*.go", dir)
	}
	sort.Strings(names)
	return names, nil
}

// registeredArch is the literal of register(&Arch{...}) when n is that call.
func registeredArch(n ast.Node) *ast.CompositeLit {
	call, ok := n.(*ast.CallExpr)
	if !ok || !isIdent(call.Fun, "register") || len(call.Args) != 1 {
		return nil
	}
	u, ok := call.Args[0].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return nil
	}
	lit, ok := u.X.(*ast.CompositeLit)
	if !ok || !isIdent(lit.Type, "Arch") {
		return nil
	}
	return lit
}

// isIdent says whether e is the identifier name.
func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// exprString is the value of a string literal or of a constant named in
// consts; "" for anything else.
func exprString(e ast.Expr, consts map[string]string) string {
	if v, ok := stringLit(e); ok {
		return v
	}
	if id, ok := e.(*ast.Ident); ok {
		return consts[id.Name]
	}
	return ""
}

// valueAt is values[i], or nil past the end.
func valueAt(values []ast.Expr, i int) ast.Expr {
	if i < len(values) {
		return values[i]
	}
	return nil
}

// stringLit is the value of e when it is a string literal.
func stringLit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(b.Value)
	return v, err == nil
}
