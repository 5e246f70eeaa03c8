//go:build cuda

package torchx

// #include "gpumem.h"
import "C"

// GPUMemory is the total memory in bytes of GPU index, as CUDA reports it;
// 0 when it cannot tell.
func GPUMemory(index int) int64 { return int64(C.memo_gpu_total_memory(C.int(index))) }

// GPUPeakAllocated is the most bytes of tensors libtorch's caching
// allocator held on GPU index at once so far in this process (what
// torch.cuda.max_memory_allocated reports); 0 when it cannot tell.
func GPUPeakAllocated(index int) int64 { return int64(C.memo_gpu_peak_allocated(C.int(index))) }
