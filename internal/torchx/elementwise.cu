// memo's elementwise kernels: rotary embedding, the SwiGLU product, the
// bfloat16 copies of a normalized activation that several products read
// (with the residual sum before the norm), and the cross-entropy of
// bfloat16 logits, forward and backward, each one pass over memory where
// libtorch's composition makes several.
//
// This file is compiled twice. On a GPU, NVRTC compiles it at run time
// (elementwise_cuda.cpp hands it the text, embedded by elementwise.go),
// with the kernels at the end. On every machine, elementwise_host.h
// includes it as host C++ (MEMO_ELEMENTWISE_HOST defined, the kernels left
// out) for elementwise.cpp and crossentropy.cpp, which run the same
// per-element functions in loops: the reference the tests check against
// libtorch's composition, bit for bit where the arithmetic allows.
//
// Every float operation that libtorch performs as a separate kernel is a
// separate, correctly rounded operation here (__fmul_rn, __fadd_rn,
// __fdiv_rn, which no compiler contracts into a fused multiply-add), and
// every result libtorch rounds to the tensor's dtype is rounded here, so
// rotary embedding reproduces the composition exactly. SiLU's expf is
// CUDA's own on a GPU, as libtorch's is, but the CPU's libm on the host,
// which differs from libtorch's vectorized exp in last bits.
//
// No headers: NVRTC runs without the CUDA toolkit's include directory, and
// bfloat16 is its bit pattern, converted as c10::BFloat16 converts it.

#ifdef MEMO_ELEMENTWISE_HOST
#define MEMO_DEVICE inline
#else
#define MEMO_DEVICE __device__ __forceinline__
#endif

namespace memo {

typedef unsigned short bf16;

MEMO_DEVICE float bf16_to_float(bf16 h) { return __uint_as_float(((unsigned int)h) << 16); }

// Round to nearest even, NaN to the canonical quiet NaN: c10's rule.
MEMO_DEVICE bf16 float_to_bf16(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (bf16)0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (bf16)(u >> 16);
}

// Element access in a tensor's dtype: values travel as float, and round
// reproduces storing a float in the dtype and reading it back.
template <typename T>
struct elem;

template <>
struct elem<float> {
  static MEMO_DEVICE float load(const float *p, long long i) { return p[i]; }
  static MEMO_DEVICE void store(float *p, long long i, float v) { p[i] = v; }
  static MEMO_DEVICE float round(float v) { return v; }
};

template <>
struct elem<bf16> {
  static MEMO_DEVICE float load(const bf16 *p, long long i) { return bf16_to_float(p[i]); }
  static MEMO_DEVICE void store(bf16 *p, long long i, float v) { p[i] = float_to_bf16(v); }
  static MEMO_DEVICE float round(float v) { return bf16_to_float(float_to_bf16(v)); }
};

// RopeShape is a rotary call's geometry: x (and the result, and their
// gradients) are [B, H, T, D] with the strides given, D even, rotated by
// rotate-half over all of D; cos and sinSigned are [T, D] (table_batch 0)
// or one [T, D] table a row of the batch, table_batch = T·D apart (a
// padded batch's own positions).
struct RopeShape {
  long long size[4];
  long long in[4];   // strides of the tensor read (x, or the gradient dy)
  long long out[4];  // strides of the tensor written (y, or dx)
  long long table_batch;
};

// rope_offsets places pair p (of B·H·T·D/2) in the tensors: the offsets
// of its first-half element in the input and output, and its cos/sin row.
MEMO_DEVICE void rope_offsets(const RopeShape &s, long long p, long long *in, long long *out, long long *row) {
  long long d, t, h, b;
  if (p < 4294967296LL) {
    // 32-bit division where the index allows: a GPU's 64-bit division is a
    // long software routine, three of them a pair.
    const unsigned half = (unsigned)(s.size[3] / 2), T = (unsigned)s.size[2], H = (unsigned)s.size[1];
    unsigned q = (unsigned)p, r = q / half;
    d = q % half;
    t = r % T;
    r /= T;
    h = r % H;
    b = r / H;
  } else {
    const long long half = s.size[3] / 2;
    long long r = p / half;
    d = p % half;
    t = r % s.size[2];
    r /= s.size[2];
    h = r % s.size[1];
    b = r / s.size[1];
  }
  *in = b * s.in[0] + h * s.in[1] + t * s.in[2] + d * s.in[3];
  *out = b * s.out[0] + h * s.out[1] + t * s.out[2] + d * s.out[3];
  *row = b * s.table_batch + t * s.size[3] + d;
}

// rope_forward_pair is y = x·cos + swapHalves(x)·sinSigned at the pair's
// two elements, as libtorch computes it: the products and the sum each in
// float32 (x promoted), the sum rounded to the output's dtype.
template <typename TI, typename TO>
MEMO_DEVICE void rope_forward_pair(const RopeShape &s, long long p, const TI *x, TO *y, const float *cos,
                                   const float *sin) {
  long long i, o, c;
  rope_offsets(s, p, &i, &o, &c);
  const long long half = s.size[3] / 2, ih = half * s.in[3], oh = half * s.out[3];
  const float x1 = elem<TI>::load(x, i), x2 = elem<TI>::load(x, i + ih);
  elem<TO>::store(y, o, __fadd_rn(__fmul_rn(x1, cos[c]), __fmul_rn(x2, sin[c])));
  elem<TO>::store(y, o + oh, __fadd_rn(__fmul_rn(x2, cos[c + half]), __fmul_rn(x1, sin[c + half])));
}

// rope_backward_pair is x's gradient from y's, dy: dx = dy·cos +
// swapHalves(dy·sinSigned), each product rounded to x's dtype before the
// sum (autograd casts each path's gradient to x's dtype, then adds them).
template <typename TO, typename TI>
MEMO_DEVICE void rope_backward_pair(const RopeShape &s, long long p, const TO *dy, TI *dx, const float *cos,
                                    const float *sin) {
  long long i, o, c;
  rope_offsets(s, p, &i, &o, &c);
  const long long half = s.size[3] / 2, ih = half * s.in[3], oh = half * s.out[3];
  const float g1 = elem<TO>::load(dy, i), g2 = elem<TO>::load(dy, i + ih);
  const float a1 = elem<TI>::round(__fmul_rn(g1, cos[c])), b1 = elem<TI>::round(__fmul_rn(g2, sin[c + half]));
  const float a2 = elem<TI>::round(__fmul_rn(g2, cos[c + half])), b2 = elem<TI>::round(__fmul_rn(g1, sin[c]));
  elem<TI>::store(dx, o, __fadd_rn(a1, b1));
  elem<TI>::store(dx, o + oh, __fadd_rn(a2, b2));
}

// silu is x·σ(x) as libtorch's SiLU computes it: x / (1 + e^−x).
MEMO_DEVICE float silu(float x) { return __fdiv_rn(x, __fadd_rn(1.0f, expf(-x))); }

// silu_slope is 1 + g·(1 − σ): one fused multiply-add on a GPU, as
// nvcc (which contracts by default) compiles libtorch's CUDA SiLU
// backward; a product and a sum on the host, as libtorch's CPU kernel
// computes it.
MEMO_DEVICE float silu_slope(float g, float sg) {
#ifdef MEMO_ELEMENTWISE_HOST
  return __fadd_rn(1.0f, __fmul_rn(g, __fadd_rn(1.0f, -sg)));
#else
  return __fmaf_rn(g, __fadd_rn(1.0f, -sg), 1.0f);
#endif
}

// SwiGLUShape is a SwiGLU call's geometry: n elements of [N, F] (n = N·F),
// y and dy contiguous; gate and up (and their gradients) in rows in
// elements apart: F for two tensors of their own, 2F for the two halves
// of one gate|up product.
struct SwiGLUShape {
  long long n, f, in;
};

// row_col splits element i of rows `width` long into its row and column,
// with 32-bit division where the index allows (see rope_offsets).
MEMO_DEVICE void row_col(long long i, long long width, long long *row, long long *col) {
  if (i < 4294967296LL) {
    const unsigned q = (unsigned)i, w = (unsigned)width;
    *row = q / w;
    *col = q % w;
    return;
  }
  *row = i / width;
  *col = i % width;
}

// swiglu_offset is element i's offset in gate's and up's rows.
MEMO_DEVICE long long swiglu_offset(const SwiGLUShape &s, long long i) {
  long long row, col;
  row_col(i, s.f, &row, &col);
  return row * s.in + col;
}

// swiglu_forward_at is y = SiLU(gate)·up at element i, SiLU's result
// rounded to the dtype as the composition's intermediate tensor is.
template <typename T>
MEMO_DEVICE void swiglu_forward_at(const SwiGLUShape &s, long long i, const T *gate, const T *up, T *y) {
  const long long o = swiglu_offset(s, i);
  const float a = elem<T>::round(silu(elem<T>::load(gate, o)));
  elem<T>::store(y, i, __fmul_rn(a, elem<T>::load(up, o)));
}

// swiglu_backward_at is both gradients at element i: d_up = dy·SiLU(gate)
// and d_gate = (dy·up)·σ(g)·(1 + g·(1 − σ(g))), libtorch's SiLU backward,
// each intermediate rounded where the composition stores a tensor.
template <typename T>
MEMO_DEVICE void swiglu_backward_at(const SwiGLUShape &s, long long i, const T *dy, const T *gate, const T *up,
                                    T *dgate, T *dup) {
  const long long o = swiglu_offset(s, i);
  const float g = elem<T>::load(gate, o), u = elem<T>::load(up, o), d = elem<T>::load(dy, i);
  const float a = elem<T>::round(silu(g));
  elem<T>::store(dup, o, __fmul_rn(d, a));
  const float da = elem<T>::round(__fmul_rn(d, u));
  const float sg = __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-g)));
  const float slope = silu_slope(g, sg);
  elem<T>::store(dgate, o, __fmul_rn(__fmul_rn(da, sg), slope));
}

// cast_copies_forward_at writes element i of float32 x, rounded to
// bfloat16, into each of the k (1 to 3) copies, as k casts would: one per
// product that reads x, each copy its own tensor so that each product's
// gradient comes back on its own.
MEMO_DEVICE void cast_copies_forward_at(long long i, int k, const float *x, bf16 *y0, bf16 *y1, bf16 *y2) {
  const bf16 v = float_to_bf16(x[i]);
  y0[i] = v;
  if (k > 1) y1[i] = v;
  if (k > 2) y2[i] = v;
}

// cast_copies_backward_at is x's gradient at element i: each copy's
// bfloat16 gradient widened to float32, as a cast's backward widens it,
// and the k summed in float32 in copy order, as autograd sums the
// gradients of a tensor read k times.
MEMO_DEVICE void cast_copies_backward_at(long long i, int k, const bf16 *d0, const bf16 *d1, const bf16 *d2,
                                         float *dx) {
  float sum = bf16_to_float(d0[i]);
  if (k > 1) sum = __fadd_rn(sum, bf16_to_float(d1[i]));
  if (k > 2) sum = __fadd_rn(sum, bf16_to_float(d2[i]));
  dx[i] = sum;
}

// RMSNorm into the copies: row `row` of float32 x [rows, d] divided by its
// root mean square and scaled by the float32 gain (w, or w + 1), rounded
// to bfloat16 into the k copies, and back. A block of MEMO_ROW_LANES
// threads takes a row: each lane sums over its columns (lane, lane +
// MEMO_ROW_LANES, ...), the lanes' sums are added pairwise in a fixed
// tree, and each lane writes its columns. The host runs the same lane
// functions one lane after another and adds in the same tree, so the two
// agree bit for bit.
#define MEMO_ROW_LANES 256

// The two ways a block's lanes combine their values: a float32 sum, and
// the largest value (exact in any order; the same tree keeps the two
// alike).
struct LanesAdd {
  MEMO_DEVICE float operator()(float a, float b) const { return __fadd_rn(a, b); }
};
struct LanesMax {
  MEMO_DEVICE float operator()(float a, float b) const { return fmaxf(a, b); }
};

struct RowShape {
  long long rows;
  int d, k;
  float eps;
};

// rms_lane_sum_sq is lane's part of Σ x² over row.
MEMO_DEVICE float rms_lane_sum_sq(const RowShape &s, const float *x, long long row, int lane) {
  const float *xr = x + row * s.d;
  float acc = 0.0f;
  for (int c = lane; c < s.d; c += MEMO_ROW_LANES) acc = __fadd_rn(acc, __fmul_rn(xr[c], xr[c]));
  return acc;
}

// add_lane_sum_sq writes lane's columns of the residual sum h = x + delta
// (float32 x, bfloat16 delta widened: one correctly rounded addition, as
// libtorch adds a bfloat16 tensor to a float32 one) and returns lane's part
// of Σ h² over the row, in rms_lane_sum_sq's order, so that the norm of h
// is RMSNorm's of the sum bit for bit.
MEMO_DEVICE float add_lane_sum_sq(const RowShape &s, const float *x, const bf16 *delta, float *h, long long row,
                                  int lane) {
  const long long base = row * s.d;
  float acc = 0.0f;
  for (int c = lane; c < s.d; c += MEMO_ROW_LANES) {
    const float v = __fadd_rn(x[base + c], bf16_to_float(delta[base + c]));
    h[base + c] = v;
    acc = __fadd_rn(acc, __fmul_rn(v, v));
  }
  return acc;
}

// rms_rstd is 1 / sqrt(Σx² / d + eps): a correctly rounded square root
// and quotient, the same on the host and the GPU.
MEMO_DEVICE float rms_rstd(const RowShape &s, float sum_sq) {
  return __fdiv_rn(1.0f, __fsqrt_rn(__fadd_rn(__fdiv_rn(sum_sq, (float)s.d), s.eps)));
}

// rms_lane_write writes lane's columns of the normalized row, (x·r)·gain
// as libtorch's RMSNorm multiplies, rounded to bfloat16, into each copy.
MEMO_DEVICE void rms_lane_write(const RowShape &s, const float *x, const float *gain, float r, long long row,
                                int lane, bf16 *y0, bf16 *y1, bf16 *y2) {
  const long long base = row * s.d;
  for (int c = lane; c < s.d; c += MEMO_ROW_LANES) {
    const bf16 v = float_to_bf16(__fmul_rn(__fmul_rn(x[base + c], r), gain[c]));
    y0[base + c] = v;
    if (s.k > 1) y1[base + c] = v;
    if (s.k > 2) y2[base + c] = v;
  }
}

// rms_grad_at is the normalized row's gradient at i: the copies' bfloat16
// gradients summed in float32 in copy order (cast_copies_backward_at).
MEMO_DEVICE float rms_grad_at(const RowShape &s, const bf16 *d0, const bf16 *d1, const bf16 *d2, long long i) {
  float g = bf16_to_float(d0[i]);
  if (s.k > 1) g = __fadd_rn(g, bf16_to_float(d1[i]));
  if (s.k > 2) g = __fadd_rn(g, bf16_to_float(d2[i]));
  return g;
}

// rms_lane_dot is lane's part of Σ g·gain·x over row.
MEMO_DEVICE float rms_lane_dot(const RowShape &s, const bf16 *d0, const bf16 *d1, const bf16 *d2, const float *x,
                               const float *gain, long long row, int lane) {
  const long long base = row * s.d;
  float acc = 0.0f;
  for (int c = lane; c < s.d; c += MEMO_ROW_LANES)
    acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(rms_grad_at(s, d0, d1, d2, base + c), gain[c]), x[base + c]));
  return acc;
}

// rms_lane_grad writes lane's columns of x's gradient, r·g·gain −
// x·r³·(Σ g·gain·x)/d, and adds g·x·r into dgain_row, this block's own
// partial sum of the gain's gradient over the rows it takes. Where x is a
// residual sum h = x' + delta (add_lane_sum_sq), gh is the gradient h
// receives from its other readers: it is added to the norm's, as autograd
// adds a tensor's gradients, and dd, when not null, receives that sum
// rounded to bfloat16 (delta's gradient, as the addition's backward casts
// it); without a sum, gh and dd are null.
MEMO_DEVICE void rms_lane_grad(const RowShape &s, const bf16 *d0, const bf16 *d1, const bf16 *d2, const float *x,
                               const float *gain, float r, float dot, long long row, int lane, float *dx,
                               float *dgain_row, const float *gh, bf16 *dd) {
  const long long base = row * s.d;
  const float coef = __fdiv_rn(__fmul_rn(__fmul_rn(__fmul_rn(r, r), r), dot), (float)s.d);
  for (int c = lane; c < s.d; c += MEMO_ROW_LANES) {
    const float g = rms_grad_at(s, d0, d1, d2, base + c), xv = x[base + c];
    float v = __fadd_rn(__fmul_rn(__fmul_rn(r, g), gain[c]), -__fmul_rn(xv, coef));
    if (gh) v = __fadd_rn(v, gh[base + c]);
    dx[base + c] = v;
    if (dd) dd[base + c] = float_to_bf16(v);
    dgain_row[c] = __fadd_rn(dgain_row[c], __fmul_rn(g, __fmul_rn(xv, r)));
  }
}

// Cross-entropy of bfloat16 logits, row `row` of x [rows, v] against its
// target t[row]: a block of MEMO_ROW_LANES threads takes a row, as the
// norm's do. Forward, the row's largest logit m (max is exact in any
// order), then Σ e^(x − m) in float32 over each lane's columns, the lanes'
// sums added in the fixed tree; lse = m + log Σ and the loss lse − x[t].
// Backward, each element alone: the loss's gradient g times e^(x − lse),
// less g at the target, rounded once to bfloat16. The logits are read in
// their own dtype, so the float32 copy of them that libtorch's loss
// takes (and its float32 log-probabilities, and their gradient) is never
// written.
struct CEShape {
  long long rows;
  int v;
  long long ignore;  // the target that marks padding: loss 0, no gradient
};

MEMO_DEVICE float negative_infinity() { return __uint_as_float(0xff800000u); }

// ce_lane_max is lane's part of the row's largest logit.
MEMO_DEVICE float ce_lane_max(const CEShape &s, const bf16 *x, long long row, int lane) {
  const bf16 *xr = x + row * s.v;
  float m = negative_infinity();
  for (int c = lane; c < s.v; c += MEMO_ROW_LANES) m = fmaxf(m, bf16_to_float(xr[c]));
  return m;
}

// ce_lane_sum_exp is lane's part of Σ e^(x − m) over the row.
MEMO_DEVICE float ce_lane_sum_exp(const CEShape &s, const bf16 *x, float m, long long row, int lane) {
  const bf16 *xr = x + row * s.v;
  float acc = 0.0f;
  for (int c = lane; c < s.v; c += MEMO_ROW_LANES) acc = __fadd_rn(acc, expf(__fadd_rn(bf16_to_float(xr[c]), -m)));
  return acc;
}

// ce_row_loss writes the row's log Σ e^x (lse) and its loss: lse − x[t];
// 0 where t is the ignored target; NaN where t is outside [0, v), which a
// trainer reports as a non-finite loss (libtorch's loss raises an error).
MEMO_DEVICE void ce_row_loss(const CEShape &s, const bf16 *x, const long long *t, long long row, float m, float sum,
                             float *nll, float *lse) {
  const float l = __fadd_rn(m, logf(sum));
  const long long tr = t[row];
  lse[row] = l;
  if (tr == s.ignore)
    nll[row] = 0.0f;
  else if (tr < 0 || tr >= s.v)
    nll[row] = __uint_as_float(0x7fc00000u);
  else
    nll[row] = __fadd_rn(l, -bf16_to_float(x[row * s.v + tr]));
}

// ce_backward_at is the logits' gradient at element i: g·e^(x − lse),
// less g at the target (log-softmax's backward of the loss's −g at the
// target), 0 in an ignored row.
MEMO_DEVICE void ce_backward_at(const CEShape &s, long long i, const bf16 *x, const long long *t, const float *lse,
                                const float *g, bf16 *dx) {
  long long row, c;
  row_col(i, s.v, &row, &c);
  const long long tr = t[row];
  if (tr == s.ignore) {
    dx[i] = 0;
    return;
  }
  float d = __fmul_rn(g[row], expf(__fadd_rn(bf16_to_float(x[i]), -lse[row])));
  if (c == tr) d = __fadd_rn(d, -g[row]);
  dx[i] = float_to_bf16(d);
}

}  // namespace memo

#ifndef MEMO_ELEMENTWISE_HOST
// The kernels: grid-stride loops over pairs (rotary) or elements (SwiGLU),
// one per dtype combination, under C names the loader looks up.
#define MEMO_ROPE_KERNELS(NAME, TI, TO)                                                                      \
  extern "C" __global__ void memo_rope_fwd_##NAME(memo::RopeShape s, long long n, const TI *x, TO *y,      \
                                                  const float *cos, const float *sin) {                     \
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n;                             \
         p += (long long)gridDim.x * blockDim.x)                                                            \
      memo::rope_forward_pair<TI, TO>(s, p, x, y, cos, sin);                                                \
  }                                                                                                         \
  extern "C" __global__ void memo_rope_bwd_##NAME(memo::RopeShape s, long long n, const TO *dy, TI *dx,    \
                                                  const float *cos, const float *sin) {                     \
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n;                             \
         p += (long long)gridDim.x * blockDim.x)                                                            \
      memo::rope_backward_pair<TO, TI>(s, p, dy, dx, cos, sin);                                             \
  }

MEMO_ROPE_KERNELS(f32_f32, float, float)
MEMO_ROPE_KERNELS(f32_bf16, float, memo::bf16)
MEMO_ROPE_KERNELS(bf16_f32, memo::bf16, float)
MEMO_ROPE_KERNELS(bf16_bf16, memo::bf16, memo::bf16)

#define MEMO_SWIGLU_KERNELS(NAME, T)                                                                         \
  extern "C" __global__ void memo_swiglu_fwd_##NAME(memo::SwiGLUShape s, const T *gate, const T *up, T *y) {  \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < s.n;                           \
         i += (long long)gridDim.x * blockDim.x)                                                            \
      memo::swiglu_forward_at<T>(s, i, gate, up, y);                                                        \
  }                                                                                                         \
  extern "C" __global__ void memo_swiglu_bwd_##NAME(memo::SwiGLUShape s, const T *dy, const T *gate,         \
                                                    const T *up, T *dgate, T *dup) {                        \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < s.n;                           \
         i += (long long)gridDim.x * blockDim.x)                                                            \
      memo::swiglu_backward_at<T>(s, i, dy, gate, up, dgate, dup);                                          \
  }

MEMO_SWIGLU_KERNELS(f32, float)
MEMO_SWIGLU_KERNELS(bf16, memo::bf16)

extern "C" __global__ void memo_copies_fwd_bf16(long long n, int k, const float *x, memo::bf16 *y0, memo::bf16 *y1,
                                                memo::bf16 *y2) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    memo::cast_copies_forward_at(i, k, x, y0, y1, y2);
}

// memo_lanes_reduce combines the block's lanes' values with op in memo's
// fixed tree (the host's memo::lanes_tree), leaving the result in part[0]
// for every lane to read.
template <typename Op>
__device__ __forceinline__ float memo_lanes_reduce(float *part, float v, Op op) {
  const int lane = threadIdx.x;
  part[lane] = v;
  __syncthreads();
  for (int h = MEMO_ROW_LANES / 2; h > 0; h >>= 1) {
    if (lane < h) part[lane] = op(part[lane], part[lane + h]);
    __syncthreads();
  }
  const float total = part[0];
  __syncthreads();  // every lane has read part[0] before the next row writes it
  return total;
}

// One block of MEMO_ROW_LANES threads a row, the rows strided over the grid.
extern "C" __global__ void memo_rms_copies_fwd(memo::RowShape s, const float *x, const float *gain, memo::bf16 *y0,
                                               memo::bf16 *y1, memo::bf16 *y2, float *rstd) {
  __shared__ float part[MEMO_ROW_LANES];
  const int lane = threadIdx.x;
  for (long long row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const float sum_sq = memo_lanes_reduce(part, memo::rms_lane_sum_sq(s, x, row, lane), memo::LanesAdd());
    const float r = memo::rms_rstd(s, sum_sq);
    memo::rms_lane_write(s, x, gain, r, row, lane, y0, y1, y2);
    if (lane == 0) rstd[row] = r;
  }
}

// dgain_part is [gridDim.x, d], zeroed by the caller: block b adds its rows'
// part of the gain's gradient into row b, and the caller sums the rows.
extern "C" __global__ void memo_rms_copies_bwd(memo::RowShape s, const memo::bf16 *d0, const memo::bf16 *d1,
                                               const memo::bf16 *d2, const float *x, const float *gain,
                                               const float *rstd, float *dx, float *dgain_part) {
  __shared__ float part[MEMO_ROW_LANES];
  const int lane = threadIdx.x;
  float *mine = dgain_part + (long long)blockIdx.x * s.d;
  for (long long row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const float dot = memo_lanes_reduce(part, memo::rms_lane_dot(s, d0, d1, d2, x, gain, row, lane), memo::LanesAdd());
    memo::rms_lane_grad(s, d0, d1, d2, x, gain, rstd[row], dot, row, lane, dx, mine, nullptr, nullptr);
  }
}

// The residual sum h = x + delta and RMSNorm of h into the copies, in one
// pass: memo_rms_copies_fwd of the sum, which it also writes to h.
extern "C" __global__ void memo_add_rms_copies_fwd(memo::RowShape s, const float *x, const memo::bf16 *delta, float *h,
                                                   const float *gain, memo::bf16 *y0, memo::bf16 *y1, memo::bf16 *y2,
                                                   float *rstd) {
  __shared__ float part[MEMO_ROW_LANES];
  const int lane = threadIdx.x;
  for (long long row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const float sum_sq = memo_lanes_reduce(part, memo::add_lane_sum_sq(s, x, delta, h, row, lane), memo::LanesAdd());
    const float r = memo::rms_rstd(s, sum_sq);
    // Each lane reads back only the columns it wrote.
    memo::rms_lane_write(s, h, gain, r, row, lane, y0, y1, y2);
    if (lane == 0) rstd[row] = r;
  }
}

// memo_rms_copies_bwd over h, with gh (h's gradient from its other
// readers) added into dx, which is x's gradient, and dd, delta's.
extern "C" __global__ void memo_add_rms_copies_bwd(memo::RowShape s, const memo::bf16 *d0, const memo::bf16 *d1,
                                                   const memo::bf16 *d2, const float *h, const float *gain,
                                                   const float *rstd, const float *gh, float *dx, memo::bf16 *dd,
                                                   float *dgain_part) {
  __shared__ float part[MEMO_ROW_LANES];
  const int lane = threadIdx.x;
  float *mine = dgain_part + (long long)blockIdx.x * s.d;
  for (long long row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const float dot = memo_lanes_reduce(part, memo::rms_lane_dot(s, d0, d1, d2, h, gain, row, lane), memo::LanesAdd());
    memo::rms_lane_grad(s, d0, d1, d2, h, gain, rstd[row], dot, row, lane, dx, mine, gh, dd);
  }
}

extern "C" __global__ void memo_copies_bwd_bf16(long long n, int k, const memo::bf16 *d0, const memo::bf16 *d1,
                                                const memo::bf16 *d2, float *dx) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    memo::cast_copies_backward_at(i, k, d0, d1, d2, dx);
}

// One block of MEMO_ROW_LANES threads a row, the rows strided over the grid.
extern "C" __global__ void memo_ce_fwd_bf16(memo::CEShape s, const memo::bf16 *x, const long long *t, float *nll,
                                            float *lse) {
  __shared__ float part[MEMO_ROW_LANES];
  const int lane = threadIdx.x;
  for (long long row = blockIdx.x; row < s.rows; row += gridDim.x) {
    const float m = memo_lanes_reduce(part, memo::ce_lane_max(s, x, row, lane), memo::LanesMax());
    const float sum = memo_lanes_reduce(part, memo::ce_lane_sum_exp(s, x, m, row, lane), memo::LanesAdd());
    if (lane == 0) memo::ce_row_loss(s, x, t, row, m, sum, nll, lse);
  }
}

extern "C" __global__ void memo_ce_bwd_bf16(memo::CEShape s, long long n, const memo::bf16 *x, const long long *t,
                                            const float *lse, const float *g, memo::bf16 *dx) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    memo::ce_backward_at(s, i, x, t, lse, g, dx);
}
#endif
