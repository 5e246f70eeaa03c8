//go:build cuda

package torchx

// #include "gpumem.h"
import "C"

// GPUMemory is the total memory in bytes of GPU index, as CUDA reports it;
// 0 when it cannot tell.
func GPUMemory(index int) int64 { return int64(C.memo_gpu_total_memory(C.int(index))) }
