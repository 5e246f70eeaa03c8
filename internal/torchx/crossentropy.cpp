// The training loss's cross-entropy on bfloat16 logits: libtorch's loss of
// their float32 values, or memo's kernel (elementwise.cu) as an autograd
// function where it runs (see elementwise.cpp for where that is, and how
// the kernels are compiled, checked and run on the host in tests).
#include <algorithm>
#include <string>

#include <torch/torch.h>

#include "elementwise.h"
#include "elementwise_host.h"
#include "elementwise_internal.h"
#include "elementwise_loader.h"
#include "errmsg.h"

namespace {

using namespace memo_elementwise;

// CEPtrs are a cross-entropy call's tensors by address.
struct CEPtrs {
  const memo::bf16 *x;
  const long long *t;
  float *nll, *lse;  // forward writes both; backward reads lse
  const float *g;    // the loss's gradient (backward)
  memo::bf16 *dx;
};

// ce_run computes the cross-entropy of bfloat16 logits (forward: each
// row's loss and lse) or the logits' gradient (backward) on the host, lane
// by lane as the GPU's blocks do, or on device's GPU.
void ce_run(Place where, int device, bool forward, const memo::CEShape &s, CEPtrs p) {
  long long n = s.rows * s.v;
  if (where == Place::gpu) {
    void *fwd[] = {const_cast<memo::CEShape *>(&s), &p.x, &p.t, &p.nll, &p.lse};
    void *bwd[] = {const_cast<memo::CEShape *>(&s), &n, &p.x, &p.t, &p.lse, &p.g, &p.dx};
    if (forward)
      memo_elementwise::launch_blocks(device, memo_elementwise::ce_fwd_bf16, std::min<long long>(s.rows, 1LL << 20),
                                      MEMO_ROW_LANES, fwd);
    else
      memo_elementwise::launch(device, memo_elementwise::ce_bwd_bf16, n, bwd);
    return;
  }
  if (!forward) {
    for (long long i = 0; i < n; i++) memo::ce_backward_at(s, i, p.x, p.t, p.lse, p.g, p.dx);
    return;
  }
  float part[MEMO_ROW_LANES];
  for (long long row = 0; row < s.rows; row++) {
    for (int l = 0; l < MEMO_ROW_LANES; l++) part[l] = memo::ce_lane_max(s, p.x, row, l);
    const float m = memo::lanes_tree(part, memo::LanesMax());
    for (int l = 0; l < MEMO_ROW_LANES; l++) part[l] = memo::ce_lane_sum_exp(s, p.x, m, row, l);
    const float sum = memo::lanes_tree(part, memo::LanesAdd());
    memo::ce_row_loss(s, p.x, p.t, row, m, sum, p.nll, p.lse);
  }
}

// CrossEntropyFn is the cross-entropy of contiguous bfloat16 logits [N, V]
// against int64 targets [N], each row's loss in float32, as an autograd
// function: one pass over the logits forward and one backward, which
// writes their bfloat16 gradient. The composition casts the logits to
// float32, takes their float32 log-softmax and its gradient, and casts
// that back: about eight passes over [N, V] in float32. It keeps the
// logits, the targets and each row's lse.
struct CrossEntropyFn : public torch::autograd::Function<CrossEntropyFn> {
  static memo::CEShape shape(const at::Tensor &x, int64_t ignore) {
    return memo::CEShape{static_cast<long long>(x.size(0)), static_cast<int>(x.size(1)),
                         static_cast<long long>(ignore)};
  }

  // ptrs are the logits' and targets' addresses, the rest left for the
  // pass to set.
  static CEPtrs ptrs(const at::Tensor &x, const at::Tensor &t) {
    return CEPtrs{static_cast<const memo::bf16 *>(x.data_ptr()),
                  reinterpret_cast<const long long *>(t.data_ptr<int64_t>()), nullptr, nullptr, nullptr, nullptr};
  }

  static at::Tensor forward(torch::autograd::AutogradContext *ctx, const at::Tensor &x, const at::Tensor &t,
                            int64_t ignore, int64_t where) {
    const memo::CEShape s = shape(x, ignore);
    at::Tensor nll = at::empty({s.rows}, x.options().dtype(at::kFloat));
    at::Tensor lse = at::empty({s.rows}, x.options().dtype(at::kFloat));
    kernel_calls[call_ce]++;
    CEPtrs p = ptrs(x, t);
    p.nll = nll.data_ptr<float>();
    p.lse = lse.data_ptr<float>();
    ce_run(static_cast<Place>(where), x.get_device(), true, s, p);
    ctx->save_for_backward({x, t, lse});
    ctx->saved_data["ignore"] = ignore;
    ctx->saved_data["where"] = where;
    return nll;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext *ctx,
                                                 torch::autograd::variable_list grads) {
    auto saved = ctx->get_saved_variables();
    const at::Tensor &x = saved[0], &t = saved[1], &lse = saved[2];
    at::Tensor g = grads[0].to(at::kFloat).contiguous();
    at::Tensor dx = at::empty_like(x, at::MemoryFormat::Contiguous);
    CEPtrs p = ptrs(x, t);
    p.lse = lse.data_ptr<float>();
    p.g = g.data_ptr<float>();
    p.dx = static_cast<memo::bf16 *>(dx.data_ptr());
    ce_run(static_cast<Place>(ctx->saved_data["where"].toInt()), x.get_device(), false,
           shape(x, ctx->saved_data["ignore"].toInt()), p);
    return {dx, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// cross_entropy_composed is libtorch's loss of x's float32 values (a
// bfloat16 x cast first, as the float32 logits of a product were),
// unreduced: what gotch's CrossEntropyLoss computes.
at::Tensor cross_entropy_composed(const at::Tensor &x, const at::Tensor &t, int64_t ignore) {
  const at::Tensor xf = x.scalar_type() == at::kFloat ? x : x.to(at::kFloat);
  return at::cross_entropy_loss(xf, t, at::Tensor(), at::Reduction::None, ignore, 0.0);
}

// cross_entropy is each row's loss of logits x [N, V] against targets t
// [N]: memo's kernel for contiguous bfloat16 logits where it runs, else
// the composition.
at::Tensor cross_entropy(const at::Tensor &x, const at::Tensor &t, int64_t ignore, bool kernels) {
  Place where = place_of(x, kernels);
  if (where != Place::none && x.scalar_type() == at::kBFloat16 && x.dim() == 2 && x.is_contiguous() &&
      x.numel() > 0 && x.size(1) <= (1LL << 30) && t.dim() == 1 && t.size(0) == x.size(0) &&
      t.scalar_type() == at::kLong && t.is_contiguous() && t.device() == x.device())
    return CrossEntropyFn::apply(x, t, ignore, static_cast<int64_t>(where));
  return cross_entropy_composed(x, t, ignore);
}

}  // namespace

// cross_entropy_check runs the kernel against the composition on logits
// of 6 rows of 600 (each of a block's 256 lanes takes two or three
// columns), one row's target ignored, forward and backward (the
// gradient of a weighted sum of the losses).
bool memo_elementwise::cross_entropy_check(const torch::TensorOptions &f32, Place where, std::string *why) {
  torch::AutoGradMode grad(true);
  const int64_t rows = 6, vocab = 600;
  at::Tensor logits = torch::mul(torch::sin(torch::mul(torch::arange(rows * vocab, f32), at::Scalar(0.37))),
                                 at::Scalar(4.0))
                          .view({rows, vocab})
                          .to(at::kBFloat16);
  at::Tensor targets = torch::remainder(torch::mul(torch::arange(rows, f32.dtype(at::kLong)), at::Scalar(97)),
                                        at::Scalar(vocab));
  targets.index_put_({2}, -100);
  at::Tensor lk = logits.detach().requires_grad_(true), lc = logits.detach().requires_grad_(true);
  at::Tensor ek = CrossEntropyFn::apply(lk, targets, -100, static_cast<int64_t>(where));
  at::Tensor ec = cross_entropy_composed(lc, targets, -100);
  if (!close_to("cross-entropy forward", ek, ec, 1e-5, why)) return false;
  at::Tensor weights = torch::add(torch::arange(rows, f32), at::Scalar(1.0));
  at::Tensor dek = torch::autograd::grad({ek}, {lk}, {weights})[0];
  at::Tensor dec = torch::autograd::grad({ec}, {lc}, {weights})[0];
  return close_to("cross-entropy backward", dek, dec, 1.0 / 128, why);
}

extern "C" {

// memo_cross_entropy is each row's cross-entropy of logits [N, V] against
// int64 targets [N], 0 where a target is ignore, in float32: through
// memo's kernel for bfloat16 logits where it applies (with kernels), else
// libtorch's loss of their float32 values. Returns nil and sets *err on
// failure.
void *memo_cross_entropy(void *logits, void *targets, int64_t ignore, int kernels, char **err) {
  try {
    return new at::Tensor(cross_entropy(*static_cast<at::Tensor *>(logits), *static_cast<at::Tensor *>(targets),
                                        ignore, kernels != 0));
  } catch (const std::exception &e) {
    *err = memo_copy_message(e.what());
    return nullptr;
  }
}
}
