// Reduction schemas: ReduceXxx (opset 18 form), ArgMax/ArgMin (13), CumSum (14), TopK (11),
// plus the decompositions of the composites reduce_l2 and reduce_log_sum_exp.

#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/nn_geometry.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;

constexpr DTypeSet kArith = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64,
                                                    DTypeCode::kUInt32, DTypeCode::kUInt64};
constexpr DTypeSet kMinMax =
    kArith | DTypeSet{DTypeCode::kInt8, DTypeCode::kUInt8, DTypeCode::kBool};
constexpr DTypeSet kIndexable = kNumericDTypes;

Result<std::vector<TensorType>> infer_reduce(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  const Tensor* axes = nullptr;
  if (ctx.has_input(1)) {
    axes = ctx.constant_input(1);
    if (axes == nullptr) {
      return ctx.error(
          "input 1 (axes) must be a constant (ARCH-044: output shape must be "
          "static)");
    }
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<bool> reduced, nn::resolve_reduce_axes(ctx, x.rank(), axes));
  const bool keep = ctx.attr_or<int64_t>("keepdims", 1) != 0;
  TensorType out{x.dtype, {}};
  for (size_t i = 0; i < reduced.size(); ++i) {
    if (!reduced[i]) {
      out.shape.push_back(x.shape[i]);
    } else if (keep) {
      out.shape.push_back(1);
    }
  }
  return std::vector<TensorType>{out};
}

// Attributes forwarded to the primitive reductions of a decomposition.
ir::AttrMap reduce_attrs(const NodeContext& ctx, bool keepdims) {
  ir::AttrMap a;
  a["keepdims"] = int64_t{keepdims ? 1 : 0};
  a["noop_with_empty_axes"] = ctx.attr_or<int64_t>("noop_with_empty_axes", 0);
  if (ctx.has_input(1) && ctx.constant_input(1) != nullptr) {
    a["axes"] = ctx.constant_input(1)->to_int64_vector();
  } else if (const auto* axes = ctx.attr<std::vector<int64_t>>("axes"); axes != nullptr) {
    a["axes"] = *axes;
  }
  return a;
}

Status require_float(const NodeContext& ctx) {
  if (!is_floating(ctx.input_types[0].dtype)) {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("node '{}' ({}): decomposition is defined for float dtypes only, "
                              "got {}",
                              ctx.node_name, ctx.op, dtype_name(ctx.input_types[0].dtype)));
  }
  return Status();
}

// reduce_l2(x) = sqrt(reduce_sum(x * x)).
Result<ir::Graph> decompose_reduce_l2(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(require_float(ctx));
  MicroGraph m(ctx);
  const bool keep = ctx.attr_or<int64_t>("keepdims", 1) != 0;
  ir::ValueId x = m.input(0);
  ir::ValueId sq = m.add("mul", {x, x});
  ir::ValueId s = m.add("reduce_sum", {sq}, reduce_attrs(ctx, keep));
  return m.finish({m.add("sqrt", {s})});
}

// reduce_log_sum_exp(x) = log(reduce_sum(exp(x - max))) + max, max taken over the same axes
// (shifted for stability; an all -inf slice gives NaN here, the cpu kernel gives -inf).
Result<ir::Graph> decompose_reduce_log_sum_exp(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(require_float(ctx));
  MicroGraph m(ctx);
  const bool keep = ctx.attr_or<int64_t>("keepdims", 1) != 0;
  ir::ValueId x = m.input(0);
  ir::ValueId mx_keep = m.add("reduce_max", {x}, reduce_attrs(ctx, true));
  ir::ValueId mx = keep ? mx_keep : m.add("reduce_max", {x}, reduce_attrs(ctx, false));
  ir::ValueId e = m.add("exp", {m.add("sub", {x, mx_keep})});
  ir::ValueId s = m.add("reduce_sum", {e}, reduce_attrs(ctx, keep));
  return m.finish({m.add("add", {m.add("log", {s}), mx})});
}

// Every ReduceXxx op shares inputs, attributes and the shape function.
OpSchemaBuilder& reduce_schema(OpSchemaBuilder&& b, const char* what, DTypeSet dtypes,
                               DecomposeFn decompose = nullptr) {
  b.doc(fmt::format("{} of `data` over `axes` (ONNX Reduce* opset 18; axes also accepted as an "
                    "attribute as in opset <= 17). Reducing an empty set gives the identity "
                    "(sum 0, prod 1, max lowest/-inf, min highest/+inf, log_sum and "
                    "log_sum_exp -inf, mean NaN for floats and 0 for integers). With "
                    "noop_with_empty_axes=1 and no axes each element is reduced on its own "
                    "(reduce_sum_square squares, reduce_l1 takes |x|). Integer results are "
                    "computed in int64/double and converted back (truncating).",
                    what))
      .input("data", "tensor to reduce", dtypes, "T")
      .optional_input("axes", "int64 1-D axes to reduce (must be a constant)",
                      DTypeSet{DTypeCode::kInt64})
      .shape_determining()
      .output("reduced", "reduced tensor", dtypes, "T")
      .optional_attr("axes", AttrType::kInts, "axes to reduce (used when input 1 is absent)")
      .attr("keepdims", AttrType::kInt, "keep reduced dims as size 1", int64_t{1})
      .attr("noop_with_empty_axes", AttrType::kInt, "empty axes reduce nothing when 1", int64_t{0})
      .shape_infer(infer_reduce);
  if (decompose != nullptr) b.decomposition(decompose);
  return b;
}

#define FRAME_REDUCE_OP(name, ...)                                                        \
  [[maybe_unused]] static ::frame::ops::OpRegistration FRAME_CONCAT(reduce_registration_, \
                                                                    __COUNTER__) =        \
      reduce_schema(::frame::ops::OpSchemaBuilder(#name, __FILE__, __LINE__), __VA_ARGS__)

FRAME_REDUCE_OP(reduce_sum, "Sum", kArith);
FRAME_REDUCE_OP(reduce_mean, "Mean", kArith);
FRAME_REDUCE_OP(reduce_prod, "Product", kArith);
FRAME_REDUCE_OP(reduce_max, "Maximum (NaN propagates)", kMinMax);
FRAME_REDUCE_OP(reduce_min, "Minimum (NaN propagates)", kMinMax);
FRAME_REDUCE_OP(reduce_l1, "Sum of absolute values", kArith);
FRAME_REDUCE_OP(reduce_l2, "Euclidean norm", kArith, decompose_reduce_l2);
FRAME_REDUCE_OP(reduce_sum_square, "Sum of squares", kArith);
FRAME_REDUCE_OP(reduce_log_sum, "Natural log of the sum", kArith);
FRAME_REDUCE_OP(reduce_log_sum_exp, "Log of the sum of exponentials (max-shifted)", kArith,
                decompose_reduce_log_sum_exp);

Result<std::vector<TensorType>> infer_arg(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() == 0) return ctx.error("input 0 (data) must have rank >= 1, got a scalar");
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                                      x.rank(), "attribute 'axis'"));
  if (x.shape[static_cast<size_t>(axis)] == 0) {
    return ctx.error("cannot take the index of an extremum over empty axis {} of shape {}", axis,
                     shape_to_string(x.shape));
  }
  TensorType out{DTypeCode::kInt64, x.shape};
  if (ctx.attr_or<int64_t>("keepdims", 1) != 0) {
    out.shape[static_cast<size_t>(axis)] = 1;
  } else {
    out.shape.erase(out.shape.begin() + axis);
  }
  return std::vector<TensorType>{out};
}

#define FRAME_ARG_OP(name, what)                                                                \
  FRAME_REGISTER_OP(name)                                                                       \
      .doc("Index (int64) of the " what " along `axis` (ONNX Arg" what                          \
           " opset 13). Ties "                                                                  \
           "give the first index, or the last with select_last_index=1; NaN counts as the "     \
           "extremum (as numpy).")                                                              \
      .input("data", "input tensor, rank >= 1", kIndexable, "T")                                \
      .output("reduced", "int64 indices", DTypeSet{DTypeCode::kInt64})                          \
      .attr("axis", AttrType::kInt, "axis in [-r, r-1]", int64_t{0})                            \
      .attr("keepdims", AttrType::kInt, "keep the reduced axis as size 1", int64_t{1})          \
      .attr("select_last_index", AttrType::kInt, "ties pick the last index when 1", int64_t{0}) \
      .shape_infer(infer_arg)

FRAME_ARG_OP(arg_max, "Max");
FRAME_ARG_OP(arg_min, "Min");

Result<std::vector<TensorType>> infer_cumsum(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  const TensorType& axis = ctx.input_types[1];
  if (axis.rank() > 1 || numel_of(axis.shape) != 1) {
    return ctx.error("input 1 (axis) must be a scalar or a 1-element 1-D tensor, got shape {}",
                     shape_to_string(axis.shape));
  }
  if (x.rank() == 0) return ctx.error("input 0 (x) must have rank >= 1, got a scalar");
  if (const Tensor* a = ctx.constant_input(1); a != nullptr) {
    FRAME_RETURN_IF_ERROR(
        normalize_axis(ctx, a->element_as_int64(0), x.rank(), "input 1 (axis)").status());
  }
  return std::vector<TensorType>{x};
}

FRAME_REGISTER_OP(cumsum)
    .doc(
        "Cumulative sum along `axis` (ONNX CumSum opset 14). exclusive=1 starts from 0 "
        "(excludes the current element), reverse=1 sums from the end. The axis need not be a "
        "constant; it is checked at run time.")
    .input("x", "input tensor, rank >= 1", kArith, "T")
    .input("axis", "int32/int64 scalar axis in [-r, r-1]",
           DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64})
    .output("y", "cumulative sums, shape of x", kArith, "T")
    .attr("exclusive", AttrType::kInt, "exclude the current element", int64_t{0})
    .attr("reverse", AttrType::kInt, "accumulate from the end", int64_t{0})
    .shape_infer(infer_cumsum);

Result<std::vector<TensorType>> infer_top_k(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() == 0) return ctx.error("input 0 (X) must have rank >= 1, got a scalar");
  const Tensor* k = ctx.constant_input(1);
  if (k == nullptr) {
    return ctx.error("input 1 (K) must be a constant (ARCH-044: output shape must be static)");
  }
  if (k->numel() != 1 || k->rank() > 1) {
    return ctx.error("input 1 (K) must hold one value, got shape {}", shape_to_string(k->shape()));
  }
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1),
                                                      x.rank(), "attribute 'axis'"));
  const int64_t kv = k->element_as_int64(0);
  const int64_t n = x.shape[static_cast<size_t>(axis)];
  if (kv < 0 || kv > n) {
    return ctx.error("input 1 (K) is {}, expected a value in [0, {}] (size of axis {})", kv, n,
                     axis);
  }
  Shape s = x.shape;
  s[static_cast<size_t>(axis)] = kv;
  return std::vector<TensorType>{TensorType{x.dtype, s}, TensorType{DTypeCode::kInt64, s}};
}

FRAME_REGISTER_OP(top_k)
    .doc(
        "The K largest (largest=1) or smallest elements along `axis` and their int64 indices "
        "(ONNX TopK opset 11). Results are always sorted; equal values keep the lower index "
        "first; NaN ranks above every number. K must be a constant.")
    .input("X", "input tensor, rank >= 1", kIndexable, "T")
    .input("K", "int64 1-element tensor, 0 <= K <= X.shape[axis]", DTypeSet{DTypeCode::kInt64})
    .shape_determining()
    .output("Values", "the selected values", kIndexable, "T")
    .output("Indices", "their int64 indices along axis", DTypeSet{DTypeCode::kInt64})
    .attr("axis", AttrType::kInt, "axis in [-r, r-1]", int64_t{-1})
    .attr("largest", AttrType::kInt, "1 = largest, 0 = smallest", int64_t{1})
    .attr("sorted", AttrType::kInt, "accepted; results are always sorted", int64_t{1})
    .shape_infer(infer_top_k);

}  // namespace
}  // namespace frame::ops
