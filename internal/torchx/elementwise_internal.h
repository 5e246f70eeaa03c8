// What elementwise.cpp shares with the files of its other kernels
// (crossentropy.cpp): where a call runs, the call counts, and the start-up
// check's comparison.
#ifndef MEMO_TORCHX_ELEMENTWISE_INTERNAL_H
#define MEMO_TORCHX_ELEMENTWISE_INTERNAL_H
#include <atomic>
#include <string>

#include <torch/torch.h>

namespace memo_elementwise {

// Place is where a call's kernels run: nowhere (the composition), on the
// host (tests) or on x's GPU.
enum class Place { none, host, gpu };

// place_of is where a call on x runs: the GPU when x is on one whose
// kernels compiled and passed their check, the host when x is on the CPU
// and tests asked for it (memo_elementwise_on_host), else nowhere; nowhere
// without kernels.
Place place_of(const at::Tensor &x, bool kernels);

// kernel_calls counts the kernels' forward calls, host and GPU, by kind
// (tests): rotary, SwiGLU, copies, RMSNorm into copies, cross-entropy,
// a residual sum's RMSNorm into copies.
enum CallKind { call_rope, call_swiglu, call_copies, call_rms_copies, call_ce, call_add_rms_copies, call_kinds };
extern std::atomic<long long> kernel_calls[call_kinds];

// close_to reports whether a equals want within tol of want's largest
// magnitude everywhere, naming the largest difference otherwise.
bool close_to(const std::string &what, const at::Tensor &a, const at::Tensor &want, double tol, std::string *why);

// cross_entropy_check is the start-up check's part for the cross-entropy
// kernel (crossentropy.cpp), on f32's device at where.
bool cross_entropy_check(const torch::TensorOptions &f32, Place where, std::string *why);

}  // namespace memo_elementwise
#endif
