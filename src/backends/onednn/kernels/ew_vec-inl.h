// Vector forms of the elementwise ops (Highway), keyed by the scalar functor type of
// include/frame/ops/elementwise.h: `VecOf<ew::AddOp>` computes what `ew::AddOp<float>`
// computes, on one vector, reading attributes from the scalar functor so each formula and
// attribute default has one home. An op without a specialization has `kHasVec<F> == false` and
// runs through its cpu kernel instead (detected at compile time).
//
// Included once per Highway target by ew_vec.cpp (foreach_target.h), hence the toggle guard.
//
// Accuracy (fp32, vs the double-precision function; asserted in tests/cpp/onednn_ew):
//  * exp: Highway Exp (1 ulp), +inf above 88.72, NaN kept;
//  * tanh: Highway Tanh (expm1 based, <= 4 ulp);
//  * erf: two polynomial pieces (erf_v), max abs error kErfMaxAbsError below.

// NOLINTNEXTLINE(build/header_guard): per-target re-inclusion guard required by Highway.
#if defined(FRAME_ONEDNN_EW_VEC_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef FRAME_ONEDNN_EW_VEC_INL_H_
#undef FRAME_ONEDNN_EW_VEC_INL_H_
#else
#define FRAME_ONEDNN_EW_VEC_INL_H_
#endif

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numbers>
#include <type_traits>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "frame/core/dtype.h"
#include "frame/ops/elementwise.h"
#include "hwy/contrib/math/math-inl.h"
#include "hwy/highway.h"

#if HWY_ARCH_X86
#include <immintrin.h>  // _mm_sfence after streaming stores
#endif

HWY_BEFORE_NAMESPACE();
namespace frame::backends::onednn::HWY_NAMESPACE {

namespace hn = hwy::HWY_NAMESPACE;
namespace ew = ::frame::ops::ew;

/// Max |erf_vec(x) - erf(x)| over all finite fp32 x, measured against double precision.
inline constexpr double kErfMaxAbsError = 2e-7;

/// The vector form of scalar functor template F: `kArity` inputs, `operator()(d, f, v...)`
/// with `f` the scalar functor `F<float>` (attributes). Primary: no vector form.
template <template <typename> class F>
struct VecOf {
  static constexpr int kArity = 0;
};

/// True when F has a vector form.
template <template <typename> class F>
inline constexpr bool kHasVec = VecOf<F>::kArity != 0;

// Upper bound of fp32 lanes on the compiled targets (AVX-512: 16), for tail buffers.
inline constexpr size_t kMaxLanes = 16;

// ---- shared pieces ----

/// r where x is not NaN, else x (NaN propagates like the scalar functors).
template <class D, class V>
HWY_INLINE V keep_nan(D, V x, V r) {
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

/// e^x: Highway Exp plus the edges it leaves open (overflow to +inf, NaN).
template <class D, class V>
HWY_INLINE V exp_v(D d, V x) {
  const V y = hn::Exp(d, x);
  const V r = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283935546875f)),
                             hn::Set(d, std::numeric_limits<float>::infinity()), y);
  return keep_nan(d, x, r);
}

/// e^x - 1 (std::expm1): Highway Expm1 plus overflow, the -1 floor and NaN.
template <class D, class V>
HWY_INLINE V expm1_v(D d, V x) {
  V r = hn::Expm1(d, x);
  r = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283935546875f)),
                     hn::Set(d, std::numeric_limits<float>::infinity()), r);
  r = hn::IfThenElse(hn::Lt(x, hn::Set(d, -88.0f)), hn::Set(d, -1.0f), r);
  return keep_nan(d, x, r);
}

/// ln x (std::log): Highway Log on (0, inf), with 0 -> -inf, x < 0 -> NaN, +inf -> +inf.
template <class D, class V>
HWY_INLINE V log_v(D d, V x) {
  const V zero = hn::Zero(d);
  const V inf = hn::Set(d, std::numeric_limits<float>::infinity());
  V r = hn::Log(d, x);
  r = hn::IfThenElse(hn::Eq(x, inf), inf, r);
  r = hn::IfThenElse(hn::Eq(x, zero), hn::Neg(inf), r);
  r = hn::IfThenElse(hn::Lt(x, zero), hn::Set(d, std::numeric_limits<float>::quiet_NaN()), r);
  return keep_nan(d, x, r);
}

/// tanh x: Highway Tanh (exact sign, saturates to +-1, NaN kept).
template <class D, class V>
HWY_INLINE V tanh_v(D d, V x) {
  return keep_nan(d, x, hn::Tanh(d, x));
}

/// erf x in two pieces, both least-squares fits on Chebyshev nodes: |x| < 1: x * P(x^2)
/// (degree 6); |x| >= 1: 1 - e^(-x^2) * Q(1 / |x|) with Q ~ erfc(x) e^(x^2) (degree 9) on [1, 4]
/// (erf rounds to +-1 beyond 4). The tail is erfc to ~1e-6 relative, so 1 + erf(x) for negative
/// x (erf-GELU) keeps its relative accuracy. Max abs error kErfMaxAbsError.
template <class D, class V>
HWY_INLINE V erf_v(D d, V x) {
  const V one = hn::Set(d, 1.0f);
  const V ax = hn::Abs(x);
  const V x2 = hn::Mul(x, x);
  V p = hn::Set(d, 7.933399319881573e-05f);
  p = hn::MulAdd(p, x2, hn::Set(d, -0.0008034820202738047f));
  p = hn::MulAdd(p, x2, hn::Set(d, 0.00519121577963233f));
  p = hn::MulAdd(p, x2, hn::Set(d, -0.02685539796948433f));
  p = hn::MulAdd(p, x2, hn::Set(d, 0.11283625662326813f));
  p = hn::MulAdd(p, x2, hn::Set(d, -0.3761262893676758f));
  p = hn::MulAdd(p, x2, hn::Set(d, 1.128379225730896f));
  const V small = hn::Mul(x, p);
  const V a = hn::Min(ax, hn::Set(d, 4.0f));
  const V u = hn::Div(one, hn::Max(a, one));
  V q = hn::Set(d, 0.028221357613801956f);
  q = hn::MulAdd(q, u, hn::Set(d, -0.16585257649421692f));
  q = hn::MulAdd(q, u, hn::Set(d, 0.40478044748306274f));
  q = hn::MulAdd(q, u, hn::Set(d, -0.49099504947662354f));
  q = hn::MulAdd(q, u, hn::Set(d, 0.19882731139659882f));
  q = hn::MulAdd(q, u, hn::Set(d, 0.2524098753929138f));
  q = hn::MulAdd(q, u, hn::Set(d, -0.38380396366119385f));
  q = hn::MulAdd(q, u, hn::Set(d, 0.02232181653380394f));
  q = hn::MulAdd(q, u, hn::Set(d, 0.5615408420562744f));
  q = hn::MulAdd(q, u, hn::Set(d, 0.0001335152192041278f));
  const V erfc = hn::Mul(hn::Exp(d, hn::Neg(hn::Mul(a, a))), q);
  const V big = hn::CopySign(hn::Sub(one, erfc), x);
  return keep_nan(d, x, hn::IfThenElse(hn::Lt(ax, one), small, big));
}

/// ln(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|) (ew::stable_softplus).
template <class D, class V>
HWY_INLINE V softplus_v(D d, V x) {
  const V e = exp_v(d, hn::Neg(hn::Abs(x)));
  const V r = hn::Add(hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), x), hn::Log1p(d, e));
  return keep_nan(d, x, r);
}

/// lo where x < lo, hi where x > hi, else x (NaN stays NaN): ew::ClipOp / HardSigmoid clamp.
template <class D, class V>
HWY_INLINE V clamp_v(D, V x, V lo, V hi) {
  const V y = hn::IfThenElse(hn::Lt(x, lo), lo, x);
  return hn::IfThenElse(hn::Gt(y, hi), hi, y);
}

/// Applies std function `fn` lane by lane (sin/cos outside Highway's valid range, inf, NaN).
template <class D, class V, class Fn>
HWY_NOINLINE V scalar_lanes(D d, V x, Fn fn) {
  alignas(64) float buf[kMaxLanes];
  hn::Store(x, d, buf);
  for (size_t i = 0; i < hn::Lanes(d); ++i) buf[i] = fn(buf[i]);
  return hn::Load(d, buf);
}

// Highway Sin/Cos are accurate (3 ulp) for |x| <= 39000; other lanes take std::sin/cos.
inline constexpr float kTrigRange = 39000.0f;

// ---- unary ----
#define FRAME_VEC_UNARY(Functor, expr)                                     \
  template <>                                                              \
  struct VecOf<ew::Functor> {                                              \
    static constexpr int kArity = 1;                                       \
    template <class D, class V>                                            \
    HWY_INLINE V operator()(D d, const ew::Functor<float>& f, V x) const { \
      (void)d;                                                             \
      (void)f;                                                             \
      return (expr);                                                       \
    }                                                                      \
  };

FRAME_VEC_UNARY(AbsOp, hn::Abs(x))
FRAME_VEC_UNARY(NegOp, hn::Neg(x))
FRAME_VEC_UNARY(IdentityOp, x)
FRAME_VEC_UNARY(ExpOp, exp_v(d, x))
FRAME_VEC_UNARY(LogOp, log_v(d, x))
FRAME_VEC_UNARY(SqrtOp, hn::Sqrt(x))
FRAME_VEC_UNARY(ReciprocalOp, hn::Div(hn::Set(d, 1.0f), x))
FRAME_VEC_UNARY(TanhOp, tanh_v(d, x))
FRAME_VEC_UNARY(ErfOp, erf_v(d, x))
FRAME_VEC_UNARY(FloorOp, hn::Floor(x))
FRAME_VEC_UNARY(CeilOp, hn::Ceil(x))
FRAME_VEC_UNARY(RoundOp, hn::Round(x))
FRAME_VEC_UNARY(SoftsignOp, hn::Div(x, hn::Add(hn::Set(d, 1.0f), hn::Abs(x))))
FRAME_VEC_UNARY(ReluOp, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Zero(d), x))
FRAME_VEC_UNARY(LeakyReluOp,
                hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(hn::Set(d, f.alpha), x), x))
FRAME_VEC_UNARY(EluOp, hn::IfThenElse(hn::Lt(x, hn::Zero(d)),
                                      hn::Mul(hn::Set(d, f.alpha), expm1_v(d, x)), x))
FRAME_VEC_UNARY(SeluOp, hn::IfThenElse(hn::Gt(x, hn::Zero(d)), hn::Mul(hn::Set(d, f.gamma), x),
                                       hn::Mul(hn::Set(d, f.gamma* f.alpha), expm1_v(d, x))))
FRAME_VEC_UNARY(CeluOp, hn::IfThenElse(hn::Gt(x, hn::Zero(d)), x,
                                       hn::Mul(hn::Set(d, f.alpha),
                                               expm1_v(d, hn::Div(x, hn::Set(d, f.alpha))))))
FRAME_VEC_UNARY(SoftplusOp, softplus_v(d, x))
FRAME_VEC_UNARY(MishOp, hn::Mul(x, tanh_v(d, softplus_v(d, x))))
FRAME_VEC_UNARY(HardSigmoidOp,
                clamp_v(d, hn::Add(hn::Mul(hn::Set(d, f.alpha), x), hn::Set(d, f.beta)),
                        hn::Zero(d), hn::Set(d, 1.0f)))
FRAME_VEC_UNARY(HardSwishOp,
                hn::Mul(x, clamp_v(d, hn::Add(hn::Div(x, hn::Set(d, 6.0f)), hn::Set(d, 0.5f)),
                                   hn::Zero(d), hn::Set(d, 1.0f))))
FRAME_VEC_UNARY(SignOp,
                hn::IfThenElse(hn::Gt(x, hn::Zero(d)), hn::Set(d, 1.0f),
                               hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, -1.0f), x)))
FRAME_VEC_UNARY(ClipOp, clamp_v(d, x, hn::Set(d, f.lo), hn::Set(d, f.hi)))
#undef FRAME_VEC_UNARY

// Two branches like the scalar functor, so exp never overflows: e / (1 + e) with e = e^-|x|
// for x < 0, 1 / (1 + e) otherwise.
template <>
struct VecOf<ew::SigmoidOp> {
  static constexpr int kArity = 1;
  template <class D, class V>
  HWY_INLINE V operator()(D d, const ew::SigmoidOp<float>&, V x) const {
    const V one = hn::Set(d, 1.0f);
    const V e = exp_v(d, hn::Neg(hn::Abs(x)));
    return hn::Div(hn::IfThenElse(hn::Ge(x, hn::Zero(d)), one, e), hn::Add(one, e));
  }
};

template <>
struct VecOf<ew::GeluOp> {
  static constexpr int kArity = 1;
  template <class D, class V>
  HWY_INLINE V operator()(D d, const ew::GeluOp<float>& f, V x) const {
    const V half_x = hn::Mul(hn::Set(d, 0.5f), x);
    const V one = hn::Set(d, 1.0f);
    if (f.tanh_approx) {  // uniform per call: the branch is hoisted out of the loop
      const V cube = hn::Mul(hn::Mul(hn::Mul(hn::Set(d, 0.044715f), x), x), x);
      const V inner = hn::Mul(hn::Set(d, 0.7978845608028654f), hn::Add(x, cube));
      return hn::Mul(half_x, hn::Add(one, tanh_v(d, inner)));
    }
    const V s = hn::Mul(x, hn::Set(d, static_cast<float>(std::numbers::sqrt2 / 2)));
    return hn::Mul(half_x, hn::Add(one, erf_v(d, s)));
  }
};

template <>
struct VecOf<ew::SinOp> {
  static constexpr int kArity = 1;
  template <class D, class V>
  HWY_INLINE V operator()(D d, const ew::SinOp<float>&, V x) const {
    if (!hn::AllTrue(d, hn::Le(hn::Abs(x), hn::Set(d, kTrigRange)))) {
      return scalar_lanes(d, x, [](float v) { return std::sin(v); });
    }
    return hn::Sin(d, x);
  }
};
template <>
struct VecOf<ew::CosOp> {
  static constexpr int kArity = 1;
  template <class D, class V>
  HWY_INLINE V operator()(D d, const ew::CosOp<float>&, V x) const {
    if (!hn::AllTrue(d, hn::Le(hn::Abs(x), hn::Set(d, kTrigRange)))) {
      return scalar_lanes(d, x, [](float v) { return std::cos(v); });
    }
    return hn::Cos(d, x);
  }
};

/// vec(x) where every lane lies in [lo, hi] (Highway's valid range), else std_fn lane by lane
/// (NaN and infinities included): the fast path is branch-free, edges stay exact.
template <class D, class V, class VecFn, class StdFn>
HWY_INLINE V in_range_or(D d, V x, float lo, float hi, VecFn vec, StdFn std_fn) {
  const auto ok = hn::And(hn::Ge(x, hn::Set(d, lo)), hn::Le(x, hn::Set(d, hi)));
  if (!hn::AllTrue(d, ok)) return scalar_lanes(d, x, std_fn);
  return vec(x);
}

// Inverse and hyperbolic trig: Highway contrib (2-4 ulp) inside its valid ranges; sinh/cosh
// overflow between 88.7 and 89.4 where e^x already does, so those lanes take std.
#define FRAME_VEC_RANGED(Functor, lo, hi, vec_expr, std_fn)                                  \
  template <>                                                                                \
  struct VecOf<ew::Functor> {                                                                \
    static constexpr int kArity = 1;                                                         \
    template <class D, class V>                                                              \
    HWY_INLINE V operator()(D d, const ew::Functor<float>&, V x) const {                     \
      return in_range_or(                                                                    \
          d, x, lo, hi, [d](V v) { return (vec_expr); }, [](float v) { return std_fn(v); }); \
    }                                                                                        \
  };
FRAME_VEC_RANGED(AsinOp, -1.0f, 1.0f, hn::Asin(d, v), std::asin)
FRAME_VEC_RANGED(AcosOp, -1.0f, 1.0f, hn::Acos(d, v), std::acos)
FRAME_VEC_RANGED(AtanOp, -3.0e38f, 3.0e38f, hn::Atan(d, v), std::atan)
FRAME_VEC_RANGED(AsinhOp, -3.0e38f, 3.0e38f, hn::Asinh(d, v), std::asinh)
FRAME_VEC_RANGED(AcoshOp, 1.0f, 3.0e38f, hn::Acosh(d, v), std::acosh)
FRAME_VEC_RANGED(AtanhOp, -0.99999994f, 0.99999994f, hn::Atanh(d, v), std::atanh)
FRAME_VEC_RANGED(SinhOp, -88.0f, 88.0f, hn::Sinh(d, v), std::sinh)
// cosh x = (e^|x| + e^-|x|) / 2.
FRAME_VEC_RANGED(CoshOp, -88.0f, 88.0f,
                 hn::Mul(hn::Set(d, 0.5f),
                         hn::Add(hn::Exp(d, hn::Abs(v)), hn::Exp(d, hn::Neg(hn::Abs(v))))),
                 std::cosh)
// tan x = sin x / cos x (each 3 ulp) within Highway's trig range.
FRAME_VEC_RANGED(TanOp, -kTrigRange, kTrigRange, hn::Div(hn::Sin(d, v), hn::Cos(d, v)), std::tan)
#undef FRAME_VEC_RANGED

// ---- binary ----
#define FRAME_VEC_BINARY(Functor, expr)                                         \
  template <>                                                                   \
  struct VecOf<ew::Functor> {                                                   \
    static constexpr int kArity = 2;                                            \
    template <class D, class V>                                                 \
    HWY_INLINE V operator()(D d, const ew::Functor<float>& f, V a, V b) const { \
      (void)d;                                                                  \
      (void)f;                                                                  \
      return (expr);                                                            \
    }                                                                           \
  };
FRAME_VEC_BINARY(AddOp, hn::Add(a, b))
FRAME_VEC_BINARY(SubOp, hn::Sub(a, b))
FRAME_VEC_BINARY(MulOp, hn::Mul(a, b))
FRAME_VEC_BINARY(DivOp, hn::Div(a, b))
// numpy.minimum/maximum: a NaN operand wins (a's first), else b < a ? b : a.
FRAME_VEC_BINARY(MinOp, keep_nan(d, a, keep_nan(d, b, hn::IfThenElse(hn::Lt(b, a), b, a))))
FRAME_VEC_BINARY(MaxOp, keep_nan(d, a, keep_nan(d, b, hn::IfThenElse(hn::Lt(a, b), b, a))))
FRAME_VEC_BINARY(PReluOp, hn::IfThenElse(hn::Lt(a, hn::Zero(d)), hn::Mul(b, a), a))
#undef FRAME_VEC_BINARY

// ---- comparisons (fp32 in, bool out), keyed like VecOf; NaN compares false like C++ ----

/// The vector form of comparison functor F: `apply(a, b)` gives the lane mask.
template <template <typename> class F>
struct VecCmpOf {
  static constexpr bool kDefined = false;
};
#define FRAME_VEC_CMP(Functor, fn)           \
  template <>                                \
  struct VecCmpOf<ew::Functor> {             \
    static constexpr bool kDefined = true;   \
    template <class V>                       \
    static HWY_INLINE auto apply(V a, V b) { \
      return fn(a, b);                       \
    }                                        \
  };
FRAME_VEC_CMP(EqualOp, hn::Eq)
FRAME_VEC_CMP(LessOp, hn::Lt)
FRAME_VEC_CMP(LessOrEqualOp, hn::Le)
FRAME_VEC_CMP(GreaterOp, hn::Gt)
FRAME_VEC_CMP(GreaterOrEqualOp, hn::Ge)
#undef FRAME_VEC_CMP

// Mean's last step: sum / count (ew::MeanFinish).
template <>
struct VecOf<ew::MeanFinish> {
  static constexpr int kArity = 1;
  template <class D, class V>
  HWY_INLINE V operator()(D d, const MeanFinishArgs& f, V x) const {
    return hn::Div(x, hn::Set(d, static_cast<float>(f.count)));
  }
};

// ---- loops over contiguous arrays; the tail goes through a padded vector ----

/// Functor argument type of VecOf<F>: the scalar functor, or MeanFinishArgs for mean.
template <template <typename> class F>
using VecArg =
    std::conditional_t<std::is_same_v<F<float>, ew::MeanFinish<float>>, MeanFinishArgs, F<float>>;

template <template <typename> class F>
HWY_NOINLINE void unary_loop(const float* x, float* y, size_t n, const void* functor) {
  const hn::ScalableTag<float> d;
  const auto& f = *static_cast<const VecArg<F>*>(functor);
  const VecOf<F> op;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(op(d, f, hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    alignas(64) float buf[kMaxLanes] = {};
    for (size_t k = 0; k < n - i; ++k) buf[k] = x[i + k];
    hn::Store(op(d, f, hn::Load(d, buf)), d, buf);
    for (size_t k = 0; k < n - i; ++k) y[i + k] = buf[k];
  }
}

template <template <typename> class F>
HWY_NOINLINE void binary_loop(const float* a, const float* b, float* y, size_t n,
                              const void* functor) {
  const hn::ScalableTag<float> d;
  const auto& f = *static_cast<const F<float>*>(functor);
  const VecOf<F> op;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(op(d, f, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, y + i);
  }
  if (i < n) {
    alignas(64) float ba[kMaxLanes] = {};
    alignas(64) float bb[kMaxLanes] = {};
    for (size_t k = 0; k < n - i; ++k) {
      ba[k] = a[i + k];
      bb[k] = b[i + k];
    }
    hn::Store(op(d, f, hn::Load(d, ba), hn::Load(d, bb)), d, ba);
    for (size_t k = 0; k < n - i; ++k) y[i + k] = ba[k];
  }
}

// ---- pow with a scalar exponent (ew::PowOp<float, float> computes std::pow in float) ----

/// x^e for an integer e (|e| small) by repeated squaring, 1 / x^|e| for negative e: x^0 = 1
/// even for NaN, 0^-k = inf with the sign of x for odd k, like std::pow.
HWY_NOINLINE void pow_int_loop(const float* x, float* y, size_t n, const void* functor) {
  const hn::ScalableTag<float> d;
  const auto& a = *static_cast<const PowArgs*>(functor);
  const uint64_t k = static_cast<uint64_t>(a.ie < 0 ? -a.ie : a.ie);
  auto powv = [&](hn::Vec<decltype(d)> v) {
    auto r = hn::Set(d, 1.0f);
    auto b = v;
    for (uint64_t q = k; q != 0; q >>= 1) {
      if (q & 1u) r = hn::Mul(r, b);
      if (q > 1) b = hn::Mul(b, b);
    }
    return a.ie < 0 ? hn::Div(hn::Set(d, 1.0f), r) : r;
  };
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(powv(hn::LoadU(d, x + i)), d, y + i);
  if (i < n) {
    alignas(64) float buf[kMaxLanes] = {};
    for (size_t k2 = 0; k2 < n - i; ++k2) buf[k2] = x[i + k2];
    hn::Store(powv(hn::Load(d, buf)), d, buf);
    for (size_t k2 = 0; k2 < n - i; ++k2) y[i + k2] = buf[k2];
  }
}

/// x^0.5 = sqrt(x), except pow(-inf, 0.5) = +inf (std::pow); -0 gives -0 (equal to +0).
HWY_NOINLINE void pow_half_loop(const float* x, float* y, size_t n, const void*) {
  const hn::ScalableTag<float> d;
  const auto ninf = hn::Set(d, -std::numeric_limits<float>::infinity());
  const auto inf = hn::Set(d, std::numeric_limits<float>::infinity());
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::LoadU(d, x + i);
    hn::StoreU(hn::IfThenElse(hn::Eq(v, ninf), inf, hn::Sqrt(v)), d, y + i);
  }
  for (; i < n; ++i) y[i] = std::pow(x[i], 0.5f);
}

/// std::pow lane by lane for other exponents (a direct call, no indirection per element).
HWY_NOINLINE void pow_any_loop(const float* x, float* y, size_t n, const void* functor) {
  const float e = static_cast<const PowArgs*>(functor)->e;
  for (size_t i = 0; i < n; ++i) y[i] = std::pow(x[i], e);
}

/// out[i] = cond[i] ? x[i] : y[i] (ONNX Where; bool is one byte, nonzero = true).
HWY_NOINLINE void where_loop(const uint8_t* cond, const float* x, const float* y, float* out,
                             size_t n) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const hn::Rebind<uint32_t, decltype(d)> d32;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto c = hn::PromoteTo(d32, hn::LoadU(d8, cond + i));
    const auto m = hn::RebindMask(d, hn::Ne(c, hn::Zero(d32)));
    hn::StoreU(hn::IfThenElse(m, hn::LoadU(d, x + i), hn::LoadU(d, y + i)), d, out + i);
  }
  for (; i < n; ++i) out[i] = cond[i] != 0 ? x[i] : y[i];
}

/// The first `count` (< lanes) floats at p in a vector, the other lanes 0, reading nothing past
/// p + count: AVX-512 masks the load; Highway's MaskedLoad on older targets reads the whole
/// vector (aligned), so there the floats go through a stack buffer.
template <class D>
HWY_INLINE hn::Vec<D> load_n(D d, const float* p, size_t count) {
#if HWY_TARGET <= HWY_AVX3
  return hn::MaskedLoad(hn::FirstN(d, count), d, p);
#else
  alignas(64) float buf[kMaxLanes] = {};
  for (size_t i = 0; i < count; ++i) buf[i] = p[i];
  return hn::Load(d, buf);
#endif
}

/// Stores the first `count` (< lanes) lanes of v at p, writing nothing past p + count (see
/// load_n).
template <class D>
HWY_INLINE void store_n(D d, hn::Vec<D> v, float* p, size_t count) {
#if HWY_TARGET <= HWY_AVX3
  hn::BlendedStore(v, hn::FirstN(d, count), d, p);
#else
  alignas(64) float buf[kMaxLanes] = {};
  hn::Store(v, d, buf);
  for (size_t i = 0; i < count; ++i) p[i] = buf[i];
#endif
}

/// y = e^(x - max) / sum over each of `rows` contiguous rows of n elements
/// (VecTable::softmax_rows; y may be x). The sum is kept per lane and reduced once; the
/// division is a multiply by the reciprocal (one more rounding). The last partial vector is
/// loaded and stored under a mask (rows are often short: attention over a few dozen keys, where
/// a scalar tail would cost more than the vector body), and kept in a register between the
/// passes: a load of what a masked store just wrote is not forwarded from the store and waits
/// for it. Rows go R at a time through each pass: a short row is a chain of dependent
/// reductions and exponentials, and R independent chains fill the pipeline where one leaves it
/// mostly idle (the BERT-style encoder's stream of shapes, attention over 1-64 keys: the
/// softmax's share of the process's time 5.7% one row at a time, 3.0% four at a time). Each
/// row's arithmetic is the same whatever R is.
template <size_t R>
HWY_INLINE void softmax_rows_block(const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  const size_t body = n - n % lanes;
  const bool has_tail = body < n;
  const auto tail = hn::FirstN(d, n - body);
  const auto neg_inf = hn::Set(d, -std::numeric_limits<float>::infinity());
  V xt[R], acc[R], vm[R], et[R];
  for (size_t r = 0; r < R; ++r) {
    xt[r] =
        has_tail ? hn::IfThenElse(tail, load_n(d, x + r * n + body, n - body), neg_inf) : neg_inf;
    acc[r] = xt[r];
  }
  for (size_t i = 0; i < body; i += lanes) {
    for (size_t r = 0; r < R; ++r) acc[r] = hn::Max(acc[r], hn::LoadU(d, x + r * n + i));
  }
  // hn::Max may drop a NaN, but e^(NaN - m) is NaN, so the sum and so the whole row are NaN.
  for (size_t r = 0; r < R; ++r) vm[r] = hn::Set(d, hn::GetLane(hn::MaxOfLanes(d, acc[r])));
  // Lanes past n hold -inf: e^-inf is 0 (a NaN max makes them NaN: masked off below).
  for (size_t r = 0; r < R; ++r) {
    et[r] = has_tail ? hn::IfThenElseZero(tail, exp_v(d, hn::Sub(xt[r], vm[r]))) : hn::Zero(d);
    acc[r] = et[r];
  }
  for (size_t i = 0; i < body; i += lanes) {
    for (size_t r = 0; r < R; ++r) {
      const auto e = exp_v(d, hn::Sub(hn::LoadU(d, x + r * n + i), vm[r]));
      hn::StoreU(e, d, y + r * n + i);
      acc[r] = hn::Add(acc[r], e);
    }
  }
  for (size_t r = 0; r < R; ++r) acc[r] = hn::Set(d, 1.0f / hn::GetLane(hn::SumOfLanes(d, acc[r])));
  for (size_t i = 0; i < body; i += lanes) {
    for (size_t r = 0; r < R; ++r) {
      float* yr = y + r * n + i;
      hn::StoreU(hn::Mul(hn::LoadU(d, yr), acc[r]), d, yr);
    }
  }
  if (has_tail) {
    for (size_t r = 0; r < R; ++r) store_n(d, hn::Mul(et[r], acc[r]), y + r * n + body, n - body);
  }
}

HWY_NOINLINE void softmax_rows_loop(const float* x, float* y, size_t n, size_t rows) {
  constexpr size_t kRows = 4;
  size_t r = 0;
  for (; r + kRows <= rows; r += kRows) softmax_rows_block<kRows>(x + r * n, y + r * n, n);
  for (; r < rows; ++r) softmax_rows_block<1>(x + r * n, y + r * n, n);
}

/// ONNX LayerNormalization of one row of n floats (VecTable::layer_norm_row; y may be x):
/// mean = sum(x) / n, d = x - mean, var = sum(d^2) / n, y = d * (1 / sqrt(var + eps)) * gamma
/// (+ beta where beta is not null), float32 throughout as stash_type 1 says. The sums are kept
/// per lane and reduced once; the tail goes through masked loads and stores.
HWY_NOINLINE void layer_norm_row_loop(const float* x, float* y, size_t n, float eps,
                                      const float* gamma, const float* beta) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const size_t body = n - n % lanes, rest = n - body;
  auto vsum = hn::Zero(d);
  for (size_t i = 0; i < body; i += lanes) vsum = hn::Add(vsum, hn::LoadU(d, x + i));
  if (rest > 0) vsum = hn::Add(vsum, load_n(d, x + body, rest));
  const float mean = hn::GetLane(hn::SumOfLanes(d, vsum)) / static_cast<float>(n);
  const auto vmean = hn::Set(d, mean);
  auto vsq = hn::Zero(d);
  for (size_t i = 0; i < body; i += lanes) {
    const auto dv = hn::Sub(hn::LoadU(d, x + i), vmean);
    vsq = hn::MulAdd(dv, dv, vsq);
  }
  if (rest > 0) {
    // Lanes past n load 0: mask their deviation off.
    const auto dv =
        hn::IfThenElseZero(hn::FirstN(d, rest), hn::Sub(load_n(d, x + body, rest), vmean));
    vsq = hn::MulAdd(dv, dv, vsq);
  }
  const float var = hn::GetLane(hn::SumOfLanes(d, vsq)) / static_cast<float>(n);
  const auto vinv = hn::Set(d, 1.0f / std::sqrt(var + eps));
  const auto row = [&](auto xv, auto gv, auto bv) {
    auto v = hn::Mul(hn::Mul(hn::Sub(xv, vmean), vinv), gv);
    return beta != nullptr ? hn::Add(v, bv) : v;
  };
  const auto zero = hn::Zero(d);
  for (size_t i = 0; i < body; i += lanes) {
    const auto v = row(hn::LoadU(d, x + i), hn::LoadU(d, gamma + i),
                       beta != nullptr ? hn::LoadU(d, beta + i) : zero);
    hn::StoreU(v, d, y + i);
  }
  if (rest > 0) {
    const auto v = row(load_n(d, x + body, rest), load_n(d, gamma + body, rest),
                       beta != nullptr ? load_n(d, beta + body, rest) : zero);
    store_n(d, v, y + body, rest);
  }
}

/// One tile of VecTable::gemm: MR rows of C by NV vectors of columns, summed over k in
/// registers (MR * NV accumulators), scaled by alpha (skipped where alpha is 1), then stored, or
/// added to what C holds where Acc (a later block of K). The last vector holds `last` columns
/// (all lanes where FullC): a masked store of C there, and masked loads of B unless FullB (B
/// packed in strips padded with zeros).
template <size_t MR, size_t NV, bool FullB, bool FullC, bool Acc>
HWY_INLINE void gemm_tile(size_t k, float alpha, const float* a, size_t lda, const float* b,
                          size_t ldb, float* c, size_t ldc, size_t last) {
  const hn::ScalableTag<float> d;
  using V = hn::Vec<decltype(d)>;
  const size_t lanes = hn::Lanes(d);
  V acc[MR][NV];
  for (size_t r = 0; r < MR; ++r) {
    for (size_t v = 0; v < NV; ++v) acc[r][v] = hn::Zero(d);
  }
  for (size_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    V bv[NV];
    for (size_t v = 0; v + 1 < NV; ++v) bv[v] = hn::LoadU(d, bp + v * lanes);
    bv[NV - 1] =
        FullB ? hn::LoadU(d, bp + (NV - 1) * lanes) : load_n(d, bp + (NV - 1) * lanes, last);
    for (size_t r = 0; r < MR; ++r) {
      const V av = hn::Set(d, a[r * lda + p]);
      for (size_t v = 0; v < NV; ++v) acc[r][v] = hn::MulAdd(av, bv[v], acc[r][v]);
    }
  }
  const V va = hn::Set(d, alpha);
  for (size_t r = 0; r < MR; ++r) {
    float* cr = c + r * ldc;
    for (size_t v = 0; v < NV; ++v) {
      const bool whole = FullC || v + 1 < NV;
      V y = alpha == 1.0f ? acc[r][v] : hn::Mul(acc[r][v], va);
      if (Acc) {
        y = hn::Add(whole ? hn::LoadU(d, cr + v * lanes) : load_n(d, cr + v * lanes, last), y);
      }
      if (whole) {
        hn::StoreU(y, d, cr + v * lanes);
      } else {
        store_n(d, y, cr + v * lanes, last);
      }
    }
  }
}

// Rows of C per tile, and the tile for `rows` (<= kGemmRows) rows.
constexpr size_t kGemmRows = 6;

template <size_t NV, bool FullB, bool FullC, bool Acc>
HWY_INLINE void gemm_rows(size_t rows, size_t k, float alpha, const float* a, size_t lda,
                          const float* b, size_t ldb, float* c, size_t ldc, size_t last) {
  switch (rows) {
    case 6:
      return gemm_tile<6, NV, FullB, FullC, Acc>(k, alpha, a, lda, b, ldb, c, ldc, last);
    case 5:
      return gemm_tile<5, NV, FullB, FullC, Acc>(k, alpha, a, lda, b, ldb, c, ldc, last);
    case 4:
      return gemm_tile<4, NV, FullB, FullC, Acc>(k, alpha, a, lda, b, ldb, c, ldc, last);
    case 3:
      return gemm_tile<3, NV, FullB, FullC, Acc>(k, alpha, a, lda, b, ldb, c, ldc, last);
    case 2:
      return gemm_tile<2, NV, FullB, FullC, Acc>(k, alpha, a, lda, b, ldb, c, ldc, last);
    default:
      return gemm_tile<1, NV, FullB, FullC, Acc>(k, alpha, a, lda, b, ldb, c, ldc, last);
  }
}

// Columns per strip of VecTable::gemm (two vectors).
HWY_INLINE size_t gemm_strip() { return 2 * hn::Lanes(hn::ScalableTag<float>()); }

// Products of rows [p0, p0 + kb) of B over rows [0, m) of C: strips of two vectors of columns
// (the strip of B stays in L1 while every row tile passes over it), rows in tiles of
// kGemmRows; the last strip takes one or two vectors, its last one masked. B is row-major
// (ldb), or where Packed in strips of k rows of gemm_strip() columns each (VecTable::gemm_packed).
template <bool Acc, bool Packed>
HWY_INLINE void gemm_block(size_t m, size_t n, size_t k, size_t p0, size_t kb, float alpha,
                           const float* a, size_t lda, const float* b, size_t ldb, float* c,
                           size_t ldc) {
  const size_t lanes = hn::Lanes(hn::ScalableTag<float>());
  const size_t strip = gemm_strip();
  for (size_t j = 0; j < n; j += strip) {
    const size_t w = std::min(strip, n - j);
    const size_t nv = (w + lanes - 1) / lanes;
    const size_t last = w - (nv - 1) * lanes;
    const bool full = last == lanes;
    const float* bj = Packed ? b + ((j / strip) * k + p0) * strip : b + p0 * ldb + j;
    const size_t ldbj = Packed ? strip : ldb;
    for (size_t i = 0; i < m; i += kGemmRows) {
      const size_t rows = std::min(kGemmRows, m - i);
      const float* ai = a + i * lda + p0;
      float* cij = c + i * ldc + j;
      if (nv == 2) {
        if (full) {
          gemm_rows<2, true, true, Acc>(rows, kb, alpha, ai, lda, bj, ldbj, cij, ldc, last);
        } else {
          gemm_rows<2, Packed, false, Acc>(rows, kb, alpha, ai, lda, bj, ldbj, cij, ldc, last);
        }
      } else if (full) {
        gemm_rows<1, true, true, Acc>(rows, kb, alpha, ai, lda, bj, ldbj, cij, ldc, last);
      } else {
        gemm_rows<1, Packed, false, Acc>(rows, kb, alpha, ai, lda, bj, ldbj, cij, ldc, last);
      }
    }
  }
}

// K per block of VecTable::gemm, and rows of C per block: a block of A (kGemmBlockRows x
// kGemmDepth floats, 96 KiB) stays in L2 while every strip of B passes over it, and a strip of
// B (kGemmDepth x two vectors) in L1.
constexpr size_t kGemmDepth = 256;
constexpr size_t kGemmBlockRows = 96;

// VecTable::gemm (Packed false) and gemm_packed: K in blocks of kGemmDepth (the first stores C,
// the next add to it), rows in blocks of kGemmBlockRows. Where K fits one block, each c[i][j]
// is alpha * (the products summed in order of p).
template <bool Packed>
HWY_INLINE void gemm_all(size_t m, size_t n, size_t k, float alpha, const float* a, size_t lda,
                         const float* b, size_t ldb, float* c, size_t ldc) {
  for (size_t i0 = 0; i0 < m; i0 += kGemmBlockRows) {
    const size_t rows = std::min(kGemmBlockRows, m - i0);
    const float* ai = a + i0 * lda;
    float* ci = c + i0 * ldc;
    gemm_block<false, Packed>(rows, n, k, 0, std::min(k, kGemmDepth), alpha, ai, lda, b, ldb, ci,
                              ldc);
    for (size_t p0 = kGemmDepth; p0 < k; p0 += kGemmDepth) {
      gemm_block<true, Packed>(rows, n, k, p0, std::min(kGemmDepth, k - p0), alpha, ai, lda, b, ldb,
                               ci, ldc);
    }
  }
}

HWY_NOINLINE void gemm_loop(size_t m, size_t n, size_t k, float alpha, const float* a, size_t lda,
                            const float* b, size_t ldb, float* c, size_t ldc) {
  gemm_all<false>(m, n, k, alpha, a, lda, b, ldb, c, ldc);
}

HWY_NOINLINE void gemm_packed_loop(size_t m, size_t n, size_t k, float alpha, const float* a,
                                   size_t lda, const float* panels, float* c, size_t ldc) {
  gemm_all<true>(m, n, k, alpha, a, lda, panels, 0, c, ldc);
}

HWY_NOINLINE void gemm_pack_loop(const float* b, size_t ldb, size_t k, size_t n, float* panels) {
  const size_t strip = gemm_strip();
  for (size_t j = 0; j < n; j += strip) {
    const size_t w = std::min(strip, n - j);
    float* out = panels + (j / strip) * k * strip;
    for (size_t p = 0; p < k; ++p) {
      std::copy_n(b + p * ldb + j, w, out + p * strip);
      std::fill(out + p * strip + w, out + (p + 1) * strip, 0.0f);
    }
  }
}

/// `P` panels of VecTable::panel_gemv from `a` (y at `yp`), each row of kPanelWidth floats as
/// NV vectors, all P * NV sums in registers through one pass over x: each panel row is read
/// once, in order.
template <size_t P, size_t NV>
HWY_INLINE void panel_gemv_group(const float* a, size_t stride, size_t k, const float* x,
                                 float* yp) {
  const hn::CappedTag<float, kPanelWidth> d;
  constexpr size_t kLanes = kPanelWidth / NV;
  hn::Vec<decltype(d)> s[P][NV];
  for (size_t p = 0; p < P; ++p) {
    for (size_t v = 0; v < NV; ++v) s[p][v] = hn::LoadU(d, yp + p * kPanelWidth + v * kLanes);
  }
  for (size_t i = 0; i < k; ++i) {
    const auto xv = hn::Set(d, x[i]);
    for (size_t p = 0; p < P; ++p) {
      const float* row = a + p * stride + i * kPanelWidth;
      for (size_t v = 0; v < NV; ++v) {
        s[p][v] = hn::MulAdd(hn::LoadU(d, row + v * kLanes), xv, s[p][v]);
      }
    }
  }
  for (size_t p = 0; p < P; ++p) {
    for (size_t v = 0; v < NV; ++v) hn::StoreU(s[p][v], d, yp + p * kPanelWidth + v * kLanes);
  }
}

/// VecTable::panel_gemv. Panels in groups with eight sums in registers (AVX-512: four panels of
/// one vector; AVX2: four of two; SSE4: two of four), one pass over x per group, so each panel
/// row is read once: two passes of half a row each (AVX2) had fetched every cache line of the
/// panels twice, and a recurrent matrix larger than L2 from L3 twice per step (a 2-layer LSTM
/// with 256 units 2.5 ms per layer against ONNX Runtime's 1.85 on a 2-core AVX2 EPYC). Each
/// sum takes its products in order of i, as before.
HWY_NOINLINE void panel_gemv_loop(const float* panels, size_t npanels, size_t k, const float* x,
                                  float* y) {
  const hn::CappedTag<float, kPanelWidth> d;
  const size_t stride = k * kPanelWidth;  // floats per panel
  constexpr size_t kMaxLanes = hn::MaxLanes(d);
  constexpr size_t NV = kPanelWidth / kMaxLanes;  // vectors per panel row
  if constexpr (NV <= 4 && kMaxLanes * NV == kPanelWidth) {
    if (hn::Lanes(d) == kMaxLanes) {
      constexpr size_t P = NV == 1 ? 4 : 8 / NV;
      size_t p = 0;
      for (; p + P <= npanels; p += P) {
        panel_gemv_group<P, NV>(panels + p * stride, stride, k, x, y + p * kPanelWidth);
      }
      for (; p < npanels; ++p) {
        panel_gemv_group<1, NV>(panels + p * stride, stride, k, x, y + p * kPanelWidth);
      }
      return;
    }
  }
  // Other targets (the scalar one, scalable vectors): a vector column at a time.
  const size_t lanes = hn::Lanes(d);
  for (size_t p = 0; p < npanels; ++p) {
    const float* a = panels + p * stride;
    float* yp = y + p * kPanelWidth;
    for (size_t c = 0; c < kPanelWidth; c += lanes) {
      auto s = hn::LoadU(d, yp + c);
      for (size_t i = 0; i < k; ++i) {
        s = hn::MulAdd(hn::LoadU(d, a + i * kPanelWidth + c), hn::Set(d, x[i]), s);
      }
      hn::StoreU(s, d, yp + c);
    }
  }
}

/// Output rows of one depthwise conv plane read from `xp`, a zero-padded copy of the input
/// plane (row stride `wp`, the leading pads included, zero rows to a multiple of 4 output rows),
/// so no tap needs a bound or a mask: each vector of a row summed over every tap in a register
/// and stored once. SW is the column stride (1 and 2 as plain loads, 0 any other, gathered).
template <int64_t SW, class D>
HWY_INLINE void dw_padded_rows(D d, const float* xp, int64_t wp, const float* wt, float bias,
                               float* y, const DwPlane& g) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t oh = g.oh, ow = g.ow, kh = g.kh, kw = g.kw, sh = g.sh, dh = g.dh, dw = g.dw;
  const int64_t sw = SW == 0 ? g.sw : SW;
  [[maybe_unused]] const hn::RebindToSigned<D> di;
  [[maybe_unused]] const auto gather_idx =
      hn::Mul(hn::Iota(di, 0), hn::Set(di, static_cast<hn::TFromD<decltype(di)>>(sw)));
  const auto load = [&](const float* p) {
    if constexpr (SW == 1) {
      return hn::LoadU(d, p);
    } else if constexpr (SW == 2) {
#if HWY_TARGET != HWY_SCALAR
      return hn::ConcatEven(d, hn::LoadU(d, p + lanes), hn::LoadU(d, p));
#else
      return hn::LoadU(d, p);
#endif
    } else {
      return hn::GatherIndex(d, p, gather_idx);
    }
  };
  const auto vbias = hn::Set(d, bias);
  const int64_t rs = sh * wp;  // the copy's step from one output row to the next
  // R (8 or 4) output rows from r0, each vector with its own sum: a sum's multiply-adds wait on
  // each other, and a narrow plane (one vector per row) has no other work to overlap them with,
  // so eight sums keep both FMA units busy where four left half their issue slots empty. Rows
  // past oh read the copy's zero rows and are not stored.
  const auto block = [&](auto rows, int64_t r0) {
    constexpr int64_t R = decltype(rows)::value;
    const int64_t nr = std::min(R, oh - r0);
    for (int64_t o = 0; o < ow; o += lanes) {
      // Named sums, not an array: the compiler kept an array in memory, which chained every
      // multiply-add through a store and a load.
      auto a0 = vbias, a1 = vbias, a2 = vbias, a3 = vbias;
      auto a4 = vbias, a5 = vbias, a6 = vbias, a7 = vbias;
      const float* base = xp + r0 * rs + o * sw;
      for (int64_t i = 0; i < kh; ++i) {
        const float* row = base + i * dh * wp;
        const float* wr = wt + i * kw;
        for (int64_t j = 0; j < kw; ++j) {
          const auto wv = hn::Set(d, wr[j]);
          const float* p = row + j * dw;
          a0 = hn::MulAdd(wv, load(p), a0);
          a1 = hn::MulAdd(wv, load(p + rs), a1);
          a2 = hn::MulAdd(wv, load(p + 2 * rs), a2);
          a3 = hn::MulAdd(wv, load(p + 3 * rs), a3);
          if constexpr (R == 8) {
            a4 = hn::MulAdd(wv, load(p + 4 * rs), a4);
            a5 = hn::MulAdd(wv, load(p + 5 * rs), a5);
            a6 = hn::MulAdd(wv, load(p + 6 * rs), a6);
            a7 = hn::MulAdd(wv, load(p + 7 * rs), a7);
          }
        }
      }
      const hn::Vec<D> sums[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
      for (int64_t k = 0; k < nr; ++k) {
        float* yr = y + (r0 + k) * ow;
        if (o + lanes <= ow) {
          hn::StoreU(sums[k], d, yr + o);
        } else {
          store_n(d, sums[k], yr + o, static_cast<size_t>(ow - o));
        }
      }
    }
  };
  int64_t r0 = 0;
  for (; r0 + 8 <= oh; r0 += 8) block(std::integral_constant<int64_t, 8>(), r0);
  for (; r0 < oh; r0 += 4) block(std::integral_constant<int64_t, 4>(), r0);
}

/// The taps [lo, hi) of a window starting at input index `start` (steps of `step`, `k` taps)
/// that lie inside [0, in).
HWY_INLINE void window_taps(int64_t start, int64_t step, int64_t k, int64_t in, int64_t& lo,
                            int64_t& hi) {
  if (step == 1) {  // no division (a pool of c = 8 channels spent a third of its time in them)
    lo = std::max<int64_t>(0, -start);
    hi = std::max(lo, std::min(k, in - start));
    return;
  }
  lo = start >= 0 ? 0 : (-start + step - 1) / step;
  hi = start > in - 1 ? 0 : std::min(k, (in - 1 - start) / step + 1);
  lo = std::min(lo, hi);
}

/// pool_nhwc_rows_loop for one kind: kMax the max over the taps, else their sum scaled.
template <bool kMax>
HWY_INLINE void pool_nhwc_rows_kind(const float* x, float* y, const PoolNhwc& g, int64_t r0,
                                    int64_t r1) {
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t c = g.c;
  const float init = kMax ? -std::numeric_limits<float>::infinity() : 0.0F;
  for (int64_t grp = 0; grp < g.groups; ++grp) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ih0 = r * g.sh - g.ph;
      int64_t i_lo = 0, i_hi = 0;
      window_taps(ih0, g.dh, g.kh, g.h, i_lo, i_hi);
      for (int64_t o = 0; o < g.ow; ++o) {
        // One vector of channels per pixel (a channel-blocked plane): four output pixels at a
        // time where their windows lie inside x along w, four independent accumulators.
        if (c == lanes && i_hi > i_lo) {
          const int64_t reach = (g.kw - 1) * g.dw;
          const int64_t row_step = g.dh * g.w * c, tap_step = g.dw * c, out_step = g.sw * c;
          const float scale =
              kMax ? 1.0F
                   : 1.0F / static_cast<float>(g.divisor > 0 ? g.divisor : (i_hi - i_lo) * g.kw);
          while (o + 4 <= g.ow && o * g.sw - g.pw >= 0 && (o + 3) * g.sw - g.pw + reach < g.w) {
            auto a0 = hn::Set(d, init), a1 = a0, a2 = a0, a3 = a0;
            const float* xi =
                x + grp * g.x_group + ((ih0 + i_lo * g.dh) * g.w + o * g.sw - g.pw) * c;
            for (int64_t i = i_lo; i < i_hi; ++i, xi += row_step) {
              const float* xj = xi;
              for (int64_t j = 0; j < g.kw; ++j, xj += tap_step) {
                const auto v0 = hn::LoadU(d, xj), v1 = hn::LoadU(d, xj + out_step);
                const auto v2 = hn::LoadU(d, xj + 2 * out_step),
                           v3 = hn::LoadU(d, xj + 3 * out_step);
                a0 = kMax ? hn::Max(a0, v0) : hn::Add(a0, v0);
                a1 = kMax ? hn::Max(a1, v1) : hn::Add(a1, v1);
                a2 = kMax ? hn::Max(a2, v2) : hn::Add(a2, v2);
                a3 = kMax ? hn::Max(a3, v3) : hn::Add(a3, v3);
              }
            }
            if (!kMax) {
              const auto sv = hn::Set(d, scale);
              a0 = hn::Mul(a0, sv), a1 = hn::Mul(a1, sv), a2 = hn::Mul(a2, sv),
              a3 = hn::Mul(a3, sv);
            }
            float* yo = y + grp * g.y_group + (r * g.ow + o) * c;
            hn::StoreU(a0, d, yo);
            hn::StoreU(a1, d, yo + c);
            hn::StoreU(a2, d, yo + 2 * c);
            hn::StoreU(a3, d, yo + 3 * c);
            o += 4;
          }
          if (o >= g.ow) break;
        }
        const int64_t iw0 = o * g.sw - g.pw;
        int64_t j_lo = 0, j_hi = 0;
        window_taps(iw0, g.dw, g.kw, g.w, j_lo, j_hi);
        const int64_t taps = (i_hi - i_lo) * (j_hi - j_lo);
        const float scale =
            kMax ? 1.0F : 1.0F / static_cast<float>(g.divisor > 0 ? g.divisor : taps);
        float* yo = y + grp * g.y_group + (r * g.ow + o) * c;
        if (taps == 0) {  // a window wholly in the padding: -inf, or ONNX's 0 / 0 for an average
          std::fill_n(yo, c, kMax ? init : init * scale);
          continue;
        }
        const float* x0 = x + grp * g.x_group + ((ih0 + i_lo * g.dh) * g.w + iw0 + j_lo * g.dw) * c;
        const int64_t row_step = g.dh * g.w * c, tap_step = g.dw * c, nj = j_hi - j_lo;
        int64_t ch = 0;
        for (; ch + lanes <= c; ch += lanes) {
          auto acc = hn::Set(d, init);
          const float* xi = x0 + ch;
          for (int64_t i = i_lo; i < i_hi; ++i, xi += row_step) {
            const float* xj = xi;
            for (int64_t j = 0; j < nj; ++j, xj += tap_step) {
              const auto v = hn::LoadU(d, xj);
              acc = kMax ? hn::Max(acc, v) : hn::Add(acc, v);
            }
          }
          if (!kMax) acc = hn::Mul(acc, hn::Set(d, scale));
          hn::StoreU(acc, d, yo + ch);
        }
        for (; ch < c; ++ch) {
          float acc = init;
          const float* xi = x0 + ch;
          for (int64_t i = i_lo; i < i_hi; ++i, xi += row_step) {
            const float* xj = xi;
            for (int64_t j = 0; j < nj; ++j, xj += tap_step) {
              acc = kMax ? std::max(acc, *xj) : acc + *xj;
            }
          }
          yo[ch] = kMax ? acc : acc * scale;
        }
      }
    }
  }
}

/// Output rows [r0, r1) of a 2-d pool of one nhwc image (VecTable::pool_nhwc_rows).
HWY_NOINLINE void pool_nhwc_rows_loop(const float* x, float* y, const PoolNhwc& g, int64_t r0,
                                      int64_t r1) {
  if (g.max) {
    pool_nhwc_rows_kind<true>(x, y, g, r0, r1);
  } else {
    pool_nhwc_rows_kind<false>(x, y, g, r0, r1);
  }
}

/// One depthwise conv plane (VecTable::dw_plane). The plane is first copied into a per-thread
/// buffer with its zero padding around it (the leading pads, and past the trailing ones as far
/// as the last vector of rows and columns reads), which the taps then read with plain vector
/// loads: bounds checked per tap and vector cost several times the multiply-adds (a stride-2
/// 3x3 plane of 42 x 48 outputs: 5 us through masks, under 1 us over the copy). Padded taps
/// add w * 0, as the cpu kernel's sum does.
HWY_NOINLINE void dw_plane_loop(const float* x, const float* wt, float bias, float* y,
                                const DwPlane& g) {
  const hn::ScalableTag<float> d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  if (g.oh <= 0 || g.ow <= 0) return;
  constexpr int64_t kRows = 4;  // dw_padded_rows' last row blocks
  // The copy's extent: every row and column the last block of rows and the last vector of
  // columns reads (a stride-2 vector reads two vectors of x), the input rows and columns at
  // least (a trailing pad may be negative).
  const int64_t rows_out = (g.oh + kRows - 1) / kRows * kRows;
  const int64_t cols_out = (g.ow + lanes - 1) / lanes * lanes;
  const int64_t hp = std::max(g.ph + g.h, (rows_out - 1) * g.sh + (g.kh - 1) * g.dh + 1);
  const int64_t wp =
      std::max(g.pw + g.w, (cols_out - 1) * g.sw + (g.kw - 1) * g.dw + 1 + (g.sw == 2 ? lanes : 0));
  // The buffer's zeros depend only on the geometry: written when it changes, and then only
  // the plane's own rows are copied in (a plane of 11 x 12 floats costs less than the calls
  // that would fill its borders).
  struct Padded {
    std::vector<float> buf;
    int64_t h = -1, w = -1, ph = -1, pw = -1, hp = -1, wp = -1;
  };
  thread_local Padded pad;
  if (pad.h != g.h || pad.w != g.w || pad.ph != g.ph || pad.pw != g.pw || pad.hp != hp ||
      pad.wp != wp) {
    pad.buf.assign(static_cast<size_t>(hp * wp), 0.0f);
    pad.h = g.h, pad.w = g.w, pad.ph = g.ph, pad.pw = g.pw, pad.hp = hp, pad.wp = wp;
  }
  float* xp = pad.buf.data();
  for (int64_t r = 0; r < g.h; ++r) {
    const float* src = x + r * g.w;
    float* dst = xp + (g.ph + r) * wp + g.pw;
    int64_t c = 0;
    for (; c + lanes <= g.w; c += lanes) hn::StoreU(hn::LoadU(d, src + c), d, dst + c);
    if (c < g.w) {
      const auto n = static_cast<size_t>(g.w - c);
      store_n(d, load_n(d, src + c, n), dst + c, n);
    }
  }
  if (g.sw == 1) {
    dw_padded_rows<1>(d, xp, wp, wt, bias, y, g);
  } else if (g.sw == 2) {
    dw_padded_rows<2>(d, xp, wp, wt, bias, y, g);
  } else {
    dw_padded_rows<0>(d, xp, wp, wt, bias, y, g);
  }
}

/// float32 -> float16 (VecTable::convert): F16C's vcvtps2ph rounds to nearest even, keeps NaN
/// and infinities and makes subnormals as IEEE 754 does; the tail through Half.
HWY_NOINLINE void f32_to_f16_loop(const void* x, void* y, size_t n) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<hwy::float16_t, decltype(d)> dh;
  const auto* in = static_cast<const float*>(x);
  auto* out = static_cast<hwy::float16_t*>(y);
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::DemoteTo(dh, hn::LoadU(d, in + i)), dh, out + i);
  for (; i < n; ++i) static_cast<uint16_t*>(y)[i] = Half::from_float(in[i]);
}

/// float16 -> float32 (exact; VecTable::convert).
HWY_NOINLINE void f16_to_f32_loop(const void* x, void* y, size_t n) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<hwy::float16_t, decltype(d)> dh;
  const auto* in = static_cast<const hwy::float16_t*>(x);
  auto* out = static_cast<float*>(y);
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes)
    hn::StoreU(hn::PromoteTo(d, hn::LoadU(dh, in + i)), d, out + i);
  for (; i < n; ++i) out[i] = Half::to_float(static_cast<const uint16_t*>(x)[i]);
}

/// float32 -> bfloat16, rounding to nearest even with NaN kept quiet: BFloat16::from_float on
/// every lane (VecTable::convert).
HWY_NOINLINE void f32_to_bf16_loop(const void* x, void* y, size_t n) {
  const hn::ScalableTag<uint32_t> du;
  const hn::Rebind<int32_t, decltype(du)> di;
  const hn::Rebind<uint16_t, decltype(du)> d16;
  const auto* in = static_cast<const uint32_t*>(x);
  auto* out = static_cast<uint16_t*>(y);
  const auto abs_mask = hn::Set(du, 0x7fffffffu);
  const auto inf_bits = hn::Set(du, 0x7f800000u);
  const auto bias = hn::Set(du, 0x7fffu);
  const auto one = hn::Set(du, 1u);
  const auto quiet = hn::Set(du, 0x40u);
  const size_t lanes = hn::Lanes(du);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto u = hn::LoadU(du, in + i);
    const auto nan = hn::Gt(hn::And(u, abs_mask), inf_bits);
    const auto rounded =
        hn::ShiftRight<16>(hn::Add(u, hn::Add(bias, hn::And(hn::ShiftRight<16>(u), one))));
    const auto r = hn::IfThenElse(nan, hn::Or(hn::ShiftRight<16>(u), quiet), rounded);
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, r)), d16, out + i);
  }
  for (; i < n; ++i) out[i] = BFloat16::from_float(std::bit_cast<float>(in[i]));
}

/// bfloat16 -> float32 (exact: the upper 16 bits; VecTable::convert).
HWY_NOINLINE void bf16_to_f32_loop(const void* x, void* y, size_t n) {
  const hn::ScalableTag<uint32_t> du;
  const hn::Rebind<uint16_t, decltype(du)> d16;
  const auto* in = static_cast<const uint16_t*>(x);
  auto* out = static_cast<uint32_t*>(y);
  const size_t lanes = hn::Lanes(du);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    hn::StoreU(hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, in + i))), du, out + i);
  }
  for (; i < n; ++i) out[i] = static_cast<uint32_t>(in[i]) << 16;
}

/// Whether this target converts float16 in hardware (F16C: x86 AVX2 and AVX-512); elsewhere
/// Highway emulates DemoteTo without rounding, so float16 casts keep their cpu kernel.
inline constexpr bool kHardwareF16 = HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2;

/// dst[i] = src[i] with non-temporal stores where dst is vector-aligned: a large output is not
/// read back by this kernel, so it bypasses the caches (no read-for-ownership). Callers end a
/// run of these with stream_fence_loop.
HWY_NOINLINE void stream_copy_loop(const float* src, float* dst, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  if (reinterpret_cast<uintptr_t>(dst) % (lanes * sizeof(float)) == 0) {
    for (; i + lanes <= n; i += lanes) hn::Stream(hn::LoadU(d, src + i), d, dst + i);
  }
  for (; i < n; ++i) dst[i] = src[i];
}

/// dst[o] = src[2 * o] for o < n: pairs of vectors split into even and odd lanes
/// (LoadInterleaved2), the even ones stored. The vector loop stops a vector early, so the last
/// pair it loads ends at src[2n - 3]: nothing past the last element read is touched.
HWY_NOINLINE void even_copy_loop(const float* src, float* dst, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  size_t o = 0;
  for (; o + lanes < n; o += lanes) {
    hn::Vec<decltype(d)> even, odd;
    hn::LoadInterleaved2(d, src + 2 * o, even, odd);
    hn::StoreU(even, d, dst + o);
  }
  for (; o < n; ++o) dst[o] = src[2 * o];
}

#if HWY_TARGET != HWY_SCALAR
/// One kBlock x kBlock block of transpose32_loop in registers, kBlock = Lanes(d) (4 or 8):
/// rows interleaved by 32 then 64 bits within each 128-bit block, then (8 lanes) the 128-bit
/// halves exchanged, so output row c holds element c of every input row.
template <class D>
HWY_INLINE void transpose_block(D d, const uint32_t* src, size_t src_stride, uint32_t* dst,
                                size_t dst_stride) {
  using V = hn::Vec<D>;
  constexpr size_t kMax = 8;
  const size_t n = hn::Lanes(d);
  const hn::Repartition<uint64_t, D> d64;
  V r[kMax], c[kMax];
  for (size_t i = 0; i < n; ++i) r[i] = hn::LoadU(d, src + i * src_stride);
  // Per group of four rows: c[g + j] holds column j (and j + 4 in the upper 128 bits) of rows
  // g..g+3.
  for (size_t g = 0; g < n; g += 4) {
    const V t0 = hn::InterleaveLower(d, r[g], r[g + 1]);
    const V t1 = hn::InterleaveLower(d, r[g + 2], r[g + 3]);
    const V t2 = hn::InterleaveUpper(d, r[g], r[g + 1]);
    const V t3 = hn::InterleaveUpper(d, r[g + 2], r[g + 3]);
    c[g] = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, t0), hn::BitCast(d64, t1)));
    c[g + 1] = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, t0), hn::BitCast(d64, t1)));
    c[g + 2] = hn::BitCast(d, hn::InterleaveLower(d64, hn::BitCast(d64, t2), hn::BitCast(d64, t3)));
    c[g + 3] = hn::BitCast(d, hn::InterleaveUpper(d64, hn::BitCast(d64, t2), hn::BitCast(d64, t3)));
  }
  if (n == 4) {
    for (size_t j = 0; j < 4; ++j) hn::StoreU(c[j], d, dst + j * dst_stride);
    return;
  }
  for (size_t j = 0; j < 4; ++j) {
    hn::StoreU(hn::ConcatLowerLower(d, c[4 + j], c[j]), d, dst + j * dst_stride);
    hn::StoreU(hn::ConcatUpperUpper(d, c[4 + j], c[j]), d, dst + (j + 4) * dst_stride);
  }
}
#endif  // HWY_TARGET != HWY_SCALAR

/// VecTable::transpose32: dst[c * dst_stride + r] = src[r * src_stride + c] for r < rows,
/// c < cols, 4-byte elements moved bit for bit. Blocks of 8 x 8 (4 x 4 where vectors hold 4
/// lanes) in registers, row blocks outer so the block's source rows are read in order and the
/// output lines it writes (one per column) stay in L1 for the next row block; the edges one
/// element at a time (every element on the scalar target).
HWY_NOINLINE void transpose32_loop(const void* src_v, size_t src_stride, void* dst_v,
                                   size_t dst_stride, size_t rows, size_t cols) {
  const auto* src = static_cast<const uint32_t*>(src_v);
  auto* dst = static_cast<uint32_t*>(dst_v);
  size_t rb = 0, cb = 0;  // rows and columns covered by whole blocks
#if HWY_TARGET != HWY_SCALAR
  const auto blocks = [&](auto d) {
    const size_t n = hn::Lanes(d);
    rb = rows - rows % n;
    cb = cols - cols % n;
    for (size_t r = 0; r < rb; r += n) {
      for (size_t c = 0; c < cb; c += n) {
        transpose_block(d, src + r * src_stride + c, src_stride, dst + c * dst_stride + r,
                        dst_stride);
      }
    }
  };
  if (hn::Lanes(hn::ScalableTag<uint32_t>()) >= 8) {
    blocks(hn::CappedTag<uint32_t, 8>());
  } else if (hn::Lanes(hn::ScalableTag<uint32_t>()) >= 4) {
    blocks(hn::CappedTag<uint32_t, 4>());
  }
#endif
  for (size_t r = 0; r < rows; ++r) {
    // Columns past the blocks for every row; the rows past them for the blocks' columns.
    for (size_t c = r < rb ? cb : 0; c < cols; ++c)
      dst[c * dst_stride + r] = src[r * src_stride + c];
  }
}

/// Orders the streamed stores before anything the thread does next (x86: sfence), so the
/// output is complete when the parallel region joins.
HWY_NOINLINE void stream_fence_loop() {
#if HWY_ARCH_X86
  _mm_sfence();
#endif
}

/// VecTable::wino23_input over contiguous channel groups (kGather false) or plain NCHW ones
/// (kGather: a group's channels x_channel apart, gathered). Per tile the 16 pixel offsets (or -1
/// in the padding), then per group of 8 channels (one AVX2 vector; two on SSE4; half an AVX-512
/// one): B^T d over the rows, then the same over the columns, only additions (B^T = [1 0 -1 0;
/// 0 1 1 0; 0 -1 1 0; 0 1 0 -1]). Two instantiations: the gather's branch inside the contiguous
/// loop had cost it 15% (32 channels at 256x256).
template <bool kGather>
HWY_INLINE void wino23_input_tiles(const float* x, const WinoTiles& g, int64_t t0, int64_t count,
                                   float* v, size_t plane) {
  const hn::CappedTag<float, 8> d;
  using V = hn::Vec<decltype(d)>;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  const int64_t groups = g.c / 8;
  int64_t off[16];
  for (int64_t i = 0; i < count; ++i) {
    const int64_t t = t0 + i;
    const int64_t y0 = 2 * (t / g.tw) - g.pt, x0 = 2 * (t % g.tw) - g.pl;
    for (int64_t r = 0; r < 4; ++r) {
      for (int64_t s = 0; s < 4; ++s) {
        const int64_t yy = y0 + r, xx = x0 + s;
        off[r * 4 + s] =
            yy >= 0 && yy < g.h && xx >= 0 && xx < g.w ? (yy * g.w + xx) * g.x_pixel : -1;
      }
    }
    float* vi = v + i * g.c;
    for (int64_t q = 0; q < groups; ++q) {
      const float* xq = x + g.x_groups[q];
      for (int64_t l = 0; l < 8; l += lanes) {
        V t[16];
        if constexpr (kGather) {
          HWY_ALIGN float lane[8];
          for (int k = 0; k < 16; ++k) {
            if (off[k] < 0) {
              t[k] = hn::Zero(d);
              continue;
            }
            for (int64_t e = 0; e < lanes; ++e) lane[e] = xq[off[k] + (l + e) * g.x_channel];
            t[k] = hn::Load(d, lane);
          }
        } else {
          for (int k = 0; k < 16; ++k) {
            t[k] = off[k] >= 0 ? hn::LoadU(d, xq + off[k] + l) : hn::Zero(d);
          }
        }
        for (int s = 0; s < 4; ++s) {  // rows: B^T d
          const V d0 = t[s], d1 = t[4 + s], d2 = t[8 + s], d3 = t[12 + s];
          t[s] = hn::Sub(d0, d2);
          t[4 + s] = hn::Add(d1, d2);
          t[8 + s] = hn::Sub(d2, d1);
          t[12 + s] = hn::Sub(d1, d3);
        }
        float* out = vi + q * 8 + l;
        for (int r = 0; r < 4; ++r) {  // columns: (B^T d) B
          const V e0 = t[4 * r], e1 = t[4 * r + 1], e2 = t[4 * r + 2], e3 = t[4 * r + 3];
          hn::StoreU(hn::Sub(e0, e2), d, out + (4 * r) * plane);
          hn::StoreU(hn::Add(e1, e2), d, out + (4 * r + 1) * plane);
          hn::StoreU(hn::Sub(e2, e1), d, out + (4 * r + 2) * plane);
          hn::StoreU(hn::Sub(e1, e3), d, out + (4 * r + 3) * plane);
        }
      }
    }
  }
}

/// VecTable::wino23_input.
HWY_NOINLINE void wino23_input_loop(const float* x, const WinoTiles& g, int64_t t0, int64_t count,
                                    float* v, size_t plane) {
  if (g.x_channel == 1) {
    wino23_input_tiles<false>(x, g, t0, count, v, plane);
  } else {
    wino23_input_tiles<true>(x, g, t0, count, v, plane);
  }
}

/// VecTable::wino23_output: A^T M over the rows, then over the columns (A^T = [1 1 1 0;
/// 0 1 -1 -1]), plus the bias.
HWY_NOINLINE void wino23_output_loop(const float* mm, size_t plane, int64_t m, int64_t count,
                                     const float* bias, float* out) {
  const hn::CappedTag<float, 8> d;
  using V = hn::Vec<decltype(d)>;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t j = 0; j < m; j += lanes) {
      const float* src = mm + i * m + j;
      V u[8];  // A^T M: 2 rows of 4
      for (int s = 0; s < 4; ++s) {
        const V m0 = hn::LoadU(d, src + s * plane), m1 = hn::LoadU(d, src + (4 + s) * plane);
        const V m2 = hn::LoadU(d, src + (8 + s) * plane), m3 = hn::LoadU(d, src + (12 + s) * plane);
        u[s] = hn::Add(hn::Add(m0, m1), m2);
        u[4 + s] = hn::Sub(hn::Sub(m1, m2), m3);
      }
      const V b = bias != nullptr ? hn::LoadU(d, bias + j) : hn::Zero(d);
      float* o = out + 4 * i * m + j;
      for (int r = 0; r < 2; ++r) {
        const V e0 = u[4 * r], e1 = u[4 * r + 1], e2 = u[4 * r + 2], e3 = u[4 * r + 3];
        hn::StoreU(hn::Add(hn::Add(hn::Add(e0, e1), e2), b), d, o + (2 * r) * m);
        hn::StoreU(hn::Add(hn::Sub(hn::Sub(e1, e2), e3), b), d, o + (2 * r + 1) * m);
      }
    }
  }
}

template <template <typename> class F>
HWY_NOINLINE void compare_loop(const float* a, const float* b, uint8_t* out, size_t n) {
  const hn::ScalableTag<float> d;
  const hn::Rebind<int32_t, decltype(d)> di;
  const hn::Rebind<uint8_t, decltype(d)> d8;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto m = VecCmpOf<F>::apply(hn::LoadU(d, a + i), hn::LoadU(d, b + i));
    const auto one = hn::IfThenElseZero(hn::RebindMask(di, m), hn::Set(di, 1));
    hn::StoreU(hn::DemoteTo(d8, one), d8, out + i);
  }
  const F<float> f{};  // the tail through the scalar functor itself
  for (; i < n; ++i) out[i] = f(a[i], b[i]) ? 1 : 0;
}

template <template <typename> class F>
constexpr VecCompareFn compare_entry() {
  if constexpr (VecCmpOf<F>::kDefined) {
    return &compare_loop<F>;
  } else {
    return nullptr;
  }
}

template <template <typename> class F>
constexpr VecUnaryFn unary_entry() {
  if constexpr (VecOf<F>::kArity == 1) {
    return &unary_loop<F>;
  } else {
    return nullptr;
  }
}
template <template <typename> class F>
constexpr VecBinaryFn binary_entry() {
  if constexpr (VecOf<F>::kArity == 2) {
    return &binary_loop<F>;
  } else {
    return nullptr;
  }
}

}  // namespace frame::backends::onednn::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // FRAME_ONEDNN_EW_VEC_INL_H_ toggle
