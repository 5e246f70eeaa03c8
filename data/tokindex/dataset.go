package tokindex

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/badinput"
)

// FileName is the index's file name beside a dataset's files.
const FileName = data.IndexFile

// DatasetIdentity is what an index of ds must have been built from: the
// tokenizer's name and the sha256 of its tokenizer.json, and a digest of
// the sha256 of every file report.json vouches for (the documents, their
// tokens, the tokenizer), so another build of the corpus never matches.
func DatasetIdentity(ds *data.Dataset) (Identity, error) {
	files := ds.Report().Files
	tok, ok := files["tokenizer.json"]
	if !ok || len(files) == 0 {
		return Identity{}, badinput.Errorf("dataset %s: report.json records no checksums; rebuild it with `memo data build`", ds.Dir())
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s %d %s\n", n, files[n].Bytes, files[n].SHA256)
	}
	return Identity{
		Tokenizer: fmt.Sprintf("%s@%.16s", ds.Report().Tokenizer, tok.SHA256),
		Digest:    hex.EncodeToString(h.Sum(nil)),
	}, nil
}

// PathFor is where ds's index lives: in the shared cache entry its files
// came from when the run's data/cache.json names one that still exists
// (every run of that dataset shares it, and `memo data gc` removes it with
// the entry), else beside the dataset's own files.
func PathFor(ds *data.Dataset) string {
	if link, err := readCacheLink(ds.Dir()); err == nil && link.Entry != "" {
		if fi, err := os.Stat(link.Entry); err == nil && fi.IsDir() {
			return filepath.Join(link.Entry, FileName)
		}
	}
	return filepath.Join(ds.Dir(), FileName)
}

// BuildDataset indexes the training documents of ds (each weighted by
// the times an epoch holds it) into path. Into a shared cache entry it
// writes holding the entry's lock, waiting for another index build of it.
func BuildDataset(ds *data.Dataset, path string, maxWindow int, progress io.Writer) (Stats, error) {
	id, err := DatasetIdentity(ds)
	if err != nil {
		return Stats{}, err
	}
	if link, err := readCacheLink(ds.Dir()); err == nil && link.Entry != "" && filepath.Clean(filepath.Dir(path)) == filepath.Clean(link.Entry) {
		release, err := data.LockEntry(context.Background(), link.Entry)
		if err != nil {
			return Stats{}, fmt.Errorf("index build: %w", err)
		}
		defer func() {
			if err := release(); err != nil {
				slog.Warn("index build: release the dataset cache lock", "entry", link.Entry, "err", err)
			}
		}()
	}
	opt := Options{Identity: id, Vocab: ds.Report().VocabSize, MaxWindow: maxWindow, Progress: progress}
	return Build(path, opt, ds.ScanTrainDocs)
}

// OpenDataset opens ds's index, checking it was built from ds.
func OpenDataset(ds *data.Dataset) (*Index, error) {
	id, err := DatasetIdentity(ds)
	if err != nil {
		return nil, err
	}
	path := PathFor(ds)
	ix, err := Open(path, id)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return nil, badinput.Wrap(&noIndexError{fmt.Sprintf("dataset %s has no index (%s); build it with `memo index build`", ds.Dir(), path)})
	}
	return ix, err
}

// noIndexError is OpenDataset's error for a dataset without an index: a
// message for the user that is still an fs.ErrNotExist to callers that
// go on without one (the eval stage: no corpus counts). Made with
// badinput.Errorf and no %w, it was not, and a run of more than 20
// million training tokens without an index failed at its eval stage.
type noIndexError struct{ msg string }

func (e *noIndexError) Error() string { return e.msg }
func (e *noIndexError) Unwrap() error { return fs.ErrNotExist }

// readCacheLink reads a run's data/cache.json.
func readCacheLink(dir string) (data.CacheLink, error) {
	var link data.CacheLink
	raw, err := os.ReadFile(filepath.Join(dir, data.CacheLinkFile))
	if err != nil {
		return link, err
	}
	err = json.Unmarshal(raw, &link)
	return link, err
}
