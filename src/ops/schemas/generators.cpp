/// \file
/// Schemas of the ops that produce values rather than transform them: constant,
/// constant_of_shape, range, shape, size, the random ops and print. Random ops and print have
/// kHasSideEffect so CSE, DCE and constant folding leave them alone.

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "frame/ops/elementwise.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;
using Types = Result<std::vector<TensorType>>;

constexpr DTypeSet kI64{DTypeCode::kInt64};
constexpr DTypeSet kRangeDTypes{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kInt16,
                                DTypeCode::kInt32, DTypeCode::kInt64};

Types one(DTypeCode d, Shape s) { return std::vector<TensorType>{TensorType{d, std::move(s)}}; }

// ONNX TensorProto.DataType codes of the dtypes frame has (one table: ops::dtype_from_onnx).
Result<DTypeCode> onnx_dtype(const NodeContext& ctx, int64_t code) {
  Result<DTypeCode> d = ew::dtype_from_onnx(code);
  if (!d.is_ok()) return ctx.error("attribute 'dtype': {}", d.status().message());
  return d;
}

Status check_shape(const NodeContext& ctx, const Shape& s) {
  for (int64_t d : s) {
    if (d < 0) return ctx.error("shape {} has a negative dim", shape_to_string(s));
  }
  Result<int64_t> n = checked_numel(s);
  if (!n.is_ok()) return ctx.error("shape {}: {}", shape_to_string(s), n.status().message());
  return Status();
}

Types constant_infer(const NodeContext& ctx) {
  int given = 0;
  TensorType t;
  if (const Tensor* v = ctx.attr<Tensor>("value")) {
    ++given;
    t = {v->dtype(), v->shape()};
  }
  if (ctx.attr<double>("value_float")) {
    ++given;
    t = {DTypeCode::kFloat32, {}};
  }
  if (const auto* v = ctx.attr<std::vector<double>>("value_floats")) {
    ++given;
    t = {DTypeCode::kFloat32, {static_cast<int64_t>(v->size())}};
  }
  if (ctx.attr<int64_t>("value_int")) {
    ++given;
    t = {DTypeCode::kInt64, {}};
  }
  if (const auto* v = ctx.attr<std::vector<int64_t>>("value_ints")) {
    ++given;
    t = {DTypeCode::kInt64, {static_cast<int64_t>(v->size())}};
  }
  if (given != 1) {
    return ctx.error(
        "exactly one of the attributes value, value_float, value_floats, value_int, "
        "value_ints must be set, got {}",
        given);
  }
  return std::vector<TensorType>{t};
}

Types constant_of_shape_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(Shape s, constant_ints(ctx, 0, "input"));
  FRAME_RETURN_IF_ERROR(check_shape(ctx, s));
  DTypeCode d = DTypeCode::kFloat32;
  if (const Tensor* v = ctx.attr<Tensor>("value")) {
    if (v->numel() != 1) return ctx.error("attribute 'value' must hold one element");
    d = v->dtype();
  }
  return one(d, s);
}

Types range_infer(const NodeContext& ctx) {
  const char* names[3] = {"start", "limit", "delta"};
  double v[3];
  for (size_t i = 0; i < 3; ++i) {
    const Tensor* t = ctx.constant_input(i);
    if (t == nullptr) {
      return ctx.error("input {} ({}) must be a constant (ARCH-044: output shape must be static)",
                       i, names[i]);
    }
    if (t->numel() != 1) return ctx.error("input {} ({}) must be a scalar", i, names[i]);
    v[i] = t->element_as_double(0);
  }
  if (v[2] == 0.0) return ctx.error("input 2 (delta) is zero");
  int64_t n = 0;
  if (is_integral(ctx.input_types[0].dtype)) {
    // Exact integer arithmetic: doubles lose precision for large int64 bounds.
    const int64_t s = ctx.constant_input(0)->element_as_int64(0);
    const int64_t l = ctx.constant_input(1)->element_as_int64(0);
    const int64_t d = ctx.constant_input(2)->element_as_int64(0);
    const __int128 span = static_cast<__int128>(l) - s;
    __int128 q = span / d;
    if (q * d != span && ((span > 0) == (d > 0))) ++q;
    if (q > static_cast<__int128>(std::numeric_limits<int64_t>::max())) {
      return ctx.error("range length exceeds 2^63-1 elements");
    }
    n = q > 0 ? static_cast<int64_t>(q) : 0;
  } else {
    for (size_t i = 0; i < 3; ++i) {
      if (!std::isfinite(v[i])) {
        return ctx.error("input {} ({}) is {}, not finite", i, names[i], v[i]);
      }
    }
    // +inf when the span over delta overflows (a tiny delta); -inf is an empty range.
    const double q = std::ceil((v[1] - v[0]) / v[2]);
    if (q > 9.0e18) {
      return ctx.error(
          "range from {} to {} by delta {} has {:.3g} elements, more than 9e18 (delta too small "
          "for the span)",
          v[0], v[1], v[2], q);
    }
    n = q > 0 ? static_cast<int64_t>(q) : 0;
  }
  return one(ctx.input_types[0].dtype, {n});
}

Types shape_infer(const NodeContext& ctx) {
  const int64_t r = ctx.input_types[0].rank();
  auto clamp = [r](int64_t v) { return std::min(std::max(v < 0 ? v + r : v, int64_t{0}), r); };
  const int64_t s = clamp(ctx.attr_or<int64_t>("start", 0));
  const int64_t e = clamp(ctx.attr_or<int64_t>("end", r));
  return one(DTypeCode::kInt64, {std::max<int64_t>(0, e - s)});
}

Types size_infer(const NodeContext&) { return one(DTypeCode::kInt64, {}); }

Result<DTypeCode> random_dtype(const NodeContext& ctx, std::optional<DTypeCode> fallback) {
  DTypeCode d;
  if (const int64_t* code = ctx.attr<int64_t>("dtype")) {
    FRAME_ASSIGN_OR_RETURN(d, onnx_dtype(ctx, *code));
  } else if (fallback) {
    d = *fallback;
  } else {
    return ctx.error("attribute 'dtype' is required");
  }
  return d;
}

Types random_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(DTypeCode d, random_dtype(ctx, DTypeCode::kFloat32));
  if (!is_floating(d)) return ctx.error("attribute 'dtype' must be a floating type");
  const auto* shape = ctx.attr<std::vector<int64_t>>("shape");
  if (shape == nullptr) return ctx.error("attribute 'shape' is required");
  FRAME_RETURN_IF_ERROR(check_shape(ctx, *shape));
  return one(d, *shape);
}

Types random_like_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(DTypeCode d, random_dtype(ctx, ctx.input_types[0].dtype));
  if (!is_floating(d)) {
    return ctx.error("output dtype {} is not floating (set attribute 'dtype')", dtype_name(d));
  }
  return one(d, ctx.input_types[0].shape);
}

Types bernoulli_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(DTypeCode d, random_dtype(ctx, ctx.input_types[0].dtype));
  return one(d, ctx.input_types[0].shape);
}

Types identity_infer(const NodeContext& ctx) {
  return one(ctx.input_types[0].dtype, ctx.input_types[0].shape);
}

}  // namespace

FRAME_REGISTER_OP(constant)
    .doc(
        "ONNX Constant (opset 21, numeric forms): a tensor from exactly one of value, "
        "value_float (f32 scalar), value_floats (f32 1-D), value_int (i64 scalar), value_ints.")
    .output("output", "the constant", kAllDTypes)
    .optional_attr("value", AttrType::kTensor, "the tensor")
    .optional_attr("value_float", AttrType::kFloat, "f32 scalar")
    .optional_attr("value_floats", AttrType::kFloats, "f32 1-D tensor")
    .optional_attr("value_int", AttrType::kInt, "i64 scalar")
    .optional_attr("value_ints", AttrType::kInts, "i64 1-D tensor")
    .shape_infer(constant_infer);

FRAME_REGISTER_OP(constant_of_shape)
    .doc("ONNX ConstantOfShape (opset 21): a tensor of the given shape filled with `value`.")
    .input("input", "int64 1-D output shape (constant)", kI64)
    .shape_determining()
    .output("output", "filled tensor, dtype of `value`", kAllDTypes)
    .optional_attr("value", AttrType::kTensor, "one-element fill value (default f32 0)")
    .shape_infer(constant_of_shape_infer);

FRAME_REGISTER_OP(range)
    .doc(
        "ONNX Range (opset 11): start + i * delta for i < max(ceil((limit - start) / delta), "
        "0); all three operands must be constants (ARCH-044).")
    .input("start", "scalar", kRangeDTypes, "T")
    .shape_determining()
    .input("limit", "scalar (exclusive)", kRangeDTypes, "T")
    .shape_determining()
    .input("delta", "scalar, non-zero", kRangeDTypes, "T")
    .shape_determining()
    .output("output", "1-D sequence", kRangeDTypes, "T")
    .shape_infer(range_infer);

FRAME_REGISTER_OP(shape)
    .doc(
        "ONNX Shape (opset 21): the input's dims [start, end) as int64 (negative attrs count "
        "from the back, out-of-range values clamp).")
    .input("data", "any tensor", kAllDTypes)
    .output("shape", "int64 1-D", kI64)
    .attr("start", AttrType::kInt, "first dim", int64_t{0})
    .optional_attr("end", AttrType::kInt, "one past the last dim (default rank)")
    .shape_infer(shape_infer);

FRAME_REGISTER_OP(size)
    .doc("ONNX Size (opset 21): number of elements as an int64 scalar.")
    .input("data", "any tensor", kAllDTypes)
    .output("size", "int64 scalar", kI64)
    .shape_infer(size_infer);

namespace {

// high and low of random_uniform(_like).
OpSchemaBuilder& uniform_params(OpSchemaBuilder& b) {
  return b.attr("high", AttrType::kFloat, "upper bound (exclusive)", 1.0)
      .attr("low", AttrType::kFloat, "lower bound", 0.0);
}

// mean and scale of random_normal(_like).
OpSchemaBuilder& normal_params(OpSchemaBuilder& b) {
  return b.attr("mean", AttrType::kFloat, "mean", 0.0)
      .attr("scale", AttrType::kFloat, "standard deviation", 1.0);
}

// Everything but the doc of a random op: the samples output, dtype, the distribution's
// `params`, seed and side effect. A `like` op takes its shape (and default dtype) from its
// input, the others from the `shape` attribute (dtype default 1 = float).
auto random_op(bool like, OpSchemaBuilder& (*params)(OpSchemaBuilder&)) {
  return [=](OpSchemaBuilder& b) {
    if (like) b.input("input", "shape (and default dtype) donor", kAllDTypes);
    b.output("output", "samples", kFloatDTypes);
    if (like) {
      b.optional_attr("dtype", AttrType::kInt, "ONNX TensorProto data type");
    } else {
      b.attr("dtype", AttrType::kInt, "ONNX TensorProto data type (1 = float)", int64_t{1});
    }
    params(b).optional_attr("seed", AttrType::kFloat, "seed of the generator");
    if (!like) b.required_attr("shape", AttrType::kInts, "output shape");
    b.traits({OpTrait::kHasSideEffect}).shape_infer(like ? random_like_infer : random_infer);
  };
}

}  // namespace

FRAME_REGISTER_OP(random_uniform)
    .doc(
        "ONNX RandomUniform (opset 22): U[low, high) samples; with `seed` a fixed stream per "
        "seed, without it fresh values on every run.")
    .with(random_op(false, uniform_params));

FRAME_REGISTER_OP(random_normal)
    .doc("ONNX RandomNormal (opset 22): N(mean, scale^2) samples; seeding as random_uniform.")
    .with(random_op(false, normal_params));

FRAME_REGISTER_OP(random_uniform_like)
    .doc(
        "ONNX RandomUniformLike (opset 22): random_uniform with the input's shape (and dtype "
        "unless `dtype` is set).")
    .with(random_op(true, uniform_params));

FRAME_REGISTER_OP(random_normal_like)
    .doc(
        "ONNX RandomNormalLike (opset 22): random_normal with the input's shape (and dtype "
        "unless `dtype` is set).")
    .with(random_op(true, normal_params));

FRAME_REGISTER_OP(bernoulli)
    .doc("ONNX Bernoulli (opset 22): 1 with probability input[i], else 0.")
    .input("input", "probabilities in [0, 1]", kFloatDTypes)
    .output("output", "0/1 samples", kAllDTypes)
    .optional_attr("dtype", AttrType::kInt, "ONNX TensorProto data type (default: input's)")
    .optional_attr("seed", AttrType::kFloat, "seed of the generator")
    .traits({OpTrait::kHasSideEffect})
    .shape_infer(bernoulli_infer);

FRAME_REGISTER_OP(print)
    .doc(
        "Debug op: writes one line (node name, dtype, shape, min/max/mean, first values) to "
        "stderr and passes its input through unchanged.")
    .input("input", "any tensor", kAllDTypes, "T")
    .output("output", "the input, unchanged", kAllDTypes, "T")
    .traits({OpTrait::kHasSideEffect})
    .shape_infer(identity_infer);

}  // namespace frame::ops
