//go:build cuda

// CUDA events with timing, recorded on the current device's current
// stream: what the GPU spent between two points of a step, rather than
// what the host waited (CUDA builds only). Through c10's device-generic
// Event, whose calls go to libc10_cuda: ATen's CUDAEvent inlines CUDA
// runtime calls, which would tie memo to a libcudart of its own.
#include <c10/core/Event.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "cudaevent.h"

extern "C" {

void *memo_cuda_event_new(void) {
  try {
    // BACKEND_DEFAULT keeps timing on (PyTorch's default turns it off).
    return new c10::Event(c10::DeviceType::CUDA, c10::EventFlag::BACKEND_DEFAULT);
  } catch (const std::exception &) {
    return nullptr;
  }
}

int memo_cuda_event_record(void *ev) {
  try {
    const c10::impl::DeviceGuardImplInterface *impl = c10::impl::getDeviceGuardImpl(c10::DeviceType::CUDA);
    static_cast<c10::Event *>(ev)->record(impl->getStream(impl->getDevice()));
    return 1;
  } catch (const std::exception &) {
    return 0;
  }
}

// The milliseconds between two recorded events, waiting for the later one;
// negative when CUDA cannot tell.
double memo_cuda_event_elapsed_ms(void *from, void *to) {
  try {
    auto *b = static_cast<c10::Event *>(to);
    b->synchronize();
    return static_cast<c10::Event *>(from)->elapsedTime(*b);
  } catch (const std::exception &) {
    return -1;
  }
}

void memo_cuda_event_free(void *ev) { delete static_cast<c10::Event *>(ev); }
}
