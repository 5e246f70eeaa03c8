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
	"strings"
	"syscall"

	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/runfiles"
)

// Files that mark a directory as something other than a place for results.
const (
	checkpointState = "state.json"        // checkpoint.StateFile: a checkpoint directory
	checkpointModel = "model.safetensors" // checkpoint.ModelFile
	dataTokens      = "tokens.arrow"      // a run's data/ (data.Build)
	dataDocs        = "docs.arrow"
	runConfig       = runfiles.ConfigFile // a run directory (memo run)
)

// Exists reports whether path names anything, a dangling link included.
// A path it cannot look at (permission denied) counts as taken, so that a
// guard refuses rather than overwrite; one under a file (ENOTDIR) names
// nothing, and the write that follows says why it cannot be made.
func Exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR)
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

// Places memo makes for one purpose, which no other output may go into.
const (
	checkpointsDir = "checkpoints" // a run's checkpoints (checkpoint.DirName)
	runDataDir     = "data"        // a run's dataset (memo run's stage data)
	cacheEntry     = "entry.json"  // a dataset-cache entry (data's entryFile)
)

// cacheSubdirs are the directories memo keeps under a cache root: the
// dataset cache, the fetched corpora, trained tokenizers and reference
// models. The root itself may hold anything else (runs, a user's files).
var cacheSubdirs = []string{"datasets", "corpora", "tokenizers", "references"}

// Inside says what memo-made place path is or lies in, "" for none: a
// checkpoint directory, a run's checkpoints/ or data/, or one of the
// directories memo keeps under a cache root (caches lists the roots in
// use; a dataset-cache entry is known by its entry.json wherever it is).
// Symlinks are resolved first, of path and of every directory above it,
// so a link cannot lead a write into such a place. Path need not exist.
func Inside(path string, caches ...string) string {
	p := Resolve(path)
	var roots []string
	for _, c := range caches {
		if c == "" {
			continue
		}
		r := Resolve(c)
		for _, s := range cacheSubdirs {
			roots = append(roots, filepath.Join(r, s))
		}
	}
	for d := p; ; d = filepath.Dir(d) {
		if st, err := os.Stat(d); err == nil && !st.IsDir() || err != nil && !errors.Is(err, fs.ErrNotExist) {
			continue // a file, or below one: the markers are a directory's
		}
		for _, r := range roots {
			if d == r {
				return "the cache's " + filepath.Base(r) + "/ (" + r + ")"
			}
		}
		switch {
		case Exists(filepath.Join(d, cacheEntry)) && filepath.Base(filepath.Dir(d)) == "datasets":
			return "a dataset-cache entry (" + d + ")"
		case Exists(filepath.Join(d, checkpointState)) || Exists(filepath.Join(d, checkpointModel)):
			return "a checkpoint directory (" + d + ")"
		case Exists(filepath.Join(d, dataTokens)) || Exists(filepath.Join(d, dataDocs)):
			return "a run's data directory (" + d + ")"
		case (filepath.Base(d) == checkpointsDir || filepath.Base(d) == runDataDir) && IsRunDir(filepath.Dir(d)):
			return "a run's " + filepath.Base(d) + "/ (" + d + ")"
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// Resolve is path made absolute with every symlink resolved, of path
// itself and the directories above it, as far as they exist (the rest,
// not yet made, is appended as it is). A dangling symlink stays as it is.
func Resolve(path string) string {
	p, err := filepath.Abs(path)
	if err != nil {
		p = filepath.Clean(path)
	}
	var rest []string
	for d := p; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			return filepath.Join(append([]string{r}, rest...)...)
		}
		if filepath.Dir(d) == d {
			return p
		}
		rest = append([]string{filepath.Base(d)}, rest...)
	}
}

// Claim says why a command may not write into dir, a directory it makes
// for one purpose and marks with one of markers (files it writes there:
// a sweep's sweep.json, a report's table.md); "" when it may. Dir may be
// written into only when it is new (absent, or an empty directory) or
// holds a marker, so a name that is already something else (a single
// run's directory for a sweep, a user's folder) is refused. Dir itself
// may not be a symlink: a link would lead the writes wherever it points,
// out of the tree whose files the command owns. Without markers any
// existing directory that is no link will do. The places Inside knows
// are refused first.
func Claim(dir string, markers []string, caches ...string) string {
	if where := Inside(dir, caches...); where != "" {
		return "is in " + where
	}
	st, err := os.Lstat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ""
	case err != nil:
		return err.Error()
	case st.Mode()&fs.ModeSymlink != 0:
		return "is a symlink; memo writes only into a directory it made there"
	case !st.IsDir():
		return "is a file, not a directory"
	}
	if len(markers) == 0 {
		return ""
	}
	for _, m := range markers {
		if Exists(filepath.Join(dir, m)) {
			return ""
		}
	}
	if IsRunDir(dir) {
		return "is a run's directory (it holds " + runConfig + ")"
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) == 0 {
		return ""
	}
	return "exists and memo did not make it for this (it holds no " + strings.Join(markers, " or ") + ")"
}
