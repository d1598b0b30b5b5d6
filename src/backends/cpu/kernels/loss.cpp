// cpu reference kernels for NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX
// opset 12/13). Losses, log-softmax and the reductions are computed in double and rounded to
// T once per output element.

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "frame/ops/kernel_registry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;

constexpr DTypeSet kLossIndexDTypes{DTypeCode::kInt32, DTypeCode::kInt64};

// Input [N, C, d1..dk] viewed as [N, C, D].
struct LossDims {
  int64_t n = 0, c = 0, d = 1;
};

LossDims loss_dims(const Tensor& x) {
  LossDims s{x.dim(0), x.dim(1), 1};
  for (int64_t k = 2; k < x.rank(); ++k) s.d *= x.dim(k);
  return s;
}

std::vector<int64_t> read_targets(const Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  static_cast<void>(dispatch_dtype<kLossIndexDTypes>(t.dtype(), [&]<typename I>() {
    const I* p = t.data<I>();
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(p[i]);
  }));
  return v;
}

// The NLL part shared by both ops: `picked(i, cls)` is the log-probability of class `cls` at
// flat position i = n * D + d. Writes output 0 per the reduction attribute.
template <typename T, typename Picked>
Status nll_reduce(KernelContext& ctx, const LossDims& s, const std::vector<int64_t>& target,
                  Picked&& picked) {
  const ops::NodeContext& node = *ctx.node;
  const int64_t* ignore = node.attr<int64_t>("ignore_index");
  const std::string reduction = node.attr_or<std::string>("reduction", "mean");
  const T* w = node.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  T* out = ctx.output(0).data<T>();
  const bool none = reduction == "none";
  double sum = 0, wsum = 0;
  for (size_t i = 0; i < target.size(); ++i) {
    const int64_t t = target[i];
    double loss = 0, wt = 0;
    if (ignore == nullptr || t != *ignore) {
      if (t < 0 || t >= s.c) {
        return node.error(
            "input 1 (target) value {} at flat index {} is outside [0, {}) and is "
            "not ignore_index",
            t, i, s.c);
      }
      wt = w != nullptr ? static_cast<double>(to_compute(w[t])) : 1.0;
      loss = -picked(static_cast<int64_t>(i), t) * wt;
    }
    if (none) out[i] = from_compute<T>(static_cast<compute_t<T>>(loss));
    sum += loss;
    wsum += wt;
  }
  // mean divides by the summed gathered weights: the count of non-ignored positions when
  // there is no weight input (ONNX NegativeLogLikelihoodLoss).
  if (!none) {
    const double v = reduction == "sum" ? sum : sum / wsum;
    out[0] = from_compute<T>(static_cast<compute_t<T>>(v));
  }
  return Status();
}

Status nll_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LossDims s = loss_dims(x);
  const std::vector<int64_t> target = read_targets(ctx.input(1));
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() -> Status {
    const T* xp = x.data<T>();
    return nll_reduce<T>(ctx, s, target, [&](int64_t i, int64_t cls) {
      const int64_t n = i / s.d, d = i % s.d;
      return static_cast<double>(to_compute(xp[(n * s.c + cls) * s.d + d]));
    });
  });
}

Status sce_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const LossDims s = loss_dims(x);
  const std::vector<int64_t> target = read_targets(ctx.input(1));
  const bool want_log_prob = ctx.outputs.size() > 1 && ctx.output(1).numel() > 0;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() -> Status {
    const T* xp = x.data<T>();
    T* lp = want_log_prob ? ctx.output(1).data<T>() : nullptr;
    // shift[i] = max + log(sum(exp(x - max))) over the classes at position i.
    std::vector<double> shift(static_cast<size_t>(s.n * s.d));
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t d = 0; d < s.d; ++d) {
        const int64_t base = n * s.c * s.d + d;
        double m = -std::numeric_limits<double>::infinity();
        for (int64_t c = 0; c < s.c; ++c) {
          m = std::fmax(m, static_cast<double>(to_compute(xp[base + c * s.d])));
        }
        double e = 0;
        for (int64_t c = 0; c < s.c; ++c) {
          e += std::exp(static_cast<double>(to_compute(xp[base + c * s.d])) - m);
        }
        const double sh = m + std::log(e);
        shift[static_cast<size_t>(n * s.d + d)] = sh;
        if (lp == nullptr) continue;
        for (int64_t c = 0; c < s.c; ++c) {
          const double v = static_cast<double>(to_compute(xp[base + c * s.d])) - sh;
          lp[base + c * s.d] = from_compute<T>(static_cast<compute_t<T>>(v));
        }
      }
    }
    return nll_reduce<T>(ctx, s, target, [&](int64_t i, int64_t cls) {
      const int64_t n = i / s.d, d = i % s.d;
      return static_cast<double>(to_compute(xp[(n * s.c + cls) * s.d + d])) -
             shift[static_cast<size_t>(i)];
    });
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(negative_log_likelihood_loss, "cpu", nll_kernel).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(softmax_cross_entropy_loss, "cpu", sce_kernel).dtypes(kFloatDTypes);

}  // namespace frame::cpu
