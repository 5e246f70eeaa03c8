//go:build cuda

// The GPU's memory as CUDA reports it, for sizing batches (CUDA builds
// only: it needs the CUDA headers, as c10d_nccl.cpp does).
#include <ATen/cuda/CUDAContext.h>

#include "gpumem.h"

extern "C" int64_t memo_gpu_total_memory(int index) {
  try {
    return static_cast<int64_t>(at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index))->totalGlobalMem);
  } catch (const std::exception &) {
    return 0;
  }
}
