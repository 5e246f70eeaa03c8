package main

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/memo-research/memo/data"
	"github.com/memo-research/memo/internal/atomicfile"
	"github.com/memo-research/memo/internal/badinput"
	"github.com/memo-research/memo/internal/outguard"
)

// cpuProfile is the open --cpu-profile file while the profiler runs: a
// temporary name beside cpuProfilePath, renamed when the profile ends, so
// that a profile never stopped (a usage error's exit) is not taken for
// a finished one.
var (
	cpuProfile     *os.File
	cpuProfilePath string
)

// startCPUProfile starts Go's CPU profiler into path. Time spent inside
// libtorch shows as runtime.cgocall under the Go function that called it,
// so a profile splits a step's host time into memo's Go, the Go runtime
// and libtorch.
func startCPUProfile(path string) error {
	if err := checkProfilePath(path); err != nil {
		return usageError("--cpu-profile %s: %v", path, err)
	}
	// A file that cannot be written is a failure (exit 1), as every
	// command's unwritable output is; the guard's refusals are bad input.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		// The temporary name is not the user's.
		return fmt.Errorf("--cpu-profile %s: %w", path, badinput.PathCause(err))
	}
	if err := f.Chmod(atomicfile.Mode); err != nil { // as os.Create makes it
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("--cpu-profile %s: %w", path, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return fmt.Errorf("--cpu-profile %s: %w", path, err)
	}
	cpuProfile, cpuProfilePath = f, path
	return nil
}

// abandonCPUProfile stops a running profile and removes it: the command
// ended on a usage error before doing its work.
func abandonCPUProfile() {
	if cpuProfile == nil {
		return
	}
	pprof.StopCPUProfile()
	cpuProfile.Close()
	os.Remove(cpuProfile.Name())
	cpuProfile = nil
}

// stopCPUProfile ends the profile started by startCPUProfile, if any.
func stopCPUProfile() error {
	if cpuProfile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	f := cpuProfile
	cpuProfile = nil
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write --cpu-profile %s: %w", cpuProfilePath, err)
	}
	if err := os.Rename(f.Name(), cpuProfilePath); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("write --cpu-profile %s: %w", cpuProfilePath, err)
	}
	return nil
}

// restartCPUProfile starts a running --cpu-profile over, empty: memo bench
// calls it after its warm-up, so that the profile shows the measured
// steps alone.
func restartCPUProfile() {
	if cpuProfile == nil {
		return
	}
	pprof.StopCPUProfile()
	if err := cpuProfile.Truncate(0); err != nil {
		slog.Warn("--cpu-profile: could not start it over after the warm-up", "err", err)
	} else if _, err := cpuProfile.Seek(0, 0); err != nil {
		slog.Warn("--cpu-profile: could not start it over after the warm-up", "err", err)
	}
	if err := pprof.StartCPUProfile(cpuProfile); err != nil {
		slog.Warn("--cpu-profile: profiling stopped", "err", err)
	}
}

// checkProfilePath keeps --cpu-profile to the guard's rule: it may replace
// only a CPU profile (or the empty file a profile interrupted before its
// end leaves), never through a dangling link, and never goes into a place
// memo made for something else (a checkpoint, a run's data/ or
// checkpoints/, the cache).
func checkProfilePath(path string) error {
	if where := outguard.Inside(path, data.ResolveCacheDir("")); where != "" {
		return fmt.Errorf("is in %s; a profile never goes there: name a file elsewhere", where)
	}
	if !outguard.Exists(path) {
		if dir := filepath.Dir(path); !isDir(dir) {
			return fmt.Errorf("directory %s does not exist", dir)
		}
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("is a link to nothing (%v); name a new file or a profile to replace", err)
	case st.IsDir():
		return errors.New("is a directory; want a FILE")
	case !st.Mode().IsRegular():
		return errors.New("is not a regular file; want a FILE")
	case st.Size() > 0 && !isCPUProfile(path):
		return errors.New("exists and is not a CPU profile; --cpu-profile replaces only a profile: name a new file")
	}
	return nil
}

// isCPUProfile reports whether path holds what runtime/pprof writes: a
// gzip stream of a profile.proto message, its first bytes (up to 512)
// each a field of that message with the field's wire type.
func isCPUProfile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return false
	}
	head, err := io.ReadAll(io.LimitReader(z, 512))
	if err != nil && len(head) == 0 {
		return false
	}
	return profileFields(head)
}

// profileWire is the wire type of each field of pprof's Profile message
// (0 varint, 2 length-delimited); 13 (comment) may be either.
var profileWire = map[uint64]uint64{1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 7: 0, 8: 0, 9: 0, 10: 0, 11: 2, 12: 0, 13: 2, 14: 0}

// profileFields reports whether b, a prefix of a message, starts with one
// or more Profile fields and holds nothing else (a field cut off at the
// end of b included).
func profileFields(b []byte) bool {
	n := 0
	for len(b) > 0 {
		key, k := binary.Uvarint(b)
		if k <= 0 {
			return k == 0 && n > 0 // cut off
		}
		b = b[k:]
		field, wire := key>>3, key&7
		want, ok := profileWire[field]
		if !ok || (wire != want && !(field == 13 && wire == 0)) {
			return false
		}
		v, k := binary.Uvarint(b)
		if k < 0 {
			return false
		}
		if k == 0 {
			return true // cut off
		}
		b = b[k:]
		if wire == 2 {
			if v >= uint64(len(b)) {
				return true // runs past the bytes read
			}
			b = b[v:]
		}
		n++
	}
	return n > 0
}
