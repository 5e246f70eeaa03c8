package torchx

// #include <stdlib.h>
// #include "optim.h"
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/sugarme/gotch/ts"
)

// FusedAdamWAvailable reports whether this libtorch has PyTorch's fused
// AdamW kernel (libtorch 2.1 and later; not Debian's 1.13).
func FusedAdamWAvailable() bool { return C.memo_fused_adamw_available() == 1 }

// AdamWHyper are one AdamW update's hyperparameters: Step is the update's
// number from 1, for the bias corrections.
type AdamWHyper struct {
	Step                         int
	LR, Beta1, Beta2, Decay, Eps float64
}

// ptrList copies tensors' C handles into C memory, which cgo lets C keep
// reading during the call (a Go slice of pointers it would not).
func ptrList(tensors []*ts.Tensor) (unsafe.Pointer, func()) {
	size := C.size_t(len(tensors)) * C.size_t(unsafe.Sizeof(uintptr(0)))
	mem := C.malloc(max(size, 1))
	arr := unsafe.Slice((*unsafe.Pointer)(mem), len(tensors))
	for i, t := range tensors {
		arr[i] = t.Ctensor()
	}
	return mem, func() { C.free(mem) }
}

// FusedAdamW updates params (and their moments m and v) in place from
// grads with one fused AdamW step, all decayed by h.Decay. ok is false when
// this libtorch lacks the kernel; nothing is changed then.
func FusedAdamW(params, grads, m, v []*ts.Tensor, h AdamWHyper) (ok bool, err error) {
	n := len(params)
	if len(grads) != n || len(m) != n || len(v) != n {
		return false, fmt.Errorf("fused AdamW: %d params, %d grads, %d and %d moments", n, len(grads), len(m), len(v))
	}
	pp, f1 := ptrList(params)
	defer f1()
	pg, f2 := ptrList(grads)
	defer f2()
	pm, f3 := ptrList(m)
	defer f3()
	pv, f4 := ptrList(v)
	defer f4()
	var e *C.char
	rc := C.memo_fused_adamw((*unsafe.Pointer)(pp), (*unsafe.Pointer)(pg), (*unsafe.Pointer)(pm), (*unsafe.Pointer)(pv),
		C.int64_t(n), C.int64_t(h.Step), C.double(h.LR), C.double(h.Beta1), C.double(h.Beta2), C.double(h.Decay),
		C.double(h.Eps), &e)
	runtime.KeepAlive(params)
	runtime.KeepAlive(grads)
	runtime.KeepAlive(m)
	runtime.KeepAlive(v)
	if rc < 0 {
		return false, fmt.Errorf("fused AdamW: %v", cErr(e))
	}
	return rc == 1, nil
}

// ClearGrads drops the tensors' gradients (zero_grad(set_to_none=True)):
// the next backward pass gives each its gradient as a new tensor rather
// than adding it to a zeroed one, which saves writing zeros over every
// gradient and reading them back.
func ClearGrads(tensors []*ts.Tensor) {
	p, free := ptrList(tensors)
	defer free()
	C.memo_clear_grads((*unsafe.Pointer)(p), C.int64_t(len(tensors)))
	runtime.KeepAlive(tensors)
}

// ForeachGradNorm is the L2 norm of all grads together, and when clip > 0
// and the norm exceeds it scales them in place by clip/(norm+1e-6), in
// libtorch's multi-tensor kernels. ok is false when this libtorch lacks
// them (1.13); nothing is changed then.
func ForeachGradNorm(grads []*ts.Tensor, clip float64) (norm float64, ok bool, err error) {
	pg, free := ptrList(grads)
	defer free()
	var e *C.char
	var out C.double
	rc := C.memo_foreach_grad_norm((*unsafe.Pointer)(pg), C.int64_t(len(grads)), C.double(clip), &out, &e)
	runtime.KeepAlive(grads)
	if rc < 0 {
		return 0, false, fmt.Errorf("gradient norm: %v", cErr(e))
	}
	return float64(out), rc == 1, nil
}
