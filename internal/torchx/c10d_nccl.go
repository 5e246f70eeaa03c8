//go:build cuda

// Compiled and linked against PyTorch 2.11.0+cu130's headers and exported
// symbols (../shared/gpu/build-for-gpu.sh); not yet run on GPUs. It needs a
// CUDA libtorch built with NCCL.

package torchx

// #cgo CPPFLAGS: -DUSE_C10D_NCCL
// #cgo LDFLAGS: -Wl,--push-state,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--pop-state
// #include <stdlib.h>
// #include "c10d.h"
import "C"

import (
	"time"
	"unsafe"
)

// NewNCCL joins an NCCL group (tensors must be on this rank's GPU).
func NewNCCL(addr string, port, rank, size int, timeout time.Duration) (*ProcessGroup, error) {
	ca := C.CString(addr)
	defer C.free(unsafe.Pointer(ca))
	var e *C.char
	p := C.memo_pg_new_nccl(ca, C.int(port), C.int(rank), C.int(size), C.int64_t(timeout.Milliseconds()), &e)
	if p == nil {
		return nil, cErr(e)
	}
	return &ProcessGroup{p: p, rank: rank, size: size}, nil
}
