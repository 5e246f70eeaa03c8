package torchx

// #include <stdlib.h>
// #include "fused.h"
import "C"

import (
	"runtime"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// FusedRMSNormAvailable reports whether this libtorch has the fused RMSNorm
// kernel RMSNorm uses on a GPU.
func FusedRMSNormAvailable() bool { return C.memo_fused_rms_norm_available() == 1 }

// RMSNorm is x / sqrt(mean(x²) + eps) · w over x's last dimension, the
// mean taken in float32 (so a bfloat16 x gives a float32 result); with
// offset the gain is w + 1, as Gemma stores it. It runs libtorch's
// square, mean, add, rsqrt, mul, mul in one Go → C call (fused.cpp):
// the same ops gotch would call one by one, so results and gradients are
// bit-identical to that composition, at a sixth of the host round trips.
// On a GPU, a float32 x and w go through libtorch's fused RMSNorm kernel
// instead (2.9 and later; MEMO_FUSED_NORM=off in the environment keeps the
// composition): one pass over x each way, equal to the composition within
// float32 rounding (FusedRMSNormAvailable). Panics, like gotch's Must
// functions, if libtorch fails.
func RMSNorm(x, w *ts.Tensor, eps float64, offset bool) *ts.Tensor {
	off := C.int(0)
	if offset {
		off = 1
	}
	var e *C.char
	p := C.memo_rms_norm(x.Ctensor(), w.Ctensor(), C.double(eps), off, &e)
	runtime.KeepAlive(x)
	runtime.KeepAlive(w)
	return fusedResult("rms_norm", p, e)
}

// fusedResult wraps a fused op's new tensor, panicking with libtorch's
// message when it failed (these ops always apply, unlike the kernels).
func fusedResult(name string, p unsafe.Pointer, e *C.char) *ts.Tensor {
	t, ok := kernelResult(name, p, e)
	if !ok {
		panic(name + ": libtorch returned no tensor")
	}
	return t
}
