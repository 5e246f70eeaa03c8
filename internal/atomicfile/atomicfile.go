// Package atomicfile writes files through a temporary file and a rename, so
// that a reader sees the old file or the whole new one, never part of one.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Mode is the permission of every file written: what os.WriteFile(path,
// data, 0o666) gives under the process's umask, 0644 under the usual 022
// and group-writable under 002, as a group sharing a dataset cache sets
// it. (The temporary file os.CreateTemp makes is 0600.)
var Mode = 0o666 &^ umask

// umask is the process's file mode creation mask, read once at start.
var umask = func() os.FileMode {
	u := syscall.Umask(0)
	syscall.Umask(u)
	return os.FileMode(u)
}()

// tempInfix joins the hidden base name and os.CreateTemp's random digits in
// a temporary file's name: .NAME.tmp-123456789.
const tempInfix = ".tmp-"

// Write creates or replaces path: write fills a temporary file beside it
// (the directory is made if missing), and only when write succeeds is the
// file given Mode and renamed into place. On error nothing is left behind.
func Write(path string, write func(w io.Writer) error) error {
	return create(path, func(f *os.File) error { return write(f) }, false)
}

// Create is Write for writers that need the file itself, such as Arrow's
// IPC file writer, which seeks.
func Create(path string, write func(f *os.File) error) error {
	return create(path, write, false)
}

// CreateSync is Create that also syncs the file to disk before the rename,
// for large files that must survive a crash (checkpoint weights).
func CreateSync(path string, write func(f *os.File) error) error {
	return create(path, write, true)
}

// WriteFile is Write with the bytes of data.
func WriteFile(path string, data []byte) error {
	return create(path, bytesWriter(data), false)
}

// WriteFileSync is WriteFile that also syncs the data to disk before the
// rename, for files that must survive a crash (checkpoint records).
func WriteFileSync(path string, data []byte) error {
	return create(path, bytesWriter(data), true)
}

func bytesWriter(data []byte) func(*os.File) error {
	return func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}
}

func create(path string, write func(*os.File) error, sync bool) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+tempInfix+"*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	writing.Store(f.Name(), true)
	defer writing.Delete(f.Name())
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	if err := write(f); err != nil {
		return err
	}
	if err := f.Chmod(Mode); err != nil {
		return err
	}
	if sync {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// DirMode is the permission of a directory assembled under a temporary
// name and renamed into place: that of one os.MkdirAll(dir, 0o777) makes
// under the umask (0755 under the usual 022), where os.MkdirTemp makes it
// private.
var DirMode = 0o777 &^ umask

// MkdirTemp is os.MkdirTemp for a directory that is renamed into place
// when complete (a checkpoint, an export, a report): it gets DirMode, so
// that others on a shared machine read it as they read every file memo
// writes.
func MkdirTemp(dir, pattern string) (string, error) {
	tmp, err := os.MkdirTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, DirMode); err != nil {
		os.Remove(tmp)
		return "", err
	}
	td := &tempDir{}
	td.forget = AtInterrupt(func() {
		td.mu.Lock()
		defer td.mu.Unlock()
		if !td.done {
			os.RemoveAll(tmp)
			td.done = true
		}
	})
	tempDirs.Store(tmp, td)
	return tmp, nil
}

// tempDir is a directory MkdirTemp made: done once RenameDir moved it
// into place or an interrupt removed it, whichever came first (the lock
// keeps the two from running into each other: a removal halfway through
// a rename left half a directory in place).
type tempDir struct {
	mu     sync.Mutex
	done   bool
	forget func()
}

// tempDirs are MkdirTemp's directories not yet renamed into place.
var tempDirs sync.Map // path → *tempDir

// RenameDir renames tmp, a directory MkdirTemp made, to final, and
// forgets its removal on an interrupt. It fails when an interrupt
// removed tmp first. Any other directory is renamed as os.Rename does.
func RenameDir(tmp, final string) error {
	v, ok := tempDirs.LoadAndDelete(tmp)
	if !ok {
		return os.Rename(tmp, final)
	}
	td := v.(*tempDir)
	td.mu.Lock()
	defer td.mu.Unlock()
	if td.done {
		return fmt.Errorf("rename %s: removed on an interrupt", tmp)
	}
	td.done = true
	td.forget()
	return os.Rename(tmp, final)
}

// AtInterrupt registers fn for RemoveTemps to run: the clean-up of
// something other than a file this package writes (a temporary
// directory, a lock), which the deferred code of a process that exits at
// once on an interrupt never runs. forget unregisters it.
func AtInterrupt(fn func()) (forget func()) {
	id := nextCleanup.Add(1)
	cleanups.Store(id, fn)
	return func() { cleanups.Delete(id) }
}

var (
	cleanups    sync.Map // id → func()
	nextCleanup atomic.Int64
)

// Unwritable reports whether err says this process may not write where it
// tried: a permission refusal, or a read-only file system (EROFS, which
// fs.ErrPermission does not match). Callers that can go on without writing
// (a finished run in an archive, a cache another user owns) ask this
// rather than spelling out the pair.
func Unwritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// RemoveStale removes path, a file an earlier write left that must not
// outlive this one, and is nil when there is none: also on a read-only
// file system, where removing a missing file fails with EROFS rather than
// ENOENT and the error would name a file that never existed.
func RemoveStale(path string) error {
	if _, err := os.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove stale %s: %w", path, err)
	}
	return nil
}

// writing holds the temporary files of the writes in progress.
var writing sync.Map

// RemoveTemps removes the temporary files of the writes in progress and
// runs the clean-ups registered with AtInterrupt (MkdirTemp's directories
// among them): what a process that exits at once on an interrupt calls,
// since their own clean-ups never run then. A write it cuts short fails;
// none is renamed into place after it.
func RemoveTemps() {
	writing.Range(func(name, _ any) bool {
		os.Remove(name.(string))
		return true
	})
	cleanups.Range(func(_, fn any) bool {
		fn.(func())()
		return true
	})
}

// IsTemp reports whether name, a file name in the directory of a file named
// base, is a temporary file that a write of base left behind when its
// process died mid-write (a clean-up may remove it when no write runs).
func IsTemp(name, base string) bool {
	rest, ok := strings.CutPrefix(name, "."+base+tempInfix)
	return ok && digitsOnly(rest)
}

// IsTempName reports whether name is a temporary name of a write of any
// file: "."+base+tempInfix+digits with base not empty. A directory
// MkdirTemp made for a pattern "."+base+".tmp-" has such a name too.
func IsTempName(name string) bool {
	i := strings.LastIndex(name, tempInfix)
	return strings.HasPrefix(name, ".") && i > 1 && digitsOnly(name[i+len(tempInfix):])
}

// digitsOnly reports whether s is one or more decimal digits.
func digitsOnly(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}
