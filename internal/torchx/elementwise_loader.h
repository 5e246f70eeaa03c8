// The GPU side of elementwise.cpp: elementwise_cuda.cpp compiles the
// kernels with NVRTC and launches them; elementwise_nocuda.cpp, in a build
// without the cuda tag, has none.
#ifndef MEMO_TORCHX_ELEMENTWISE_LOADER_H
#define MEMO_TORCHX_ELEMENTWISE_LOADER_H
#include <string>

namespace memo_elementwise {

// Kernel is one of elementwise.cu's entry points: rotary embedding by
// direction and input/output dtypes, SwiGLU by direction and dtype, the
// bfloat16 copies, alone, of an RMSNorm, or of an RMSNorm of a residual
// sum, by direction; the cross-entropy of bfloat16 logits by direction.
enum Kernel : int {
  rope_fwd_f32_f32,
  rope_fwd_f32_bf16,
  rope_fwd_bf16_f32,
  rope_fwd_bf16_bf16,
  rope_bwd_f32_f32,
  rope_bwd_f32_bf16,
  rope_bwd_bf16_f32,
  rope_bwd_bf16_bf16,
  swiglu_fwd_f32,
  swiglu_fwd_bf16,
  swiglu_bwd_f32,
  swiglu_bwd_bf16,
  copies_fwd_bf16,
  copies_bwd_bf16,
  rms_copies_fwd,
  rms_copies_bwd,
  ce_fwd_bf16,
  ce_bwd_bf16,
  add_rms_copies_fwd,
  add_rms_copies_bwd,
  kernel_count
};

// kernel_names are the entry points' C names, in Kernel's order
// (scripts/gpu/check-kernels.sh reads them from here).
inline constexpr const char *kernel_names[] = {
    "memo_rope_fwd_f32_f32",  "memo_rope_fwd_f32_bf16", "memo_rope_fwd_bf16_f32", "memo_rope_fwd_bf16_bf16",
    "memo_rope_bwd_f32_f32",  "memo_rope_bwd_f32_bf16", "memo_rope_bwd_bf16_f32", "memo_rope_bwd_bf16_bf16",
    "memo_swiglu_fwd_f32",    "memo_swiglu_fwd_bf16",   "memo_swiglu_bwd_f32",    "memo_swiglu_bwd_bf16",
    "memo_copies_fwd_bf16",   "memo_copies_bwd_bf16",   "memo_rms_copies_fwd",    "memo_rms_copies_bwd",
    "memo_ce_fwd_bf16",       "memo_ce_bwd_bf16",       "memo_add_rms_copies_fwd", "memo_add_rms_copies_bwd",
};
static_assert(sizeof kernel_names / sizeof kernel_names[0] == kernel_count, "a Kernel without a name");

constexpr Kernel rope_kernel(bool forward, bool x_bf16, bool y_bf16) {
  return static_cast<Kernel>((forward ? rope_fwd_f32_f32 : rope_bwd_f32_f32) + 2 * x_bf16 + y_bf16);
}

constexpr Kernel swiglu_kernel(bool forward, bool bf16) {
  return static_cast<Kernel>((forward ? swiglu_fwd_f32 : swiglu_bwd_f32) + bf16);
}

namespace check {
constexpr bool same(const char *a, const char *b) { return *a == *b && (*a == 0 || same(a + 1, b + 1)); }
static_assert(same(kernel_names[rope_kernel(true, false, true)], "memo_rope_fwd_f32_bf16"), "rope_kernel");
static_assert(same(kernel_names[rope_kernel(false, true, false)], "memo_rope_bwd_bf16_f32"), "rope_kernel");
static_assert(same(kernel_names[rope_kernel(false, true, true)], "memo_rope_bwd_bf16_bf16"), "rope_kernel");
static_assert(same(kernel_names[swiglu_kernel(true, true)], "memo_swiglu_fwd_bf16"), "swiglu_kernel");
static_assert(same(kernel_names[swiglu_kernel(false, false)], "memo_swiglu_bwd_f32"), "swiglu_kernel");
}  // namespace check

// set_source keeps the kernels' text for the first compilation.
void set_source(const char *text);

// ready reports whether device's kernels are compiled and loaded
// (compiling them on the first call), else sets *why.
bool ready(int device, std::string *why);

// launch runs kernel k over n work items with args (pointers to each
// argument, as cuLaunchKernel takes them) on device's current stream.
void launch(int device, Kernel k, long long n, void **args);

// launch_blocks runs kernel k on blocks blocks of threads threads.
void launch_blocks(int device, Kernel k, long long blocks, unsigned threads, void **args);

}  // namespace memo_elementwise
#endif
