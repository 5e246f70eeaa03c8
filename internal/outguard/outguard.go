// Package outguard keeps a command's --out away from files memo wrote for
// another purpose: a checkpoint's directory, a run's dataset, a run's own
// configuration and results. The stages decide which of their own outputs
// may be replaced (the same attack, the same scoring); this package knows
// the places no stage output may go.
package outguard

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/memo-research/memo/internal/badinput"
)

// Files that mark a directory as something other than a place for results.
const (
	checkpointState = "state.json"        // checkpoint.StateFile: a checkpoint directory
	checkpointModel = "model.safetensors" // checkpoint.ModelFile
	dataTokens      = "tokens.arrow"      // a run's data/ (data.Build)
	dataDocs        = "docs.arrow"
	runConfig       = "config.toml" // a run directory (memo run)
)

// Exists reports whether path names anything, a dangling link included.
func Exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// Place refuses to write a result file into dir when dir is a checkpoint
// directory or a run's dataset; flag names the option that chose it.
func Place(flag, dir string) error {
	for _, f := range []struct{ file, what string }{
		{checkpointState, "a checkpoint directory"},
		{checkpointModel, "a checkpoint directory"},
		{dataTokens, "a run's data directory"},
		{dataDocs, "a run's data directory"},
	} {
		if Exists(filepath.Join(dir, f.file)) {
			return badinput.Errorf("%s: %s is %s (it holds %s); results never go there: name a file elsewhere", flag, dir, f.what, f.file)
		}
	}
	return nil
}

// IsRunDir reports whether dir is a run directory (memo run wrote its
// config.toml there).
func IsRunDir(dir string) bool { return Exists(filepath.Join(dir, runConfig)) }

// Same reports whether two paths name the same file, by their cleaned
// absolute forms.
func Same(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return aa == bb
}
