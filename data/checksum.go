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

// sumFiles computes the FileSum of each checksummed file in dir.
func sumFiles(dir string) (map[string]FileSum, error) {
	sums := make(map[string]FileSum, len(checksummedFiles))
	for _, name := range checksummedFiles {
		s, err := sumFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		sums[name] = s
	}
	return sums, nil
}

func sumFile(path string) (FileSum, error) {
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

// verified remembers files already checked in this process by path, size
// and modification time, so a run that opens its dataset once per stage
// hashes each file once.
var verified sync.Map // verifiedKey -> struct{}

type verifiedKey struct {
	path  string
	size  int64
	mtime time.Time
	sum   string
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
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path)
		if err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		if fi.Size() != w.Bytes {
			return fmt.Errorf("%s: %w: %d bytes, report.json says %d: the file changed after the build; rebuild it with `memo data build`", path, arrowsafe.ErrCorrupt, fi.Size(), w.Bytes)
		}
		key := verifiedKey{path, fi.Size(), fi.ModTime(), w.SHA256}
		if _, ok := verified.Load(key); ok {
			continue
		}
		got, err := sumFile(path)
		if err != nil {
			return err
		}
		if got.SHA256 != w.SHA256 {
			return fmt.Errorf("%s: %w: sha256 %.12s..., report.json says %.12s...: the file changed after the build; rebuild it with `memo data build`", path, arrowsafe.ErrCorrupt, got.SHA256, w.SHA256)
		}
		verified.Store(key, struct{}{})
	}
	return nil
}
