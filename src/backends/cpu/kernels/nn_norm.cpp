// cpu reference kernels for BatchNormalization, InstanceNormalization, LayerNormalization,
// Softmax/LogSoftmax, LRN and Dropout. Statistics are accumulated in double; each output is
// rounded to T once.

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/schema_util.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;

std::vector<double> as_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.element_as_double(i);
  return v;
}

// Writes doubles into a float tensor of any float dtype (one dispatch per call).
Status store_doubles(const std::vector<double>& v, Tensor& t) {
  return dispatch_dtype<kFloatDTypes>(t.dtype(), [&]<typename T>() {
    T* p = t.data<T>();
    for (size_t i = 0; i < v.size(); ++i) p[i] = from_compute<T>(static_cast<compute_t<T>>(v[i]));
  });
}

// Mean and population variance of n values starting at p with stride s (two-pass).
template <typename T>
std::pair<double, double> moments(const T* p, int64_t n, int64_t s) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(to_compute(p[i * s]));
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(to_compute(p[i * s])) - mean;
    sq += d * d;
  }
  return {mean, sq / static_cast<double>(n)};
}

Status batch_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = x.dim(0), c = x.dim(1), plane = c == 0 || n == 0 ? 0 : x.numel() / (n * c);
  const double eps = ctx.node->attr_or<double>("epsilon", 1e-5);
  const bool training = ctx.node->attr_or<int64_t>("training_mode", 0) != 0;
  const double momentum = ctx.node->attr_or<double>("momentum", 0.9);
  const std::vector<double> scale = as_doubles(ctx.input(1)), bias = as_doubles(ctx.input(2));
  std::vector<double> mean = as_doubles(ctx.input(3)), var = as_doubles(ctx.input(4));
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() -> Status {
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    if (training) {
      std::vector<double> bm(static_cast<size_t>(c)), bv(static_cast<size_t>(c));
      for (int64_t ch = 0; ch < c; ++ch) {
        double sum = 0, sq = 0;
        for (int64_t b = 0; b < n; ++b) {
          const T* p = xp + (b * c + ch) * plane;
          for (int64_t i = 0; i < plane; ++i) sum += static_cast<double>(to_compute(p[i]));
        }
        const double cnt = static_cast<double>(n * plane), mu = sum / cnt;
        for (int64_t b = 0; b < n; ++b) {
          const T* p = xp + (b * c + ch) * plane;
          for (int64_t i = 0; i < plane; ++i) {
            const double d = static_cast<double>(to_compute(p[i])) - mu;
            sq += d * d;
          }
        }
        bm[static_cast<size_t>(ch)] = mu;
        bv[static_cast<size_t>(ch)] = sq / cnt;
      }
      std::vector<double> rm(mean.size()), rv(var.size());
      for (size_t i = 0; i < mean.size(); ++i) {
        rm[i] = mean[i] * momentum + bm[i] * (1 - momentum);
        rv[i] = var[i] * momentum + bv[i] * (1 - momentum);
      }
      if (ctx.outputs.size() > 1) FRAME_RETURN_IF_ERROR(store_doubles(rm, ctx.output(1)));
      if (ctx.outputs.size() > 2) FRAME_RETURN_IF_ERROR(store_doubles(rv, ctx.output(2)));
      mean = std::move(bm);
      var = std::move(bv);
    }
    ops::parallel_for(n * c, ctx.num_threads, [&](int64_t nc) {
      const size_t ch = static_cast<size_t>(nc % c);
      const double a = scale[ch] / std::sqrt(var[ch] + eps);
      const double b = bias[ch] - mean[ch] * a;
      const T* p = xp + nc * plane;
      T* q = yp + nc * plane;
      for (int64_t i = 0; i < plane; ++i) {
        q[i] = from_compute<T>(
            static_cast<compute_t<T>>(static_cast<double>(to_compute(p[i])) * a + b));
      }
    });
    return Status();
  });
}

FRAME_REGISTER_KERNEL(batch_normalization, "cpu", batch_norm_kernel).dtypes(kFloatDTypes);

Status instance_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = x.dim(0), c = x.dim(1), plane = c == 0 || n == 0 ? 0 : x.numel() / (n * c);
  const double eps = ctx.node->attr_or<double>("epsilon", 1e-5);
  const std::vector<double> scale = as_doubles(ctx.input(1)), bias = as_doubles(ctx.input(2));
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    ops::parallel_for(n * c, ctx.num_threads, [&](int64_t nc) {
      const size_t ch = static_cast<size_t>(nc % c);
      const T* p = xp + nc * plane;
      T* q = yp + nc * plane;
      const auto [mean, var] = moments(p, plane, 1);
      const double a = scale[ch] / std::sqrt(var + eps);
      for (int64_t i = 0; i < plane; ++i) {
        const double v = (static_cast<double>(to_compute(p[i])) - mean) * a + bias[ch];
        q[i] = from_compute<T>(static_cast<compute_t<T>>(v));
      }
    });
  });
}

FRAME_REGISTER_KERNEL(instance_normalization, "cpu", instance_norm_kernel).dtypes(kFloatDTypes);

// `t` (shape broadcastable to `norm`) expanded to numel(norm) doubles.
std::vector<double> expand_to(const Tensor& t, std::span<const int64_t> norm) {
  const int64_t n = numel_of(norm);
  std::vector<double> out(static_cast<size_t>(n));
  const Shape& s = t.shape();
  const size_t r = norm.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0, st = 1;
    for (size_t d = 0; d < r; ++d) {
      const size_t nd = r - 1 - d;
      const int64_t v = rem % norm[nd];
      rem /= norm[nd];
      if (d < s.size()) {
        const int64_t sd = s[s.size() - 1 - d];
        if (sd != 1) off += v * st;
        st *= sd;
      }
    }
    out[static_cast<size_t>(i)] = t.element_as_double(off);
  }
  return out;
}

Status layer_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, ops::normalize_axis(*ctx.node, ctx.node->attr_or<int64_t>("axis", -1), x.rank(),
                                        "attribute 'axis'"));
  const std::span<const int64_t> norm(x.shape().data() + axis, x.shape().size() - axis);
  const int64_t inner = numel_of(norm), outer = inner == 0 ? 0 : x.numel() / inner;
  const double eps = ctx.node->attr_or<double>("epsilon", 1e-5);
  const std::vector<double> scale = expand_to(ctx.input(1), norm);
  const std::vector<double> bias =
      ctx.node->has_input(2) ? expand_to(ctx.input(2), norm) : std::vector<double>(scale.size());
  std::vector<double> means(static_cast<size_t>(outer)), invs(static_cast<size_t>(outer));
  Status st = dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    ops::parallel_for(outer, ctx.num_threads, [&](int64_t o) {
      const T* p = xp + o * inner;
      T* q = yp + o * inner;
      const auto [mean, var] = moments(p, inner, 1);
      const double inv = 1.0 / std::sqrt(var + eps);
      means[static_cast<size_t>(o)] = mean;
      invs[static_cast<size_t>(o)] = inv;
      for (int64_t i = 0; i < inner; ++i) {
        const size_t si = static_cast<size_t>(i);
        const double v =
            (static_cast<double>(to_compute(p[i])) - mean) * inv * scale[si] + bias[si];
        q[i] = from_compute<T>(static_cast<compute_t<T>>(v));
      }
    });
  });
  FRAME_RETURN_IF_ERROR(st);
  if (ctx.outputs.size() > 1) FRAME_RETURN_IF_ERROR(store_doubles(means, ctx.output(1)));
  if (ctx.outputs.size() > 2) FRAME_RETURN_IF_ERROR(store_doubles(invs, ctx.output(2)));
  return Status();
}

FRAME_REGISTER_KERNEL(layer_normalization, "cpu", layer_norm_kernel).dtypes(kFloatDTypes);

template <bool kLog>
Status softmax_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FRAME_ASSIGN_OR_RETURN(const ops::SoftmaxView view, ops::softmax_view(*ctx.node, x.shape()));
  const int64_t outer = view.outer, n = view.n, inner = view.inner;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    ops::parallel_for(outer * inner, ctx.num_threads, [&](int64_t oi) {
      const int64_t base = (oi / inner) * n * inner + oi % inner;
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < n; ++j) {
        const double v = static_cast<double>(to_compute(xp[base + j * inner]));
        if (v > m || std::isnan(v)) m = std::isnan(m) ? m : v;
      }
      double s = 0;
      for (int64_t j = 0; j < n; ++j) {
        s += std::exp(static_cast<double>(to_compute(xp[base + j * inner])) - m);
      }
      const double ls = std::log(s);
      for (int64_t j = 0; j < n; ++j) {
        const double d = static_cast<double>(to_compute(xp[base + j * inner])) - m;
        const double v = kLog ? d - ls : std::exp(d) / s;
        yp[base + j * inner] = from_compute<T>(static_cast<compute_t<T>>(v));
      }
    });
  });
}

FRAME_REGISTER_KERNEL(softmax, "cpu", softmax_kernel<false>).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(log_softmax, "cpu", softmax_kernel<true>).dtypes(kFloatDTypes);

Status lrn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t n = x.dim(0), c = x.dim(1), plane = c == 0 || n == 0 ? 0 : x.numel() / (n * c);
  const double alpha = ctx.node->attr_or<double>("alpha", 1e-4);
  const double beta = ctx.node->attr_or<double>("beta", 0.75);
  const double bias = ctx.node->attr_or<double>("bias", 1.0);
  const int64_t size = ctx.node->attr_or<int64_t>("size", 1);
  const int64_t lo = (size - 1) / 2, hi = size - 1 - lo;  // floor and ceil of (size-1)/2
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    ops::parallel_for(n * c, ctx.num_threads, [&](int64_t nc) {
      const int64_t b = nc / c, ch = nc % c;
      const int64_t c0 = std::max<int64_t>(0, ch - lo), c1 = std::min<int64_t>(c - 1, ch + hi);
      for (int64_t i = 0; i < plane; ++i) {
        double sq = 0;
        for (int64_t k = c0; k <= c1; ++k) {
          const double v = static_cast<double>(to_compute(xp[(b * c + k) * plane + i]));
          sq += v * v;
        }
        const double v = static_cast<double>(to_compute(xp[nc * plane + i]));
        const double y = v / std::pow(bias + alpha / static_cast<double>(size) * sq, beta);
        yp[nc * plane + i] = from_compute<T>(static_cast<compute_t<T>>(y));
      }
    });
  });
}

FRAME_REGISTER_KERNEL(lrn, "cpu", lrn_kernel).dtypes(kFloatDTypes);

Status dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double ratio = ctx.node->has_input(1) ? ctx.input(1).element_as_double(0) : 0.5;
  const bool training = ctx.node->has_input(2) && ctx.input(2).data<bool>()[0];
  if (training && !(ratio >= 0.0 && ratio < 1.0)) {
    return ctx.node->error("input 1 (ratio) must be in [0, 1), got {}", ratio);
  }
  bool* mask = ctx.outputs.size() > 1 ? ctx.output(1).data<bool>() : nullptr;
  const int64_t n = x.numel();
  // Draws are made serially so a given seed always gives the same mask.
  std::vector<bool> keep(static_cast<size_t>(training ? n : 0), true);
  if (training && ratio > 0.0) {
    const int64_t* seed = ctx.node->attr<int64_t>("seed");
    std::mt19937_64 rng(seed != nullptr ? static_cast<uint64_t>(*seed) : std::random_device{}());
    std::bernoulli_distribution drop(ratio);
    for (int64_t i = 0; i < n; ++i) keep[static_cast<size_t>(i)] = !drop(rng);
  }
  const double scale = training ? 1.0 / (1.0 - ratio) : 1.0;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    for (int64_t i = 0; i < n; ++i) {
      const bool k = !training || keep[static_cast<size_t>(i)];
      if (mask != nullptr) mask[i] = k;
      if (!training) {
        yp[i] = xp[i];
      } else {
        const double v = k ? static_cast<double>(to_compute(xp[i])) * scale : 0.0;
        yp[i] = from_compute<T>(static_cast<compute_t<T>>(v));
      }
    }
  });
}

FRAME_REGISTER_KERNEL(dropout, "cpu", dropout_kernel).dtypes(kFloatDTypes);

}  // namespace
}  // namespace frame::cpu
