// libtorch's fused attention, scaled_dot_product_attention (2.1 and later):
// on a GPU its flash and memory-efficient kernels never write the [T,S]
// score matrix to memory, and they compute in the inputs' bfloat16 or
// float16 as torch.autocast runs attention. It is called here rather than
// through gotch's wrapper so that "no mask" is an empty optional, which
// the kernel choice depends on (an undefined tensor is not one).
#include <cstdlib>
#include <cstring>
#include <string>

#include <torch/torch.h>
#include <torch/version.h>

#include "attention.h"
#include "errmsg.h"

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define MEMO_HAVE_SDPA 1
#endif
// enable_gqa (2.5 and later): k and v keep their fewer heads, each serving
// H/KV query heads, instead of being copied H/KV times first.
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 5)
#define MEMO_HAVE_SDPA_GQA 1
#endif

extern "C" {

int memo_sdpa_gqa_available(void) {
#ifdef MEMO_HAVE_SDPA_GQA
  return 1;
#else
  return 0;
#endif
}

int memo_sdpa_available(void) {
#ifdef MEMO_HAVE_SDPA
  return 1;
#else
  return 0;
#endif
}

// memo_sdpa is softmax(q·kᵀ·scale + mask)·v, or with causal and no mask
// under the causal mask of T == S positions; q [B,H,T,hd], k and v
// [B,H,S,hd], mask nil or broadcastable to [B,H,T,S], all of one dtype.
// With gqa, k and v have KV heads dividing H (2.5 and later only).
// Returns nil with *err unset when this libtorch lacks the op.
void *memo_sdpa(void *q, void *k, void *v, void *mask, double scale, int causal, int gqa, char **err) {
#ifdef MEMO_HAVE_SDPA
  try {
    c10::optional<at::Tensor> m;
    if (mask) m = *static_cast<at::Tensor *>(mask);
#ifdef MEMO_HAVE_SDPA_GQA
    at::Tensor out = at::scaled_dot_product_attention(*static_cast<at::Tensor *>(q), *static_cast<at::Tensor *>(k),
                                                      *static_cast<at::Tensor *>(v), m, 0.0, causal != 0, scale,
                                                      gqa != 0);
#else
    if (gqa) return nullptr;
    at::Tensor out = at::scaled_dot_product_attention(*static_cast<at::Tensor *>(q), *static_cast<at::Tensor *>(k),
                                                      *static_cast<at::Tensor *>(v), m, 0.0, causal != 0, scale);
#endif
    return new at::Tensor(out);
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
#else
  (void)q, (void)k, (void)v, (void)mask, (void)scale, (void)causal, (void)gqa, (void)err;
  return nullptr;
#endif
}
}
