package torchx

// #include <stdlib.h>
// #include "kernels.h"
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"unsafe"

	lib "github.com/sugarme/gotch/libtch"
	"github.com/sugarme/gotch/ts"
)

// Decode-step kernels (kernels.cpp): a product of a few rows by a weight
// matrix and single-query attention over a KV cache, each reading its
// weights, keys and values once where they lie, instead of libtorch's
// OpenBLAS calls that first copy all of them into a packed layout. They
// need AVX2 and FMA, float32 CPU tensors and gradients off; otherwise the
// callers take libtorch's general path. Their sums run in a fixed order
// independent of the batch, which differs from OpenBLAS's, so logits differ
// from the general path's in the last bits (see model's tests).

// MaxKernelRows is the most rows Linear sends to its kernel.
const MaxKernelRows = C.MEMO_LINEAR_MAX_ROWS

// kernelsOff is set by MEMO_KERNELS=off, or SetKernels(false): the
// general path everywhere, to compare with.
var kernelsOff atomic.Bool

func init() { kernelsOff.Store(os.Getenv("MEMO_KERNELS") == "off") }

// KernelsEnabled reports whether the decode-step kernels run: this CPU has
// AVX2 and FMA, and they were not turned off.
func KernelsEnabled() bool { return !kernelsOff.Load() && C.memo_kernels_supported() == 1 }

// SetKernels turns the decode-step kernels on or off for the process and
// returns the previous setting; tests that compare two paths bit for bit
// turn them off.
func SetKernels(on bool) (was bool) { return !kernelsOff.Swap(!on) }

func ctensorOf(t *ts.Tensor) unsafe.Pointer {
	if t == nil {
		return nil
	}
	return t.Ctensor()
}

// kernelResult wraps what a kernel returned: a new tensor, or nil (not
// applicable) and maybe an error message, which panics like gotch's Must
// functions, since it means libtorch failed on valid tensors.
func kernelResult(name string, p unsafe.Pointer, e *C.char) (*ts.Tensor, bool) {
	if e != nil {
		panic(fmt.Sprintf("%s: %v", name, cErr(e)))
	}
	if p == nil {
		return nil, false
	}
	return ts.New(lib.Ctensor(p)), true
}

// LinearRows is x·wᵀ (+ bias when not nil) for x [..., K] of at most
// MaxKernelRows rows, w [N, K], computed by the kernel; ok is false, and
// nothing computed, when the kernel does not apply (see above), or K is
// not a multiple of 8.
func LinearRows(x, w, bias *ts.Tensor) (out *ts.Tensor, ok bool) {
	if kernelsOff.Load() {
		return nil, false
	}
	var e *C.char
	p := C.memo_linear_rows(x.Ctensor(), w.Ctensor(), ctensorOf(bias), &e)
	runtime.KeepAlive(x)
	runtime.KeepAlive(w)
	runtime.KeepAlive(bias)
	return kernelResult("linear", p, e)
}

// AttendOne is softmax(q·kᵀ·scale + mask)·v for one query per row and
// head: q [B,H,1,hd], k and v [B,KV,S,hd] with KV dividing H (query head
// h reads key/value head h/(H/KV)) whose last two dimensions are packed,
// as a narrowed cache's are; mask nil or [B,1,1,S]. The softmax is
// libtorch's. ok is false when the kernel does not apply.
func AttendOne(q, k, v, mask *ts.Tensor, scale float64) (out *ts.Tensor, ok bool) {
	if kernelsOff.Load() {
		return nil, false
	}
	var e *C.char
	p := C.memo_attend_one(q.Ctensor(), k.Ctensor(), v.Ctensor(), ctensorOf(mask), C.double(scale), &e)
	runtime.KeepAlive(q)
	runtime.KeepAlive(k)
	runtime.KeepAlive(v)
	runtime.KeepAlive(mask)
	return kernelResult("attention", p, e)
}
