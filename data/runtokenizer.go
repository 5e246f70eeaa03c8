package data

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/memo-research/memo/internal/arrowsafe"
)

// OpenTokenizer loads the tokenizer of the dataset in dir (a run's data/)
// after checking tokenizer.json against the sha256 report.json recorded,
// as Open checks every file: generate and export read only the tokenizer,
// and must not trust one edited after the build more than extract does.
func OpenTokenizer(dir string) (*Tokenizer, error) {
	rep, err := ReadReport(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w: no report.json to verify tokenizer.json against (an incomplete build?)", dir, arrowsafe.ErrCorrupt)
	}
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "tokenizer.json")
	if len(rep.Files) > 0 {
		w, ok := rep.Files["tokenizer.json"]
		if !ok {
			return nil, fmt.Errorf("%s: %w: report.json records no checksum for tokenizer.json; rebuild it with `memo data build`", dir, arrowsafe.ErrCorrupt)
		}
		if err := verifyFile(path, w); err != nil {
			return nil, err
		}
	} else if err := verifyFiles(dir, nil); err != nil { // an older build: the same warning as Open
		return nil, err
	}
	return LoadTokenizer("hf:" + path)
}
