// Rotary embedding, the SwiGLU product and the bfloat16 copies of an
// activation several products read: libtorch's composition, or on a GPU
// memo's own kernels (elementwise.cu) as autograd functions.
//
// The composition is what gotch's ops would compute one by one, in one Go
// → C call. On a GPU each of its ops is a kernel that reads and writes the
// whole activation: rotary embedding of a bfloat16 q makes seven passes
// forward (a copy for the swapped halves, two float32 products, their
// float32 sum, the cast to bfloat16 for attention) and more backward, and
// SwiGLU three forward and six backward. At a 1.1B model's 8 × 2048 tokens
// that is tens of gigabytes a step. The kernels read each input once and
// write each output once, and compute what the composition computes (see
// elementwise.cu): rotary embedding bit for bit, SwiGLU to its last bit.
//
// The kernels are compiled by NVRTC on a device's first call, then checked
// against the composition on a small input, forward and backward; a
// device whose compilation or check fails keeps the composition, and
// memo_elementwise_status says why (torchx.ElementwiseKernels). The CPU
// always takes the composition, except in tests, which run the kernels'
// per-element code on the host (memo_elementwise_on_host) to check it
// against libtorch. The training loss's cross-entropy kernel is
// crossentropy.cpp's, on the same footing (elementwise_internal.h).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "elementwise.h"
#include "elementwise_host.h"
#include "elementwise_internal.h"
#include "elementwise_loader.h"
#include "errmsg.h"

namespace memo_elementwise {

std::atomic<long long> kernel_calls[call_kinds];

// close_to reports whether a equals want within tol of want's largest
// magnitude everywhere, naming the largest difference otherwise. The check
// is there to catch a kernel that computes something else (a wrong index
// is off by the values' own size), not last bits.
bool close_to(const std::string &what, const at::Tensor &a, const at::Tensor &want, double tol, std::string *why) {
  at::Tensor x = a.to(at::kFloat).cpu(), y = want.to(at::kFloat).cpu();
  if (x.sizes() != y.sizes()) {
    *why = what + ": shapes differ";
    return false;
  }
  const double err = torch::abs(torch::sub(x, y)).max().item<double>();
  const double scale = torch::abs(y).max().item<double>();
  if (err <= tol * scale) return true;
  *why = what + ": largest difference " + std::to_string(err) + " of values up to " + std::to_string(scale);
  return false;
}

}  // namespace memo_elementwise

namespace {

using namespace memo_elementwise;

std::atomic<bool> on_host{false};

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

// rope_composed is rotary embedding by libtorch's ops, over the first rot
// entries of x's last dimension, the rest passed through.
at::Tensor rope_composed(const at::Tensor &x, const at::Tensor &c, const at::Tensor &s, int64_t rot) {
  const int64_t hd = x.size(-1);
  if (rot == hd) return rotate_half(x, c, s);
  at::Tensor head = torch::narrow(x, -1, 0, rot);
  at::Tensor pass = torch::narrow(x, -1, rot, hd - rot);
  std::vector<at::Tensor> parts{rotate_half(head, c, s), pass};
  return torch::cat(parts, -1);
}

at::Tensor swiglu_composed(const at::Tensor &gate, const at::Tensor &up) {
  return torch::mul(torch::silu(gate), up);
}

bool kernel_dtype(at::ScalarType t) { return t == at::kFloat || t == at::kBFloat16; }

const char *dtype_name(at::ScalarType t) { return t == at::kFloat ? "f32" : "bf16"; }

bool gpu_ready(int device, std::string *why);

// rope_fits: x is [B,H,T,D] in float32 or bfloat16, rotated over all of
// its even D, with contiguous float32 tables on its device, [T,D] or
// [B,1,T,D].
bool rope_fits(const at::Tensor &x, const at::Tensor &c, const at::Tensor &s, int64_t rot, at::ScalarType out) {
  if (x.dim() != 4 || x.numel() == 0 || rot != x.size(3) || rot % 2 != 0) return false;
  if (!kernel_dtype(x.scalar_type()) || !kernel_dtype(out) || c.sizes() != s.sizes()) return false;
  const int64_t b = x.size(0), t = x.size(2), d = x.size(3);
  const bool shared = c.dim() == 2 && c.size(0) == t && c.size(1) == d;
  const bool perRow = c.dim() == 4 && c.size(0) == b && c.size(1) == 1 && c.size(2) == t && c.size(3) == d;
  if (!shared && !perRow) return false;
  for (const at::Tensor *tab : {&c, &s}) {
    // The tables take no gradient here: RopeFn gives them none.
    if (tab->requires_grad() || tab->scalar_type() != at::kFloat || !tab->is_contiguous() || tab->device() != x.device())
      return false;
  }
  return true;
}

memo::RopeShape rope_shape(const at::Tensor &in, const at::Tensor &out, const at::Tensor &table) {
  memo::RopeShape s;
  for (int i = 0; i < 4; i++) {
    s.size[i] = in.size(i);
    s.in[i] = in.stride(i);
    s.out[i] = out.stride(i);
  }
  s.table_batch = table.dim() == 4 ? in.size(2) * in.size(3) : 0;
  return s;
}

long long rope_pairs(const at::Tensor &x) { return static_cast<long long>(x.numel() / 2); }

// rope_run writes y (forward) or dx (backward) from x or dy, on the host
// or the GPU.
template <typename TI, typename TO>
void rope_host(bool forward, const memo::RopeShape &s, long long n, const void *in, void *out, const float *c,
               const float *sn) {
  for (long long p = 0; p < n; p++) {
    if (forward)
      memo::rope_forward_pair<TI, TO>(s, p, static_cast<const TI *>(in), static_cast<TO *>(out), c, sn);
    else
      memo::rope_backward_pair<TO, TI>(s, p, static_cast<const TO *>(in), static_cast<TI *>(out), c, sn);
  }
}

void rope_run(Place where, bool forward, at::ScalarType xt, at::ScalarType yt, const at::Tensor &in,
              const at::Tensor &out, const at::Tensor &c, const at::Tensor &sn) {
  memo::RopeShape s = rope_shape(in, out, c);
  long long n = rope_pairs(in);
  const void *ip = in.data_ptr();
  void *op = out.data_ptr();
  const float *cp = c.data_ptr<float>(), *sp = sn.data_ptr<float>();
  if (where == Place::gpu) {
    void *args[] = {&s, &n, &ip, &op, &cp, &sp};
    memo_elementwise::launch(in.get_device(),
                             memo_elementwise::rope_kernel(forward, xt == at::kBFloat16, yt == at::kBFloat16), n, args);
    return;
  }
  using memo::bf16;
  const bool xf = xt == at::kFloat, yf = yt == at::kFloat;
  if (xf && yf) rope_host<float, float>(forward, s, n, ip, op, cp, sp);
  if (xf && !yf) rope_host<float, bf16>(forward, s, n, ip, op, cp, sp);
  if (!xf && yf) rope_host<bf16, float>(forward, s, n, ip, op, cp, sp);
  if (!xf && !yf) rope_host<bf16, bf16>(forward, s, n, ip, op, cp, sp);
}

// RopeFn is the kernels' rotary embedding as an autograd function; its
// output in out's dtype, laid out as x is.
struct RopeFn : public torch::autograd::Function<RopeFn> {
  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x, const at::Tensor &c,
                            const at::Tensor &s, int64_t out, int64_t where) {
    const at::ScalarType yt = static_cast<at::ScalarType>(out);
    ctx->save_for_backward({c, s});
    ctx->saved_data["x"] = static_cast<int64_t>(x.scalar_type());
    ctx->saved_data["where"] = where;
    at::Tensor y = at::empty_like(x, x.options().dtype(yt));
    kernel_calls[call_rope]++;
    rope_run(static_cast<Place>(where), true, x.scalar_type(), yt, x, y, c, s);
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    const at::Tensor &dy = grads[0];
    at::Tensor dx;
    if (dy.defined()) {
      auto saved = ctx->get_saved_variables();
      const at::ScalarType xt = static_cast<at::ScalarType>(ctx->saved_data["x"].toInt());
      dx = at::empty_like(dy, dy.options().dtype(xt));
      rope_run(static_cast<Place>(ctx->saved_data["where"].toInt()), false, xt, dy.scalar_type(), dy, dx, saved[0],
               saved[1]);
    }
    return {dx, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

at::Tensor rope(const at::Tensor &x, const at::Tensor &c, const at::Tensor &s, int64_t rot, int out_code,
                bool kernels) {
  const at::ScalarType out = out_code < 0 ? at::result_type(x, c) : static_cast<at::ScalarType>(out_code);
  Place where = place_of(x, kernels);
  if (where != Place::none && rope_fits(x, c, s, rot, out))
    return RopeFn::apply(x, c, s, static_cast<int64_t>(out), static_cast<int64_t>(where));
  at::Tensor y = rope_composed(x, c, s, rot);
  return y.scalar_type() == out ? y : y.to(out);
}

// SwiGLUPtrs are a SwiGLU call's tensors by address: gate and up (their
// gradients, backward) at the shape's row stride, y (dy) contiguous.
struct SwiGLUPtrs {
  const void *gate, *up, *y;  // y: dy, backward
  void *out, *dgate, *dup;    // out: y, forward
};

template <typename T>
void swiglu_host(bool forward, const memo::SwiGLUShape &s, const SwiGLUPtrs &p) {
  for (long long i = 0; i < s.n; i++) {
    if (forward)
      memo::swiglu_forward_at<T>(s, i, (const T *)p.gate, (const T *)p.up, (T *)p.out);
    else
      memo::swiglu_backward_at<T>(s, i, (const T *)p.y, (const T *)p.gate, (const T *)p.up, (T *)p.dgate,
                                  (T *)p.dup);
  }
}

// swiglu_run computes SwiGLU's forward (y from gate and up) or backward
// (both gradients from dy, gate and up) on the host or device's GPU.
void swiglu_run(Place where, int device, bool forward, at::ScalarType t, memo::SwiGLUShape s, SwiGLUPtrs p) {
  if (where == Place::gpu) {
    void *fwd[] = {&s, &p.gate, &p.up, &p.out};
    void *bwd[] = {&s, &p.y, &p.gate, &p.up, &p.dgate, &p.dup};
    memo_elementwise::launch(device, memo_elementwise::swiglu_kernel(forward, t == at::kBFloat16), s.n,
                             forward ? fwd : bwd);
    return;
  }
  if (t == at::kFloat)
    swiglu_host<float>(forward, s, p);
  else
    swiglu_host<memo::bf16>(forward, s, p);
}

// half_of is the address f elements into t's data (the up half of a
// gate|up row).
const void *half_of(const at::Tensor &t, int64_t f) {
  return static_cast<const char *>(t.data_ptr()) + f * static_cast<int64_t>(t.element_size());
}

// swiglu_fits: gate and up contiguous, of one shape, dtype and device.
bool swiglu_fits(const at::Tensor &gate, const at::Tensor &up) {
  return kernel_dtype(gate.scalar_type()) && gate.scalar_type() == up.scalar_type() && gate.sizes() == up.sizes() &&
         gate.device() == up.device() && gate.is_contiguous() && up.is_contiguous() && gate.numel() > 0 &&
         gate.dim() > 0;
}

// SwiGLUFn is the kernels' SiLU(gate)·up as an autograd function. It
// keeps gate and up for the backward pass, where the composition keeps
// SiLU(gate) as well.
struct SwiGLUFn : public torch::autograd::Function<SwiGLUFn> {
  static memo::SwiGLUShape shape(const at::Tensor &gate) {
    const int64_t f = gate.size(-1);
    return memo::SwiGLUShape{static_cast<long long>(gate.numel()), f, f};
  }

  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &gate, const at::Tensor &up,
                            int64_t where) {
    ctx->save_for_backward({gate, up});
    ctx->saved_data["where"] = where;
    at::Tensor y = at::empty_like(gate, at::MemoryFormat::Contiguous);
    kernel_calls[call_swiglu]++;
    swiglu_run(static_cast<Place>(where), gate.get_device(), true, gate.scalar_type(), shape(gate),
               {gate.data_ptr(), up.data_ptr(), nullptr, y.data_ptr(), nullptr, nullptr});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    auto saved = ctx->get_saved_variables();
    const at::Tensor &gate = saved[0], &up = saved[1];
    at::Tensor dy = grads[0].to(gate.scalar_type()).contiguous();
    at::Tensor dgate = at::empty_like(gate, at::MemoryFormat::Contiguous);
    at::Tensor dup = at::empty_like(up, at::MemoryFormat::Contiguous);
    swiglu_run(static_cast<Place>(ctx->saved_data["where"].toInt()), gate.get_device(), false, gate.scalar_type(),
               shape(gate), {gate.data_ptr(), up.data_ptr(), dy.data_ptr(), nullptr, dgate.data_ptr(), dup.data_ptr()});
    return {dgate, dup, at::Tensor()};
  }
};

// SwiGLUJoinedFn is SiLU(gate)·up of one gate|up product [..., 2f] (gate
// the first f of each row, up the rest), as a joined model's MLP makes
// it: no copies of the halves, and one gradient [..., 2f] where autograd
// would sum two zero-padded ones through the halves' views.
struct SwiGLUJoinedFn : public torch::autograd::Function<SwiGLUJoinedFn> {
  static memo::SwiGLUShape shape(const at::Tensor &gu) {
    const int64_t f = gu.size(-1) / 2;
    return memo::SwiGLUShape{static_cast<long long>(gu.numel() / 2), f, 2 * f};
  }

  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &gu, int64_t where) {
    ctx->save_for_backward({gu});
    ctx->saved_data["where"] = where;
    std::vector<int64_t> size = gu.sizes().vec();
    size.back() /= 2;
    at::Tensor y = at::empty(size, gu.options());
    const memo::SwiGLUShape s = shape(gu);
    kernel_calls[call_swiglu]++;
    swiglu_run(static_cast<Place>(where), gu.get_device(), true, gu.scalar_type(), s,
               {gu.data_ptr(), half_of(gu, s.f), nullptr, y.data_ptr(), nullptr, nullptr});
    return y;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor()};
    const at::Tensor gu = ctx->get_saved_variables()[0];
    at::Tensor dy = grads[0].to(gu.scalar_type()).contiguous();
    at::Tensor dgu = at::empty_like(gu, at::MemoryFormat::Contiguous);
    const memo::SwiGLUShape s = shape(gu);
    swiglu_run(static_cast<Place>(ctx->saved_data["where"].toInt()), gu.get_device(), false, gu.scalar_type(), s,
               {gu.data_ptr(), half_of(gu, s.f), dy.data_ptr(), nullptr, dgu.data_ptr(),
                const_cast<void *>(half_of(dgu, s.f))});
    return {dgu, at::Tensor()};
  }
};

at::Tensor swiglu(const at::Tensor &gate, const at::Tensor &up, bool kernels) {
  Place where = place_of(gate, kernels);
  if (where != Place::none && swiglu_fits(gate, up))
    return SwiGLUFn::apply(gate, up, static_cast<int64_t>(where));
  return swiglu_composed(gate, up);
}

// swiglu_joined is SiLU(gate)·up of the halves of gu's last dimension.
at::Tensor swiglu_joined(const at::Tensor &gu, bool kernels) {
  const int64_t f = gu.size(-1) / 2;
  Place where = place_of(gu, kernels);
  if (where != Place::none && kernel_dtype(gu.scalar_type()) && gu.is_contiguous() && gu.numel() > 0 &&
      gu.size(-1) == 2 * f)
    return SwiGLUJoinedFn::apply(gu, static_cast<int64_t>(where));
  return swiglu_composed(torch::narrow(gu, -1, 0, f), torch::narrow(gu, -1, f, f));
}

// copies_run writes the k bfloat16 copies of float32 x (forward) or sums
// their k gradients into float32 dx (backward), n elements, contiguous, on
// the host or device's GPU. Unused pointers repeat the first.
void copies_run(Place where, int device, bool forward, long long n, int k, const void *in[3], void *out[3]) {
  if (where == Place::gpu) {
    const void *x = in[0], *d0 = in[0], *d1 = in[1], *d2 = in[2];
    void *y0 = out[0], *y1 = out[1], *y2 = out[2], *dx = out[0];
    void *fwd[] = {&n, &k, &x, &y0, &y1, &y2};
    void *bwd[] = {&n, &k, &d0, &d1, &d2, &dx};
    memo_elementwise::launch(device, forward ? memo_elementwise::copies_fwd_bf16 : memo_elementwise::copies_bwd_bf16, n,
                             forward ? fwd : bwd);
    return;
  }
  using memo::bf16;
  for (long long i = 0; i < n; i++) {
    if (forward)
      memo::cast_copies_forward_at(i, k, static_cast<const float *>(in[0]), static_cast<bf16 *>(out[0]),
                                   static_cast<bf16 *>(out[1]), static_cast<bf16 *>(out[2]));
    else
      memo::cast_copies_backward_at(i, k, static_cast<const bf16 *>(in[0]), static_cast<const bf16 *>(in[1]),
                                    static_cast<const bf16 *>(in[2]), static_cast<float *>(out[0]));
  }
}

// copies_composed is k casts of x to t, each its own autograd node.
std::vector<at::Tensor> copies_composed(const at::Tensor &x, at::ScalarType t, int64_t k) {
  std::vector<at::Tensor> ys;
  for (int64_t j = 0; j < k; j++) ys.push_back(x.to(t));
  return ys;
}

// new_copies allocates one bfloat16 buffer shaped as x for the k copies
// and returns k tensors over it, pointing ptrs at it (the kernels take
// three). The copies hold the same values and are only read (each by a
// product), so one buffer serves them: autograd still sees k outputs and
// hands each product's gradient back on its own, while the forward pass
// writes one copy instead of k, and the products, which each keep their
// input for the backward pass, keep one buffer between them instead of k
// (on the 1.1B shape at 8 x 2048, 201 MB a layer). A forward kernel is
// therefore run with one copy to write (copies_written).
std::vector<at::Tensor> new_copies(const at::Tensor &x, int64_t k, void *ptrs[3]) {
  at::Tensor y = at::empty_like(x, x.options().dtype(at::kBFloat16), at::MemoryFormat::Contiguous);
  std::vector<at::Tensor> ys{y};
  // set_, not a view: autograd treats each as an output of its own.
  for (int64_t j = 1; j < k; j++)
    ys.push_back(at::empty({0}, y.options()).set_(y.storage(), y.storage_offset(), y.sizes(), y.strides()));
  for (int j = 0; j < 3; j++) ptrs[j] = y.data_ptr();
  return ys;
}

// copies_written is how many copies a forward kernel writes into
// new_copies' buffer: one, whatever k.
constexpr int copies_written = 1;

// copies_grads is the copies' gradients as the kernels read them:
// bfloat16, contiguous, zeros for a copy no product read; ptrs as
// new_copies sets them. Autograd hands each copy's gradient in the copy's
// dtype and shape, so only the layout may need a pass.
std::vector<at::Tensor> copies_grads(const torch::autograd::variable_list &grads, const at::Tensor &like,
                                     const void *ptrs[3]) {
  std::vector<at::Tensor> dys;
  for (const at::Tensor &g : grads)
    dys.push_back(g.defined() ? g.to(at::kBFloat16).contiguous()
                              : at::zeros_like(like, like.options().dtype(at::kBFloat16), at::MemoryFormat::Contiguous));
  for (size_t j = 0; j < 3; j++) ptrs[j] = dys[j < dys.size() ? j : 0].data_ptr();
  return dys;
}

// CastCopiesFn is k bfloat16 copies of a contiguous float32 x in one pass,
// as an autograd function whose backward pass sums the copies' gradients
// into float32 in one pass. The composition writes each copy in a pass of
// its own, and backward widens each gradient in a pass and adds them in
// k − 1 more.
struct CastCopiesFn : public torch::autograd::Function<CastCopiesFn> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x, int64_t k,
                                                int64_t where) {
    ctx->saved_data["where"] = where;
    const void *in[3] = {x.data_ptr(), nullptr, nullptr};
    void *out[3];
    std::vector<at::Tensor> ys = new_copies(x, k, out);
    kernel_calls[call_copies]++;
    copies_run(static_cast<Place>(where), x.get_device(), true, static_cast<long long>(x.numel()), copies_written, in,
               out);
    return ys;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    // Autograd hands a custom function zeros for an output no one read
    // (materialized gradients, the default), so grads[0] is defined.
    const void *in[3];
    std::vector<at::Tensor> dys = copies_grads(grads, grads[0], in);
    at::Tensor dx = at::empty_like(dys[0], dys[0].options().dtype(at::kFloat), at::MemoryFormat::Contiguous);
    void *out[3] = {dx.data_ptr(), dx.data_ptr(), dx.data_ptr()};
    const int k = static_cast<int>(grads.size());
    copies_run(static_cast<Place>(ctx->saved_data["where"].toInt()), dx.get_device(), false,
               static_cast<long long>(dx.numel()), k, in, out);
    return {dx, at::Tensor(), at::Tensor()};
  }
};

// cast_copies is k copies of x in dtype t, each its own tensor and its own
// gradient's way back: memo's kernel for float32 → bfloat16 where it
// runs, else k casts.
std::vector<at::Tensor> cast_copies(const at::Tensor &x, at::ScalarType t, int64_t k, bool kernels) {
  if (k < 1 || k > 3) throw std::invalid_argument("cast copies: k = " + std::to_string(k) + ", want 1 to 3");
  Place where = place_of(x, kernels);
  if (where != Place::none && x.scalar_type() == at::kFloat && t == at::kBFloat16 && x.is_contiguous() &&
      x.numel() > 0)
    return CastCopiesFn::apply(x, k, static_cast<int64_t>(where));
  return copies_composed(x, t, k);
}

// RMSPtrs are an RMSNorm-copies call's tensors by address. With a
// residual sum (RMSNormCopiesFn with a delta), forward reads x and delta
// and writes h, the norm's input; backward reads h as x, adds gh into dx
// and writes dd; without one, delta, h, gh and dd are null.
struct RMSPtrs {
  const float *x, *gain;
  float *rstd;
  void *y[3];         // the copies (forward)
  const void *dy[3];  // their gradients (backward)
  float *dx, *dgain_part;
  const void *delta = nullptr;
  float *h = nullptr;
  const float *gh = nullptr;
  void *dd = nullptr;
};

// rms_blocks is how many blocks the backward pass's grid has, each with a
// partial row of the gain's gradient: enough to fill a GPU, few enough that
// their rows are cheap to sum.
long long rms_blocks(long long rows) { return std::min<long long>(rows, 1024); }

// rms_run computes RMSNorm into the copies (forward) or x's and the gain's
// gradients (backward) on the host, lane by lane as the GPU's blocks do,
// or on device's GPU.
void rms_run(Place where, int device, bool forward, const memo::RowShape &s, RMSPtrs p) {
  using memo::bf16;
  const bf16 *d0 = static_cast<const bf16 *>(p.dy[0]), *d1 = static_cast<const bf16 *>(p.dy[1]),
             *d2 = static_cast<const bf16 *>(p.dy[2]);
  bf16 *y0 = static_cast<bf16 *>(p.y[0]), *y1 = static_cast<bf16 *>(p.y[1]), *y2 = static_cast<bf16 *>(p.y[2]);
  const bf16 *delta = static_cast<const bf16 *>(p.delta);
  bf16 *dd = static_cast<bf16 *>(p.dd);
  // A residual sum's norm: forward has delta; backward has gh (h's
  // gradient from its other readers, which autograd always hands).
  const bool sum = forward ? p.delta != nullptr : p.gh != nullptr;
  if (where == Place::gpu) {
    using memo_elementwise::Kernel;
    void *fwd[] = {const_cast<memo::RowShape *>(&s), &p.x, &p.gain, &y0, &y1, &y2, &p.rstd};
    void *bwd[] = {const_cast<memo::RowShape *>(&s), &d0, &d1, &d2, &p.x, &p.gain, &p.rstd, &p.dx, &p.dgain_part};
    void *add_fwd[] = {const_cast<memo::RowShape *>(&s), &p.x, &delta, &p.h, &p.gain, &y0, &y1, &y2, &p.rstd};
    void *add_bwd[] = {const_cast<memo::RowShape *>(&s), &d0, &d1, &d2, &p.x, &p.gain, &p.rstd, &p.gh, &p.dx, &dd,
                       &p.dgain_part};
    const Kernel k = forward ? (sum ? memo_elementwise::add_rms_copies_fwd : memo_elementwise::rms_copies_fwd)
                             : (sum ? memo_elementwise::add_rms_copies_bwd : memo_elementwise::rms_copies_bwd);
    void **args = forward ? (sum ? add_fwd : fwd) : (sum ? add_bwd : bwd);
    memo_elementwise::launch_blocks(device, k, forward ? std::min<long long>(s.rows, 1LL << 20) : rms_blocks(s.rows),
                                    MEMO_ROW_LANES, args);
    return;
  }
  float part[MEMO_ROW_LANES];
  const long long blocks = rms_blocks(s.rows);
  for (long long row = 0; row < s.rows; row++) {
    if (forward) {
      const float *x = p.x;
      if (sum) {
        for (int l = 0; l < MEMO_ROW_LANES; l++) part[l] = memo::add_lane_sum_sq(s, p.x, delta, p.h, row, l);
        x = p.h;
      } else {
        for (int l = 0; l < MEMO_ROW_LANES; l++) part[l] = memo::rms_lane_sum_sq(s, p.x, row, l);
      }
      const float r = memo::rms_rstd(s, memo::lanes_tree(part, memo::LanesAdd()));
      for (int l = 0; l < MEMO_ROW_LANES; l++) memo::rms_lane_write(s, x, p.gain, r, row, l, y0, y1, y2);
      p.rstd[row] = r;
    } else {
      for (int l = 0; l < MEMO_ROW_LANES; l++) part[l] = memo::rms_lane_dot(s, d0, d1, d2, p.x, p.gain, row, l);
      const float dot = memo::lanes_tree(part, memo::LanesAdd());
      float *mine = p.dgain_part + (row % blocks) * s.d;  // the GPU's block for this row
      for (int l = 0; l < MEMO_ROW_LANES; l++)
        memo::rms_lane_grad(s, d0, d1, d2, p.x, p.gain, p.rstd[row], dot, row, l, p.dx, mine, p.gh, dd);
    }
  }
}

// RMSNormCopiesFn is RMSNorm of float32 x [..., d] with float32 gain [d],
// into k bfloat16 copies (as CastCopiesFn makes them of RMSNorm's output),
// as an autograd function: one pass over x forward, where RMSNorm and the
// copies make two, and one backward from the copies' gradients to x's and
// the gain's, where they make two and keep RMSNorm's float32 output's
// gradient between them. It keeps the norm's input, the gain and each
// row's 1/rms.
//
// With a delta (bfloat16, x's shape, both contiguous; an empty tensor for
// none, since libtorch's custom functions take no undefined input) it
// normalizes the residual sum h = x + delta, which it returns before
// the copies: forward, one pass where the addition and the norm make two
// (and the norm reads back the sum the addition wrote); backward, one
// pass adds the norm's gradient of h to the one h's other readers give
// it, and writes the sum as x's gradient and, in bfloat16, as delta's,
// where autograd writes the norm's gradient, adds the two in another pass
// and casts the sum in a third.
struct RMSNormCopiesFn : public torch::autograd::Function<RMSNormCopiesFn> {
  static memo::RowShape shape(const at::Tensor &x, double eps, int64_t k) {
    const int64_t d = x.size(-1);
    return memo::RowShape{static_cast<long long>(x.numel() / d), static_cast<int>(d), static_cast<int>(k),
                          static_cast<float>(eps)};
  }

  static torch::autograd::variable_list forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x,
                                                const at::Tensor &delta, const at::Tensor &gain, double eps, int64_t k,
                                                int64_t where) {
    const bool sum = delta.numel() > 0;
    const memo::RowShape s = shape(x, eps, copies_written);
    at::Tensor rstd = at::empty({s.rows}, x.options());
    RMSPtrs p{x.data_ptr<float>(), gain.data_ptr<float>(), rstd.data_ptr<float>(), {}, {}, nullptr, nullptr};
    at::Tensor h = x;
    if (sum) {
      h = at::empty_like(x, at::MemoryFormat::Contiguous);
      p.delta = delta.data_ptr();
      p.h = h.data_ptr<float>();
    }
    std::vector<at::Tensor> ys = new_copies(x, k, p.y);
    kernel_calls[sum ? call_add_rms_copies : call_rms_copies]++;
    rms_run(static_cast<Place>(where), x.get_device(), true, s, p);
    ctx->save_for_backward({h, gain, rstd});
    ctx->saved_data["eps"] = eps;
    ctx->saved_data["where"] = where;
    ctx->saved_data["sum"] = sum;
    if (sum) ys.insert(ys.begin(), h);
    return ys;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &h = saved[0], &gain = saved[1], &rstd = saved[2];
    const bool sum = ctx->saved_data["sum"].toBool();
    const int64_t k = static_cast<int64_t>(grads.size()) - (sum ? 1 : 0);
    const memo::RowShape s = shape(h, ctx->saved_data["eps"].toDouble(), k);
    at::Tensor dx = at::empty_like(h, at::MemoryFormat::Contiguous);
    at::Tensor part = at::zeros({rms_blocks(s.rows), s.d}, h.options());
    RMSPtrs p{h.data_ptr<float>(), gain.data_ptr<float>(), rstd.data_ptr<float>(), {}, {}, dx.data_ptr<float>(),
              part.data_ptr<float>()};
    at::Tensor gh, dd;
    if (sum) {
      // Autograd hands a custom function zeros for an output no one read,
      // so h's gradient, grads[0], is defined.
      gh = grads[0].to(at::kFloat).contiguous();
      dd = at::empty_like(h, h.options().dtype(at::kBFloat16), at::MemoryFormat::Contiguous);
      p.gh = gh.data_ptr<float>();
      p.dd = dd.data_ptr();
    }
    torch::autograd::variable_list copy_grads(grads.begin() + (sum ? 1 : 0), grads.end());
    std::vector<at::Tensor> dys = copies_grads(copy_grads, h, p.dy);
    rms_run(static_cast<Place>(ctx->saved_data["where"].toInt()), h.get_device(), false, s, p);
    const int64_t rows_dim[1] = {0};
    return {dx, dd, torch::sum(part, at::IntArrayRef(rows_dim, 1)), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// no_delta is RMSNormCopiesFn's delta for a norm of x itself.
at::Tensor no_delta(const at::Tensor &x) { return at::empty({0}, x.options().dtype(at::kBFloat16)); }

// rms_norm_copies_fits: float32 x [..., d] contiguous, a float32 gain [d]
// on its device, k bfloat16 copies, and a delta that is empty (none) or a
// contiguous bfloat16 tensor of x's shape on its device.
bool rms_norm_copies_fits(const at::Tensor &x, const at::Tensor &delta, const at::Tensor &gain, at::ScalarType t,
                          int64_t k) {
  return k >= 1 && k <= 3 && t == at::kBFloat16 && x.scalar_type() == at::kFloat && x.is_contiguous() &&
         x.dim() >= 1 && x.numel() > 0 && x.size(-1) <= (1 << 30) && gain.scalar_type() == at::kFloat &&
         gain.dim() == 1 && gain.size(0) == x.size(-1) && gain.is_contiguous() && gain.device() == x.device() &&
         (delta.numel() == 0 || (delta.scalar_type() == at::kBFloat16 && delta.is_contiguous() &&
                               delta.sizes() == x.sizes() && delta.device() == x.device()));
}

// rms_copies_check runs RMSNormCopiesFn against the composition (with
// sum, the residual sum; RMSNorm; the casts into k copies) on x of rows ×
// width and a gain: the sum bit for bit, the copies within a bfloat16
// rounding, and backward, from the copies' bfloat16 gradients (and a
// gradient of the sum), x's, the gain's (and delta's) gradients. Inputs
// are deterministic functions of their index.
bool rms_copies_check(const torch::TensorOptions &f32, Place where, int64_t rows, int64_t width, int64_t k, bool sum,
                      std::string *why) {
  torch::AutoGradMode grad(true);
  auto wave = [&](double freq, double scale) {
    return torch::mul(torch::sin(torch::mul(torch::arange(rows * width, f32), at::Scalar(freq))), at::Scalar(scale))
        .view({rows, width});
  };
  at::Tensor x = wave(0.37, 2.0);
  at::Tensor gain = torch::add(torch::mul(torch::cos(torch::arange(width, f32)), at::Scalar(0.5)), at::Scalar(1.0));
  at::Tensor xk = x.detach().requires_grad_(true), xc = x.detach().requires_grad_(true);
  at::Tensor gk = gain.detach().requires_grad_(true), gc = gain.detach().requires_grad_(true);
  at::Tensor dk = no_delta(x), dc;
  std::vector<at::Tensor> wrt_k = {xk, gk}, wrt_c = {xc, gc};
  at::Tensor hc = xc;
  if (sum) {
    at::Tensor delta = wave(0.11, 1.5).to(at::kBFloat16);
    dk = delta.detach().requires_grad_(true);
    dc = delta.detach().requires_grad_(true);
    wrt_k.push_back(dk);
    wrt_c.push_back(dc);
    hc = torch::add(xc, dc);
  }
  auto rk = RMSNormCopiesFn::apply(xk, dk, gk, 1e-5, k, static_cast<int64_t>(where));
  const int64_t last[1] = {-1};
  at::Tensor ms = torch::mean(torch::square(hc), at::IntArrayRef(last, 1), true, at::ScalarType::Float);
  auto rc = copies_composed(torch::mul(torch::mul(hc, torch::rsqrt(torch::add(ms, at::Scalar(1e-5)))), gc),
                            at::kBFloat16, k);
  const std::string what = sum ? "residual rms copies" : "rms copies";
  const std::string shape = " [" + std::to_string(rows) + "," + std::to_string(width) + "] into " + std::to_string(k);
  std::vector<at::Tensor> dys;
  if (sum) {
    rc.insert(rc.begin(), hc);
    if (!close_to("residual sum" + shape, rk[0], rc[0], 0, why)) return false;
    dys.push_back(wave(0.23, 0.5));
  }
  const size_t first = sum ? 1 : 0;
  for (int64_t j = 0; j < k; j++) {
    if (!close_to(what + " forward" + shape, rk[first + j], rc[first + j], 1.0 / 128, why)) return false;
    dys.push_back(torch::mul(wave(0.7, 1.0), at::Scalar(j + 1.0)).to(at::kBFloat16));
  }
  auto drk = torch::autograd::grad(rk, wrt_k, dys);
  auto drc = torch::autograd::grad(rc, wrt_c, dys);
  if (!close_to(what + " backward (x)" + shape, drk[0], drc[0], 1e-4, why)) return false;
  if (!close_to(what + " backward (gain)" + shape, drk[1], drc[1], 1e-4, why)) return false;
  return !sum || close_to(what + " backward (delta)" + shape, drk[2], drc[2], 1.0 / 128, why);
}

// self_check runs the kernels on device against the compositions, forward
// and backward, in every dtype pair they take, on small inputs (rotary's
// laid out as attention's q is, a transposed view): within 1e-6 of the
// largest value in float32 and 1/128 in bfloat16 (one rounding), though
// rotary embedding is expected bit for bit.
// The inputs are deterministic functions of their index: no generator is
// drawn from, so a run's random stream is the same with the check or not.
bool self_check(const at::Device &dev, Place where, std::string *why) {
  torch::NoGradGuard outer;  // rebuilt below where gradients are wanted
  auto f32 = torch::TensorOptions().dtype(at::kFloat).device(dev);
  const int64_t b = 2, t = 5, h = 3, d = 8;
  at::Tensor base = torch::mul(torch::sin(torch::arange(b * t * h * d, f32)), at::Scalar(2.0)).view({b, t, h, d});
  at::Tensor angle = torch::arange(t * d, f32).view({t, d});
  at::Tensor c = torch::cos(angle), s = torch::sin(angle);
  at::Tensor dyBase = torch::cos(torch::mul(torch::arange(b * h * t * d, f32), at::Scalar(0.7))).view({b, h, t, d});
  for (at::ScalarType xt : {at::kFloat, at::kBFloat16}) {
    for (at::ScalarType yt : {at::kFloat, at::kBFloat16}) {
      torch::AutoGradMode grad(true);
      at::Tensor leafK = base.to(xt).detach().requires_grad_(true);
      at::Tensor leafC = base.to(xt).detach().requires_grad_(true);
      at::Tensor yk = RopeFn::apply(leafK.transpose(1, 2), c, s, static_cast<int64_t>(yt), static_cast<int64_t>(where));
      at::Tensor yc = rope_composed(leafC.transpose(1, 2), c, s, d).to(yt);
      // A dense gradient, and one broadcast over the batch (stride 0),
      // which the kernel reads with strides other than the ones it writes.
      at::Tensor dy = dyBase.to(yt);
      at::Tensor dyWide = dyBase.narrow(0, 0, 1).expand({b, h, t, d}).to(yt);
      std::string pair = std::string(dtype_name(xt)) + "→" + dtype_name(yt);
      const double tol = (xt == at::kFloat && yt == at::kFloat) ? 1e-6 : 1.0 / 128;
      if (!close_to("rotary " + pair + " forward", yk, yc, tol, why)) return false;
      for (const at::Tensor &g : {dy, dyWide}) {
        at::Tensor gk = torch::autograd::grad({yk}, {leafK}, {g}, /*retain_graph=*/true)[0];
        at::Tensor gc = torch::autograd::grad({yc}, {leafC}, {g}, /*retain_graph=*/true)[0];
        if (!close_to("rotary " + pair + " backward", gk, gc, tol, why)) return false;
      }
    }
    torch::AutoGradMode grad(true);
    at::Tensor g = base.view({-1, d}).to(xt);
    at::Tensor u = torch::cos(base).view({-1, d}).to(xt);
    at::Tensor gk = g.detach().requires_grad_(true), uk = u.detach().requires_grad_(true);
    at::Tensor gc = g.detach().requires_grad_(true), uc = u.detach().requires_grad_(true);
    at::Tensor yk = SwiGLUFn::apply(gk, uk, static_cast<int64_t>(where));
    at::Tensor yc = swiglu_composed(gc, uc);
    at::Tensor dy = dyBase.view({-1, d}).to(xt);
    auto dk = torch::autograd::grad({yk}, {gk, uk}, {dy});
    auto dc = torch::autograd::grad({yc}, {gc, uc}, {dy});
    const double tol = xt == at::kFloat ? 1e-6 : 1.0 / 128;
    std::string name = std::string("SwiGLU ") + dtype_name(xt);
    if (!close_to(name + " forward", yk, yc, tol, why)) return false;
    if (!close_to(name + " backward (gate)", dk[0], dc[0], tol, why)) return false;
    if (!close_to(name + " backward (up)", dk[1], dc[1], tol, why)) return false;
    // The joined form: gate and up as the halves of one product's rows.
    at::Tensor gu = torch::cat({g, u}, -1);
    at::Tensor guk = gu.detach().requires_grad_(true), guc = gu.detach().requires_grad_(true);
    at::Tensor jk = SwiGLUJoinedFn::apply(guk, static_cast<int64_t>(where));
    at::Tensor jc = swiglu_composed(torch::narrow(guc, -1, 0, d), torch::narrow(guc, -1, d, d));
    at::Tensor djk = torch::autograd::grad({jk}, {guk}, {dy})[0];
    at::Tensor djc = torch::autograd::grad({jc}, {guc}, {dy})[0];
    if (!close_to(name + " joined forward", jk, jc, tol, why)) return false;
    if (!close_to(name + " joined backward", djk, djc, tol, why)) return false;
  }
  // Three bfloat16 copies of a float32 activation; the gradients of three
  // products coming back, summed.
  torch::AutoGradMode grad(true);
  at::Tensor xk = base.view({-1, d}).detach().requires_grad_(true), xc = xk.detach().requires_grad_(true);
  auto ck = CastCopiesFn::apply(xk, 3, static_cast<int64_t>(where));
  auto cc = copies_composed(xc, at::kBFloat16, 3);
  std::vector<at::Tensor> dys;
  for (int j = 0; j < 3; j++) {
    if (!close_to("copies forward", ck[j], cc[j], 0, why)) return false;
    dys.push_back(torch::mul(dyBase.view({-1, d}), at::Scalar(j + 1.0)).to(at::kBFloat16));
  }
  at::Tensor dk = torch::autograd::grad({ck[0], ck[1], ck[2]}, {xk}, dys)[0];
  at::Tensor dc = torch::autograd::grad({cc[0], cc[1], cc[2]}, {xc}, dys)[0];
  if (!close_to("copies backward", dk, dc, 1e-6, why)) return false;
  // RMSNorm into copies: three of a few short rows; then two of rows past
  // the backward pass's 1,024 blocks and wider than two blocks of 256
  // lanes, so that each loop of the kernels runs more than once.
  if (!rms_copies_check(f32, where, 30, 8, 3, false, why)) return false;
  if (!rms_copies_check(f32, where, 1030, 520, 2, false, why)) return false;
  // The same with a residual sum before the norm.
  if (!rms_copies_check(f32, where, 30, 8, 3, true, why)) return false;
  if (!rms_copies_check(f32, where, 1030, 520, 1, true, why)) return false;
  if (!cross_entropy_check(f32, where, why)) return false;
  return true;
}

// Each device's kernels: unknown until its first call, then compiled and
// checked, or refused with the reason.
struct DeviceState {
  int state = 0;  // 0 unknown, 1 ready, 2 refused
  std::string why;
};
std::mutex states_mu;
DeviceState states[64];
// settled mirrors each state once decided, read without the lock on the
// path every call takes.
std::atomic<int> settled[64];

bool gpu_ready(int device, std::string *why) {
  if (device < 0 || device >= 64) {
    if (why) *why = "device index out of range";
    return false;
  }
  if (why == nullptr && settled[device].load(std::memory_order_acquire) != 0)
    return settled[device].load(std::memory_order_relaxed) == 1;
  std::lock_guard<std::mutex> lock(states_mu);
  DeviceState &st = states[device];
  if (st.state == 0) {
    std::string reason;
    bool ok = memo_elementwise::ready(device, &reason);
    if (ok) {
      try {
        ok = self_check(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)), Place::gpu, &reason);
        if (!ok) reason = "the check against libtorch failed: " + reason;
      } catch (const std::exception &e) {
        ok = false;
        reason = std::string("the check against libtorch failed: ") + e.what();
      }
    }
    st.state = ok ? 1 : 2;
    st.why = reason;
    settled[device].store(st.state, std::memory_order_release);
  }
  if (why) *why = st.why;
  return st.state == 1;
}

}  // namespace

memo_elementwise::Place memo_elementwise::place_of(const at::Tensor &x, bool kernels) {
  if (!kernels) return Place::none;
  if (x.is_cpu()) return on_host.load() ? Place::host : Place::none;
  if (x.is_cuda() && gpu_ready(x.get_device(), nullptr)) return Place::gpu;
  return Place::none;
}

extern "C" {

// memo_rope rotates the first rot entries of x's last dimension by
// rotate-half with cos and sinSigned (broadcast against them) and passes
// the rest through unchanged; the result in out_dtype (a c10 ScalarType;
// negative: the promotion of x's and cos's). With kernels, through memo's
// kernels where they apply. Returns nil and sets *err on failure.
void *memo_rope(void *x, void *cos, void *sin_signed, int64_t rot, int out_dtype, int kernels, char **err) {
  try {
    return new at::Tensor(rope(*static_cast<at::Tensor *>(x), *static_cast<at::Tensor *>(cos),
                               *static_cast<at::Tensor *>(sin_signed), rot, out_dtype, kernels != 0));
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}

// memo_swiglu is SiLU(gate)·up, through memo's kernels where they apply
// (with kernels). Returns nil and sets *err on failure.
void *memo_swiglu(void *gate, void *up, int kernels, char **err) {
  try {
    return new at::Tensor(swiglu(*static_cast<at::Tensor *>(gate), *static_cast<at::Tensor *>(up), kernels != 0));
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}

// memo_swiglu_joined is SiLU(gate)·up of the halves of gate_up's last
// dimension (gate first), through memo's kernels where they apply (with
// kernels). Returns nil and sets *err on failure.
void *memo_swiglu_joined(void *gate_up, int kernels, char **err) {
  try {
    return new at::Tensor(swiglu_joined(*static_cast<at::Tensor *>(gate_up), kernels != 0));
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}

// memo_cast_copies writes k (1 to 3) copies of x in dtype (a c10
// ScalarType) to out[0..k), through memo's kernel where it applies (with
// kernels). Returns 0, or 1 and sets *err on failure.
int memo_cast_copies(void *x, int dtype, int k, int kernels, void **out, char **err) {
  try {
    auto ys = cast_copies(*static_cast<at::Tensor *>(x), static_cast<at::ScalarType>(dtype), k, kernels != 0);
    for (int j = 0; j < k; j++) out[j] = new at::Tensor(ys[j]);
    return 0;
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return 1;
  }
}

// memo_rms_norm_copies writes to out[0..k) k copies in dtype of RMSNorm
// of x with gain w (w + 1 with offset) and eps, through memo's kernel,
// when it applies (with kernels): returns 1. With a delta (null for none)
// it normalizes the residual sum x + delta, which it writes to *h. Returns
// 0, and writes nothing, where the kernel does not apply; -1, setting
// *err, on failure.
int memo_rms_norm_copies(void *x, void *delta, void *w, double eps, int offset, int dtype, int k, int kernels,
                         void **h, void **out, char **err) {
  try {
    const at::Tensor &xt = *static_cast<at::Tensor *>(x);
    Place where = place_of(xt, kernels != 0);
    if (where == Place::none) return 0;  // before no_delta's allocation: the CPU's every norm
    const at::Tensor dt = delta ? *static_cast<at::Tensor *>(delta) : no_delta(xt);
    at::Tensor gain = *static_cast<at::Tensor *>(w);
    if (!rms_norm_copies_fits(xt, dt, gain, static_cast<at::ScalarType>(dtype), k)) return 0;
    if (offset) gain = torch::add(gain, at::Scalar(1.0));
    auto ys = RMSNormCopiesFn::apply(xt, dt, gain, eps, k, static_cast<int64_t>(where));
    const int first = delta ? 1 : 0;
    if (delta) *h = new at::Tensor(ys[0]);
    for (int j = 0; j < k; j++) out[j] = new at::Tensor(ys[first + j]);
    return 1;
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return -1;
  }
}

void memo_elementwise_source(const char *text) { memo_elementwise::set_source(text); }

// memo_elementwise_status is "" when device's kernels run (compiling and
// checking them first), else why not; the caller frees it.
char *memo_elementwise_status(int device) {
  std::string why;
  try {
    if (gpu_ready(device, &why)) why.clear();
  } catch (const std::exception &e) {
    why = e.what();
  }
  return memo_copy_message(why);
}

void memo_elementwise_on_host(int on) { on_host.store(on != 0); }

long long memo_elementwise_calls(int kind) {
  if (kind >= 0 && kind < call_kinds) return kernel_calls[kind].load();
  long long n = 0;
  for (auto &c : kernel_calls) n += c.load();
  return n;
}

// memo_elementwise_check_host runs the GPU's start-up check with the
// kernels' code on the host: "" when it passes, else why (tests).
char *memo_elementwise_check_host(void) {
  std::string why;
  try {
    if (self_check(at::Device(at::kCPU), Place::host, &why)) why.clear();
  } catch (const std::exception &e) {
    why = e.what();
  }
  return memo_copy_message(why);
}
}
