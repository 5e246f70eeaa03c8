package main

import (
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
)

// cpuProfile is the open --cpu-profile file while the profiler runs.
var cpuProfile *os.File

// startCPUProfile starts Go's CPU profiler into path. Time spent inside
// libtorch shows as runtime.cgocall under the Go function that called it,
// so a profile splits a step's host time into memo's Go, the Go runtime
// and libtorch.
func startCPUProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	cpuProfile = f
	return nil
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
		return fmt.Errorf("write --cpu-profile %s: %w", f.Name(), err)
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
