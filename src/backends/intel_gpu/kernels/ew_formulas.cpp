// The OpenCL C formula table of the elementwise lists (ew_formulas.h).

#include "backends/intel_gpu/kernels/ew_formulas.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "frame/ops/elementwise.h"

namespace frame::backends::intel_gpu {
namespace {

namespace ew = ::frame::ops::ew;

// One formula per op of the lists whose dtypes include f32; ops without f32 (not, and, or,
// xor, bit_shift) need none until their dtypes are generated.
constexpr EwFormula kFormulas[] = {
    // unary: x
    {"abs", "fabs(x)"},
    {"neg", "-x"},
    {"exp", "exp(x)"},
    {"log", "log(x)"},
    {"sqrt", "sqrt(x)"},
    {"reciprocal", "(T)1 / x"},
    {"sin", "sin(x)"},
    {"cos", "cos(x)"},
    {"tan", "tan(x)"},
    {"asin", "asin(x)"},
    {"acos", "acos(x)"},
    {"atan", "atan(x)"},
    {"sinh", "sinh(x)"},
    {"cosh", "cosh(x)"},
    {"tanh", "tanh(x)"},
    {"asinh", "asinh(x)"},
    {"acosh", "acosh(x)"},
    {"atanh", "atanh(x)"},
    {"erf", "erf(x)"},
    {"sigmoid", "frame_sigmoid(x)"},
    {"relu", "x < (T)0 ? (T)0 : x"},
    {"leaky_relu", "x < (T)0 ? p0 * x : x"},
    {"elu", "x < (T)0 ? p0 * expm1(x) : x"},
    {"selu", "x > (T)0 ? p1 * x : p1 * p0 * expm1(x)"},
    {"celu", "x > (T)0 ? x : p0 * expm1(x / p0)"},
    {"softplus", "frame_softplus(x)"},
    {"softsign", "x / ((T)1 + fabs(x))"},
    {"hard_sigmoid", "frame_clamp01(p0 * x + p1)"},
    {"hard_swish", "x * frame_clamp01(x / (T)6 + (T)0.5)"},
    {"gelu",
     "p0 != (T)0 ? (T)0.5 * x * ((T)1 + tanh((T)0.7978845608028654 * (x + (T)0.044715 * x * x * "
     "x))) : (T)0.5 * x * ((T)1 + erf(x * (T)0.70710678118654752))",
     "tanh"},
    {"mish", "x * tanh(frame_softplus(x))"},
    {"floor", "floor(x)"},
    {"ceil", "ceil(x)"},
    {"round", "rint(x)"},  // round half to even in the default rounding mode
    {"sign", "x > (T)0 ? (T)1 : (x < (T)0 ? (T)-1 : x)"},
    {"is_nan", "isnan(x)"},
    {"is_inf", "isinf(x) && (x > (T)0 ? p1 != (T)0 : p0 != (T)0)"},
    {"identity", "x"},
    // binary: a, b
    {"add", "a + b"},
    {"sub", "a - b"},
    {"mul", "a * b"},
    {"div", "a / b"},
    {"mod", "frame_mod(a, b, p0)"},
    {"equal", "a == b"},
    {"less", "a < b"},
    {"less_equal", "a <= b"},
    {"greater", "a > b"},
    {"greater_equal", "a >= b"},
    // variadic: the binary step of the left fold
    {"sum", "a + b"},
    {"mean", "a + b"},
    {"max", "frame_max(a, b)"},
    {"min", "frame_min(a, b)"},
    // outside the lists: pow with base and exponent of one float dtype
    {"pow", "pow(a, b)"},
};

const EwFormula* find_formula(std::string_view op) {
  for (const EwFormula& f : kFormulas) {
    if (f.op == op) return &f;
  }
  return nullptr;
}

// p0, p1 from F's declared attributes (kAttrs, in order), with their defaults.
template <template <typename> class F>
std::array<double, 2> params_of(const ops::NodeContext& ctx, std::string_view string_true) {
  std::array<double, 2> p{0.0, 0.0};
  if constexpr (requires { F<float>::kAttrs; }) {
    static_assert(F<float>::kAttrs.size() <= 2, "the OpenCL formulas take two parameters");
    size_t k = 0;
    for (const ew::AttrDecl& a : F<float>::kAttrs) {
      if (a.type == ir::AttrType::kFloat) {
        p[k] = ew::attr_f(ctx, a);
      } else if (a.type == ir::AttrType::kInt) {
        p[k] = static_cast<double>(ew::attr_i(ctx, a));
      } else if (a.type == ir::AttrType::kString) {
        p[k] = ew::attr_s(ctx, a) == string_true ? 1.0 : 0.0;
      }
      ++k;
    }
  }
  return p;
}

std::array<double, 2> no_params(const ops::NodeContext&, std::string_view) { return {0.0, 0.0}; }

template <template <typename> class F>
constexpr bool kBoolOut = std::is_same_v<typename F<float>::out_type, bool>;

std::vector<EwOp> make_ops() {
  std::vector<EwOp> ops;
#define FRAME_CL_UNARY(name, F, types, traits, doc) \
  ops.push_back({#name, 1, false, types, kBoolOut<ew::F>, &params_of<ew::F>, find_formula(#name)});
#define FRAME_CL_BINARY(name, F, types, traits, doc) \
  ops.push_back({#name, 2, false, types, kBoolOut<ew::F>, &params_of<ew::F>, find_formula(#name)});
#define FRAME_CL_VARIADIC(name, F, types, traits, doc)                                        \
  ops.push_back({#name, kVariadic, std::string_view(#name) == "mean", types, kBoolOut<ew::F>, \
                 &params_of<ew::F>, find_formula(#name)});
  FRAME_EW_UNARY_OPS(FRAME_CL_UNARY)
  FRAME_EW_BINARY_OPS(FRAME_CL_BINARY)
  FRAME_EW_VARIADIC_OPS(FRAME_CL_VARIADIC)
#undef FRAME_CL_UNARY
#undef FRAME_CL_BINARY
#undef FRAME_CL_VARIADIC
  // ONNX Pow (not in the lists: its exponent may have another dtype; the kernels run it when
  // both are the same float dtype, where the cpu computes std::pow in that type).
  ops.push_back({"pow", 2, false, kFloatDTypes, false, &no_params, find_formula("pow")});
  return ops;
}

}  // namespace

std::span<const EwOp> ew_ops() {
  static const std::vector<EwOp> ops = make_ops();
  return ops;
}

const EwOp* find_ew_op(std::string_view op) {
  for (const EwOp& e : ew_ops()) {
    if (e.op == op) return &e;
  }
  return nullptr;
}

std::string ew_prelude() {
  // The helpers mirror the cpu functors' branches so NaN and overflow behave the same.
  return R"(inline T frame_sigmoid(T x) {
  if (x >= (T)0) return (T)1 / ((T)1 + exp(-x));
  const T e = exp(x);
  return e / ((T)1 + e);
}
inline T frame_softplus(T x) { return (x > (T)0 ? x : (T)0) + log1p(exp(-fabs(x))); }
// numpy.maximum/minimum: a NaN operand gives NaN (MaxOp, MinOp).
inline T frame_max(T a, T b) { return isnan(a) || isnan(b) ? (isnan(a) ? a : b) : (a < b ? b : a); }
inline T frame_min(T a, T b) { return isnan(a) || isnan(b) ? (isnan(a) ? a : b) : (b < a ? b : a); }
inline T frame_clamp01(T v) { return v < (T)0 ? (T)0 : (v > (T)1 ? (T)1 : v); }
inline T frame_mod(T a, T b, T c_fmod) {
  T r = fmod(a, b);
  if (c_fmod == (T)0) {
    if (r != (T)0 && ((r < (T)0) != (b < (T)0))) {
      r += b;
    } else if (r == (T)0) {
      r = copysign((T)0, b);
    }
  }
  return r;
}
)";
}

std::string cl_literal(double v, bool fp64) {
  const double r = fp64 ? v : static_cast<double>(static_cast<float>(v));
  if (std::isnan(r)) return "(T)NAN";
  if (std::isinf(r)) return r > 0 ? "(T)INFINITY" : "(T)(-INFINITY)";
  return fp64 ? fmt::format("({:a})", r) : fmt::format("({:a}f)", static_cast<float>(r));
}

}  // namespace frame::backends::intel_gpu
