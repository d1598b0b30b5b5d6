// Schemas of the broadcasting binary and variadic elementwise ops (FRAME_EW_BINARY_OPS and
// FRAME_EW_VARIADIC_OPS in frame/ops/elementwise.h), plus pow, prelu and where.

#include "frame/ops/elementwise.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/elementwise_common.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::ew {
namespace {

template <template <typename> class F>
OpSchemaBuilder& define_binary(OpSchemaBuilder&& b, DTypeSet dtypes, uint32_t traits,
                               const char* doc) {
  using Rep = F<float>;
  std::array<const char*, 3> names = {"A", "B", "C"};
  if constexpr (requires { Rep::kArgNames; }) names = Rep::kArgNames;
  b.doc(doc)
      .input(names[0], "first operand", dtypes, "T")
      .input(names[1], "second operand (numpy broadcasting with the first)", dtypes, "T");
  if constexpr (kBoolOutput<F>) {
    b.output(names[2], "bool result of the broadcast shape", kBoolDType);
  } else {
    b.output(names[2], "result of the broadcast shape", dtypes, "T");
  }
  add_functor_attrs<Rep>(b);
  add_traits(b, traits);
  b.shape_infer(broadcast_infer<kBoolOutput<F>>);
  return b;
}

#define FRAME_EW_DEFINE_BINARY(name, F, dtypes, traits, doc)                                       \
  [[maybe_unused]] static ::frame::ops::OpRegistration FRAME_CONCAT(frame_ew_binary_registration_, \
                                                                    __COUNTER__) =                 \
      define_binary<F>(::frame::ops::OpSchemaBuilder(#name, __FILE__, __LINE__), dtypes, traits,   \
                       doc);
FRAME_EW_BINARY_OPS(FRAME_EW_DEFINE_BINARY)
#undef FRAME_EW_DEFINE_BINARY

OpSchemaBuilder& define_variadic(OpSchemaBuilder&& b, DTypeSet dtypes, uint32_t traits,
                                 const char* doc) {
  b.doc(doc)
      .variadic_input("data_0", "one or more operands (numpy broadcasting)", 1, dtypes, "T")
      .output(b.name(), "result of the broadcast shape", dtypes, "T");
  add_traits(b, traits);
  b.shape_infer(broadcast_infer<false>);
  return b;
}

#define FRAME_EW_DEFINE_VARIADIC(name, F, dtypes, traits, doc)                                  \
  [[maybe_unused]] static ::frame::ops::OpRegistration FRAME_CONCAT(                            \
      frame_ew_variadic_registration_, __COUNTER__) =                                           \
      define_variadic(::frame::ops::OpSchemaBuilder(#name, __FILE__, __LINE__), dtypes, traits, \
                      doc);
FRAME_EW_VARIADIC_OPS(FRAME_EW_DEFINE_VARIADIC)
#undef FRAME_EW_DEFINE_VARIADIC

// ---- pow ----

constexpr DTypeSet kPowBase = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64};
constexpr DTypeSet kPowExponent = kFloatDTypes | kIntDTypes;

FRAME_REGISTER_OP(pow)
    .doc(
        "ONNX Pow (opset 15): Z = X ^ Y with numpy broadcasting; the exponent may have another "
        "dtype than the base; the result has the base's dtype. Integer powers are exact")
    .input("X", "base", kPowBase, "T")
    .input("Y", "exponent", kPowExponent, "T1")
    .output("Z", "result of the broadcast shape, dtype of X", kPowBase, "T")
    .traits({OpTrait::kElementwise, OpTrait::kFusable})
    .shape_infer(broadcast_infer<false>);

// ---- prelu ----

constexpr DTypeSet kPReluDTypes = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64,
                                                          DTypeCode::kUInt32, DTypeCode::kUInt64};

Result<std::vector<ir::TensorType>> prelu_infer(const NodeContext& ctx) {
  const Shape& x = ctx.input_types[0].shape;
  const Shape& slope = ctx.input_types[1].shape;
  if (!unidirectional_broadcastable(slope, x)) {
    return ctx.error(
        "input 1 (slope) with shape {} does not broadcast unidirectionally to input "
        "0 (X) with shape {}",
        shape_to_string(slope), shape_to_string(x));
  }
  return same_as_input(ctx, 0);
}

FRAME_REGISTER_OP(prelu)
    .doc(
        "ONNX PRelu (opset 16): Y = X < 0 ? slope * X : X; slope broadcasts unidirectionally "
        "to X")
    .input("X", "input", kPReluDTypes, "T")
    .input("slope", "slope, unidirectionally broadcastable to X", kPReluDTypes, "T")
    .output("Y", "result, shape and dtype of X", kPReluDTypes, "T")
    .traits({OpTrait::kElementwise, OpTrait::kFusable})
    .shape_infer(prelu_infer);

// ---- where ----

Result<std::vector<ir::TensorType>> where_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(Shape shape, broadcast_present_inputs(ctx));
  return one_output(ctx.input_types[1].dtype, std::move(shape));
}

FRAME_REGISTER_OP(where)
    .doc("ONNX Where (opset 16): output = condition ? X : Y with numpy broadcasting of all three")
    .input("condition", "bool selector", kBoolDType)
    .input("X", "values where condition is true", kAllDTypes, "T")
    .input("Y", "values where condition is false", kAllDTypes, "T")
    .output("output", "result of the broadcast shape, dtype of X", kAllDTypes, "T")
    .traits({OpTrait::kElementwise, OpTrait::kFusable})
    .shape_infer(where_infer);

}  // namespace
}  // namespace frame::ops::ew
