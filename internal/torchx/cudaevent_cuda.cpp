//go:build cuda

// CUDA events with timing, recorded on the current stream: what the GPU
// spent between two points of a step, rather than what the host waited
// (CUDA builds only, as gpumem_cuda.cpp).
#include <ATen/cuda/CUDAEvent.h>

#include "cudaevent.h"

extern "C" {

void *memo_cuda_event_new(void) {
  try {
    return new at::cuda::CUDAEvent(cudaEventDefault);  // the default flags keep timing on
  } catch (const std::exception &) {
    return nullptr;
  }
}

int memo_cuda_event_record(void *ev) {
  try {
    static_cast<at::cuda::CUDAEvent *>(ev)->record();
    return 1;
  } catch (const std::exception &) {
    return 0;
  }
}

// The milliseconds between two recorded events, waiting for the later one;
// negative when CUDA cannot tell.
double memo_cuda_event_elapsed_ms(void *from, void *to) {
  try {
    auto *b = static_cast<at::cuda::CUDAEvent *>(to);
    b->synchronize();
    return static_cast<double>(static_cast<at::cuda::CUDAEvent *>(from)->elapsed_time(*b));
  } catch (const std::exception &) {
    return -1;
  }
}

void memo_cuda_event_free(void *ev) { delete static_cast<at::cuda::CUDAEvent *>(ev); }
}
