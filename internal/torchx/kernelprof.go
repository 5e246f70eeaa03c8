package torchx

// #include <stdlib.h>
// #include "kernelprof.h"
import "C"

import (
	"fmt"
	"sort"
	"unsafe"
)

// KernelTime is one name's time while profiling (ProfileKernels): a CUDA
// kernel's on the device, or on the CPU an operator's on the profiling
// thread, including the operators it calls.
type KernelTime struct {
	Device string  `json:"device"` // "cuda" or "cpu"
	Name   string  `json:"name"`
	Calls  int64   `json:"calls"`
	Secs   float64 `json:"seconds"`
}

// KernelProfile is what libtorch's Kineto profiler recorded, by name,
// the most time first.
type KernelProfile []KernelTime

// DeviceSeconds is the time of the profile's entries on device ("cuda",
// "cpu"); on the CPU nested operators count in their callers' time too,
// so there the sum is no wall time.
func (p KernelProfile) DeviceSeconds(device string) float64 {
	s := 0.0
	for _, k := range p {
		if k.Device == device {
			s += k.Secs
		}
	}
	return s
}

// Top is the first n entries on device (all with n <= 0).
func (p KernelProfile) Top(device string, n int) KernelProfile {
	var out KernelProfile
	for _, k := range p {
		if k.Device == device && (n <= 0 || len(out) < n) {
			out = append(out, k)
		}
	}
	return out
}

// ProfileKernels runs fn under libtorch's Kineto profiler (a
// KernelProfiler around it).
func ProfileKernels(cuda bool, fn func() error) (KernelProfile, error) {
	var p KernelProfiler
	if err := p.Start(cuda); err != nil {
		return nil, err
	}
	err := fn()
	prof, perr := p.Stop()
	if err == nil {
		err = perr
	}
	return prof, err
}

// KernelProfiler records, between Start and Stop, every CUDA kernel (with
// cuda set; CUPTI sees kernels launched from any thread) and the libtorch
// operators the starting thread runs, which must stay one OS thread
// (runtime.LockOSThread). Profiling slows the host's calls, so rates
// measured meanwhile are not the unprofiled ones; the kernels' device
// times are their own. One profile at a time in a process. Stop returns
// nil when Start was not called, and stops a started profile once, so a
// deferred Stop ends one that an error path left running.
type KernelProfiler struct{ on bool }

// Start starts recording.
func (p *KernelProfiler) Start(cuda bool) error {
	var e *C.char
	on := C.int(0)
	if cuda {
		on = 1
	}
	if C.memo_kernelprof_start(on, &e) != 0 {
		return fmt.Errorf("profile kernels: %v", cErr(e))
	}
	p.on = true
	return nil
}

// Stop ends a started profile and returns what it recorded, by name.
func (p *KernelProfiler) Stop() (KernelProfile, error) {
	if !p.on {
		return nil, nil
	}
	p.on = false
	var e *C.char
	text := C.memo_kernelprof_stop(&e)
	if text == nil {
		return nil, fmt.Errorf("profile kernels: %v", cErr(e))
	}
	defer C.free(unsafe.Pointer(text))
	return parseKernelProfile(C.GoString(text))
}

// parseKernelProfile reads memo_kernelprof_stop's lines: device, name,
// events, total nanoseconds, tab-separated.
func parseKernelProfile(text string) (KernelProfile, error) {
	out := KernelProfile{}
	lines, err := parseTallies(text, "kernel profile", "events and nanoseconds")
	if err != nil {
		return out, err
	}
	for _, l := range lines {
		out = append(out, KernelTime{Device: l.kind, Name: l.name, Calls: l.a, Secs: float64(l.b) / 1e9})
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Secs != out[j].Secs {
			return out[i].Secs > out[j].Secs
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}
