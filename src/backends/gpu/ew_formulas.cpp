// The formula table of the elementwise lists and the fused-body code both GPU backends
// generate from (ew_formulas.h).

#include "backends/gpu/ew_formulas.h"

#include <fmt/format.h>

#include <cmath>
#include <type_traits>
#include <vector>

#include "frame/ops/elementwise.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::gpu {
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
    static_assert(F<float>::kAttrs.size() <= 2, "the GPU formulas take two parameters");
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

std::string_view device_fn(Dialect d) {
  return d == Dialect::kCuda ? "__device__ __forceinline__" : "inline";
}

std::string ew_prelude(Dialect d) {
  // The helpers mirror the cpu functors' branches so NaN and overflow behave the same. One
  // text for both dialects: FRAME_FN is the function qualifier.
  std::string s = fmt::format("#define FRAME_FN {}\n", device_fn(d));
  s += R"(FRAME_FN T frame_sigmoid(T x) {
  if (x >= (T)0) return (T)1 / ((T)1 + exp(-x));
  const T e = exp(x);
  return e / ((T)1 + e);
}
FRAME_FN T frame_softplus(T x) { return (x > (T)0 ? x : (T)0) + log1p(exp(-fabs(x))); }
// numpy.maximum/minimum: a NaN operand gives NaN (MaxOp, MinOp).
FRAME_FN T frame_max(T a, T b) { return isnan(a) || isnan(b) ? (isnan(a) ? a : b) : (a < b ? b : a); }
FRAME_FN T frame_min(T a, T b) { return isnan(a) || isnan(b) ? (isnan(a) ? a : b) : (b < a ? b : a); }
FRAME_FN T frame_clamp01(T v) { return v < (T)0 ? (T)0 : (v > (T)1 ? (T)1 : v); }
FRAME_FN T frame_mod(T a, T b, T c_fmod) {
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
  return s;
}

std::string c_literal(double v, bool fp64, Dialect d) {
  const double r = fp64 ? v : static_cast<double>(static_cast<float>(v));
  if (d == Dialect::kCuda && (std::isnan(r) || std::isinf(r))) {
    // NVRTC has no <math.h> macros: the IEEE bit patterns.
    const char* bits = std::isnan(r) ? (fp64 ? "0x7ff8000000000000LL" : "0x7fc00000")
                       : r > 0       ? (fp64 ? "0x7ff0000000000000LL" : "0x7f800000")
                               : (fp64 ? "(long long)0xfff0000000000000ULL" : "(int)0xff800000u");
    return fmt::format("(T){}({})", fp64 ? "__longlong_as_double" : "__int_as_float", bits);
  }
  if (std::isnan(r)) return "(T)NAN";
  if (std::isinf(r)) return r > 0 ? "(T)INFINITY" : "(T)(-INFINITY)";
  return fp64 ? fmt::format("({:a})", r) : fmt::format("({:a}f)", static_cast<float>(r));
}

Result<FusedBodyCode> fused_body_code(const ir::Graph& body, size_t num_inputs, DTypeCode dtype,
                                      bool narrow, bool fp64, Dialect d, const RoundFn& round) {
  if (body.outputs().size() != 1 || body.inputs().size() != num_inputs) {
    return unimplemented("fused body has {} inputs and {} outputs (node has {})",
                         body.inputs().size(), body.outputs().size(), num_inputs);
  }
  FusedBodyCode out;
  std::vector<std::string> var(body.num_values());
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    var[static_cast<size_t>(body.inputs()[k])] = fmt::format("v_in{}", k);
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, body.topological_order());
  int fn_index = 0;
  for (ir::NodeId id : order) {
    const ir::Node& n = body.node(id);
    const EwOp* op = find_ew_op(n.op);
    const bool arity_ok =
        op != nullptr &&
        (op->arity == kVariadic ? !n.inputs.empty()
                                : n.inputs.size() == static_cast<size_t>(op->arity));
    if (op == nullptr || op->formula == nullptr || op->bool_out || !arity_ok ||
        n.outputs.size() != 1) {
      return unimplemented("fused body node '{}' ({}) has no GPU formula", n.name, n.op);
    }
    if (narrow && op->arity == kVariadic) {  // the cpu fold rounds after every step
      return unimplemented("fused {} body node '{}' ({}) is a variadic fold", dtype_name(dtype),
                           n.name, n.op);
    }
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue || var[static_cast<size_t>(v)].empty()) {
        return unimplemented("fused body node '{}' reads a value from outside the body", n.name);
      }
    }
    const ir::Value& val = body.value(n.outputs[0]);
    if (!val.type || val.type->dtype != dtype) {
      return unimplemented("fused body node '{}' changes the dtype", n.name);
    }
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    const ops::NodeContext nctx = ops::make_node_context(body, n, schema);
    const std::array<double, 2> p = op->params(nctx, op->formula->string_true);
    const std::string args = op->arity == 1 ? "const T x" : "const T a, const T b";
    out.functions += fmt::format(
        "{} T f{}({}) {{\n  const T p0 = {};\n  const T p1 = {};\n  return (T)({});\n}}\n",
        device_fn(d), fn_index, args, c_literal(p[0], fp64, d), c_literal(p[1], fp64, d),
        op->formula->expr);
    const std::string result = fmt::format("v{}", fn_index);
    if (op->arity == kVariadic) {
      // Left fold of the binary step, as the cpu kernel does, one statement per input: a
      // nested call per input exceeds the compiler's bracket nesting limit (256 in clang)
      // for a few hundred inputs.
      out.statements +=
          fmt::format("  T {} = {};\n", result, var[static_cast<size_t>(n.inputs[0])]);
      for (size_t k = 1; k < n.inputs.size(); ++k) {
        out.statements += fmt::format("  {0} = f{1}({0}, {2});\n", result, fn_index,
                                      var[static_cast<size_t>(n.inputs[k])]);
      }
      if (op->mean) {
        out.statements += fmt::format("  {0} = {0} / (T){1};\n", result, n.inputs.size());
      }
    } else {
      std::string call = fmt::format("f{}({}", fn_index, var[static_cast<size_t>(n.inputs[0])]);
      if (op->arity == 2) call += ", " + var[static_cast<size_t>(n.inputs[1])];
      call += ")";
      out.statements += fmt::format("  const T {} = {};\n", result, round(call));
    }
    var[static_cast<size_t>(n.outputs[0])] = result;
    ++fn_index;
  }
  out.result = var[static_cast<size_t>(body.outputs()[0])];
  if (out.result.empty()) return unimplemented("fused body output is not computed");
  return out;
}

}  // namespace frame::backends::gpu
