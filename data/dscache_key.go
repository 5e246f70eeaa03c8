package data

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/memo-research/memo/internal/badinput"
)

// FormatVersion names what Build writes for given inputs. It is part of the
// dataset cache key: bump it whenever Build's output for the same config and
// source files changes (cleaning, chunking, splitting, file schemas), so
// that no cached dataset of the old code is reused. 3: the tokenizer.json
// of memo's own BPEs is a plain Hugging Face file, and their ids follow the
// library where the native encoder differed ("<|endoftext|>" written in a
// text is the EOS id; U+001C..U+001F are symbols, not white space).
const FormatVersion = 3

// keyedFile is one input file of a build, by content.
type keyedFile struct {
	Role   string `json:"role"` // the source name, or "tokenizer"
	Path   string `json:"path"` // relative to the source's root
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`

	// file and modTime are where the file was hashed and its modification
	// time when opened (none for the embedded Opticks): a build checks
	// that it read the files the key hashed (unchangedSince).
	file    string
	modTime time.Time
}

// keyInput is everything that determines a built dataset; its JSON's
// sha256 is the cache key.
type keyInput struct {
	Format int `json:"format"`
	// Split is 2 for a config with target_sources, whose validation and
	// background are drawn from the other sources first since
	// 2026-12-01: its datasets of before are not reused. 0 (left out of
	// the key) for every other config, whose splits did not change.
	Split  int         `json:"split,omitempty"`
	BPE    string      `json:"bpe"`
	Config Config      `json:"config"`
	Files  []keyedFile `json:"files"`
}

// newKeyInput collects the config (without the keys that only say where
// and whether to cache), memo's data format and trainer versions, and the
// content of every file the sources and the tokenizer read.
func newKeyInput(cfg Config, cache string) (keyInput, error) {
	in := keyInput{Format: FormatVersion, BPE: bpeVersion, Config: cfg}
	if len(cfg.TargetSources) > 0 {
		in.Split = 2
	}
	in.Config.CacheDir, in.Config.CacheDatasets = "", false
	for _, s := range cfg.Sources {
		src, err := ParseSource(s)
		if err != nil {
			return in, err
		}
		files, err := sourceKey(src, cache)
		if err != nil {
			return in, fmt.Errorf("source %s: %w", src.Name(), err)
		}
		in.Files = append(in.Files, files...)
	}
	tf, err := tokenizerFiles(cfg.Tokenizer, cache)
	if err != nil {
		return in, err
	}
	for _, f := range tf {
		in.Files = append(in.Files, hashFile("tokenizer", filepath.Dir(f), f))
	}
	return in, nil
}

// key is the cache key: the first 24 hex digits (96 bits) of the sha256
// of the inputs' JSON.
func (in keyInput) key() (string, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:24], nil
}

// tokenizerFiles lists the files a tokenizer spec reads (none for a BPE
// trained on the corpus: the corpus is keyed already).
func tokenizerFiles(spec, cache string) ([]string, error) {
	ts, err := parseTokenizerSpec(spec)
	if err != nil {
		return nil, err
	}
	switch ts.Kind {
	case "gpt2":
		dir, err := packageDir(cache, "gpt2")
		if err != nil {
			return nil, fmt.Errorf("data.tokenizer = \"gpt2\": %w", err)
		}
		return []string{filepath.Join(dir, "encoder.json"), filepath.Join(dir, "vocab.bpe")}, nil
	case "hf":
		p := ts.Path
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			p = filepath.Join(p, "tokenizer.json")
		}
		return []string{p}, nil
	}
	return nil, nil
}

// walkFiles lists the regular files under dir (and links to them) whose names keep accepts,
// sorted. Unreadable entries are left to the loader, which names them.
func walkFiles(dir string, keep func(name string) bool) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil
		}
		if keep(d.Name()) && regularOrLinkToOne(p, d) {
			files = append(files, p)
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// regularOrLinkToOne reports whether the walked entry d at p is a regular
// file or a symbolic link to one: a txt: directory's loader reads a
// linked file, so its key must hash what the link leads to (a key that
// left links out reused a dataset of the linked file's old text).
func regularOrLinkToOne(p string, d fs.DirEntry) bool {
	if d.Type().IsRegular() {
		return true
	}
	if d.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// hashFile keys one file by content; an unreadable file is keyed as such
// (the loader names it in report.json or fails).
// opticksKey keys the embedded Opticks as hashFile keyed the same bytes
// read from $GOROOT/src/testdata, so dataset caches built then still match.
func opticksKey(role string) keyedFile {
	sum := sha256.Sum256(opticks)
	return keyedFile{Role: role, Path: OpticksName, Size: int64(len(opticks)), SHA256: hex.EncodeToString(sum[:])}
}

func hashFile(role, root, path string) keyedFile {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		rel = filepath.Base(path)
	}
	kf := keyedFile{Role: role, Path: filepath.ToSlash(rel)}
	f, err := os.Open(path)
	if err != nil {
		kf.SHA256 = "unreadable: " + err.Error()
		return kf
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil {
		kf.file, kf.modTime = path, st.ModTime()
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		kf.SHA256 = "unreadable: " + err.Error()
		return kf
	}
	kf.Size, kf.SHA256 = n, hex.EncodeToString(h.Sum(nil))
	return kf
}

// unchangedSince checks that every file the key hashed still has the size
// and modification time it had when hashed: a source written to while a
// build read it (a JSONL another job still appends to, a txt: file edited
// mid-build) gave a dataset of other text than its key says, which every
// later build of the hashed text then reused.
func unchangedSince(files []keyedFile) error {
	for _, kf := range files {
		if kf.file == "" {
			continue
		}
		st, err := os.Stat(kf.file)
		if err != nil {
			return badinput.Errorf("data: %s changed while the dataset was built from it (%v); build again once it is written", kf.file, err)
		}
		if st.Size() != kf.Size || !st.ModTime().Equal(kf.modTime) {
			return badinput.Errorf("data: %s changed while the dataset was built from it (%d bytes modified %s, now %d bytes modified %s); build again once it is written",
				kf.file, kf.Size, kf.modTime.UTC().Format(time.RFC3339Nano), st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano))
		}
	}
	return nil
}

// sameListing checks that every txt: directory of cfg still holds the
// .txt files the key hashed, no more and no fewer: one added while the
// build read the directory may be in the dataset and not in its key.
func sameListing(cfg Config, files []keyedFile) error {
	for _, s := range cfg.Sources {
		src, err := ParseSource(s)
		if err != nil || src.Kind != "txt" {
			continue
		}
		var keyed []string
		for _, kf := range files {
			if kf.Role == src.Name() {
				keyed = append(keyed, filepath.Join(src.Path, filepath.FromSlash(kf.Path)))
			}
		}
		now, err := walkFiles(src.Path, isTxtName)
		if err != nil {
			return badinput.Errorf("data: txt:%s changed while the dataset was built from it (%v); build again", src.Path, err)
		}
		sort.Strings(keyed)
		if !slices.Equal(keyed, now) {
			return badinput.Errorf("data: txt:%s gained or lost .txt files while the dataset was built from it (%d then, %d now); build again once it is written", src.Path, len(keyed), len(now))
		}
	}
	return nil
}
