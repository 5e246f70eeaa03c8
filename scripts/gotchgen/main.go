// Command gotchgen prepares a copy of the gotch module that builds against the
// libtorch installed on this machine.
//
// gotch v0.9.1 is generated for libtorch 2.1 and hard-codes CUDA link flags and
// the pre-C++11 ABI. Older or differently built libtorch releases lack some of
// the ops its generated wrappers call, so the copy is compiled once with the
// real flags and every wrapper the compiler rejects is replaced by a body that
// raises a libtorch error naming the missing op. The list of replaced wrappers
// therefore comes from the compiler, never from a hand-kept list.
//
// Before that pass it edits gotch's Go sources (patch.go): no 100 KB Go
// allocation per tensor, and every wrapper that reads libtorch's error holds
// its OS thread from the failing call to the read.
package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

const generatedHeader = "libtch/torch_api_generated.cpp.h"

type libtorch struct {
	includeDirs []string
	libDirs     []string
	libs        []string
	version     string
	cuda        bool
	gloo        bool   // Gloo headers come with this libtorch (USE_C10D_GLOO)
	cxxABI      string // "0": built with the pre-C++11 std::string ABI (pip torch before 2.7)
}

func main() {
	src := flag.String("src", "", "gotch module directory (read-only module cache copy)")
	out := flag.String("out", ".build/gotch", "where to write the prepared copy")
	root := flag.String("libtorch", os.Getenv("LIBTORCH"), "libtorch directory (empty: Debian's libtorch-dev)")
	shimFlags := flag.String("shim-flags", "internal/torchx/flags_generated.go", "where to write the cgo flags of memo's own shim")
	flag.Parse()
	if *src == "" {
		fatal(fmt.Errorf("-src is required"))
	}
	start := time.Now()
	lt, err := findLibtorch(*root)
	if err != nil {
		fatal(err)
	}
	if err := writeShimFlags(*shimFlags, lt); err != nil {
		fatal(err)
	}
	stamp := stampFor(*src, lt)
	if prev, err := os.ReadFile(filepath.Join(*out, ".memo-stamp")); err == nil && string(prev) == stamp {
		fmt.Printf("gotch: %s is up to date for libtorch %s\n", *out, lt.version)
		return
	}
	tmp := *out + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		fatal(err)
	}
	if err := copyTree(*src, tmp); err != nil {
		fatal(fmt.Errorf("copy %s: %w", *src, err))
	}
	if err := writeLibGo(tmp, lt); err != nil {
		fatal(err)
	}
	if err := applyPatches(tmp, patches); err != nil {
		fatal(err)
	}
	held, err := holdThreadForErrors(tmp)
	if err != nil {
		fatal(err)
	}
	stubbed, err := stubUntilCompiles(tmp, lt)
	if err != nil {
		fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, ".memo-stamp"), []byte(stamp), 0o644); err != nil {
		fatal(err)
	}
	if err := os.RemoveAll(*out); err != nil {
		fatal(err)
	}
	if err := os.Rename(tmp, *out); err != nil {
		fatal(err)
	}
	fmt.Printf("gotch: prepared %s for libtorch %s (cuda=%v, gloo=%v%s): %d wrappers stubbed, %d hold their thread, %s\n",
		*out, lt.version, lt.cuda, lt.gloo, abiNote(lt.cxxABI), stubbed, held, time.Since(start).Round(time.Second))
}

func fatal(err error) {
	slog.Error("gotchgen", "err", err)
	os.Exit(1)
}

// findLibtorch describes the libtorch to build against: Debian's
// libtorch-dev when root is empty, the torch package that python3 imports
// when root is "python" (pip or conda, CPU or CUDA), or else a libtorch
// directory (include/ and lib/; a pip torch's package directory is one).
func findLibtorch(root string) (libtorch, error) {
	if root == "" {
		lt := libtorch{
			includeDirs: []string{"/usr/include", "/usr/include/torch/csrc/api/include"},
			libs:        []string{"-ltorch", "-ltorch_cpu", "-lc10"},
		}
		if _, err := os.Stat("/usr/include/torch/csrc/api/include/torch/torch.h"); err != nil {
			return lt, fmt.Errorf("libtorch headers not found (apt-get install libtorch-dev, LIBTORCH=python for the torch python3 imports, or LIBTORCH=/path/to/libtorch): %w", err)
		}
		v, _ := exec.Command("dpkg-query", "-W", "-f=${Version}", "libtorch-dev").Output()
		lt.version = strings.TrimSpace(string(v))
		if lt.version == "" {
			lt.version = "system"
		}
		// Debian's libtorch is built against Debian's Gloo (libgloo-dev).
		lt.gloo = exists("/usr/include/gloo/config.h")
		return lt, nil
	}
	if root == "python" {
		dir, err := pythonTorch()
		if err != nil {
			return libtorch{}, err
		}
		root = dir
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return libtorch{}, err
	}
	lt := libtorch{
		includeDirs: []string{filepath.Join(abs, "include"), filepath.Join(abs, "include/torch/csrc/api/include")},
		libDirs:     []string{filepath.Join(abs, "lib")},
		libs:        []string{"-ltorch", "-ltorch_cpu", "-lc10"},
	}
	if !exists(filepath.Join(abs, "include/torch/csrc/api/include/torch/torch.h")) {
		return lt, fmt.Errorf("LIBTORCH=%s does not look like a libtorch directory (no include/torch/csrc/api/include/torch/torch.h); LIBTORCH=python uses the torch that python3 imports", root)
	}
	if exists(filepath.Join(abs, "lib/libtorch_cuda.so")) {
		lt.cuda = true
		// memo calls nothing in these two directly, but loading them is
		// what registers the CUDA backend; a linker that defaults to
		// --as-needed (Ubuntu's) would drop them from NEEDED.
		lt.libs = append(lt.libs, "-Wl,--push-state,--no-as-needed", "-ltorch_cuda", "-lc10_cuda", "-Wl,--pop-state")
	}
	// Only this libtorch's own Gloo headers: another Gloo release's need
	// not match the Gloo compiled into it (pip's torch ships none).
	lt.gloo = exists(filepath.Join(abs, "include/gloo/config.h"))
	lt.version = torchVersion(abs)
	lt.cxxABI, err = cxxABI(abs)
	if err != nil {
		return lt, err
	}
	if !supportedVersion(lt.version) {
		slog.Warn("gotchgen: untested libtorch version; memo is built against 1.13 and 2.1 to 2.11", "version", lt.version, "dir", abs)
	}
	return lt, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// pythonTorch is the package directory of the torch that python3 (or
// $PYTHON) imports.
func pythonTorch() (string, error) {
	py := os.Getenv("PYTHON")
	if py == "" {
		py = "python3"
	}
	out, err := exec.Command(py, "-c", "import os, torch; print(os.path.dirname(torch.__file__))").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%w: %s", err, firstLines(string(ee.Stderr), 3))
		}
		return "", fmt.Errorf("LIBTORCH=python: %s cannot import torch: %w", py, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// torchVersion reads the version from a libtorch zip's build-version, a
// python package's version.py, or else the C++ headers.
func torchVersion(dir string) string {
	if b, err := os.ReadFile(filepath.Join(dir, "build-version")); err == nil {
		return strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "version.py")); err == nil {
		if m := regexp.MustCompile(`(?m)^__version__\s*=\s*['"]([^'"]+)['"]`).FindSubmatch(b); m != nil {
			return string(m[1])
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "include/torch/csrc/api/include/torch/version.h")); err == nil {
		var v []string
		for _, k := range []string{"MAJOR", "MINOR", "PATCH"} {
			if m := regexp.MustCompile(`#define TORCH_VERSION_` + k + ` (\d+)`).FindSubmatch(b); m != nil {
				v = append(v, string(m[1]))
			}
		}
		if len(v) == 3 {
			return strings.Join(v, ".")
		}
	}
	return dir
}

// supportedVersion says whether v (e.g. "2.11.0+cu130") is 1.13 or 2.1-2.11.
func supportedVersion(v string) bool {
	var major, minor int
	if _, err := fmt.Sscanf(v, "%d.%d", &major, &minor); err != nil {
		return false
	}
	return (major == 1 && minor == 13) || (major == 2 && minor >= 1 && minor <= 11)
}

var abiFlag = regexp.MustCompile(`_GLIBCXX_USE_CXX11_ABI=([01])`)

// cxxABI says which libstdc++ string ABI the libtorch was built with ("0"
// for the pre-C++11 one of pip's torch before 2.7, "" for the default):
// memo's C++ must match it or std::string arguments do not link. The cmake
// config states it; without one (a headers-and-stubs tree), the exported
// symbols of libc10.so tell, since only the C++11 ABI mangles std::string as
// std::__cxx11::basic_string.
func cxxABI(dir string) (string, error) {
	if b, err := os.ReadFile(filepath.Join(dir, "share/cmake/Torch/TorchConfig.cmake")); err == nil {
		if m := abiFlag.FindSubmatch(b); m != nil {
			return abiValue(string(m[1])), nil
		}
	}
	f, err := elf.Open(filepath.Join(dir, "lib/libc10.so"))
	if err != nil {
		return "", fmt.Errorf("libtorch at %s: cannot tell its C++ ABI: %w", dir, err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		return "", fmt.Errorf("libtorch at %s: cannot tell its C++ ABI: read lib/libc10.so symbols: %w", dir, err)
	}
	for _, s := range syms {
		if strings.Contains(s.Name, "__cxx11") {
			return "", nil
		}
	}
	return "0", nil
}

func abiNote(abi string) string {
	if abi == "0" {
		return ", pre-C++11 ABI"
	}
	return ""
}

func abiValue(v string) string {
	if v == "0" {
		return "0"
	}
	return ""
}

// stampFor identifies the inputs of a prepared copy so a second setup run can
// skip the (slow) compile-and-stub pass. gotchgen's own sources are inputs:
// a change to them (a new patch, say) regenerates existing copies.
func stampFor(src string, lt libtorch) string {
	h := sha256.New()
	for _, f := range ownSources() {
		b, _ := os.ReadFile(f)
		fmt.Fprintf(h, "%s|%d|", f, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%s|%v|%v|%v|%s|%v|%s", src, lt.includeDirs, lt.libDirs, lt.libs, lt.version, lt.cuda, lt.cxxABI)
	return hex.EncodeToString(h.Sum(nil))
}

// ownSources lists gotchgen's Go files (run from the repository root, as
// setup.sh does), or else the running binary.
func ownSources() []string {
	files, _ := filepath.Glob("scripts/gotchgen/*.go")
	if len(files) == 0 {
		return []string{os.Args[0]}
	}
	return files
}

func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

func (lt libtorch) cppflags() []string {
	var f []string
	for _, d := range lt.includeDirs {
		f = append(f, "-I"+d)
	}
	if lt.cxxABI != "" {
		f = append(f, "-D_GLIBCXX_USE_CXX11_ABI="+lt.cxxABI)
	}
	return f
}

func (lt libtorch) ldflags() []string {
	var f []string
	for _, d := range lt.libDirs {
		f = append(f, "-L"+d, "-Wl,-rpath,"+d)
	}
	f = append(f, lt.libs...)
	return append(f, "-lstdc++")
}

func writeLibGo(dir string, lt libtorch) error {
	var b strings.Builder
	b.WriteString("// Code generated by memo's scripts/gotchgen for this machine's libtorch; DO NOT EDIT.\n\npackage libtch\n\n")
	fmt.Fprintf(&b, "// #cgo CPPFLAGS: -I${SRCDIR} %s\n", strings.Join(lt.cppflags(), " "))
	b.WriteString("// #cgo CFLAGS: -O2 -w\n")
	b.WriteString("// #cgo CXXFLAGS: -std=c++17 -O1 -w\n")
	fmt.Fprintf(&b, "// #cgo LDFLAGS: %s\n", strings.Join(lt.ldflags(), " "))
	b.WriteString("import \"C\"\n")
	return os.WriteFile(filepath.Join(dir, "libtch/lib.go"), []byte(b.String()), 0o644)
}

var errLine = regexp.MustCompile(`torch_api_generated\.cpp\.h:(\d+):\d+: error`)

// stubUntilCompiles compiles the wrapper translation unit and stubs every
// generated function the compiler rejects, repeating until it compiles
// (a stub can unmask errors the compiler had suppressed after the first).
func stubUntilCompiles(dir string, lt libtorch) (int, error) {
	total := 0
	for round := 1; round <= 5; round++ {
		args := append([]string{"-std=c++17", "-fsyntax-only", "-fmax-errors=0", "-w", "-I" + filepath.Join(dir, "libtch")}, lt.cppflags()...)
		args = append(args, filepath.Join(dir, "libtch/torch_api.cpp"))
		cmd := exec.Command("g++", args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		t0 := time.Now()
		err := cmd.Run()
		if err == nil {
			return total, nil
		}
		lines := map[int]bool{}
		for _, m := range errLine.FindAllStringSubmatch(stderr.String(), -1) {
			var n int
			fmt.Sscan(m[1], &n)
			lines[n] = true
		}
		if len(lines) == 0 {
			return total, fmt.Errorf("torch_api.cpp does not compile against this libtorch outside the generated wrappers:\n%s", firstLines(stderr.String(), 40))
		}
		n, err := stubFunctions(filepath.Join(dir, generatedHeader), lines)
		if err != nil {
			return total, err
		}
		total += n
		fmt.Printf("gotch: compile pass %d (%s): stubbed %d wrappers\n", round, time.Since(t0).Round(time.Second), n)
	}
	return total, fmt.Errorf("wrappers still fail to compile after 5 passes")
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	if len(ls) > n {
		ls = ls[:n]
	}
	return strings.Join(ls, "\n")
}

// stubFunctions replaces the PROTECT(...) body of each generated function that
// contains one of the given 1-based lines with a throw, keeping the signature
// and any trailing default return so callers still link.
func stubFunctions(path string, errLines map[int]bool) (int, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	type span struct {
		name        string
		open, close int
	}
	var spans []span
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if l == "" || l[0] == ' ' || l[0] == '/' || l[0] == '}' || !strings.Contains(l, " atg_") {
			continue
		}
		name := l[strings.Index(l, "atg_"):]
		name = name[:strings.IndexByte(name, '(')]
		open, close := -1, -1
		for j := i + 1; j < len(lines) && lines[j] != "}"; j++ {
			if lines[j] == "  PROTECT(" {
				open = j
			} else if lines[j] == "  )" {
				close = j
			}
		}
		if open < 0 || close < 0 {
			continue
		}
		spans = append(spans, span{name, open, close})
	}
	hit := map[int]bool{}
	for ln := range errLines {
		idx := sort.Search(len(spans), func(k int) bool { return spans[k].close >= ln-1 })
		if idx < len(spans) && spans[idx].open <= ln-1 {
			hit[idx] = true
		} else {
			return 0, fmt.Errorf("%s:%d: compile error outside a generated wrapper body", path, ln)
		}
	}
	var idxs []int
	for k := range hit {
		idxs = append(idxs, k)
	}
	sort.Sort(sort.Reverse(sort.IntSlice(idxs)))
	for _, k := range idxs {
		s := spans[k]
		stub := fmt.Sprintf("    throw std::runtime_error(\"%s: this op is not available in the libtorch memo was built against (stubbed by scripts/gotchgen)\");", s.name)
		lines = append(lines[:s.open+1], append([]string{stub}, lines[s.close:]...)...)
	}
	return len(idxs), os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}

// writeShimFlags gives memo's own cgo shim the flags of the same libtorch.
// c10d's Gloo backend is compiled in when its headers are present.
func writeShimFlags(path string, lt libtorch) error {
	cpp := lt.cppflags()
	if lt.gloo {
		cpp = append(cpp, "-DUSE_C10D_GLOO")
	}
	var b strings.Builder
	b.WriteString("// Code generated by memo's scripts/gotchgen for this machine's libtorch; DO NOT EDIT.\n\npackage torchx\n\n")
	fmt.Fprintf(&b, "// #cgo CPPFLAGS: %s\n", strings.Join(cpp, " "))
	b.WriteString("// #cgo CXXFLAGS: -std=c++17 -O2 -w\n")
	fmt.Fprintf(&b, "// #cgo LDFLAGS: %s\n", strings.Join(lt.ldflags(), " "))
	b.WriteString("import \"C\"\n")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp, path)
}
