// cpu reference kernels for the reduction family: ReduceXxx, ArgMax/ArgMin, CumSum, TopK.
// Accumulation is in double (floats) or int64 (integers) and rounded once per output.

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/nn_geometry.h"
#include "ops/schemas/schema_util.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;

constexpr DTypeSet kArith = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64,
                                                    DTypeCode::kUInt32, DTypeCode::kUInt64};
constexpr DTypeSet kMinMax =
    kArith | DTypeSet{DTypeCode::kInt8, DTypeCode::kUInt8, DTypeCode::kBool};

// Accumulator type: double for floats, bool for bool (min/max), uint64 for unsigned integers
// (wraps modulo 2^64 as numpy; int64 would make uint64's max negative), int64 otherwise.
template <typename T>
using acc_t = std::conditional_t<
    kIsFloating<T>, double,
    std::conditional_t<std::is_same_v<T, bool>, bool,
                       std::conditional_t<std::is_unsigned_v<T>, uint64_t, int64_t>>>;

template <typename A>
bool is_nan(A v) {
  if constexpr (std::is_floating_point_v<A>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// Reducers: init value, per-element fold, final transform (n = number of folded elements).
// The result of most reducers is the folded value itself.
struct IdentityFinish {
  template <typename A>
  static A finish(A acc, int64_t) {
    return acc;
  }
};
// Sum, or product (kProd).
template <bool kProd>
struct ArithmeticR : IdentityFinish {
  template <typename A, typename T>
  static A init() {
    return A(kProd ? 1 : 0);
  }
  template <typename A>
  static void fold(A& acc, A x) {
    if constexpr (kProd) {
      acc *= x;
    } else {
      acc += x;
    }
  }
};
using SumR = ArithmeticR<false>;
using ProdR = ArithmeticR<true>;
struct MeanR : SumR {
  template <typename A>
  static A finish(A acc, int64_t n) {
    if constexpr (std::is_floating_point_v<A>) {
      return acc / static_cast<A>(n);  // 0/0 = NaN for an empty reduction, as numpy
    } else {
      return n == 0 ? A(0) : acc / n;
    }
  }
};
// Max (kMax) or min; NaN wins.
template <bool kMax>
struct ExtremumR : IdentityFinish {
  // Identity of an empty reduction: -inf (+inf for min), or the lowest (highest) value of T
  // (ONNX ReduceMax-18).
  template <typename A, typename T>
  static A init() {
    if constexpr (std::is_floating_point_v<A>) {
      return kMax ? -std::numeric_limits<A>::infinity() : std::numeric_limits<A>::infinity();
    } else {
      return static_cast<A>(kMax ? std::numeric_limits<T>::lowest()
                                 : std::numeric_limits<T>::max());
    }
  }
  template <typename A>
  static void fold(A& acc, A x) {
    if ((kMax ? x > acc : x < acc) || is_nan(x)) acc = is_nan(acc) ? acc : x;
  }
};
using MaxR = ExtremumR<true>;
using MinR = ExtremumR<false>;
struct L1R : SumR {
  template <typename A>
  static void fold(A& acc, A x) {
    acc += x < A(0) ? -x : x;
  }
};
struct SumSquareR : SumR {
  template <typename A>
  static void fold(A& acc, A x) {
    acc += x * x;
  }
};
struct L2R : SumSquareR {
  template <typename A>
  static A finish(A acc, int64_t) {
    return static_cast<A>(std::sqrt(static_cast<double>(acc)));
  }
};
struct LogSumR : SumR {
  template <typename A>
  static A finish(A acc, int64_t) {
    return static_cast<A>(std::log(static_cast<double>(acc)));
  }
};

// Splits input dims into kept (output order) and reduced ones, with input strides.
struct ReducePlan {
  std::vector<int64_t> kept_dims, kept_strides, red_dims, red_strides;
  int64_t out_numel = 1, red_numel = 1;
};

ReducePlan make_plan(const Shape& shape, const std::vector<bool>& reduced) {
  ReducePlan p;
  const std::vector<int64_t> strides = contiguous_strides(shape);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (reduced[i]) {
      p.red_dims.push_back(shape[i]);
      p.red_strides.push_back(strides[i]);
      p.red_numel *= shape[i];
    } else {
      p.kept_dims.push_back(shape[i]);
      p.kept_strides.push_back(strides[i]);
      p.out_numel *= shape[i];
    }
  }
  return p;
}

int64_t base_offset(const ReducePlan& p, int64_t o) {
  int64_t off = 0;
  for (size_t d = p.kept_dims.size(); d-- > 0;) {
    off += (o % p.kept_dims[d]) * p.kept_strides[d];
    o /= p.kept_dims[d];
  }
  return off;
}

// Calls f(offset) for every element of the reduced sub-space starting at `base`.
template <typename F>
void for_each_reduced(const ReducePlan& p, int64_t base, F&& f) {
  if (p.red_numel == 0) return;
  const size_t nr = p.red_dims.size();
  if (nr == 0) {
    f(base);
    return;
  }
  std::vector<int64_t> idx(nr, 0);
  const int64_t inner = p.red_dims[nr - 1], inner_stride = p.red_strides[nr - 1];
  for (;;) {
    int64_t off = base;
    for (size_t d = 0; d + 1 < nr; ++d) off += idx[d] * p.red_strides[d];
    for (int64_t j = 0; j < inner; ++j) f(off + j * inner_stride);
    size_t d = nr - 1;
    while (d-- > 0) {
      if (++idx[d] < p.red_dims[d]) break;
      idx[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

Result<ReducePlan> plan_for(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor* axes = ctx.inputs.size() > 1 && ctx.input(1).defined() && ctx.node->has_input(1)
                           ? &ctx.input(1)
                           : nullptr;
  FRAME_ASSIGN_OR_RETURN(std::vector<bool> reduced,
                         ops::nn::resolve_reduce_axes(*ctx.node, x.rank(), axes));
  return make_plan(x.shape(), reduced);
}

template <typename R, DTypeSet kSet>
Status reduce_kernel(KernelContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ReducePlan p, plan_for(ctx));
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  return dispatch_dtype<kSet>(x.dtype(), [&]<typename T>() {
    using A = acc_t<T>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    ops::parallel_for(p.out_numel, ctx.num_threads, [&](int64_t o) {
      A acc = R::template init<A, T>();
      for_each_reduced(p, base_offset(p, o), [&](int64_t off) {
        R::template fold<A>(acc, static_cast<A>(to_compute(in[off])));
      });
      out[o] = from_compute<T>(static_cast<compute_t<T>>(R::template finish<A>(acc, p.red_numel)));
    });
  });
}

// log(sum(exp(x - m))) + m with m the slice maximum; an all -inf (or empty) slice gives -inf.
Status reduce_log_sum_exp_kernel(KernelContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ReducePlan p, plan_for(ctx));
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  return dispatch_dtype<kArith>(x.dtype(), [&]<typename T>() {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    ops::parallel_for(p.out_numel, ctx.num_threads, [&](int64_t o) {
      const int64_t base = base_offset(p, o);
      double m = -std::numeric_limits<double>::infinity();
      for_each_reduced(p, base, [&](int64_t off) {
        MaxR::fold<double>(m, static_cast<double>(to_compute(in[off])));
      });
      double r = m;
      if (std::isfinite(m)) {
        double s = 0;
        for_each_reduced(p, base, [&](int64_t off) {
          s += std::exp(static_cast<double>(to_compute(in[off])) - m);
        });
        r = m + std::log(s);
      }
      out[o] = from_compute<T>(static_cast<compute_t<T>>(r));
    });
  });
}

FRAME_REGISTER_KERNEL(reduce_sum, "cpu", (reduce_kernel<SumR, kArith>)).dtypes(kArith);
FRAME_REGISTER_KERNEL(reduce_mean, "cpu", (reduce_kernel<MeanR, kArith>)).dtypes(kArith);
FRAME_REGISTER_KERNEL(reduce_prod, "cpu", (reduce_kernel<ProdR, kArith>)).dtypes(kArith);
FRAME_REGISTER_KERNEL(reduce_max, "cpu", (reduce_kernel<MaxR, kMinMax>)).dtypes(kMinMax);
FRAME_REGISTER_KERNEL(reduce_min, "cpu", (reduce_kernel<MinR, kMinMax>)).dtypes(kMinMax);
FRAME_REGISTER_KERNEL(reduce_l1, "cpu", (reduce_kernel<L1R, kArith>)).dtypes(kArith);
FRAME_REGISTER_KERNEL(reduce_l2, "cpu", (reduce_kernel<L2R, kArith>)).dtypes(kArith);
FRAME_REGISTER_KERNEL(reduce_sum_square, "cpu", (reduce_kernel<SumSquareR, kArith>)).dtypes(kArith);
FRAME_REGISTER_KERNEL(reduce_log_sum, "cpu", (reduce_kernel<LogSumR, kArith>)).dtypes(kArith);
FRAME_REGISTER_KERNEL(reduce_log_sum_exp, "cpu", reduce_log_sum_exp_kernel).dtypes(kArith);

// outer x axis x inner view of a tensor around one axis.
struct AxisView {
  int64_t outer = 1, n = 1, inner = 1;
};
AxisView axis_view(const Shape& s, int64_t axis) {
  AxisView v;
  for (int64_t i = 0; i < static_cast<int64_t>(s.size()); ++i) {
    const int64_t d = s[static_cast<size_t>(i)];
    if (i < axis)
      v.outer *= d;
    else if (i == axis)
      v.n = d;
    else
      v.inner *= d;
  }
  return v;
}

template <bool kMax>
Status arg_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, ops::normalize_axis(*ctx.node, ctx.node->attr_or<int64_t>("axis", 0), x.rank(),
                                        "attribute 'axis'"));
  const bool last = ctx.node->attr_or<int64_t>("select_last_index", 0) != 0;
  const AxisView v = axis_view(x.shape(), axis);
  if (v.n == 0) return ctx.node->error("cannot reduce empty axis {}", axis);
  int64_t* out = ctx.output(0).data<int64_t>();
  return dispatch_dtype<kNumericDTypes>(x.dtype(), [&]<typename T>() {
    const T* in = x.data<T>();
    ops::parallel_for(v.outer * v.inner, ctx.num_threads, [&](int64_t oi) {
      const int64_t o = oi / v.inner, i = oi % v.inner;
      const T* p = in + o * v.n * v.inner + i;
      auto best = to_compute(p[0]);
      int64_t bi = 0;
      for (int64_t j = 1; j < v.n; ++j) {
        const auto c = to_compute(p[j * v.inner]);
        if (is_nan(best)) break;  // first NaN wins
        const bool better = is_nan(c) || (kMax ? c > best : c < best);
        if (better || (last && c == best)) {
          best = c;
          bi = j;
        }
      }
      out[oi] = bi;
    });
  });
}

FRAME_REGISTER_KERNEL(arg_max, "cpu", arg_kernel<true>).dtypes(kNumericDTypes);
FRAME_REGISTER_KERNEL(arg_min, "cpu", arg_kernel<false>).dtypes(kNumericDTypes);

Status cumsum_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& a = ctx.input(1);
  if (a.numel() != 1) {
    return ctx.node->error("input 1 (axis) must hold one value, got shape {}",
                           shape_to_string(a.shape()));
  }
  FRAME_ASSIGN_OR_RETURN(int64_t axis, ops::normalize_axis(*ctx.node, a.element_as_int64(0),
                                                           x.rank(), "input 1 (axis)"));
  const bool exclusive = ctx.node->attr_or<int64_t>("exclusive", 0) != 0;
  const bool reverse = ctx.node->attr_or<int64_t>("reverse", 0) != 0;
  const AxisView v = axis_view(x.shape(), axis);
  return dispatch_dtype<kArith>(x.dtype(), [&]<typename T>() {
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    ops::parallel_for(v.outer * v.inner, ctx.num_threads, [&](int64_t oi) {
      const int64_t base = (oi / v.inner) * v.n * v.inner + oi % v.inner;
      acc_t<T> acc = 0;
      for (int64_t t = 0; t < v.n; ++t) {
        const int64_t j = reverse ? v.n - 1 - t : t;
        const int64_t off = base + j * v.inner;
        const auto xv = static_cast<acc_t<T>>(to_compute(in[off]));
        if (!exclusive) acc += xv;
        out[off] = from_compute<T>(static_cast<compute_t<T>>(acc));
        if (exclusive) acc += xv;
      }
    });
  });
}

FRAME_REGISTER_KERNEL(cumsum, "cpu", cumsum_kernel).dtypes(kArith);

Status top_k_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, ops::normalize_axis(*ctx.node, ctx.node->attr_or<int64_t>("axis", -1), x.rank(),
                                        "attribute 'axis'"));
  const bool largest = ctx.node->attr_or<int64_t>("largest", 1) != 0;
  const AxisView v = axis_view(x.shape(), axis);
  const int64_t k = ctx.output(0).dim(axis);
  int64_t* idx_out = ctx.output(1).data<int64_t>();
  return dispatch_dtype<kNumericDTypes>(x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* val_out = ctx.output(0).data<T>();
    // Strict weak order: NaN above everything, ties by lower index.
    auto before = [&](const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
      const bool an = is_nan(a.first), bn = is_nan(b.first);
      if (an || bn) {
        if (an && bn) return a.second < b.second;
        return largest ? an : bn;
      }
      if (a.first != b.first) return largest ? a.first > b.first : a.first < b.first;
      return a.second < b.second;
    };
    ops::parallel_ranges(v.outer * v.inner, ctx.num_threads, [&](int64_t oi0, int64_t oi1) {
      std::vector<std::pair<C, int64_t>> buf(static_cast<size_t>(v.n));
      for (int64_t oi = oi0; oi < oi1; ++oi) {
        const int64_t o = oi / v.inner, i = oi % v.inner;
        const T* p = in + o * v.n * v.inner + i;
        for (int64_t j = 0; j < v.n; ++j)
          buf[static_cast<size_t>(j)] = {to_compute(p[j * v.inner]), j};
        std::partial_sort(buf.begin(), buf.begin() + k, buf.end(), before);
        const int64_t ob = o * k * v.inner + i;
        for (int64_t j = 0; j < k; ++j) {
          val_out[ob + j * v.inner] = p[buf[static_cast<size_t>(j)].second * v.inner];
          idx_out[ob + j * v.inner] = buf[static_cast<size_t>(j)].second;
        }
      }
    });
  });
}

FRAME_REGISTER_KERNEL(top_k, "cpu", top_k_kernel).dtypes(kNumericDTypes);

}  // namespace
}  // namespace frame::cpu
