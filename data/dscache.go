package data

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runlock"
)

// The shared dataset cache: CacheDir/datasets/KEY holds one complete build
// (the files of a run's data/ directory plus entry.json), KEY hashing
// everything that determines it (cacheKey). A build goes to a temporary
// directory renamed to KEY when complete, under the lock
// CacheDir/datasets/.locks/KEY/memo.lock (internal/runlock), so concurrent
// builders of one key (a -j N sweep, array jobs on a shared file system)
// build once: the others wait for the lock and then reuse the entry. Runs
// get hard links to the entry's files (copies across file systems), so a
// run directory stays complete whatever happens to the cache, and the link
// count tells `memo data gc` which entries no run uses.

// cacheFileMode is a cache entry's dataset files' mode: read-only.
const cacheFileMode = 0o444

// datasetFiles are the files of a built dataset, report.json last: its
// presence marks a complete dataset.
var datasetFiles = []string{"docs.arrow", "tokens.arrow", "tokenizer.json", "report.json"}

// IndexFile is the suffix-array index of an entry's training tokens, which
// data/tokindex writes beside them (memo index build, or the eval stage):
// an entry's own file, listed by ls and removed with the entry by gc.
const IndexFile = "tokens.idx"

// Cache layout names.
const (
	datasetsDir = "datasets"
	// tokenizersDir holds trained tokenizers (trainedTokenizerRE names them).
	tokenizersDir = "tokenizers"
	locksDir      = ".locks"
	tmpPrefix     = ".tmp-"
	entryFile     = "entry.json"
	// CacheLinkFile is written into a run's data/ directory: which cache
	// entry its files came from and how.
	CacheLinkFile = "cache.json"
)

// lockStaleAfter: a builder touches its lock every lockHeartbeat; a lock
// untouched for lockStaleAfter belongs to a builder that died (on any host).
const (
	lockHeartbeat  = 30 * time.Second
	lockStaleAfter = 5 * time.Minute
)

// Entry is entry.json of a cache entry: its key's inputs and each file's
// size and modification time, which a reuse checks so that a file edited
// in place (through a run's hard link) is never handed to another run.
type Entry struct {
	Key     string               `json:"key"`
	Created time.Time            `json:"created"`
	Inputs  []keyedFile          `json:"inputs"`
	Files   map[string]entryStat `json:"files"`
}

type entryStat struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime_ns"`
}

// CacheLink is a run's data/cache.json.
type CacheLink struct {
	Key    string `json:"key"`
	Entry  string `json:"entry"`  // the cache entry's directory
	Reused bool   `json:"reused"` // false: this build made the entry
	Linked string `json:"linked"` // "hardlink" or "copy"
}

// buildHook, when set (tests), runs after the builder took the key's lock
// and before it builds.
var buildHook func()

// buildCached makes runDir/data from the cache entry of cfg's key,
// building the entry first when no valid one exists.
func buildCached(ctx context.Context, cfg Config, runDir string) error {
	cache := cfg.cacheDir()
	in, key, err := cacheKeyInput(cfg, cache)
	if err != nil {
		return badinput.Wrap(err)
	}
	root := filepath.Join(cache, datasetsDir)
	entry := filepath.Join(root, key)
	if err := os.MkdirAll(entryLockDir(root, key), 0o777); err != nil {
		// A cache this user cannot write (another user's, a read-only file
		// system, a file in the way): the run still gets its dataset,
		// built in place.
		slog.Warn("data: dataset cache not writable, building in the run directory", "cache", root, "err", err)
		return buildDir(ctx, cfg, filepath.Join(runDir, "data"))
	}
	lock, err := lockCacheEntry(ctx, entryLockDir(root, key))
	if atomicfile.Unwritable(err) {
		// Its directories are there but this user cannot lock them
		// (another user's cache, a read-only mount): as above. An entry
		// read without the lock could be removed under the run by its
		// owner's memo data gc.
		slog.Warn("data: dataset cache not writable, building in the run directory", "cache", root, "err", err)
		return buildDir(ctx, cfg, filepath.Join(runDir, "data"))
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := lock.Release(); err != nil {
			slog.Warn("data: release the dataset cache lock", "key", key, "err", err)
		}
	}()
	// Released on an interrupt too: a lock left by a process of another
	// host keeps its peers waiting until it goes stale.
	defer atomicfile.AtInterrupt(func() { _ = lock.Release() })()
	reused := true
	if err := checkEntry(entry); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			slog.Warn("data: cached dataset unusable, rebuilding it", "entry", entry, "err", err)
		}
		if buildHook != nil {
			buildHook()
		}
		if err := buildEntry(ctx, cfg, root, key, in, lock); err != nil {
			return err
		}
		reused = false
	} else {
		slog.Info("data: dataset from cache", "entry", entry)
	}
	return linkRun(entry, filepath.Join(runDir, "data"), CacheLink{Key: key, Entry: entry, Reused: reused})
}

// cacheKeyInput is cacheKey with the inputs it hashed.
func cacheKeyInput(cfg Config, cache string) ([]keyedFile, string, error) {
	in, err := newKeyInput(cfg, cache)
	if err != nil {
		return nil, "", err
	}
	key, err := in.key()
	return in.Files, key, err
}

// lockCacheEntry is how buildCached takes an entry's lock: waitLock, or
// a test's failure (root, as tests often run, writes wherever it likes).
var lockCacheEntry = waitLock

// waitLock takes the lock in dir, waiting while another live process holds
// it (it is building the same dataset, linking it or indexing it).
func waitLock(ctx context.Context, dir string) (*runlock.Lock, error) {
	if err := os.MkdirAll(dir, 0o777); err != nil { // the umask decides who shares it
		return nil, fmt.Errorf("dataset cache: %w", err)
	}
	lock, err := runlock.Wait(ctx, dir, lockStaleAfter, "data: waiting for another process building, linking or indexing this dataset")
	if err != nil {
		return nil, fmt.Errorf("dataset cache: %w", err)
	}
	return lock, nil
}

// entryLockDir is where the lock of the entry key under root lives: beside
// the entries, not in one, so that removing an entry leaves its lock.
func entryLockDir(root, key string) string { return filepath.Join(root, locksDir, key) }

// LockEntry takes the lock of the cache entry in dir, waiting while
// another live process holds it, and keeps it fresh until release: what a
// writer of a file into an existing entry (an index build) holds, so that
// gc neither removes the entry under it nor takes its temporary file for
// a dead writer's.
func LockEntry(ctx context.Context, dir string) (release func() error, err error) {
	lock, err := waitLock(ctx, entryLockDir(filepath.Dir(dir), filepath.Base(dir)))
	if err != nil {
		return nil, err
	}
	stop := lock.Heartbeat(lockHeartbeat)
	return func() error {
		stop()
		return lock.Release()
	}, nil
}

// buildEntry builds into a temporary directory and renames it to the
// entry; the caller holds the key's lock, so temporary directories of this
// key are leftovers of builders that died, and an existing entry is one
// that failed checkEntry.
func buildEntry(ctx context.Context, cfg Config, root, key string, inputs []keyedFile, lock *runlock.Lock) error {
	entry := filepath.Join(root, key)
	old, _ := filepath.Glob(filepath.Join(root, tmpPrefix+key+"-*"))
	for _, o := range old {
		if why := foreignEntry(o, ""); why != "" {
			slog.Info("data: not a builder's temporary directory, left alone", "dir", o, "why", why)
			continue
		}
		slog.Info("data: removing a dead builder's temporary directory", "dir", o)
		_ = os.RemoveAll(o)
	}
	tmp, err := os.MkdirTemp(root, tmpPrefix+key+"-")
	if err != nil {
		return fmt.Errorf("dataset cache: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	// memo data build exits at once on an interrupt, past this defer: its
	// spool could be gigabytes.
	defer atomicfile.AtInterrupt(func() { os.RemoveAll(tmp) })()
	defer lock.Heartbeat(lockHeartbeat)()
	if err := buildDir(ctx, cfg, tmp); err != nil {
		return err
	}
	if err := unchangedSince(inputs); err != nil {
		return err
	}
	if err := sameListing(cfg, inputs); err != nil {
		return err
	}
	e := Entry{Key: key, Created: time.Now().UTC().Truncate(time.Second), Inputs: inputs, Files: map[string]entryStat{}}
	for _, name := range datasetFiles {
		fi, err := os.Stat(filepath.Join(tmp, name))
		if err != nil {
			return fmt.Errorf("dataset cache: %w", err)
		}
		e.Files[name] = entryStat{fi.Size(), fi.ModTime().UnixNano()}
		// Runs hold hard links to these files: read-only, so that an
		// editor or a script writing into a run's data/ is refused
		// rather than changing the entry every other run shares.
		if err := os.Chmod(filepath.Join(tmp, name), cacheFileMode); err != nil {
			return fmt.Errorf("dataset cache: %w", err)
		}
	}
	raw, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(filepath.Join(tmp, entryFile), append(raw, '\n')); err != nil {
		return fmt.Errorf("dataset cache: %w", err)
	}
	if _, err := os.Stat(entry); err == nil {
		// A damaged entry: move it out of the way (gc removes it).
		aside := filepath.Join(root, fmt.Sprintf("%s%s-damaged-%d", tmpPrefix, key, time.Now().UnixNano()))
		if err := os.Rename(entry, aside); err != nil {
			return fmt.Errorf("dataset cache: move aside %s: %w", entry, err)
		}
		_ = os.RemoveAll(aside)
	}
	// MkdirTemp makes the directory private; other users of a shared cache
	// read entries too (and a group that shares it under umask 002 writes).
	if err := os.Chmod(tmp, atomicfile.DirMode); err != nil {
		return fmt.Errorf("dataset cache: %w", err)
	}
	if err := os.Rename(tmp, entry); err != nil {
		return fmt.Errorf("dataset cache: %w", err)
	}
	slog.Info("data: dataset cached", "entry", entry)
	return nil
}

// ReadEntry reads entry.json of the cache entry in dir.
func ReadEntry(dir string) (Entry, error) {
	var e Entry
	raw, err := os.ReadFile(filepath.Join(dir, entryFile))
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal(raw, &e); err != nil {
		return e, fmt.Errorf("%s: %w", filepath.Join(dir, entryFile), err)
	}
	return e, nil
}

// checkEntry reports whether dir is a complete entry whose files are as
// built (size and modification time), and their Arrow headers readable.
func checkEntry(dir string) error {
	e, err := ReadEntry(dir)
	if err != nil {
		return err
	}
	for _, name := range datasetFiles {
		want, ok := e.Files[name]
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if !ok || fi.Size() != want.Size || fi.ModTime().UnixNano() != want.ModTime {
			return fmt.Errorf("%s changed after it was built (size %d, modified %s)", filepath.Join(dir, name), fi.Size(), fi.ModTime())
		}
	}
	_, err = openDir(dir)
	return err
}

// linkRun makes dst hold the entry's files: hard links, or copies when the
// run is on another file system. The old report.json goes first and the
// new one comes last, so an interrupted link leaves no complete-looking
// dataset.
func linkRun(entry, dst string, link CacheLink) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return fmt.Errorf("data: %w", err)
	}
	if err := os.Remove(filepath.Join(dst, "report.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("rebuild %s: %w", dst, err)
	}
	link.Linked = "hardlink"
	for _, name := range datasetFiles {
		if name == "report.json" {
			raw, err := json.MarshalIndent(link, "", "  ")
			if err != nil {
				return err
			}
			if err := atomicfile.WriteFile(filepath.Join(dst, CacheLinkFile), append(raw, '\n')); err != nil {
				return fmt.Errorf("data: %w", err)
			}
		}
		how, err := placeFile(filepath.Join(entry, name), filepath.Join(dst, name))
		if err != nil {
			return fmt.Errorf("data: %s into %s: %w", name, dst, err)
		}
		if how == "copy" {
			link.Linked = how
		}
	}
	return nil
}

// linkInfix names placeFile's temporary link: ".NAME.link-PID".
const linkInfix = ".link-"

// IsLinkTemp reports whether name is placeFile's temporary link, which a
// process killed between linking and renaming leaves beside the file.
func IsLinkTemp(name string) bool {
	i := strings.LastIndex(name, linkInfix)
	if !strings.HasPrefix(name, ".") || i <= 1 {
		return false
	}
	pid := name[i+len(linkInfix):]
	return pid != "" && strings.Trim(pid, "0123456789") == ""
}

// placeFile replaces dst by a hard link to src (through a temporary name,
// so dst is never missing or partial), or by a copy when linking fails.
func placeFile(src, dst string) (string, error) {
	// Already that file (a rebuild from the same cache entry): rename onto
	// a hard link of the same file does nothing and would leave tmp behind.
	if a, err := os.Stat(src); err == nil {
		if b, err := os.Stat(dst); err == nil && os.SameFile(a, b) {
			return "hardlink", nil
		}
	}
	tmp := filepath.Join(filepath.Dir(dst), fmt.Sprintf(".%s%s%d", filepath.Base(dst), linkInfix, os.Getpid()))
	_ = os.Remove(tmp)
	if err := linkFile(src, tmp); err == nil {
		err := os.Rename(tmp, dst)
		_ = os.Remove(tmp) // gone after a rename, unless tmp and dst were one file
		if err != nil {
			return "", err
		}
		return "hardlink", nil
	}
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return "", err
	}
	// A copy keeps the entry's read-only mode, as a link would: the run's
	// data/ reads the same whichever way it was placed.
	err = atomicfile.Create(dst, func(f *os.File) error {
		_, err := io.Copy(f, in)
		return err
	})
	if err == nil {
		err = os.Chmod(dst, fi.Mode().Perm())
	}
	return "copy", err
}

// linkFile is os.Link; tests replace it to take the copy path that a run
// on another file system than the cache takes.
var linkFile = os.Link

// isTempName reports whether a name under datasets/ is a temporary
// directory (a build in progress or a dead builder's leftover).
func isTempName(name string) bool { return strings.HasPrefix(name, tmpPrefix) }
