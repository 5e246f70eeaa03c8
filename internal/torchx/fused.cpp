// RMSNorm's composition in one Go → C call (rotary embedding, the other
// composition a block calls this way, is in elementwise.cpp).
//
// RMSNorm is six ATen ops; called from Go through gotch, each op is a cgo
// call plus a Go tensor object (a name in a global map under a lock, a
// finalizer) and a second cgo call to free it, so a Llama's forward pass
// spends hundreds of host round trips on them. memo_rms_norm calls the
// same ATen ops with the same arguments in the same order as the Go
// composition it replaces (see fused_test.go, which checks outputs and
// gradients bit for bit), so autograd records the same graph and every
// device and dtype computes what it did before; on a GPU, libtorch's
// fused kernel where it has one (below).
//
// Only ATen functions present in libtorch 1.13 and 2.x are used, called in
// the torch:: namespace with the argument types gotch's wrappers pass.
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>

#include "fused.h"
#include "errmsg.h"

namespace {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 9)
#define MEMO_HAVE_FUSED_RMS_NORM 1
// MEMO_FUSED_NORM=off keeps the composition on a GPU too (to measure the
// kernel's effect in one process's environment).
bool fused_rms_norm_on() {
  static const bool on = [] {
    const char *v = std::getenv("MEMO_FUSED_NORM");
    return v == nullptr || std::strcmp(v, "off") != 0;
  }();
  return on;
}
#endif

}  // namespace

extern "C" {

int memo_fused_rms_norm_available(void) {
#ifdef MEMO_HAVE_FUSED_RMS_NORM
  return 1;
#else
  return 0;
#endif
}


// memo_rms_norm is x / sqrt(mean(x²) + eps) · w over x's last dimension,
// the mean accumulated in float32 whatever x's dtype; with offset the gain
// is w + 1 (Gemma's stored weights). Returns nil and sets *err on failure.
void *memo_rms_norm(void *x, void *w, double eps, int offset, char **err) {
  try {
    const at::Tensor &xt = *static_cast<at::Tensor *>(x);
    at::Tensor gain = *static_cast<at::Tensor *>(w);
    if (offset) gain = torch::add(gain, at::Scalar(1.0));
#ifdef MEMO_HAVE_FUSED_RMS_NORM
    // On a GPU, libtorch's fused kernel reads x once and writes y once, in
    // each direction, where the composition below makes six passes over x
    // forward and more backward: a third of a 1.1B model's elementwise
    // memory traffic. Its float32 reduction sums in another order, so the
    // last bits differ from the composition's; the CPU keeps the
    // composition, bit for bit as before.
    if (fused_rms_norm_on() && xt.is_cuda() && xt.scalar_type() == at::kFloat && gain.scalar_type() == at::kFloat) {
      const int64_t dim[1] = {xt.size(-1)};
      return new at::Tensor(at::rms_norm(xt, at::IntArrayRef(dim, 1), gain, eps));
    }
#endif
    const int64_t last[1] = {-1};
    at::Tensor ms = torch::mean(torch::square(xt), at::IntArrayRef(last, 1), true, at::ScalarType::Float);
    at::Tensor inv = torch::rsqrt(torch::add(ms, at::Scalar(eps)));
    at::Tensor y = torch::mul(xt, inv);
    return new at::Tensor(torch::mul(y, gain));
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}
}
