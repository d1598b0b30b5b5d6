// Schemas of the unary elementwise ops (FRAME_EW_UNARY_OPS in frame/ops/elementwise.h), plus
// clip and cast, and the decompositions of the composite activations (ONNX function bodies:
// gelu, hard_swish, mish, softplus, elu, selu).

#include <cmath>
#include <numbers>
#include <string_view>

#include "frame/ops/elementwise.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/elementwise_common.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::ew {
namespace {

// ---- decompositions (pure micro-graphs over primitive ops, op spec §3) ----

// softplus(x) = relu(x) + log(exp(-|x|) + 1): the overflow-free form of ln(e^x + 1).
ir::ValueId softplus_body(MicroGraph& g, ir::ValueId x, DTypeCode d) {
  ir::ValueId e = g.add("exp", {g.add("neg", {g.add("abs", {x})})});
  ir::ValueId l = g.add("log", {g.add("add", {e, g.scalar(d, 1.0)})});
  return g.add("add", {g.add("relu", {x}), l});
}

Result<ir::Graph> decompose_softplus(const NodeContext& ctx) {
  MicroGraph g(ctx);
  return g.finish({softplus_body(g, g.input(0), ctx.input_types[0].dtype)});
}

Result<ir::Graph> decompose_mish(const NodeContext& ctx) {
  MicroGraph g(ctx);
  const ir::ValueId x = g.input(0);
  ir::ValueId t = g.add("tanh", {softplus_body(g, x, ctx.input_types[0].dtype)});
  return g.finish({g.add("mul", {x, t})});
}

Result<ir::Graph> decompose_hard_swish(const NodeContext& ctx) {
  MicroGraph g(ctx);
  const ir::ValueId x = g.input(0);
  ir::AttrMap hs{{"alpha", 1.0 / 6.0}, {"beta", 0.5}};
  return g.finish({g.add("mul", {x, g.add("hard_sigmoid", {x}, hs)})});
}

Result<ir::Graph> decompose_gelu(const NodeContext& ctx) {
  MicroGraph g(ctx);
  const ir::ValueId x = g.input(0);
  const DTypeCode d = ctx.input_types[0].dtype;
  ir::ValueId inner;
  if (ctx.attr_or<std::string>("approximate", "none") == "tanh") {
    // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
    ir::ValueId x3 = g.add("mul", {g.add("mul", {x, x}), x});
    ir::ValueId s = g.add("add", {x, g.add("mul", {x3, g.scalar(d, 0.044715)})});
    inner = g.add("tanh", {g.add("mul", {s, g.scalar(d, 0.7978845608028654)})});
  } else {
    inner = g.add("erf", {g.add("mul", {x, g.scalar(d, std::numbers::sqrt2 / 2)})});
  }
  ir::ValueId one_plus = g.add("add", {inner, g.scalar(d, 1.0)});
  return g.finish({g.add("mul", {g.add("mul", {x, one_plus}), g.scalar(d, 0.5)})});
}

// alpha * (exp(x) - 1), the negative branch of elu/selu.
ir::ValueId exp_minus_one(MicroGraph& g, ir::ValueId x, DTypeCode d, double alpha) {
  ir::ValueId em1 = g.add("sub", {g.add("exp", {x}), g.scalar(d, 1.0)});
  return g.add("mul", {em1, g.scalar(d, alpha)});
}

Result<ir::Graph> decompose_elu(const NodeContext& ctx) {
  MicroGraph g(ctx);
  const ir::ValueId x = g.input(0);
  const DTypeCode d = ctx.input_types[0].dtype;
  const double alpha = attr_f(ctx, EluOp<float>::kAttrs[0]);
  ir::ValueId neg = g.add("less", {x, g.scalar(d, 0.0)});
  return g.finish({g.add("where", {neg, exp_minus_one(g, x, d, alpha), x})});
}

Result<ir::Graph> decompose_selu(const NodeContext& ctx) {
  MicroGraph g(ctx);
  const ir::ValueId x = g.input(0);
  const DTypeCode d = ctx.input_types[0].dtype;
  const double alpha = attr_f(ctx, SeluOp<float>::kAttrs[0]);
  const double gamma = attr_f(ctx, SeluOp<float>::kAttrs[1]);
  ir::ValueId pos = g.add("greater", {x, g.scalar(d, 0.0)});
  ir::ValueId w = g.add("where", {pos, x, exp_minus_one(g, x, d, alpha)});
  return g.finish({g.add("mul", {w, g.scalar(d, gamma)})});
}

constexpr DecomposeFn decomposition_of(std::string_view op) {
  if (op == "softplus") return decompose_softplus;
  if (op == "mish") return decompose_mish;
  if (op == "hard_swish") return decompose_hard_swish;
  if (op == "gelu") return decompose_gelu;
  if (op == "elu") return decompose_elu;
  if (op == "selu") return decompose_selu;
  return nullptr;
}

// ---- unary list ----

template <template <typename> class F>
OpSchemaBuilder& define_unary(OpSchemaBuilder&& b, DTypeSet dtypes, uint32_t traits,
                              const char* doc) {
  using Rep = F<float>;
  const char* in = "X";
  const char* out = "Y";
  if constexpr (requires { Rep::kArgNames; }) {
    in = Rep::kArgNames[0];
    out = Rep::kArgNames[1];
  }
  b.doc(doc).input(in, "input tensor", dtypes, "T");
  if constexpr (kBoolOutput<F>) {
    b.output(out, "bool tensor of the input's shape", kBoolDType);
  } else {
    b.output(out, "tensor of the input's shape and dtype", dtypes, "T");
  }
  add_functor_attrs<Rep>(b);
  add_traits(b, traits);
  b.shape_infer(broadcast_infer<kBoolOutput<F>>);
  if (DecomposeFn d = decomposition_of(b.name())) b.decomposition(d);
  return b;
}

#define FRAME_EW_DEFINE_UNARY(name, F, dtypes, traits, doc)                                       \
  [[maybe_unused]] static ::frame::ops::OpRegistration FRAME_CONCAT(frame_ew_unary_registration_, \
                                                                    __COUNTER__) =                \
      define_unary<F>(::frame::ops::OpSchemaBuilder(#name, __FILE__, __LINE__), dtypes, traits,   \
                      doc);
FRAME_EW_UNARY_OPS(FRAME_EW_DEFINE_UNARY)
#undef FRAME_EW_DEFINE_UNARY

// ---- clip ----

Result<std::vector<ir::TensorType>> clip_infer(const NodeContext& ctx) {
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    const Shape& s = ctx.input_types[i].shape;
    if (s.size() > 1 || numel_of(s) != 1) {
      return ctx.error("input {} ({}) must be a scalar, got shape {}", i, i == 1 ? "min" : "max",
                       shape_to_string(s));
    }
  }
  return same_as_input(ctx, 0);
}

FRAME_REGISTER_OP(clip)
    .doc(
        "ONNX Clip (opset 13): y = min(max(x, min), max); absent bounds do not clip. NaN stays "
        "NaN; min > max gives max everywhere (numpy.clip)")
    .input("input", "tensor to clip", kNumericDTypes, "T")
    .optional_input("min", "lower bound, a scalar (rank 0; shape [1] accepted)", kNumericDTypes,
                    "T")
    .optional_input("max", "upper bound, a scalar (rank 0; shape [1] accepted)", kNumericDTypes,
                    "T")
    .output("output", "clipped tensor, same shape and dtype", kNumericDTypes, "T")
    .traits({OpTrait::kElementwise, OpTrait::kFusable})
    .shape_infer(clip_infer);

// ---- cast ----

Result<std::vector<ir::TensorType>> cast_infer(const NodeContext& ctx) {
  const int64_t* to = ctx.attr<int64_t>("to");
  if (to == nullptr) return ctx.error("required attribute 'to' (int) is missing");
  Result<DTypeCode> d = dtype_from_onnx(*to);
  if (!d.is_ok()) return ctx.error("attribute 'to': {}", d.status().message());
  return one_output(*d, ctx.input_types[0].shape);
}

FRAME_REGISTER_OP(cast)
    .doc(
        "ONNX Cast (opset 21): converts to the dtype named by `to` (ONNX TensorProto enum). "
        "float -> integer truncates toward zero; NaN -> 0 and out-of-range values saturate "
        "(undefined in ONNX); float -> bool is x != 0; bool -> number is 0 or 1")
    .input("input", "tensor to convert", kAllDTypes)
    .output("output", "converted tensor of the input's shape", kAllDTypes)
    .required_attr("to", ir::AttrType::kInt,
                   "ONNX TensorProto data type: 1 float, 2 uint8, 3 int8, 4 uint16, 5 int16, "
                   "6 int32, 7 int64, 9 bool, 10 float16, 11 double, 12 uint32, 13 uint64, "
                   "16 bfloat16")
    .attr("saturate", ir::AttrType::kInt, "float8 targets only; ignored", ir::AttrValue(int64_t{1}))
    .traits({OpTrait::kElementwise, OpTrait::kFusable})
    .shape_infer(cast_infer);

}  // namespace

Result<DTypeCode> dtype_from_onnx(int64_t onnx_type) {
  switch (onnx_type) {
    case 1:
      return DTypeCode::kFloat32;
    case 2:
      return DTypeCode::kUInt8;
    case 3:
      return DTypeCode::kInt8;
    case 4:
      return DTypeCode::kUInt16;
    case 5:
      return DTypeCode::kInt16;
    case 6:
      return DTypeCode::kInt32;
    case 7:
      return DTypeCode::kInt64;
    case 9:
      return DTypeCode::kBool;
    case 10:
      return DTypeCode::kFloat16;
    case 11:
      return DTypeCode::kFloat64;
    case 12:
      return DTypeCode::kUInt32;
    case 13:
      return DTypeCode::kUInt64;
    case 16:
      return DTypeCode::kBFloat16;
    default:
      return unimplemented(
          "ONNX data type {} has no frame dtype (supported: 1 float, 2 uint8, "
          "3 int8, 4 uint16, 5 int16, 6 int32, 7 int64, 9 bool, 10 float16, 11 double, "
          "12 uint32, 13 uint64, 16 bfloat16)",
          onnx_type);
  }
}

}  // namespace frame::ops::ew
