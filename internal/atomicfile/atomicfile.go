// Package atomicfile writes files through a temporary file and a rename, so
// that a reader sees the old file or the whole new one, never part of one.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Mode is the permission of every file written: readable by all, as
// os.WriteFile(path, data, 0o644) gives under the usual umask. (The
// temporary file os.CreateTemp makes is 0600.)
const Mode os.FileMode = 0o644

// Write creates or replaces path: write fills a temporary file beside it
// (the directory is made if missing), and only when write succeeds is the
// file given Mode and renamed into place. On error nothing is left behind.
func Write(path string, write func(w io.Writer) error) error {
	return create(path, write, false)
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

func bytesWriter(data []byte) func(io.Writer) error {
	return func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
}

func create(path string, write func(io.Writer) error, sync bool) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
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
