package main

import (
	"fmt"
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
