//go:build cuda

package torchx

// #include <stdlib.h>
// #include "gpumem.h"
// int memo_gpu_name(int index, char *buf, int len);
import "C"

import (
	"unsafe"

	"github.com/memo-research/memo/internal/gpupeak"
)

// The CUDA name reaches gpupeak's callers (the manifest, memo bench)
// through gpupeak.DeviceName, so that a CPU build's torchx has no stub.
func init() { gpupeak.DeviceName = GPUName }

// GPUMemory is the total memory in bytes of GPU index, as CUDA reports it;
// 0 when it cannot tell.
func GPUMemory(index int) int64 { return int64(C.memo_gpu_total_memory(C.int(index))) }

// GPUPeakAllocated is the most bytes of tensors libtorch's caching
// allocator held on GPU index at once so far in this process (what
// torch.cuda.max_memory_allocated reports); 0 when it cannot tell.
func GPUPeakAllocated(index int) int64 { return int64(C.memo_gpu_peak_allocated(C.int(index))) }

// GPUName is GPU index's name as CUDA reports it (cudaDeviceProp.name,
// e.g. "NVIDIA H100 80GB HBM3"); "" when it cannot tell.
func GPUName(index int) string {
	buf := (*C.char)(C.malloc(256))
	defer C.free(unsafe.Pointer(buf))
	if C.memo_gpu_name(C.int(index), buf, 256) == 0 {
		return ""
	}
	return C.GoString(buf)
}
