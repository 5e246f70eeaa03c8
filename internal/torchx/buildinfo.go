package torchx

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"strings"
	"unsafe"
)

// Kernels says which CPU code paths libtorch takes on this machine: they
// decide the last bits of float results, so two machines agree exactly only
// when these do (and the thread count does).
type Kernels struct {
	// CPUCapability is the instruction set ATen's vectorized kernels
	// dispatch to ("AVX2", "AVX512", "DEFAULT"; ATEN_CPU_CAPABILITY can
	// lower it).
	CPUCapability string `json:"cpu_capability,omitempty"`
	// BLAS is the BLAS libtorch was built with ("open", "mkl", ...), from
	// its BLAS_INFO.
	BLAS string `json:"blas,omitempty"`
	// BLASCore is the kernel OpenBLAS chose for this CPU ("Haswell",
	// "SkylakeX", "Cooperlake"), when OpenBLAS is loaded.
	BLASCore string `json:"blas_core,omitempty"`
}

// CPUKernels reads Kernels from libtorch's show_config and OpenBLAS.
func CPUKernels() Kernels {
	p := C.memo_show_config()
	cfg := C.GoString(p)
	C.free(unsafe.Pointer(p))
	k := parseShowConfig(cfg)
	if core := C.memo_openblas_core(); core != nil {
		k.BLASCore = strings.TrimSpace(C.GoString(core))
	}
	return k
}

// parseShowConfig picks the CPU capability and BLAS out of at::show_config().
func parseShowConfig(cfg string) Kernels {
	var k Kernels
	for _, line := range strings.Split(cfg, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "- CPU capability usage:"); ok {
			k.CPUCapability = strings.TrimSpace(v)
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool { return r == ',' || r == ' ' }) {
			if v, ok := strings.CutPrefix(f, "BLAS_INFO="); ok {
				k.BLAS = v
			}
		}
	}
	return k
}
