//go:build cuda

// The GPU's memory as CUDA reports it, for sizing batches, and what
// libtorch's caching allocator has handed out, for reporting (CUDA builds
// only: it needs the CUDA headers, as c10d_nccl.cpp does).
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>

#include <cstring>

#include "gpumem.h"

extern "C" int64_t memo_gpu_total_memory(int index) {
  try {
    return static_cast<int64_t>(at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index))->totalGlobalMem);
  } catch (const std::exception &) {
    return 0;
  }
}

// The most bytes of tensors live on GPU index at once since the process
// began (torch.cuda.max_memory_allocated): what a model and its work
// needed, without the allocator's cached free blocks.
extern "C" int64_t memo_gpu_peak_allocated(int index) {
  try {
    auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(static_cast<c10::DeviceIndex>(index));
    return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
  } catch (const std::exception &) {
    return 0;
  }
}

// memo_gpu_name is declared in gpumem_cuda.go. The device's name as CUDA reports it ("NVIDIA H100 80GB HBM3"): the SKU
// whose datasheet peak MFU is measured against (package gpupeak).
extern "C" int memo_gpu_name(int index, char *buf, int len) {
  try {
    if (len <= 0) {
      return 0;
    }
    const char *name = at::cuda::getDeviceProperties(static_cast<c10::DeviceIndex>(index))->name;
    std::strncpy(buf, name, static_cast<size_t>(len - 1));
    buf[len - 1] = '\0';
    return 1;
  } catch (const std::exception &) {
    return 0;
  }
}
