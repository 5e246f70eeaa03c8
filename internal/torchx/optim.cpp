// Whole-model optimizer steps in one libtorch call, for CUDA.
//
// memo's AdamW (train/adamw.go) is a dozen elementwise ops per parameter,
// each a Go → C call and a kernel launch: about 2,600 of them a step on a
// 1.1B Llama's 201 tensors. On a GPU that is host time the kernels wait
// for. libtorch 2.x has PyTorch's own multi-tensor kernels: the fused
// AdamW of torch.optim.AdamW(fused=True) and the foreach norm of
// clip_grad_norm_. Debian's libtorch 1.13 has neither; there the callers
// keep the per-tensor path (which is also the CPU's, so CPU results stay
// bit-identical).
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>

#include "optim.h"
#include "errmsg.h"

namespace {

std::vector<at::Tensor> listOf(void **ts, int64_t n) {
  std::vector<at::Tensor> out;
  out.reserve(n);
  for (int64_t i = 0; i < n; i++) out.push_back(*static_cast<at::Tensor *>(ts[i]));
  return out;
}

}  // namespace

extern "C" {

int memo_fused_adamw_available(void) {
#if TORCH_VERSION_MAJOR >= 2 && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1)
  return 1;
#else
  return 0;
#endif
}

// memo_fused_adamw takes one AdamW step over n tensors of one device, all
// decayed by weight_decay (callers group them by decay): PyTorch's
// _fused_adamw_, the kernel of AdamW(fused=True), with the bias corrections
// of update number step. Returns 1 when it ran, 0 when this libtorch lacks
// it (nothing changed), -1 on error.
int memo_fused_adamw(void **params, void **grads, void **m, void **v, int64_t n, int64_t step, double lr,
                     double beta1, double beta2, double weight_decay, double eps, char **err) {
#if TORCH_VERSION_MAJOR >= 2 && (TORCH_VERSION_MAJOR > 2 || TORCH_VERSION_MINOR >= 1)
  try {
    if (n == 0) return 1;
    at::NoGradGuard noGrad;
    std::vector<at::Tensor> p = listOf(params, n), g = listOf(grads, n), mm = listOf(m, n), vv = listOf(v, n);
    // The kernel reads each tensor's step count (torch.optim increments it
    // first): every tensor here is at the same step, so one float tensor
    // serves all of them.
    at::Tensor st = at::full({}, static_cast<double>(step), p[0].options().dtype(at::kFloat));
    std::vector<at::Tensor> steps(n, st);
    at::_fused_adamw_(p, g, mm, vv, {}, steps, lr, beta1, beta2, weight_decay, eps, /*amsgrad=*/false,
                      /*maximize=*/false, c10::nullopt, c10::nullopt);
    return 1;
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return -1;
  }
#else
  (void)params, (void)grads, (void)m, (void)v, (void)n, (void)step, (void)lr, (void)beta1, (void)beta2;
  (void)weight_decay, (void)eps, (void)err;
  return 0;
#endif
}

// memo_clear_grads drops the n tensors' .grad (PyTorch's
// zero_grad(set_to_none=True)): the next backward pass then hands each its
// new gradient instead of adding it to zeros.
void memo_clear_grads(void **params, int64_t n) {
  for (int64_t i = 0; i < n; i++) static_cast<at::Tensor *>(params[i])->mutable_grad().reset();
}

// memo_foreach_grad_norm writes the L2 norm of all n gradients together to
// *norm and, when clip > 0 and the norm exceeds it, scales them by
// clip/(norm+1e-6), as clip_grad_norm_ does. Returns 1 when it ran, 0 when
// this libtorch lacks the foreach kernels, -1 on error.
int memo_foreach_grad_norm(void **grads, int64_t n, double clip, double *norm, char **err) {
#if TORCH_VERSION_MAJOR >= 2
  try {
    at::NoGradGuard noGrad;
    std::vector<at::Tensor> g = listOf(grads, n);
    std::vector<at::Tensor> norms = at::_foreach_norm(g, 2);
    at::Tensor total = at::linalg_vector_norm(at::stack(norms).to(at::kDouble), 2);
    const double value = total.item<double>();
    *norm = value;
    if (clip > 0 && value > clip) at::_foreach_mul_(g, clip / (value + 1e-6));
    return 1;
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return -1;
  }
#else
  (void)grads, (void)n, (void)clip, (void)norm, (void)err;
  return 0;
#endif
}
}
