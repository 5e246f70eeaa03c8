package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	modulePath = "github.com/memo-research/memo"
	gotchPath  = "github.com/sugarme/gotch"
)

// goList runs go list with args at the module root and returns its output.
func goList(t *testing.T, args ...string) []byte {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root: %v", err)
	}
	cmd := exec.Command(goBin, append([]string{"list"}, args...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}

// TestPureGoStagesLinkNoLibtorch: scoring, figures and the goldfish masks
// (eval, plots, and loss and data, which memo mask uses) build without
// libtorch, so they run where it is not installed and their tests need no
// C++ build. When loss held the masked cross-entropy on gotch tensors,
// eval linked gotch through loss.Config and this failed.
func TestPureGoStagesLinkNoLibtorch(t *testing.T) {
	deps := strings.Fields(string(goList(t, "-deps", "./eval", "./plots", "./loss", "./data")))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, gotchPath) || d == modulePath+"/internal/torchx" {
			t.Errorf("eval, plots, loss or data depends on %s: these stages must build without libtorch", d)
		}
	}
}

// archRow is one package's line of the import table: the memo packages
// it may import (paths relative to the module) and whether it links
// libtorch.
type archRow struct {
	imports map[string]bool
	gotch   bool
}

// archPackage is what go list says of one memo package: its non-test
// imports and whether gotch is among its dependencies.
type archPackage struct {
	path    string // relative to the module
	imports []string
	gotch   bool
}

// readArchTable parses the import table of docs/ARCHITECTURE.md: the
// first fenced block after the heading "## Packages and who imports
// whom". A line that starts in the first column names a package, then
// optionally [gotch], then its imports up to two spaces (the rest is a
// description); an indented line continues the imports. "(nothing)" is no
// import, and a{b, c} stands for ab, ac.
func readArchTable(doc string) (map[string]*archRow, error) {
	_, rest, ok := strings.Cut(doc, "\n## Packages and who imports whom\n")
	if !ok {
		return nil, errors.New("no heading \"## Packages and who imports whom\"")
	}
	_, rest, ok = strings.Cut("\n"+rest, "\n```\n")
	if !ok {
		return nil, errors.New("no fenced block after the heading")
	}
	block, _, ok := strings.Cut(rest, "\n```")
	if !ok {
		return nil, errors.New("the fenced block does not end")
	}
	table := map[string]*archRow{}
	var row *archRow
	var name string
	for i, line := range strings.Split(block, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		cell := strings.TrimSpace(line)
		if line[0] != ' ' {
			var found bool
			name, cell, found = strings.Cut(cell, " ")
			if !found {
				return nil, fmt.Errorf("line %d %q: no imports", i+1, line)
			}
			if !archPath.MatchString(name) {
				return nil, fmt.Errorf("line %d: %q is not a package path", i+1, name)
			}
			if _, dup := table[name]; dup {
				return nil, fmt.Errorf("line %d: %s listed twice", i+1, name)
			}
			row = &archRow{imports: map[string]bool{}}
			table[name] = row
			cell = strings.TrimSpace(cell)
			if c, marked := strings.CutPrefix(cell, "[gotch]"); marked {
				row.gotch, cell = true, strings.TrimSpace(c)
			}
		} else if row == nil {
			return nil, fmt.Errorf("line %d %q continues no package", i+1, line)
		}
		cell, _, _ = strings.Cut(cell, "  ")
		if cell == "(nothing)" {
			continue
		}
		paths, err := expandPaths(cell)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %v", i+1, name, err)
		}
		for _, p := range paths {
			row.imports[p] = true
		}
	}
	if len(table) == 0 {
		return nil, errors.New("the table is empty")
	}
	return table, nil
}

var archPath = regexp.MustCompile(`^[a-z0-9]+(/[a-z0-9]+)*$`)

// expandPaths reads "a, b/{c, d}," as a, b/c, b/d.
func expandPaths(list string) ([]string, error) {
	var out []string
	for list = strings.TrimSpace(list); list != ""; list = strings.TrimSpace(list) {
		item := list
		if i := strings.IndexAny(list, ",{"); i >= 0 && list[i] == '{' {
			end := strings.IndexByte(list, '}')
			if end < i {
				return nil, fmt.Errorf("unclosed brace in %q", list)
			}
			item, list = list[:end+1], list[end+1:]
		} else if i >= 0 {
			item, list = list[:i], list[i:]
		} else {
			list = ""
		}
		list = strings.TrimPrefix(strings.TrimSpace(list), ",")
		prefix, inner, braced := strings.Cut(strings.TrimSpace(item), "{")
		names := []string{""}
		if braced {
			names = strings.Split(strings.TrimSuffix(inner, "}"), ",")
		}
		for _, n := range names {
			p := prefix + strings.TrimSpace(n)
			if !archPath.MatchString(p) {
				return nil, fmt.Errorf("%q is not a package path", p)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

// listArchPackages lists every memo package with go list: its memo
// imports (tests aside) and whether it links gotch.
func listArchPackages(t *testing.T) []archPackage {
	out := goList(t, "-json=ImportPath,Imports,Deps", "./...")
	var pkgs []archPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list -json: %v", err)
		}
		ap := archPackage{path: strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modulePath), "/")}
		for _, imp := range p.Imports {
			if rel, ok := strings.CutPrefix(imp, modulePath+"/"); ok {
				ap.imports = append(ap.imports, rel)
			}
		}
		ap.gotch = slices.Contains(p.Deps, gotchPath)
		pkgs = append(pkgs, ap)
	}
	return pkgs
}

// checkArch holds packages to the table and returns each way they
// differ: an import the table lacks (a package without a row may import
// no memo package), an edge of the table the code lacks, a row for no
// package, a [gotch] mark that is wrong.
func checkArch(table map[string]*archRow, pkgs []archPackage) []string {
	var problems []string
	seen := map[string]bool{}
	for _, p := range pkgs {
		seen[p.path] = true
		row := table[p.path]
		if row == nil {
			for _, imp := range p.imports {
				problems = append(problems, fmt.Sprintf("%s imports %s, and the table has no row for %s", p.path, imp, p.path))
			}
			continue
		}
		for _, imp := range p.imports {
			if !row.imports[imp] {
				problems = append(problems, fmt.Sprintf("%s imports %s, which its row of the table lacks", p.path, imp))
			}
		}
		for imp := range row.imports {
			if !slices.Contains(p.imports, imp) {
				problems = append(problems, fmt.Sprintf("the table's row for %s lists %s, which it does not import", p.path, imp))
			}
		}
		if row.gotch != p.gotch {
			problems = append(problems, fmt.Sprintf("%s links gotch: %v; the table marks it [gotch]: %v", p.path, p.gotch, row.gotch))
		}
	}
	for name := range table {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("the table has a row for %s, which is no package", name))
		}
	}
	slices.Sort(problems)
	return problems
}

// TestImportsMatchArchitecture: the import table of docs/ARCHITECTURE.md
// is the packages' contract, and go list must agree with it line by line.
// A new import is written into the table (or removed) in the change that
// makes it.
func TestImportsMatchArchitecture(t *testing.T) {
	doc, err := os.ReadFile("../docs/ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	table, err := readArchTable(string(doc))
	if err != nil {
		t.Fatalf("docs/ARCHITECTURE.md: %v", err)
	}
	pkgs := listArchPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list listed %d packages", len(pkgs))
	}
	for _, p := range checkArch(table, pkgs) {
		t.Errorf("docs/ARCHITECTURE.md: %s", p)
	}

	if t.Failed() {
		return
	}
	// The checker can fail: the same tree against the table without
	// extract → eval, with a stray edge eval → model, and with plots
	// marked [gotch].
	delete(table["extract"].imports, "eval")
	table["eval"].imports["model"] = true
	table["plots"].gotch = true
	want := []string{
		"extract imports eval, which its row of the table lacks",
		"plots links gotch: false; the table marks it [gotch]: true",
		"the table's row for eval lists model, which it does not import",
	}
	if got := checkArch(table, pkgs); !slices.Equal(got, want) {
		t.Errorf("with a broken table the checker reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The table's syntax: marks, descriptions, continuation lines, braces,
// "(nothing)", and a package without a row that imports one.
func TestReadArchTable(t *testing.T) {
	doc := "# x\n\n## Packages and who imports whom\n\ntext\n\n```\n" +
		"loss                      (nothing)                       pure Go\n" +
		"model            [gotch]  internal/{torchx, progress}     the network\n" +
		"train            [gotch]  loss, model,\n" +
		"                          internal/{runfiles, torchx}\n" +
		"internal/memlimit [gotch] model\n" +
		"```\n\n## Next\n\n```\nnot the table\n```\n"
	table, err := readArchTable(doc)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, row := range table {
		var imps []string
		for imp := range row.imports {
			imps = append(imps, imp)
		}
		slices.Sort(imps)
		got[name] = fmt.Sprint(row.gotch, imps)
	}
	want := map[string]string{
		"loss":              "false []",
		"model":             "true [internal/progress internal/torchx]",
		"train":             "true [internal/runfiles internal/torchx loss model]",
		"internal/memlimit": "true [model]",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parsed\n%v\nwant\n%v", got, want)
	}

	pkgs := []archPackage{
		{path: "loss"},
		{path: "model", imports: []string{"internal/progress", "internal/torchx"}, gotch: true},
		{path: "train", imports: []string{"internal/runfiles", "internal/torchx", "loss", "model"}, gotch: true},
		{path: "internal/memlimit", imports: []string{"model"}, gotch: true},
		{path: "internal/torchx", gotch: true},
		{path: "internal/progress"},
		{path: "internal/runfiles", imports: []string{"internal/arrowsafe"}},
	}
	if got, want := checkArch(table, pkgs), []string{
		"internal/runfiles imports internal/arrowsafe, and the table has no row for internal/runfiles",
	}; !slices.Equal(got, want) {
		t.Errorf("checker reports %q, want %q", got, want)
	}

	for _, bad := range []string{
		"no heading",
		"## Packages and who imports whom\n\nno block\n",
		"## Packages and who imports whom\n```\nloss  (nothing)\n",
		"## Packages and who imports whom\n```\n  model\n```\n",
		"## Packages and who imports whom\n```\nloss  (nothing)\nloss  model\n```\n",
		"## Packages and who imports whom\n```\nmodel  internal/{torchx\n```\n",
		"## Packages and who imports whom\n```\nmodel  every stage package\n```\n",
	} {
		if _, err := readArchTable("\n" + bad); err == nil {
			t.Errorf("%q read without an error", bad)
		}
	}
}
