// `onednn` kernels of the ReduceXxx ops for fp32 (docs/backends/onednn.md, "Reductions"):
// the input is viewed as [A, R, B] (kept outer dims, reduced dims, kept inner dims, after
// dropping size-1 dims and merging neighbours), decided once at prepare. B == 1 reduces
// contiguous rows; B > 1 folds R rows of B contiguous elements into a row of accumulators.
// Both are Highway vector loops accumulating in double like the cpu reference kernel, split
// over OpenMP threads by rows or column blocks. Other axis patterns (e.g. reducing the first
// and last of three dims) are declined, so the chain gives them to cpu.

#include "backends/onednn/kernels/hwy_targets.h"
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/kernels/reduce.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on
#include <cmath>
#include <cstdint>
#include <limits>

#include "backends/onednn/kernels/reduce.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace frame::backends::onednn::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DD = hn::ScalableTag<double>;
using DF = hn::Rebind<float, DD>;  // as many floats as doubles in a vector
using VD = hn::Vec<DD>;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Per-kind policy: identity, per-element fold (transform included), merge of two partial
// accumulators (vector and scalar), final transform of the accumulated value over n elements.
// Max/min follow the cpu kernel: the first NaN sticks.
template <ReduceKind K>
struct Policy {
  static constexpr bool kMul = K == ReduceKind::kProd;
  static constexpr bool kMax = K == ReduceKind::kMax || K == ReduceKind::kLogSumExp;
  static constexpr bool kMin = K == ReduceKind::kMin;

  static double init() {
    if constexpr (kMul) return 1.0;
    if constexpr (kMax) return -kInf;
    if constexpr (kMin) return kInf;
    return 0.0;
  }
  static VD merge(DD, VD a, VD b) {
    if constexpr (kMul) return hn::Mul(a, b);
    if constexpr (kMax || kMin) {
      const auto better = kMax ? hn::Gt(b, a) : hn::Lt(b, a);
      return hn::IfThenElse(hn::AndNot(hn::IsNaN(a), hn::Or(better, hn::IsNaN(b))), b, a);
    }
    return hn::Add(a, b);
  }
  static VD fold(DD d, VD acc, VD x) {
    if constexpr (K == ReduceKind::kL1) x = hn::Abs(x);
    if constexpr (K == ReduceKind::kL2 || K == ReduceKind::kSumSquare) x = hn::Mul(x, x);
    return merge(d, acc, x);
  }
  static double merge1(double a, double b) {
    if constexpr (kMul) return a * b;
    if constexpr (kMax || kMin) {
      const bool better = kMax ? b > a : b < a;
      return (!std::isnan(a) && (better || std::isnan(b))) ? b : a;
    }
    return a + b;
  }
  static double finish(double acc, int64_t n) {
    if constexpr (K == ReduceKind::kMean) return acc / static_cast<double>(n);
    if constexpr (K == ReduceKind::kL2) return std::sqrt(acc);
    if constexpr (K == ReduceKind::kLogSum) return std::log(acc);
    return acc;
  }
};

template <class P>
double horizontal(DD d, VD v) {
  HWY_ALIGN double lanes[hn::MaxLanes(DD())];
  hn::Store(v, d, lanes);
  double r = lanes[0];
  for (size_t i = 1; i < hn::Lanes(d); ++i) r = P::merge1(r, lanes[i]);
  return r;
}

// fold over x[0..n) (contiguous), with four independent accumulators; `shift` is subtracted
// and exp taken first when kExp (log-sum-exp's second pass).
template <class P, bool kExp = false>
double fold_row(const float* x, int64_t n, double shift = 0.0) {
  const DD d;
  const DF df;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const VD s = hn::Set(d, shift);
  auto load = [&](int64_t i) {
    const VD v = hn::PromoteTo(d, hn::LoadU(df, x + i));
    if constexpr (kExp) return hn::Exp(d, hn::Sub(v, s));
    return v;
  };
  VD a0 = hn::Set(d, P::init()), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 4 * lanes <= n; i += 4 * lanes) {
    a0 = P::fold(d, a0, load(i));
    a1 = P::fold(d, a1, load(i + lanes));
    a2 = P::fold(d, a2, load(i + 2 * lanes));
    a3 = P::fold(d, a3, load(i + 3 * lanes));
  }
  for (; i + lanes <= n; i += lanes) a0 = P::fold(d, a0, load(i));
  double r = horizontal<P>(d, P::merge(d, P::merge(d, a0, a1), P::merge(d, a2, a3)));
  for (; i < n; ++i) {
    double v = x[i];
    if constexpr (kExp) v = std::exp(v - shift);
    HWY_ALIGN double one[hn::MaxLanes(DD())] = {};
    one[0] = v;
    HWY_ALIGN double acc[hn::MaxLanes(DD())] = {};
    acc[0] = P::init();
    hn::Store(P::fold(d, hn::Load(d, acc), hn::Load(d, one)), d, acc);
    r = P::merge1(r, acc[0]);
  }
  return r;
}

template <ReduceKind K>
void contig_rows(const float* x, float* out, int64_t rows, int64_t r) {
  using P = Policy<K>;
  for (int64_t a = 0; a < rows; ++a) {
    const float* row = x + a * r;
    if constexpr (K == ReduceKind::kLogSumExp) {
      const double m = fold_row<P>(row, r);
      double res = m;
      if (std::isfinite(m)) {
        res = m + std::log(fold_row<Policy<ReduceKind::kSum>, true>(row, r, m));
      }
      out[a] = static_cast<float>(res);
    } else {
      out[a] = static_cast<float>(P::finish(fold_row<P>(row, r), r));
    }
  }
}

// out[b] for b in [b0, b1) (b1 - b0 <= kReduceBlock) = fold over rows j of x[j * B + b].
template <class P, bool kExp = false>
void fold_columns(const float* x, int64_t r, int64_t bstride, int64_t b0, int64_t nb, double* acc,
                  const double* shift = nullptr) {
  const DD d;
  const DF df;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t k = 0; k < nb; ++k) acc[k] = P::init();
  for (int64_t j = 0; j < r; ++j) {
    const float* row = x + j * bstride + b0;
    int64_t k = 0;
    for (; k + lanes <= nb; k += lanes) {
      VD v = hn::PromoteTo(d, hn::LoadU(df, row + k));
      if constexpr (kExp) v = hn::Exp(d, hn::Sub(v, hn::LoadU(d, shift + k)));
      hn::StoreU(P::fold(d, hn::LoadU(d, acc + k), v), d, acc + k);
    }
    for (; k < nb; ++k) {
      double v = row[k];
      if constexpr (kExp) v = std::exp(v - shift[k]);
      HWY_ALIGN double one[hn::MaxLanes(DD())] = {};
      HWY_ALIGN double cur[hn::MaxLanes(DD())] = {};
      one[0] = v;
      cur[0] = acc[k];
      hn::Store(P::fold(d, hn::Load(d, cur), hn::Load(d, one)), d, cur);
      acc[k] = cur[0];
    }
  }
}

template <ReduceKind K>
void column_block(const float* x, float* out, int64_t r, int64_t bstride, int64_t b0, int64_t nb) {
  using P = Policy<K>;
  alignas(64) double acc[kReduceBlock];
  fold_columns<P>(x, r, bstride, b0, nb, acc);
  if constexpr (K == ReduceKind::kLogSumExp) {
    alignas(64) double sum[kReduceBlock];
    alignas(64) double shift[kReduceBlock] = {};  // (initialized for -Wmaybe-uninitialized)
    for (int64_t k = 0; k < nb; ++k) shift[k] = std::isfinite(acc[k]) ? acc[k] : 0.0;
    fold_columns<Policy<ReduceKind::kSum>, true>(x, r, bstride, b0, nb, sum, shift);
    for (int64_t k = 0; k < nb; ++k) {
      out[b0 + k] = static_cast<float>(std::isfinite(acc[k]) ? acc[k] + std::log(sum[k]) : acc[k]);
    }
  } else {
    for (int64_t k = 0; k < nb; ++k) out[b0 + k] = static_cast<float>(P::finish(acc[k], r));
  }
}

#define FRAME_REDUCE_SWITCH(call)          \
  switch (kind) {                          \
    case ReduceKind::kSum:                 \
      return call<ReduceKind::kSum>;       \
    case ReduceKind::kMean:                \
      return call<ReduceKind::kMean>;      \
    case ReduceKind::kProd:                \
      return call<ReduceKind::kProd>;      \
    case ReduceKind::kMax:                 \
      return call<ReduceKind::kMax>;       \
    case ReduceKind::kMin:                 \
      return call<ReduceKind::kMin>;       \
    case ReduceKind::kL1:                  \
      return call<ReduceKind::kL1>;        \
    case ReduceKind::kL2:                  \
      return call<ReduceKind::kL2>;        \
    case ReduceKind::kSumSquare:           \
      return call<ReduceKind::kSumSquare>; \
    case ReduceKind::kLogSum:              \
      return call<ReduceKind::kLogSum>;    \
    case ReduceKind::kLogSumExp:           \
      return call<ReduceKind::kLogSumExp>; \
  }

using ContigFn = void (*)(const float*, float*, int64_t, int64_t);
using ColumnFn = void (*)(const float*, float*, int64_t, int64_t, int64_t, int64_t);

// One switch per node at prepare, never per element.
ContigFn get_contig(ReduceKind kind) {
  FRAME_REDUCE_SWITCH(&contig_rows)
  return nullptr;
}
ColumnFn get_column(ReduceKind kind) {
  FRAME_REDUCE_SWITCH(&column_block)
  return nullptr;
}
#undef FRAME_REDUCE_SWITCH

}  // namespace frame::backends::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::onednn {
namespace {

using ContigFn = void (*)(const float*, float*, int64_t, int64_t);
using ColumnFn = void (*)(const float*, float*, int64_t, int64_t, int64_t, int64_t);

// Input elements per thread below which a reduction stays on fewer threads.
constexpr int64_t kReduceGrain = int64_t{1} << 15;

struct ReducePlan {
  int64_t a = 1, r = 1, b = 1;  // kept outer x reduced x kept inner
  int64_t in_numel = 0;
  ContigFn contig = nullptr;
  ColumnFn column = nullptr;
};

// Kept/reduced pattern of `shape` after dropping size-1 dims and merging neighbours; nullopt
// when it is not [A?, R?, B?].
std::optional<ReducePlan> plan_shape(const Shape& shape, const std::vector<bool>& reduced) {
  ReducePlan p;
  int stage = 0;  // 0: in A, 1: in R, 2: in B
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 1) continue;
    if (reduced[i]) {
      if (stage == 2) return std::nullopt;
      stage = 1;
      p.r *= shape[i];
    } else if (stage == 0) {
      p.a *= shape[i];
    } else {
      stage = 2;
      p.b *= shape[i];
    }
  }
  p.in_numel = numel_of(shape);
  return p;
}

Result<std::vector<bool>> reduced_axes(const ops::NodeContext& ctx) {
  const Tensor* axes = ctx.has_input(1) ? ctx.constant_input(1) : nullptr;
  return ops::nn::resolve_reduce_axes(ctx, static_cast<int64_t>(ctx.input_types[0].shape.size()),
                                      axes);
}

Status reduce_accepts(const ops::NodeContext& ctx) {
  if (ctx.has_input(1) && ctx.constant_input(1) == nullptr) {
    return unimplemented("axes input is not a constant at prepare");
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<bool> reduced, reduced_axes(ctx));
  if (!plan_shape(ctx.input_types[0].shape, reduced)) {
    return unimplemented("reduced axes are not one contiguous block of dims");
  }
  return Status();
}

template <ReduceKind K>
Result<std::shared_ptr<void>> reduce_prepare(const ops::NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(std::vector<bool> reduced, reduced_axes(ctx));
  std::optional<ReducePlan> p = plan_shape(ctx.input_types[0].shape, reduced);
  if (!p) return ctx.error("reduced axes are not one contiguous block of dims");
  p->contig = FRAME_HWY_DISPATCH(get_contig)(K);
  p->column = FRAME_HWY_DISPATCH(get_column)(K);
  return std::shared_ptr<void>(std::make_shared<ReducePlan>(*p));
}

// Rows of r contiguous elements reduced by `f`, split into one contiguous range of rows per
// thread, one thread per kReduceGrain elements (the B == 1 case, and reduce_rows).
void contig_split(ContigFn f, const float* x, float* out, int64_t rows, int64_t r, int threads) {
  const int64_t work = std::max(rows * r, rows);
  const int nt = static_cast<int>(
      std::clamp<int64_t>(std::min(work / kReduceGrain, rows), 1, std::max(1, threads)));
  ops::parallel_ranges(rows, nt,
                       [&](int64_t a0, int64_t a1) { f(x + a0 * r, out + a0, a1 - a0, r); });
}

Status reduce_kernel(ops::KernelContext& ctx) {
  const auto* p = static_cast<const ReducePlan*>(ctx.state);
  if (p == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (x.numel() != p->in_numel || y.numel() != p->a * p->b) {
    return ctx.node->error("input 0 has {} elements, the kernel was prepared for {}", x.numel(),
                           p->in_numel);
  }
  if (y.numel() == 0) return Status();
  const float* in = x.data<float>();
  float* out = y.data<float>();
  if (p->b == 1) {
    contig_split(p->contig, in, out, p->a, p->r, ctx.num_threads);
    return Status();
  }
  const int64_t work = std::max<int64_t>(p->in_numel, y.numel());
  // Column blocks of up to kReduceBlock outputs, each folding R rows of its columns.
  const int64_t blocks_per_a = (p->b + kReduceBlock - 1) / kReduceBlock;
  const int64_t items = p->a * blocks_per_a;
  const int nt = static_cast<int>(
      std::clamp<int64_t>(std::min(work / kReduceGrain, items), 1, std::max(1, ctx.num_threads)));
  auto run = [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const int64_t a = i / blocks_per_a;  // per block of columns, not per element
      const int64_t b0 = (i % blocks_per_a) * kReduceBlock;
      p->column(in + a * p->r * p->b, out + a * p->b, p->r, p->b, b0,
                std::min(kReduceBlock, p->b - b0));
    }
  };
  ops::parallel_ranges(items, nt, run);
  return Status();
}

}  // namespace

void reduce_rows(ReduceKind kind, const float* x, float* out, int64_t rows, int64_t r,
                 int threads) {
  if (rows <= 0) return;
  contig_split(FRAME_HWY_DISPATCH(get_contig)(kind), x, out, rows, r, threads);
}

#define FRAME_ONEDNN_REDUCE(op, kind)                \
  FRAME_REGISTER_KERNEL(op, "onednn", reduce_kernel) \
      .dtypes(kVecDTypes)                            \
      .prepare(reduce_prepare<ReduceKind::kind>)     \
      .accepts(reduce_accepts);
FRAME_ONEDNN_REDUCE(reduce_sum, kSum)
FRAME_ONEDNN_REDUCE(reduce_mean, kMean)
FRAME_ONEDNN_REDUCE(reduce_prod, kProd)
FRAME_ONEDNN_REDUCE(reduce_max, kMax)
FRAME_ONEDNN_REDUCE(reduce_min, kMin)
FRAME_ONEDNN_REDUCE(reduce_l1, kL1)
FRAME_ONEDNN_REDUCE(reduce_l2, kL2)
FRAME_ONEDNN_REDUCE(reduce_sum_square, kSumSquare)
FRAME_ONEDNN_REDUCE(reduce_log_sum, kLogSum)
FRAME_ONEDNN_REDUCE(reduce_log_sum_exp, kLogSumExp)
#undef FRAME_ONEDNN_REDUCE

}  // namespace frame::backends::onednn
#endif  // HWY_ONCE
