package data

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/runlock"
)

// CacheEntry describes one directory under CacheDir/datasets.
type CacheEntry struct {
	Key       string    `json:"key"`
	Dir       string    `json:"dir"`
	Bytes     int64     `json:"bytes"`
	Created   time.Time `json:"created"`
	Runs      int       `json:"runs"` // run directories holding hard links to it (copies are not counted)
	Sources   []string  `json:"sources"`
	Tokenizer string    `json:"tokenizer"`
	Documents int       `json:"documents"` // in every split
	// DedupTokens is what data.dedup_tokens removed from it (nil: off).
	DedupTokens *DedupTokensReport `json:"dedup_tokens,omitempty"`
	Temporary   bool               `json:"temporary"` // a build in progress, or a dead builder's leftover
	Problem     string             `json:"problem,omitempty"`
	// Foreign says why the directory is no entry memo made (gc never
	// removes it); "" for memo's own.
	Foreign string `json:"foreign,omitempty"`
}

// ListCache lists the dataset cache of cache (a CacheDir), by creation time.
func ListCache(cache string) ([]CacheEntry, error) {
	root := filepath.Join(cache, datasetsDir)
	ents, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("dataset cache: %w", err)
	}
	var out []CacheEntry
	for _, d := range ents {
		if !d.IsDir() || d.Name() == locksDir {
			continue
		}
		dir := filepath.Join(root, d.Name())
		ce := CacheEntry{Key: d.Name(), Dir: dir, Bytes: dirBytes(dir)}
		if isTempName(d.Name()) {
			ce.Temporary = true
			ce.Key = keyOfTemp(d.Name())
			ce.Foreign = foreignEntry(dir, "")
			if fi, err := d.Info(); err == nil {
				ce.Created = fi.ModTime()
			}
			out = append(out, ce)
			continue
		}
		ce.Foreign = foreignEntry(dir, d.Name())
		if err := checkEntry(dir); err != nil {
			ce.Problem = err.Error()
		}
		if e, err := ReadEntry(dir); err == nil {
			ce.Created = e.Created
		}
		if rep, err := ReadReport(dir); err == nil {
			ce.Sources, ce.Tokenizer, ce.DedupTokens = rep.Config.Sources, rep.Tokenizer, rep.DedupTokens
			for _, n := range rep.Splits {
				ce.Documents += n
			}
		}
		ce.Runs = linksOf(filepath.Join(dir, "tokens.arrow")) - 1
		out = append(out, ce)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// foreignEntry says why dir is no dataset-cache entry memo made, "" when
// it is one: it holds only regular files memo writes there (a built
// dataset's files, entry.json, and atomicfile's temporaries of them), and,
// for a complete entry (key not ""), its entry.json names key — the
// marker the builder writes last. A user's folder, a run directory, a
// link or anything else gc would otherwise take for a damaged entry is
// left alone.
func foreignEntry(dir, key string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	for _, d := range ents {
		if !d.Type().IsRegular() {
			return d.Name() + " is not a regular file"
		}
		if !ownEntryFile(d.Name()) {
			return "it holds " + d.Name() + ", which memo does not write there"
		}
	}
	if key == "" {
		return "" // a build in progress or a dead builder's: no entry.json yet
	}
	e, err := ReadEntry(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it has no " + entryFile
	case err != nil:
		return entryFile + " is not memo's"
	case e.Key != key:
		return fmt.Sprintf("its %s names key %q", entryFile, e.Key)
	}
	return ""
}

// underEntryLock runs fn holding the lock of the entry key under root, or
// returns the *runlock.HeldError of the live process that holds it.
func underEntryLock(root, key string, fn func() error) error {
	lockDir := entryLockDir(root, key)
	if err := os.MkdirAll(lockDir, 0o777); err != nil {
		return err
	}
	lock, err := runlock.AcquireStaleAfter(lockDir, lockStaleAfter)
	if err != nil {
		return err
	}
	err = fn()
	if rerr := lock.Release(); err == nil {
		err = rerr
	}
	return err
}

// deadWrites lists the temporary files of writes into the entry in dir
// (of its files and tokens.idx) and builders' spools: a write in progress
// holds the entry's lock (LockEntry), so under that lock each is a dead
// writer's.
func deadWrites(dir string) []CacheEntry {
	ents, _ := os.ReadDir(dir)
	var out []CacheEntry
	for _, d := range ents {
		if !d.Type().IsRegular() || !ownEntryFile(d.Name()) || isEntryFile(d.Name()) {
			continue
		}
		t := CacheEntry{Key: filepath.Base(dir), Dir: filepath.Join(dir, d.Name()), Temporary: true}
		if fi, err := d.Info(); err == nil {
			t.Bytes, t.Created = fi.Size(), fi.ModTime()
		}
		out = append(out, t)
	}
	return out
}

// entryFiles are the files an entry holds when complete: entry.json,
// the index and the dataset's.
var entryFiles = append([]string{entryFile, IndexFile}, datasetFiles...)

// isEntryFile reports whether name is one of an entry's own files.
func isEntryFile(name string) bool { return slices.Contains(entryFiles, name) }

// ownEntryFile reports whether name is a file the cache's builder writes
// into an entry.
func ownEntryFile(name string) bool {
	if strings.HasPrefix(name, spoolPrefix) {
		return true // a killed builder's spool
	}
	for _, f := range entryFiles {
		if name == f || atomicfile.IsTemp(name, f) {
			return true
		}
	}
	return false
}

// trainedTokenizerRE is the name tokenizerPath gives a trained tokenizer
// in the cache's tokenizers/ (bpe<vocab>-<20 hex digits>.json).
var trainedTokenizerRE = regexp.MustCompile(`^bpe[0-9]+-[0-9a-f]{20}\.json$`)

// TrainedTokenizers are the trained tokenizers memo cached under cache:
// regular files named as it names them; anything else there is not memo's.
func TrainedTokenizers(cache string) []CacheEntry {
	dir := filepath.Join(cache, tokenizersDir)
	ents, _ := os.ReadDir(dir)
	var out []CacheEntry
	for _, d := range ents {
		if !d.Type().IsRegular() || !trainedTokenizerRE.MatchString(d.Name()) {
			continue
		}
		ce := CacheEntry{Key: d.Name(), Dir: filepath.Join(dir, d.Name())}
		if fi, err := d.Info(); err == nil {
			ce.Bytes, ce.Created = fi.Size(), fi.ModTime()
		}
		out = append(out, ce)
	}
	return out
}

// gcNow is the clock gc judges temporaries' age by (tests move it on).
var gcNow = time.Now

// deadCacheTemps lists the cache's temporary files that no process holds
// a lock for, last changed before cutoff: a tokenizer's write
// (.bpeV-HASH.json.tmp-N, written in a moment after training) and the
// files taking an entry's lock writes for an instant (runlock.IsLeftover).
// Anything this old was left by a process that died mid-write. The age
// is the inode's change time where there is one: a lock moved aside as
// stale keeps its old modification time but is new.
func deadCacheTemps(cache string, cutoff time.Time) []CacheEntry {
	var out []CacheEntry
	add := func(dir, key string, match func(name string) bool) {
		ents, _ := os.ReadDir(dir)
		for _, d := range ents {
			if !d.Type().IsRegular() || !match(d.Name()) {
				continue
			}
			fi, err := d.Info()
			if err != nil || !changedAt(fi).Before(cutoff) {
				continue
			}
			out = append(out, CacheEntry{Key: key, Dir: filepath.Join(dir, d.Name()), Bytes: fi.Size(), Created: fi.ModTime(), Temporary: true})
		}
	}
	add(filepath.Join(cache, tokenizersDir), tokenizersDir, func(name string) bool {
		base, _, ok := strings.Cut(strings.TrimPrefix(name, "."), ".json.tmp-")
		return ok && atomicfile.IsTemp(name, base+".json") && trainedTokenizerRE.MatchString(base+".json")
	})
	locks := filepath.Join(cache, datasetsDir, locksDir)
	keys, _ := os.ReadDir(locks)
	for _, k := range keys {
		if k.IsDir() {
			add(filepath.Join(locks, k.Name()), k.Name(), runlock.IsLeftover)
		}
	}
	return out
}

// keyOfTemp is the key a temporary directory's name carries
// (".tmp-KEY-RANDOM").
func keyOfTemp(name string) string {
	k := strings.TrimPrefix(name, tmpPrefix)
	if i := strings.Index(k, "-"); i >= 0 {
		k = k[:i]
	}
	return k
}

// linksOf is the hard link count of path (0 when it cannot be read).
func linksOf(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 1
}

func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// GCOptions says what GCCache removes besides temporary directories of
// dead builders and damaged entries (always removed).
type GCOptions struct {
	Unused bool // entries no run directory links to
	All    bool // every entry, and the trained tokenizers of CacheDir/tokenizers
	DryRun bool // list, remove nothing
}

// GCCache removes cache entries as opt says and returns them. An entry
// whose key's lock is held (a build, a link or an index build in
// progress) is left alone. Runs keep their own hard links or copies:
// removing an entry never breaks a run, only makes the next build of its
// key build again. In an entry it keeps, GCCache removes the temporary
// files of writes that died (an index build killed outright), returned
// with Dir the file's path.
func GCCache(cache string, opt GCOptions) ([]CacheEntry, error) {
	ents, err := ListCache(cache)
	if err != nil {
		return nil, err
	}
	root := filepath.Join(cache, datasetsDir)
	var removed []CacheEntry
	for _, e := range ents {
		if e.Foreign != "" {
			slog.Info("data gc: not an entry memo made, left alone", "dir", e.Dir, "why", e.Foreign)
			continue
		}
		whole := e.Temporary || e.Problem != "" || opt.All || (opt.Unused && e.Runs <= 0)
		temps := deadWrites(e.Dir)
		if !whole && len(temps) == 0 {
			continue
		}
		err := underEntryLock(root, e.Key, func() error {
			if !whole {
				for _, t := range temps {
					if !opt.DryRun {
						if err := os.Remove(t.Dir); err != nil {
							return err
						}
					}
					removed = append(removed, t)
				}
				return nil
			}
			if !opt.DryRun {
				// Renamed first, so that no reader ever sees a half-removed entry.
				aside := filepath.Join(root, fmt.Sprintf("%s%s-gc-%d", tmpPrefix, e.Key, time.Now().UnixNano()))
				if err := os.Rename(e.Dir, aside); err != nil {
					return err
				}
				if err := os.RemoveAll(aside); err != nil {
					return err
				}
			}
			removed = append(removed, e)
			return nil
		})
		var held *runlock.HeldError
		switch {
		case errors.As(err, &held):
			slog.Info("data gc: in use, left alone", "entry", e.Dir, "pid", held.Holder.PID, "host", held.Holder.Host)
		case err != nil:
			return removed, fmt.Errorf("dataset cache: remove from %s: %w", e.Dir, err)
		}
	}
	for _, t := range deadCacheTemps(cache, gcNow().Add(-lockStaleAfter)) {
		if !opt.DryRun {
			if err := os.Remove(t.Dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return removed, fmt.Errorf("dataset cache: %w", err)
			}
		}
		removed = append(removed, t)
	}
	if opt.All {
		for _, tok := range TrainedTokenizers(cache) {
			if !opt.DryRun {
				if err := os.Remove(tok.Dir); err != nil {
					return removed, fmt.Errorf("dataset cache: %w", err)
				}
			}
			removed = append(removed, tok)
		}
	}
	return removed, nil
}
