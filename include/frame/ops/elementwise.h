#pragma once
/// \file
/// The elementwise op family declared once (XNNPACK-style X-macro lists; "adding an op touches
/// few places", docs/architecture/op-registration.md): each entry names the op, its scalar functor,
/// the dtypes it accepts and its traits. The builtin schemas (src/ops/schemas/elementwise_*.cpp),
/// the cpu kernels (src/backends/cpu/kernels/elementwise_*.cpp), the tests and the fused-kernel
/// generators all expand the same lists, so an op cannot be declared in one place and missing in
/// another.
///
/// Scalar functors are templates on the *storage* type T of the input. They compute in
/// `compute_t<T>` (float for float16/bfloat16; callers round back with from_compute after
/// every op, so fp16 chains match numpy's per-op rounding) and return
/// `compute_t<typename F<T>::out_type>`. Integer arithmetic wraps (two's complement) instead of
/// overflowing. Functors with attributes are built from any context with
/// `attr_or<double|int64_t|std::string>(name, fallback)` (NodeContext qualifies) and list the
/// attributes in `kAttrs`, which the schemas declare verbatim.

#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <string_view>
#include <type_traits>

#include "frame/core/dtype.h"
#include "frame/ops/op_schema.h"

namespace frame::ops::ew {

/// Bit of an OpTrait in a trait mask.
constexpr uint32_t trait_bit(OpTrait t) { return 1u << static_cast<unsigned>(t); }
/// {kElementwise, kFusable}: the traits of every op in these lists.
inline constexpr uint32_t kFusableTraits =
    trait_bit(OpTrait::kElementwise) | trait_bit(OpTrait::kFusable);
/// {kElementwise, kFusable, kCommutative}: operands may be swapped (CSE normalisation).
inline constexpr uint32_t kCommutativeTraits = kFusableTraits | trait_bit(OpTrait::kCommutative);

/// An attribute a functor reads: ONNX name, type (kInt, kFloat or kString), default, doc.
struct AttrDecl {
  const char* name;
  ir::AttrType type;
  double f = 0.0;
  int64_t i = 0;
  const char* s = "";
  const char* doc = "";
  bool required = false;
};

/// Float attribute `a.name` from `c`, else its declared default.
template <typename Ctx>
double attr_f(const Ctx& c, const AttrDecl& a) {
  return c.template attr_or<double>(a.name, a.f);
}
/// Int attribute `a.name` from `c`, else its declared default.
template <typename Ctx>
int64_t attr_i(const Ctx& c, const AttrDecl& a) {
  return c.template attr_or<int64_t>(a.name, a.i);
}
/// String attribute `a.name` from `c`, else its declared default.
template <typename Ctx>
std::string attr_s(const Ctx& c, const AttrDecl& a) {
  return c.template attr_or<std::string>(a.name, std::string(a.s));
}

/// Builds functor F<T> from a context: F<T>(ctx) when it reads attributes, else F<T>{}.
template <template <typename> class F, typename T, typename Ctx>
F<T> make_functor(const Ctx& ctx) {
  if constexpr (std::is_constructible_v<F<T>, const Ctx&>) {
    return F<T>(ctx);
  } else {
    return F<T>{};
  }
}

// ---- wrapping integer arithmetic (no signed-overflow UB; same results as numpy) ----

/// True for the integer compute types (bool excluded).
template <typename C>
inline constexpr bool kIsInt = std::is_integral_v<C> && !std::is_same_v<C, bool>;
// Integers wrap in an unsigned type at least as wide as unsigned int: 8/16-bit values would
// otherwise be promoted to int, where a uint16 product (65535 * 65535) overflows.
template <typename C>
using wrap_t = std::conditional_t<(sizeof(C) < sizeof(int)), unsigned int, std::make_unsigned_t<C>>;

/// a + b; integers wrap modulo 2^bits (numpy), floats are IEEE.
template <typename C>
constexpr C wrap_add(C a, C b) {
  if constexpr (kIsInt<C>) {
    return static_cast<C>(static_cast<wrap_t<C>>(a) + static_cast<wrap_t<C>>(b));
  } else {
    return a + b;
  }
}
/// a - b, wrapping like wrap_add.
template <typename C>
constexpr C wrap_sub(C a, C b) {
  if constexpr (kIsInt<C>) {
    return static_cast<C>(static_cast<wrap_t<C>>(a) - static_cast<wrap_t<C>>(b));
  } else {
    return a - b;
  }
}
/// a * b, wrapping like wrap_add.
template <typename C>
constexpr C wrap_mul(C a, C b) {
  if constexpr (kIsInt<C>) {
    return static_cast<C>(static_cast<wrap_t<C>>(a) * static_cast<wrap_t<C>>(b));
  } else {
    return a * b;
  }
}
/// -a, wrapping (the most negative integer maps to itself, like numpy).
template <typename C>
constexpr C wrap_neg(C a) {
  return wrap_sub(C(0), a);
}

// ---- unary functors ----
// Each is `F<T>` with `out_type` and `compute_t<out_type> operator()(compute_t<T>) const`; the
// ONNX op each one implements is named in the lists at the end of this header.

template <typename T>
struct AbsOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;
    } else if constexpr (kIsInt<C>) {
      return x < 0 ? wrap_neg(x) : x;
    } else {
      return std::fabs(x);
    }
  }
};
template <typename T>
struct NegOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x) const { return wrap_neg(x); }
};

#define FRAME_EW_MATH_FUNCTOR(Name, expr)      \
  template <typename T>                        \
  struct Name {                                \
    using out_type = T;                        \
    using C = compute_t<T>;                    \
    C operator()(C x) const { return (expr); } \
  };
FRAME_EW_MATH_FUNCTOR(ExpOp, std::exp(x))
FRAME_EW_MATH_FUNCTOR(LogOp, std::log(x))
FRAME_EW_MATH_FUNCTOR(SqrtOp, std::sqrt(x))
FRAME_EW_MATH_FUNCTOR(ReciprocalOp, C(1) / x)
FRAME_EW_MATH_FUNCTOR(SinOp, std::sin(x))
FRAME_EW_MATH_FUNCTOR(CosOp, std::cos(x))
FRAME_EW_MATH_FUNCTOR(TanOp, std::tan(x))
FRAME_EW_MATH_FUNCTOR(AsinOp, std::asin(x))
FRAME_EW_MATH_FUNCTOR(AcosOp, std::acos(x))
FRAME_EW_MATH_FUNCTOR(AtanOp, std::atan(x))
FRAME_EW_MATH_FUNCTOR(SinhOp, std::sinh(x))
FRAME_EW_MATH_FUNCTOR(CoshOp, std::cosh(x))
FRAME_EW_MATH_FUNCTOR(TanhOp, std::tanh(x))
FRAME_EW_MATH_FUNCTOR(AsinhOp, std::asinh(x))
FRAME_EW_MATH_FUNCTOR(AcoshOp, std::acosh(x))
FRAME_EW_MATH_FUNCTOR(AtanhOp, std::atanh(x))
FRAME_EW_MATH_FUNCTOR(ErfOp, std::erf(x))
FRAME_EW_MATH_FUNCTOR(FloorOp, std::floor(x))
FRAME_EW_MATH_FUNCTOR(CeilOp, std::ceil(x))
// nearbyint in the default rounding mode rounds half to even (ONNX Round).
FRAME_EW_MATH_FUNCTOR(RoundOp, std::nearbyint(x))
FRAME_EW_MATH_FUNCTOR(SoftsignOp, x / (C(1) + std::fabs(x)))
#undef FRAME_EW_MATH_FUNCTOR

/// log(1 + exp(x)) without overflow: max(x, 0) + log1p(exp(-|x|)).
template <typename C>
C stable_softplus(C x) {
  return (x > C(0) ? x : C(0)) + std::log1p(std::exp(-std::fabs(x)));
}

template <typename T>
struct SigmoidOp {
  using out_type = T;
  using C = compute_t<T>;
  // Two branches so exp never overflows.
  C operator()(C x) const {
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    const C e = std::exp(x);
    return e / (C(1) + e);
  }
};
template <typename T>
struct ReluOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x) const { return x < C(0) ? C(0) : x; }  // NaN stays NaN
};
template <typename T>
struct LeakyReluOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"alpha", ir::AttrType::kFloat, 0.01, 0, "", "slope for x < 0"}};
  C alpha = C(0.01);
  LeakyReluOp() = default;
  template <typename Ctx>
  explicit LeakyReluOp(const Ctx& c) : alpha(static_cast<C>(attr_f(c, kAttrs[0]))) {}
  C operator()(C x) const { return x < C(0) ? alpha * x : x; }
};
template <typename T>
struct EluOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"alpha", ir::AttrType::kFloat, 1.0, 0, "", "scale for x < 0"}};
  C alpha = C(1);
  EluOp() = default;
  template <typename Ctx>
  explicit EluOp(const Ctx& c) : alpha(static_cast<C>(attr_f(c, kAttrs[0]))) {}
  C operator()(C x) const { return x < C(0) ? alpha * std::expm1(x) : x; }
};
template <typename T>
struct SeluOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"alpha", ir::AttrType::kFloat, 1.67326319217681884765625, 0, "", "alpha"},
      AttrDecl{"gamma", ir::AttrType::kFloat, 1.05070102214813232421875, 0, "", "gamma"}};
  C alpha = C(1.67326319217681884765625);
  C gamma = C(1.05070102214813232421875);
  SeluOp() = default;
  template <typename Ctx>
  explicit SeluOp(const Ctx& c)
      : alpha(static_cast<C>(attr_f(c, kAttrs[0]))), gamma(static_cast<C>(attr_f(c, kAttrs[1]))) {}
  C operator()(C x) const { return x > C(0) ? gamma * x : gamma * alpha * std::expm1(x); }
};
template <typename T>
struct CeluOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"alpha", ir::AttrType::kFloat, 1.0, 0, "", "alpha"}};
  C alpha = C(1);
  CeluOp() = default;
  template <typename Ctx>
  explicit CeluOp(const Ctx& c) : alpha(static_cast<C>(attr_f(c, kAttrs[0]))) {}
  C operator()(C x) const { return x > C(0) ? x : alpha * std::expm1(x / alpha); }
};
template <typename T>
struct SoftplusOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x) const { return stable_softplus(x); }
};
template <typename T>
struct HardSigmoidOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"alpha", ir::AttrType::kFloat, 0.2, 0, "", "slope"},
      AttrDecl{"beta", ir::AttrType::kFloat, 0.5, 0, "", "offset"}};
  C alpha = C(0.2);
  C beta = C(0.5);
  HardSigmoidOp() = default;
  template <typename Ctx>
  explicit HardSigmoidOp(const Ctx& c)
      : alpha(static_cast<C>(attr_f(c, kAttrs[0]))), beta(static_cast<C>(attr_f(c, kAttrs[1]))) {}
  C operator()(C x) const {
    const C v = alpha * x + beta;
    return v < C(0) ? C(0) : (v > C(1) ? C(1) : v);
  }
};
template <typename T>
struct HardSwishOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x) const {
    const C v = x / C(6) + C(0.5);
    return x * (v < C(0) ? C(0) : (v > C(1) ? C(1) : v));
  }
};
template <typename T>
struct GeluOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"approximate", ir::AttrType::kString, 0.0, 0, "none", "\"none\" (erf) or \"tanh\""}};
  bool tanh_approx = false;
  GeluOp() = default;
  template <typename Ctx>
  explicit GeluOp(const Ctx& c) : tanh_approx(attr_s(c, kAttrs[0]) == "tanh") {}
  C operator()(C x) const {
    if (tanh_approx) {
      const C k = static_cast<C>(0.7978845608028654);  // sqrt(2/pi)
      return C(0.5) * x * (C(1) + std::tanh(k * (x + C(0.044715) * x * x * x)));
    }
    return C(0.5) * x * (C(1) + std::erf(x * static_cast<C>(std::numbers::sqrt2 / 2)));
  }
};
template <typename T>
struct MishOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x) const { return x * std::tanh(stable_softplus(x)); }
};
template <typename T>
struct SignOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x > 0 ? C(1) : C(0);
    } else {
      return x > C(0) ? C(1) : (x < C(0) ? C(-1) : x);  // 0 and NaN map to themselves
    }
  }
};
template <typename T>
struct NotOp {
  using out_type = bool;
  bool operator()(bool x) const { return !x; }
};
template <typename T>
struct IsNanOp {
  using out_type = bool;
  using C = compute_t<T>;
  bool operator()(C x) const { return std::isnan(x); }
};
template <typename T>
struct IsInfOp {
  using out_type = bool;
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"detect_negative", ir::AttrType::kInt, 0.0, 1, "", "map -inf to true"},
      AttrDecl{"detect_positive", ir::AttrType::kInt, 0.0, 1, "", "map +inf to true"}};
  bool neg = true;
  bool pos = true;
  IsInfOp() = default;
  template <typename Ctx>
  explicit IsInfOp(const Ctx& c) : neg(attr_i(c, kAttrs[0]) != 0), pos(attr_i(c, kAttrs[1]) != 0) {}
  bool operator()(C x) const { return std::isinf(x) && (x > C(0) ? pos : neg); }
};
template <typename T>
struct IdentityOp {
  using out_type = T;
  static constexpr std::array<const char*, 2> kArgNames = {"input", "output"};
  using C = compute_t<T>;
  C operator()(C x) const { return x; }
};

/// Clip to [lo, hi] (ONNX Clip: bounds come from optional scalar inputs; NaN stays NaN; lo > hi
/// gives hi everywhere, like numpy.clip).
template <typename T>
struct ClipOp {
  using out_type = T;
  using C = compute_t<T>;
  // Unbounded by default: infinities for floats (so +-inf pass through), the limits for ints.
  static constexpr C kLowest = std::numeric_limits<C>::has_infinity
                                   ? -std::numeric_limits<C>::infinity()
                                   : std::numeric_limits<C>::lowest();
  static constexpr C kHighest = std::numeric_limits<C>::has_infinity
                                    ? std::numeric_limits<C>::infinity()
                                    : std::numeric_limits<C>::max();
  C lo = kLowest;
  C hi = kHighest;
  C operator()(C x) const {
    const C y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};

// ---- binary functors: (compute_t<T> a, compute_t<T> b) -> compute_t<out_type> ----

template <typename T>
struct AddOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C a, C b) const { return wrap_add(a, b); }
};
template <typename T>
struct SubOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C a, C b) const { return wrap_sub(a, b); }
};
template <typename T>
struct MulOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C a, C b) const { return wrap_mul(a, b); }
};
/// Integer division truncates toward zero. Callers reject integer division by zero before the
/// loop (kernels return an error naming the node and input 1).
template <typename T>
struct DivOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr bool kIntegerDivision = kIsInt<C>;
  C operator()(C a, C b) const {
    if constexpr (kIsInt<C> && std::is_signed_v<C>) {
      return b == C(-1) ? wrap_neg(a) : static_cast<C>(a / b);  // INT_MIN / -1 wraps
    } else {
      return static_cast<C>(a / b);
    }
  }
};
/// ONNX Mod: fmod=0 takes the sign of the divisor (Python %), fmod=1 the sign of the dividend
/// (C fmod). Integer division by zero is rejected before the loop, like DivOp.
template <typename T>
struct ModOp {
  using out_type = T;
  using C = compute_t<T>;
  static constexpr bool kIntegerDivision = kIsInt<C>;
  static constexpr std::array kAttrs = {
      AttrDecl{"fmod", ir::AttrType::kInt, 0.0, 0, "", "0: sign of divisor (Python); 1: C fmod"}};
  bool c_fmod = false;
  ModOp() = default;
  template <typename Ctx>
  explicit ModOp(const Ctx& c) : c_fmod(attr_i(c, kAttrs[0]) != 0) {}
  C operator()(C a, C b) const {
    C r;
    if constexpr (kIsInt<C>) {
      if constexpr (std::is_signed_v<C>) {
        r = b == C(-1) ? C(0) : static_cast<C>(a % b);
      } else {
        r = static_cast<C>(a % b);
      }
      if constexpr (std::is_signed_v<C>) {
        if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
      }
    } else {
      r = std::fmod(a, b);
      if (!c_fmod) {
        if (r != C(0) && ((r < C(0)) != (b < C(0)))) {
          r += b;
        } else if (r == C(0)) {
          r = std::copysign(C(0), b);  // numpy.mod's sign of zero
        }
      }
    }
    return r;
  }
};
/// numpy.minimum/maximum semantics: a NaN operand gives NaN.
template <typename T>
struct MinOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C a, C b) const {
    if constexpr (!kIsInt<C> && !std::is_same_v<C, bool>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    }
    return b < a ? b : a;
  }
};
template <typename T>
struct MaxOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C a, C b) const {
    if constexpr (!kIsInt<C> && !std::is_same_v<C, bool>) {
      if (std::isnan(a) || std::isnan(b)) return std::isnan(a) ? a : b;
    }
    return a < b ? b : a;
  }
};
#define FRAME_EW_CMP_FUNCTOR(Name, expr)               \
  template <typename T>                                \
  struct Name {                                        \
    using out_type = bool;                             \
    using C = compute_t<T>;                            \
    bool operator()(C a, C b) const { return (expr); } \
  };
FRAME_EW_CMP_FUNCTOR(EqualOp, a == b)
FRAME_EW_CMP_FUNCTOR(LessOp, a < b)
FRAME_EW_CMP_FUNCTOR(LessOrEqualOp, a <= b)
FRAME_EW_CMP_FUNCTOR(GreaterOp, a > b)
FRAME_EW_CMP_FUNCTOR(GreaterOrEqualOp, a >= b)
FRAME_EW_CMP_FUNCTOR(AndOp, a&& b)
FRAME_EW_CMP_FUNCTOR(OrOp, a || b)
FRAME_EW_CMP_FUNCTOR(XorOp, a != b)
#undef FRAME_EW_CMP_FUNCTOR

/// ONNX BitShift on unsigned integers; shifting by the bit width or more gives 0 (numpy).
template <typename T>
struct BitShiftOp {
  using out_type = T;
  static constexpr std::array<const char*, 3> kArgNames = {"X", "Y", "Z"};
  using C = compute_t<T>;
  static constexpr std::array kAttrs = {
      AttrDecl{"direction", ir::AttrType::kString, 0.0, 0, "", "\"LEFT\" or \"RIGHT\"", true}};
  bool left = true;
  BitShiftOp() = default;
  template <typename Ctx>
  explicit BitShiftOp(const Ctx& c) : left(attr_s(c, kAttrs[0]) == "LEFT") {}
  C operator()(C a, C b) const {
    if constexpr (kIsInt<C>) {
      constexpr C kBits = static_cast<C>(8 * sizeof(C));
      if (b >= kBits) return C(0);
      return left ? static_cast<C>(a << b) : static_cast<C>(a >> b);
    } else {
      return a;
    }
  }
};
/// ONNX PRelu: x < 0 ? slope * x : x (slope broadcasts unidirectionally to X).
template <typename T>
struct PReluOp {
  using out_type = T;
  using C = compute_t<T>;
  C operator()(C x, C slope) const {
    if constexpr (std::is_unsigned_v<C>) {
      return x;  // never negative
    } else {
      return x < C(0) ? wrap_mul(slope, x) : x;
    }
  }
};

/// Mean's final step over the folded sum of `count` inputs.
template <typename T>
struct MeanFinish {
  using C = compute_t<T>;
  C operator()(C sum, int64_t count) const { return sum / static_cast<C>(count); }
};

}  // namespace frame::ops::ew

// ---- the lists ----
// X(name, Functor, input dtypes, trait mask, doc). `name` is the frame op name (ONNX op type in
// lower snake case; LessOrEqual/GreaterOrEqual are less_equal/greater_equal, numpy's names);
// every op also gets a "cpu" kernel from the same entry.

/// One input X -> one output Y (same shape; dtype = X's, or bool where out_type is bool).
#define FRAME_EW_UNARY_OPS(X)                                                                 \
  X(abs, AbsOp, ::frame::kNumericDTypes, kFusableTraits, "ONNX Abs (opset 13): y = |x|")      \
  X(neg, NegOp, ::frame::kSignedNumericDTypes, kFusableTraits, "ONNX Neg (opset 13): y = -x") \
  X(exp, ExpOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Exp (opset 13): y = e^x")        \
  X(log, LogOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Log (opset 13): natural log")    \
  X(sqrt, SqrtOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Sqrt (opset 13)")              \
  X(reciprocal, ReciprocalOp, ::frame::kFloatDTypes, kFusableTraits,                          \
    "ONNX Reciprocal (opset 13): y = 1/x")                                                    \
  X(sin, SinOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Sin (opset 7)")                  \
  X(cos, CosOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Cos (opset 7)")                  \
  X(tan, TanOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Tan (opset 7)")                  \
  X(asin, AsinOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Asin (opset 7)")               \
  X(acos, AcosOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Acos (opset 7)")               \
  X(atan, AtanOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Atan (opset 7)")               \
  X(sinh, SinhOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Sinh (opset 9)")               \
  X(cosh, CoshOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Cosh (opset 9)")               \
  X(tanh, TanhOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Tanh (opset 13)")              \
  X(asinh, AsinhOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Asinh (opset 9)")            \
  X(acosh, AcoshOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Acosh (opset 9)")            \
  X(atanh, AtanhOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Atanh (opset 9)")            \
  X(erf, ErfOp, ::frame::kFloatDTypes, kFusableTraits,                                        \
    "ONNX Erf (opset 13): Gauss error function")                                              \
  X(sigmoid, SigmoidOp, ::frame::kFloatDTypes, kFusableTraits,                                \
    "ONNX Sigmoid (opset 13): y = 1 / (1 + e^-x)")                                            \
  X(relu, ReluOp, ::frame::kSignedNumericDTypes, kFusableTraits,                              \
    "ONNX Relu (opset 14): y = max(x, 0)")                                                    \
  X(leaky_relu, LeakyReluOp, ::frame::kFloatDTypes, kFusableTraits,                           \
    "ONNX LeakyRelu (opset 16): y = x < 0 ? alpha * x : x")                                   \
  X(elu, EluOp, ::frame::kFloatDTypes, kFusableTraits,                                        \
    "ONNX Elu (opset 6): y = x < 0 ? alpha * (e^x - 1) : x")                                  \
  X(selu, SeluOp, ::frame::kFloatDTypes, kFusableTraits,                                      \
    "ONNX Selu (opset 6): y = gamma * (x > 0 ? x : alpha * (e^x - 1))")                       \
  X(celu, CeluOp, ::frame::kFloatDTypes, kFusableTraits,                                      \
    "ONNX Celu (opset 12): y = max(0, x) + min(0, alpha * (e^(x/alpha) - 1))")                \
  X(softplus, SoftplusOp, ::frame::kFloatDTypes, kFusableTraits,                              \
    "ONNX Softplus (opset 1): y = ln(e^x + 1), computed without overflow")                    \
  X(softsign, SoftsignOp, ::frame::kFloatDTypes, kFusableTraits,                              \
    "ONNX Softsign (opset 1): y = x / (1 + |x|)")                                             \
  X(hard_sigmoid, HardSigmoidOp, ::frame::kFloatDTypes, kFusableTraits,                       \
    "ONNX HardSigmoid (opset 6): y = max(0, min(1, alpha * x + beta))")                       \
  X(hard_swish, HardSwishOp, ::frame::kFloatDTypes, kFusableTraits,                           \
    "ONNX HardSwish (opset 14): y = x * max(0, min(1, x / 6 + 0.5))")                         \
  X(gelu, GeluOp, ::frame::kFloatDTypes, kFusableTraits,                                      \
    "ONNX Gelu (opset 20): y = 0.5 x (1 + erf(x / sqrt 2)), or the tanh approximation")       \
  X(mish, MishOp, ::frame::kFloatDTypes, kFusableTraits,                                      \
    "ONNX Mish (opset 18): y = x * tanh(softplus(x))")                                        \
  X(floor, FloorOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Floor (opset 13)")           \
  X(ceil, CeilOp, ::frame::kFloatDTypes, kFusableTraits, "ONNX Ceil (opset 13)")              \
  X(round, RoundOp, ::frame::kFloatDTypes, kFusableTraits,                                    \
    "ONNX Round (opset 11): round half to even")                                              \
  X(sign, SignOp, ::frame::kNumericDTypes, kFusableTraits,                                    \
    "ONNX Sign (opset 13): -1, 0 or 1 (NaN stays NaN)")                                       \
  X(not, NotOp, ::frame::kBoolDType, kFusableTraits, "ONNX Not (opset 1): logical negation")  \
  X(is_nan, IsNanOp, ::frame::kFloatDTypes, kFusableTraits,                                   \
    "ONNX IsNaN (opset 20): bool output, true where x is NaN")                                \
  X(is_inf, IsInfOp, ::frame::kFloatDTypes, kFusableTraits,                                   \
    "ONNX IsInf (opset 20): bool output, true where x is +-inf (per detect_* attributes)")    \
  X(identity, IdentityOp, ::frame::kAllDTypes, kFusableTraits, "ONNX Identity (opset 21): y = x")

/// Two inputs A, B with numpy broadcasting -> C (dtype = A's, or bool where out_type is bool).
#define FRAME_EW_BINARY_OPS(X)                                                                     \
  X(add, AddOp, ::frame::kNumericDTypes, kCommutativeTraits, "ONNX Add (opset 14): C = A + B")     \
  X(sub, SubOp, ::frame::kNumericDTypes, kFusableTraits, "ONNX Sub (opset 14): C = A - B")         \
  X(mul, MulOp, ::frame::kNumericDTypes, kCommutativeTraits, "ONNX Mul (opset 14): C = A * B")     \
  X(div, DivOp, ::frame::kNumericDTypes, kFusableTraits,                                           \
    "ONNX Div (opset 14): C = A / B; integers truncate toward zero, integer division by zero is "  \
    "an error")                                                                                    \
  X(mod, ModOp, ::frame::kNumericDTypes, kFusableTraits,                                           \
    "ONNX Mod (opset 13): fmod=0 takes the divisor's sign (Python), fmod=1 the dividend's (C)")    \
  X(equal, EqualOp, ::frame::kAllDTypes, kCommutativeTraits, "ONNX Equal (opset 19): bool output") \
  X(less, LessOp, ::frame::kNumericDTypes, kFusableTraits, "ONNX Less (opset 13): bool output")    \
  X(less_equal, LessOrEqualOp, ::frame::kNumericDTypes, kFusableTraits,                            \
    "ONNX LessOrEqual (opset 16): bool output")                                                    \
  X(greater, GreaterOp, ::frame::kNumericDTypes, kFusableTraits,                                   \
    "ONNX Greater (opset 13): bool output")                                                        \
  X(greater_equal, GreaterOrEqualOp, ::frame::kNumericDTypes, kFusableTraits,                      \
    "ONNX GreaterOrEqual (opset 16): bool output")                                                 \
  X(and, AndOp, ::frame::kBoolDType, kCommutativeTraits, "ONNX And (opset 7): logical and")        \
  X(or, OrOp, ::frame::kBoolDType, kCommutativeTraits, "ONNX Or (opset 7): logical or")            \
  X(xor, XorOp, ::frame::kBoolDType, kCommutativeTraits, "ONNX Xor (opset 7): logical xor")        \
  X(bit_shift, BitShiftOp, ::frame::kUnsignedIntDTypes, kFusableTraits,                            \
    "ONNX BitShift (opset 11): unsigned shift LEFT or RIGHT")

/// Variadic (>= 1 input, data_0...) folds with numpy broadcasting. `mean` divides the folded
/// sum by the input count (MeanFinish).
#define FRAME_EW_VARIADIC_OPS(X)                                 \
  X(sum, AddOp, ::frame::kNumericDTypes, kCommutativeTraits,     \
    "ONNX Sum (opset 13): elementwise sum of all inputs")        \
  X(mean, AddOp, ::frame::kFloatDTypes, kCommutativeTraits,      \
    "ONNX Mean (opset 13): elementwise mean of all inputs")      \
  X(max, MaxOp, ::frame::kNumericDTypes, kCommutativeTraits,     \
    "ONNX Max (opset 13): elementwise maximum (NaN propagates)") \
  X(min, MinOp, ::frame::kNumericDTypes, kCommutativeTraits,     \
    "ONNX Min (opset 13): elementwise minimum (NaN propagates)")

// Ops of this family outside the uniform lists (their own schema and kernel, same functors):
// clip (ClipOp; optional min/max inputs), cast (CastOp below; output dtype from `to`),
// pow (mixed base/exponent dtypes), prelu (PReluOp; unidirectional broadcast), where.

namespace frame::ops::ew {

/// The frame dtype of an ONNX TensorProto.DataType value (Cast `to`, CastLike, ...):
/// 1 f32, 2 u8, 3 i8, 5 i16, 6 i32, 7 i64, 9 bool, 10 f16, 11 f64, 16 bf16.
/// Errors: kUnimplemented for other values (string, uint16/32/64, complex, float8, int4).
Result<DTypeCode> dtype_from_onnx(int64_t onnx_type);

/// Element conversion for ONNX Cast. float -> integer truncates toward zero; NaN becomes 0 and
/// out-of-range values saturate to the target's limits (ONNX leaves both undefined).
/// float -> bool is `x != 0` (NaN -> true); bool -> number is 0/1.
template <typename From, typename To>
struct CastOp {
  To operator()(From x) const {
    const compute_t<From> v = to_compute(x);
    if constexpr (std::is_same_v<To, bool>) {
      return v != compute_t<From>(0);
    } else if constexpr (kIsInt<To> && kIsFloating<From>) {
      if (std::isnan(v)) return To(0);
      const double t = std::trunc(static_cast<double>(v));
      if (t >= static_cast<double>(std::numeric_limits<To>::max())) {
        return std::numeric_limits<To>::max();
      }
      if (t <= static_cast<double>(std::numeric_limits<To>::lowest())) {
        return std::numeric_limits<To>::lowest();
      }
      return static_cast<To>(t);
    } else {
      return from_compute<To>(static_cast<compute_t<To>>(v));
    }
  }
};

/// ONNX Pow: base of storage type T, exponent of storage type T1, result of type T. Integer
/// base and exponent use exact repeated squaring (negative exponents give 0 unless |base| = 1);
/// otherwise the power is taken in double when either side is double, else in float.
template <typename T, typename T1>
struct PowOp {
  using C = compute_t<T>;
  using C1 = compute_t<T1>;
  C operator()(C base, C1 e) const {
    if constexpr (kIsInt<C> && kIsInt<C1>) {
      if constexpr (std::is_signed_v<C1>) {
        if (e < 0) return base == C(1) ? C(1) : (base == C(-1) ? C(e % 2 ? -1 : 1) : C(0));
      }
      C r = 1, b = base;
      for (auto k = static_cast<uint64_t>(e); k != 0; k >>= 1) {
        if (k & 1u) r = wrap_mul(r, b);
        b = wrap_mul(b, b);
      }
      return r;
    } else {
      using W =
          std::conditional_t<std::is_same_v<C, double> || std::is_same_v<C1, double> || kIsInt<C>,
                             double, float>;
      const W p = std::pow(static_cast<W>(base), static_cast<W>(e));
      if constexpr (kIsInt<C>) {
        return CastOp<double, C>{}(p);
      } else {
        return static_cast<C>(p);
      }
    }
  }
};

}  // namespace frame::ops::ew
