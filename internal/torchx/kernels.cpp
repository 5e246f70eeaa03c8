// Kernels for a decode step, where a handful of rows meet every weight once.
//
// libtorch hands a product of 8 rows by a weight matrix to OpenBLAS, which
// first copies ("packs") the whole weight into its own layout and then runs
// a kernel built for many rows: at 8 rows the packing costs more than the
// arithmetic. Single-query attention goes through bmm, one small packed
// product per row and head. These kernels read the weights, keys and values
// where they lie, once, with AVX2 and FMA.
//
// Every output element is summed in one fixed order whatever the batch: a
// row's 8-lane partial sums accumulate along the inner dimension, then fold
// as ((l0+l1)+(l2+l3)) + ((l4+l5)+(l6+l7)). So a row's result does not
// depend on which rows it is batched with, or where.
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include "kernels.h"
#include "errmsg.h"

namespace {

bool cpu_has_avx2_fma() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

// fold8 sums each of eight vectors' lanes in the fixed order above and
// returns the eight sums as one vector, element j from vj.
__attribute__((target("avx2,fma"))) inline __m256 fold8(__m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 v4,
                                                        __m256 v5, __m256 v6, __m256 v7) {
  // hadd(a, b) = [a0+a1, a2+a3, b0+b1, b2+b3 | a4+a5, a6+a7, b4+b5, b6+b7]
  __m256 t0 = _mm256_hadd_ps(v0, v1), t1 = _mm256_hadd_ps(v2, v3);
  __m256 t2 = _mm256_hadd_ps(v4, v5), t3 = _mm256_hadd_ps(v6, v7);
  __m256 u0 = _mm256_hadd_ps(t0, t1);  // [v0..v3 lanes 0-3 | v0..v3 lanes 4-7]
  __m256 u1 = _mm256_hadd_ps(t2, t3);  // the same for v4..v7
  return _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31));
}

// fold1 is fold8 for one vector: the same additions in the same order.
__attribute__((target("avx2,fma"))) inline float fold1(__m256 v) {
  __m256 t = _mm256_hadd_ps(v, v);
  t = _mm256_hadd_ps(t, t);
  return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)));
}

// rowsTimesWeights: out[m][n] = x[m]·w[n] (+ bias[n]) for x [M,K], w [N,K],
// out [M,N], all contiguous, K a multiple of 8. Blocks of 4 weight rows by
// 2 input rows keep 8 accumulators in registers; the 4 weight rows (4·K
// floats) stay in L1 while every pair of input rows passes over them.
__attribute__((target("avx2,fma"))) void rowsTimesWeights(const float *x, const float *w, const float *bias,
                                                          float *out, int64_t M, int64_t N, int64_t K, int64_t n0,
                                                          int64_t n1) {
  const int64_t aheadRows = std::max<int64_t>(4, (4096 / K + 3) / 4 * 4);
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    const float *w0 = w + n * K, *w1 = w0 + K, *w2 = w1 + K, *w3 = w2 + K;
    // A decode step's weights come from memory (the KV cache has pushed
    // them out of cache), where the hardware prefetcher does not keep up
    // with four short rows at a time: while this block is used, fetch the
    // one about 16 KB ahead (4·K floats, two cache lines per step of the
    // first pass). In BenchmarkLinearRowsCold this doubles the rate.
    const char *ahead = reinterpret_cast<const char *>(w + (n + aheadRows) * K);
    const bool fetch = n + aheadRows + 4 <= n1;
    int64_t m = 0;
    for (; m + 2 <= M; m += 2) {
      const float *xa = x + m * K, *xb = xa + K;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, b0 = a0, b1 = a0, b2 = a0, b3 = a0;
      for (int64_t k = 0; k < K; k += 8) {
        if (m == 0 && fetch) {
          _mm_prefetch(ahead + 16 * k, _MM_HINT_T0);
          _mm_prefetch(ahead + 16 * k + 64, _MM_HINT_T0);
        }
        __m256 va = _mm256_loadu_ps(xa + k), vb = _mm256_loadu_ps(xb + k);
        __m256 c0 = _mm256_loadu_ps(w0 + k), c1 = _mm256_loadu_ps(w1 + k);
        __m256 c2 = _mm256_loadu_ps(w2 + k), c3 = _mm256_loadu_ps(w3 + k);
        a0 = _mm256_fmadd_ps(va, c0, a0), a1 = _mm256_fmadd_ps(va, c1, a1);
        a2 = _mm256_fmadd_ps(va, c2, a2), a3 = _mm256_fmadd_ps(va, c3, a3);
        b0 = _mm256_fmadd_ps(vb, c0, b0), b1 = _mm256_fmadd_ps(vb, c1, b1);
        b2 = _mm256_fmadd_ps(vb, c2, b2), b3 = _mm256_fmadd_ps(vb, c3, b3);
      }
      float s[8];
      _mm256_storeu_ps(s, fold8(a0, a1, a2, a3, b0, b1, b2, b3));
      for (int j = 0; j < 4; j++) {
        out[m * N + n + j] = bias ? s[j] + bias[n + j] : s[j];
        out[(m + 1) * N + n + j] = bias ? s[4 + j] + bias[n + j] : s[4 + j];
      }
    }
    for (; m < M; m++) {  // an odd last row
      const float *xa = x + m * K;
      __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
      for (int64_t k = 0; k < K; k += 8) {
        if (M == 1 && fetch) {
          _mm_prefetch(ahead + 16 * k, _MM_HINT_T0);
          _mm_prefetch(ahead + 16 * k + 64, _MM_HINT_T0);
        }
        __m256 va = _mm256_loadu_ps(xa + k);
        a0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w0 + k), a0);
        a1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w1 + k), a1);
        a2 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w2 + k), a2);
        a3 = _mm256_fmadd_ps(va, _mm256_loadu_ps(w3 + k), a3);
      }
      float s[8];
      _mm256_storeu_ps(s, fold8(a0, a1, a2, a3, a0, a1, a2, a3));
      for (int j = 0; j < 4; j++) out[m * N + n + j] = bias ? s[j] + bias[n + j] : s[j];
    }
  }
  for (; n < n1; n++) {  // the last N % 4 weight rows
    const float *w0 = w + n * K;
    for (int64_t m = 0; m < M; m++) {
      const float *xa = x + m * K;
      __m256 a0 = _mm256_setzero_ps();
      for (int64_t k = 0; k < K; k += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(xa + k), _mm256_loadu_ps(w0 + k), a0);
      float s = fold1(a0);
      out[m * N + n] = bias ? s + bias[n] : s;
    }
  }
}

// scoresOfOneQuery: s[j] = (q·key_j)·scale (+ mask[j]) for the S keys at
// stride hd from k, q of hd floats, hd a multiple of 8.
__attribute__((target("avx2,fma"))) void scoresOfOneQuery(const float *q, const float *k, const float *mask,
                                                          float *s, int64_t S, int64_t hd, float scale) {
  int64_t j = 0;
  for (; j + 8 <= S; j += 8) {
    const float *kj = k + j * hd;
    // Keys are read once a step: fetch them 16 keys ahead without keeping
    // them in the outer caches, where the weights should stay (a prefetch
    // past the last key cannot fault).
    for (int64_t off = 16 * hd; off < 24 * hd; off += 16)
      _mm_prefetch(reinterpret_cast<const char *>(kj + off), _MM_HINT_NTA);
    __m256 a[8];
    for (int r = 0; r < 8; r++) a[r] = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; d += 8) {
      __m256 vq = _mm256_loadu_ps(q + d);
      for (int r = 0; r < 8; r++) a[r] = _mm256_fmadd_ps(vq, _mm256_loadu_ps(kj + r * hd + d), a[r]);
    }
    __m256 sc = _mm256_mul_ps(fold8(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]), _mm256_set1_ps(scale));
    if (mask) sc = _mm256_add_ps(sc, _mm256_loadu_ps(mask + j));
    _mm256_storeu_ps(s + j, sc);
  }
  for (; j < S; j++) {
    __m256 a0 = _mm256_setzero_ps();
    for (int64_t d = 0; d < hd; d += 8)
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + d), _mm256_loadu_ps(k + j * hd + d), a0);
    s[j] = fold1(a0) * scale;
    if (mask) s[j] += mask[j];
  }
}

// weightedValues: out = Σ_j p[j]·value_j over the S values at stride hd
// from v, in order of j.
__attribute__((target("avx2,fma"))) void weightedValues(const float *p, const float *v, float *out, int64_t S,
                                                        int64_t hd) {
  for (int64_t d = 0; d < hd; d += 32) {
    int64_t w = hd - d < 32 ? hd - d : 32;  // 8, 16, 24 or 32 lanes
    __m256 a[4];
    for (int r = 0; r < 4; r++) a[r] = _mm256_setzero_ps();
    for (int64_t j = 0; j < S; j++) {
      __m256 pj = _mm256_set1_ps(p[j]);
      const float *vj = v + j * hd + d;
      if (d == 0)  // as the keys (scoresOfOneQuery)
        for (int64_t off = 16 * hd; off < 17 * hd; off += 16)
          _mm_prefetch(reinterpret_cast<const char *>(vj + off), _MM_HINT_NTA);
      for (int r = 0; r < 4; r++)
        if (r * 8 < w) a[r] = _mm256_fmadd_ps(pj, _mm256_loadu_ps(vj + r * 8), a[r]);
    }
    for (int r = 0; r < 4; r++)
      if (r * 8 < w) _mm256_storeu_ps(out + d + r * 8, a[r]);
  }
}

bool plainFloat(const at::Tensor &t) { return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat; }

at::Tensor *linearRows(const at::Tensor &x, const at::Tensor &w, const at::Tensor *bias) {
  const int64_t K = w.size(1), N = w.size(0);
  if (!cpu_has_avx2_fma() || at::GradMode::is_enabled() || !plainFloat(x) || !plainFloat(w) || w.dim() != 2 ||
      x.size(-1) != K || K % 8 != 0 || x.numel() / K > MEMO_LINEAR_MAX_ROWS || x.numel() == 0 ||
      (bias && (!plainFloat(*bias) || bias->dim() != 1 || bias->size(0) != N)))
    return nullptr;
  at::Tensor xc = x.contiguous(), wc = w.contiguous();
  at::Tensor bc = bias ? bias->contiguous() : at::Tensor();
  const int64_t M = xc.numel() / K;
  std::vector<int64_t> shape = x.sizes().vec();
  shape.back() = N;
  at::Tensor out = at::empty(shape, x.options());
  const float *px = xc.data_ptr<float>(), *pw = wc.data_ptr<float>(), *pb = bias ? bc.data_ptr<float>() : nullptr;
  float *po = out.data_ptr<float>();
  // Threads split the weight rows in blocks of 4, so each reads its own.
  at::parallel_for(0, (N + 3) / 4, 16, [&](int64_t b0, int64_t b1) {
    rowsTimesWeights(px, pw, pb, po, M, N, K, b0 * 4, std::min(N, b1 * 4));
  });
  return new at::Tensor(out);
}

at::Tensor *attendOne(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v, const at::Tensor *mask,
                      double scale) {
  // q [B,H,1,hd]; k, v [B,KV,S,hd] whose last two dimensions are packed
  // (a narrowed cache is); mask, if any, [B,1,1,S].
  if (!cpu_has_avx2_fma() || at::GradMode::is_enabled() || !plainFloat(q) || !plainFloat(k) || !plainFloat(v) ||
      q.dim() != 4 || k.dim() != 4 || v.dim() != 4 || q.size(2) != 1 || k.sizes() != v.sizes())
    return nullptr;
  const int64_t B = q.size(0), H = q.size(1), hd = q.size(3), KV = k.size(1), S = k.size(2);
  if (k.size(0) != B || k.size(3) != hd || hd % 8 != 0 || KV == 0 || H % KV != 0 || S == 0 || k.stride(3) != 1 ||
      k.stride(2) != hd || v.stride(3) != 1 || v.stride(2) != hd)
    return nullptr;
  at::Tensor mc;
  if (mask) {
    if (!plainFloat(*mask) || mask->dim() != 4 || mask->size(0) != B || mask->size(1) != 1 || mask->size(2) != 1 ||
        mask->size(3) != S)
      return nullptr;
    mc = mask->contiguous();
  }
  at::Tensor qc = q.contiguous();
  at::Tensor scores = at::empty({B, H, 1, S}, q.options());
  const float *pq = qc.data_ptr<float>(), *pk = k.data_ptr<float>(), *pv = v.data_ptr<float>();
  const float *pm = mask ? mc.data_ptr<float>() : nullptr;
  float *ps = scores.data_ptr<float>();
  const int64_t group = H / KV;
  const float fscale = static_cast<float>(scale);
  at::parallel_for(0, B * H, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
      const int64_t b = i / H, kh = (i % H) / group;
      scoresOfOneQuery(pq + i * hd, pk + b * k.stride(0) + kh * k.stride(1), pm ? pm + b * S : nullptr, ps + i * S,
                       S, hd, fscale);
    }
  });
  // The softmax is libtorch's own, the one the general path takes.
  at::Tensor p = at::softmax(scores, -1);
  at::Tensor out = at::empty({B, H, 1, hd}, q.options());
  const float *pp = p.data_ptr<float>();
  float *po = out.data_ptr<float>();
  at::parallel_for(0, B * H, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++) {
      const int64_t b = i / H, kh = (i % H) / group;
      weightedValues(pp + i * S, pv + b * v.stride(0) + kh * v.stride(1), po + i * hd, S, hd);
    }
  });
  return new at::Tensor(out);
}

}  // namespace

extern "C" {

void *memo_linear_rows(void *x, void *w, void *bias, char **err) {
  try {
    return linearRows(*static_cast<at::Tensor *>(x), *static_cast<at::Tensor *>(w),
                      bias ? static_cast<at::Tensor *>(bias) : nullptr);
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}

void *memo_attend_one(void *q, void *k, void *v, void *mask, double scale, char **err) {
  try {
    return attendOne(*static_cast<at::Tensor *>(q), *static_cast<at::Tensor *>(k), *static_cast<at::Tensor *>(v),
                     mask ? static_cast<at::Tensor *>(mask) : nullptr, scale);
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}

int memo_kernels_supported(void) { return cpu_has_avx2_fma() ? 1 : 0; }
}
