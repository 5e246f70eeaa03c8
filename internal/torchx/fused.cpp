// A block's elementwise compositions, each in one Go → C call.
//
// RMSNorm is six ATen ops and rotary embedding up to eight; called from Go
// through gotch, each op is a cgo call plus a Go tensor object (a name in
// a global map under a lock, a finalizer) and a second cgo call to free
// it, so a Llama's forward pass spends about a thousand host round trips
// on them. These functions call the same ATen ops with the same arguments
// in the same order as the Go compositions they replace (see fused_test.go,
// which checks outputs and gradients bit for bit), so autograd records the
// same graph and every device and dtype computes what it did before. They
// are not fused kernels: each op still launches its own on a GPU.
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

namespace {

char *fused_err(const std::exception &e) {
  std::string msg = e.what();
  char *s = static_cast<char *>(std::malloc(msg.size() + 1));
  std::memcpy(s, msg.c_str(), msg.size() + 1);
  return s;
}

// rotate_half is x·cos + cat(x₂, x₁)·sinSigned, x₁ and x₂ the halves of
// x's last dimension (sinSigned carries the sign of the rotation).
at::Tensor rotate_half(const at::Tensor &x, const at::Tensor &cos, const at::Tensor &sin_signed) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor x1 = torch::narrow(x, -1, 0, half);
  at::Tensor x2 = torch::narrow(x, -1, half, half);
  std::vector<at::Tensor> halves{x2, x1};
  at::Tensor swapped = torch::cat(halves, -1);
  at::Tensor a = torch::mul(x, cos);
  at::Tensor b = torch::mul(swapped, sin_signed);
  return torch::add(a, b);
}

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
    *err = fused_err(e);
    return nullptr;
  }
}

// memo_rope rotates the first rot entries of x's last dimension by
// rotate-half with cos and sinSigned (broadcast against them) and passes
// the rest through unchanged. Returns nil and sets *err on failure.
void *memo_rope(void *x, void *cos, void *sin_signed, int64_t rot, char **err) {
  try {
    const at::Tensor &xt = *static_cast<at::Tensor *>(x);
    const at::Tensor &c = *static_cast<at::Tensor *>(cos);
    const at::Tensor &s = *static_cast<at::Tensor *>(sin_signed);
    const int64_t hd = xt.size(-1);
    if (rot == hd) return new at::Tensor(rotate_half(xt, c, s));
    at::Tensor head = torch::narrow(xt, -1, 0, rot);
    at::Tensor pass = torch::narrow(xt, -1, rot, hd - rot);
    std::vector<at::Tensor> parts{rotate_half(head, c, s), pass};
    return new at::Tensor(torch::cat(parts, -1));
  } catch (const std::exception &e) {
    *err = fused_err(e);
    return nullptr;
  }
}
}
