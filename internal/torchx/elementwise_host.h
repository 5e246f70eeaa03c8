// elementwise.cu as host C++: the kernels' per-element functions (namespace
// memo), without the kernels, for elementwise.cpp and crossentropy.cpp to
// run on CPU tensors (tests) and to launch on a GPU.
#ifndef MEMO_TORCHX_ELEMENTWISE_HOST_H
#define MEMO_TORCHX_ELEMENTWISE_HOST_H
#include <cmath>
#include <cstring>

// The host's spelling of what elementwise.cu uses from CUDA: each a single
// correctly rounded operation (x86-64's baseline has no fused multiply-add
// for the compiler to contract into). They live in namespace memo, as the
// functions that call them do, so every file that includes this one has
// the same inline functions.
#define MEMO_ELEMENTWISE_HOST 1
namespace memo {
inline float __uint_as_float(unsigned int u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline unsigned int __float_as_uint(float f) {
  unsigned int u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
}  // namespace memo
#include "elementwise.cu"

namespace memo {
// lanes_tree combines the MEMO_ROW_LANES values in part with op in the
// tree a GPU block's lanes use (memo_lanes_reduce), returning the result.
template <typename Op>
float lanes_tree(float *part, Op op) {
  for (int h = MEMO_ROW_LANES / 2; h > 0; h >>= 1)
    for (int l = 0; l < h; l++) part[l] = op(part[l], part[l + h]);
  return part[0];
}
}  // namespace memo
#endif
