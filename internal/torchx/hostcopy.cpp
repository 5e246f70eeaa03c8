// Copies of small host tensors to a GPU that do not make the host wait.
//
// libtorch's tensor.to(cuda) from ordinary (pageable) host memory ends in
// cudaStreamSynchronize: the host waits until everything already queued
// on the stream has run. memo copies every training batch and every
// decoding step's ids, positions and masks to the GPU, so the host sat
// idle there while the GPU finished the work queued before (the previous
// step's optimizer, at the start of a training step) instead of queueing
// the next. Staged through page-locked memory and copied with
// non_blocking, as DataLoader(pin_memory=True) batches are, the copy is
// queued on the stream like a kernel. libtorch's caching host allocator
// records an event on the stream for the page-locked block, so the block
// is not reused before the copy has run and the caller may free both
// tensors at once.
#include <torch/torch.h>

#include "errmsg.h"
#include "hostcopy.h"

extern "C" {

// memo_to_device_async returns a copy of host tensor t on CUDA device
// device_index, queued on that device's current stream without waiting.
void *memo_to_device_async(void *t, int device_index, char **err) {
  try {
    const at::Tensor &src = *static_cast<at::Tensor *>(t);
    at::Tensor pinned = src.is_pinned() ? src : src.pin_memory();
    return new at::Tensor(pinned.to(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index)),
                                    pinned.scalar_type(), /*non_blocking=*/true, /*copy=*/false));
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}
}
