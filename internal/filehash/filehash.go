// Package filehash digests files: the checkpoint manifest, a run's
// recorded stage outputs and the pinned downloads all name a file by the
// sha256 of its bytes.
package filehash

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
)

// SHA256 is the hex sha256 of the file at path. An error opening it is
// returned as is; one reading it names the path.
func SHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
