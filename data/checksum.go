package data

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// FileSum is one dataset file's size and sha256, recorded in report.json
// when the dataset is built and checked whenever it is opened.
type FileSum struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// checksummedFiles are the files report.json vouches for. The Arrow readers
// catch damage that breaks a file's structure, but a flipped byte inside a
// string or an id that stays in range reads as valid data; only a checksum
// tells it from what was built.
var checksummedFiles = []string{"docs.arrow", "tokens.arrow", "tokenizer.json"}

// sumFiles computes the FileSum of each checksummed file in dir. The files
// count as verified in this process: the build that hashed them need not
// hash them again when a later stage opens the dataset.
func sumFiles(dir string) (map[string]FileSum, error) {
	sums := make(map[string]FileSum, len(checksummedFiles))
	for _, name := range checksummedFiles {
		path := filepath.Join(dir, name)
		s, err := sumFile(path)
		if err != nil {
			return nil, err
		}
		sums[name] = s
		if fi, err := os.Stat(path); err == nil && fi.Size() == s.Bytes {
			verified.Store(keyOf(path, fi, s.SHA256), struct{}{})
		}
	}
	return sums, nil
}

// sumFileCalls counts sumFile's hashes (tests check that a build and the
// stages after it hash each file once).
var sumFileCalls atomic.Int64

func sumFile(path string) (FileSum, error) {
	sumFileCalls.Add(1)
	f, err := os.Open(path)
	if err != nil {
		return FileSum{}, fmt.Errorf("checksum %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return FileSum{}, fmt.Errorf("checksum %s: %w", path, err)
	}
	return FileSum{Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// verified remembers files already hashed in this process by file identity
// (device and inode), size and modification time, so a run that builds its
// dataset and opens it once per stage hashes each file once. The identity
// is the inode rather than the path because the dataset cache moves a
// finished build from its temporary directory to its entry and hard-links it
// into runs: other paths, the same file.
var verified sync.Map // verifiedKey -> struct{}

type verifiedKey struct {
	dev, ino uint64
	path     string // only where the system gives no inode
	size     int64
	mtime    time.Time
	sum      string
}

func keyOf(path string, fi os.FileInfo, sum string) verifiedKey {
	k := verifiedKey{size: fi.Size(), mtime: fi.ModTime(), sum: sum}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.dev, k.ino = uint64(st.Dev), uint64(st.Ino)
	} else {
		k.path = path
	}
	return k
}

// verifyFiles checks dir's files against the sums report.json recorded. A
// dataset built before memo recorded sums is accepted with a warning.
func verifyFiles(dir string, want map[string]FileSum) error {
	if len(want) == 0 {
		slog.Warn("data: report.json records no checksums (built by an older memo); its files are not verified", "dir", dir)
		return nil
	}
	for _, name := range checksummedFiles {
		w, ok := want[name]
		if !ok {
			return fmt.Errorf("%s: %w: report.json records no checksum for %s; rebuild it with `memo data build`", dir, arrowsafe.ErrCorrupt, name)
		}
		if err := verifyFile(filepath.Join(dir, name), w); err != nil {
			return err
		}
	}
	return nil
}

// verifyFile checks one dataset file against the size and sha256
// report.json recorded for it (hashing it once per process).
func verifyFile(path string, w FileSum) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if fi.Size() != w.Bytes {
		return fmt.Errorf("%s: %w: %d bytes, report.json says %d: the file changed after the build; rebuild it with `memo data build`", path, arrowsafe.ErrCorrupt, fi.Size(), w.Bytes)
	}
	key := keyOf(path, fi, w.SHA256)
	if _, ok := verified.Load(key); ok {
		return nil
	}
	got, err := sumFile(path)
	if err != nil {
		return err
	}
	if got.SHA256 != w.SHA256 {
		return fmt.Errorf("%s: %w: sha256 %.12s..., report.json says %.12s...: the file changed after the build; rebuild it with `memo data build`", path, arrowsafe.ErrCorrupt, got.SHA256, w.SHA256)
	}
	verified.Store(key, struct{}{})
	return nil
}
