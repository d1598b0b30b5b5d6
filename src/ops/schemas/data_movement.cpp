/// \file
/// Schemas of the data-movement ops: reshape-like views, transpose, concat/split, slice,
/// gather/scatter, expand/tile/pad, one_hot, depth_to_space/space_to_depth, resize, trilu.
/// Shape-determining operands are inputs (latest ONNX opset) and must be constants at shape
/// inference (ARCH-044).

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/data_movement_shapes.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;
using Types = Result<std::vector<TensorType>>;

constexpr DTypeSet kIndexDTypes{DTypeCode::kInt32, DTypeCode::kInt64};
constexpr DTypeSet kI64{DTypeCode::kInt64};

Types one(DTypeCode d, Shape s) { return std::vector<TensorType>{TensorType{d, std::move(s)}}; }

Status check_numel(const NodeContext& ctx, const Shape& s) {
  Result<int64_t> n = checked_numel(s);
  if (!n.is_ok()) return ctx.error("output shape {}: {}", shape_to_string(s), n.status().message());
  return Status();
}

Types reshape_infer(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> spec, constant_ints(ctx, 1, "shape"));
  FRAME_ASSIGN_OR_RETURN(
      Shape out, dm::reshape_shape(ctx, in, spec, ctx.attr_or<int64_t>("allowzero", 0) != 0));
  return one(ctx.input_types[0].dtype, out);
}

Types transpose_infer(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> perm, dm::transpose_perm(ctx, in.size()));
  Shape out(in.size());
  for (size_t i = 0; i < perm.size(); ++i) out[i] = in[static_cast<size_t>(perm[i])];
  return one(ctx.input_types[0].dtype, out);
}

Types concat_infer(const NodeContext& ctx) {
  const Shape& first = ctx.input_types[0].shape;
  if (first.empty()) return ctx.error("input 0 is a scalar; concat needs rank >= 1");
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                                      static_cast<int64_t>(first.size()), "axis"));
  Shape out = first;
  out[static_cast<size_t>(axis)] = 0;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    const Shape& s = ctx.input_types[i].shape;
    if (s.size() != first.size()) {
      return ctx.error("input {} has rank {}, expected {} like input 0", i, s.size(), first.size());
    }
    for (size_t d = 0; d < s.size(); ++d) {
      if (static_cast<int64_t>(d) != axis && s[d] != first[d]) {
        return ctx.error("input {} has shape {}, expected dim {} = {} like input 0 {}", i,
                         shape_to_string(s), d, first[d], shape_to_string(first));
      }
    }
    out[static_cast<size_t>(axis)] += s[static_cast<size_t>(axis)];
  }
  return one(ctx.input_types[0].dtype, out);
}

Types split_infer(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, dm::split_sizes(ctx, in));
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                                      static_cast<int64_t>(in.size()), "axis"));
  std::vector<TensorType> out;
  for (int64_t s : sizes) {
    Shape o = in;
    o[static_cast<size_t>(axis)] = s;
    out.push_back({ctx.input_types[0].dtype, o});
  }
  return out;
}

// split as one slice per part (starts, ends and axes as int64 constants): a backend with a
// slice kernel and none for split (a device backend, whose group nodes have one output each)
// keeps the parts on the device instead of falling back to cpu.
Result<ir::Graph> decompose_split(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, dm::split_sizes(ctx, in));
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                                      static_cast<int64_t>(in.size()), "axis"));
  MicroGraph m(ctx);
  const ir::ValueId axes = m.constant(Tensor::from_vector<int64_t>({1}, {axis}));
  std::vector<ir::ValueId> outs;
  int64_t at = 0;
  for (int64_t size : sizes) {
    outs.push_back(
        m.add("slice", {m.input(0), m.constant(Tensor::from_vector<int64_t>({1}, {at})),
                        m.constant(Tensor::from_vector<int64_t>({1}, {at + size})), axes}));
    at += size;
  }
  return m.finish(outs);
}

Types slice_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(dm::SliceParams p, dm::slice_params(ctx, ctx.input_types[0].shape));
  return one(ctx.input_types[0].dtype, p.out_shape);
}

Types gather_infer(const NodeContext& ctx) {
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  if (data.empty()) return ctx.error("input 0 (data) is a scalar; gather needs rank >= 1");
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                                      static_cast<int64_t>(data.size()), "axis"));
  Shape out(data.begin(), data.begin() + axis);
  out.insert(out.end(), idx.begin(), idx.end());
  out.insert(out.end(), data.begin() + axis + 1, data.end());
  return one(ctx.input_types[0].dtype, out);
}

Types gather_elements_infer(const NodeContext& ctx) {
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  if (data.empty() || idx.size() != data.size()) {
    return ctx.error("input 1 (indices) has rank {}, expected rank {} of input 0 (>= 1)",
                     idx.size(), data.size());
  }
  FRAME_ASSIGN_OR_RETURN(const int64_t axis,
                         normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                        static_cast<int64_t>(data.size()), "axis"));
  // Off the axis an output element reads data at its own coordinate (ONNX GatherElements):
  // indices may not be larger than data there.
  for (size_t d = 0; d < data.size(); ++d) {
    if (static_cast<int64_t>(d) != axis && idx[d] > data[d]) {
      return ctx.error(
          "input 1 (indices) dim {} is {}, larger than input 0's {} (only the axis "
          "{} may differ)",
          d, idx[d], data[d], axis);
    }
  }
  return one(ctx.input_types[0].dtype, idx);
}

Types gather_nd_infer(const NodeContext& ctx) {
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  const int64_t b = ctx.attr_or<int64_t>("batch_dims", 0);
  const int64_t r = static_cast<int64_t>(data.size()), q = static_cast<int64_t>(idx.size());
  if (r < 1 || q < 1) return ctx.error("data and indices need rank >= 1, got {} and {}", r, q);
  if (b < 0 || b >= std::min(r, q)) {
    return ctx.error("batch_dims {} must be in [0, {})", b, std::min(r, q));
  }
  for (int64_t i = 0; i < b; ++i) {
    if (data[i] != idx[i]) {
      return ctx.error("batch dim {}: data has {}, indices has {}", i, data[i], idx[i]);
    }
  }
  const int64_t last = idx.back();
  if (last < 1 || last > r - b) {
    return ctx.error("indices last dim {} must be in [1, {}] (data rank {} - batch_dims {})", last,
                     r - b, r, b);
  }
  Shape out(idx.begin(), idx.end() - 1);
  out.insert(out.end(), data.begin() + b + last, data.end());
  return one(ctx.input_types[0].dtype, out);
}

Types scatter_elements_infer(const NodeContext& ctx) {
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  if (data.empty() || idx.size() != data.size()) {
    return ctx.error("input 1 (indices) has rank {}, expected rank {} of input 0 (>= 1)",
                     idx.size(), data.size());
  }
  if (ctx.input_types[2].shape != idx) {
    return ctx.error("input 2 (updates) has shape {}, expected indices shape {}",
                     shape_to_string(ctx.input_types[2].shape), shape_to_string(idx));
  }
  FRAME_RETURN_IF_ERROR(normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                       static_cast<int64_t>(data.size()), "axis")
                            .status());
  FRAME_RETURN_IF_ERROR(dm::check_reduction(ctx));
  return one(ctx.input_types[0].dtype, data);
}

Types scatter_nd_infer(const NodeContext& ctx) {
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  if (idx.empty()) return ctx.error("input 1 (indices) needs rank >= 1");
  const int64_t k = idx.back();
  if (k < 1 || k > static_cast<int64_t>(data.size())) {
    return ctx.error("indices last dim {} must be in [1, {}]", k, data.size());
  }
  Shape want(idx.begin(), idx.end() - 1);
  want.insert(want.end(), data.begin() + k, data.end());
  if (ctx.input_types[2].shape != want) {
    return ctx.error("input 2 (updates) has shape {}, expected {}",
                     shape_to_string(ctx.input_types[2].shape), shape_to_string(want));
  }
  FRAME_RETURN_IF_ERROR(dm::check_reduction(ctx));
  return one(ctx.input_types[0].dtype, data);
}

Types expand_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> shape, constant_ints(ctx, 1, "shape"));
  Result<Shape> out = broadcast_shapes(ctx.input_types[0].shape, shape);
  if (!out.is_ok()) return ctx.error("{}", out.status().message());
  FRAME_RETURN_IF_ERROR(check_numel(ctx, *out));
  return one(ctx.input_types[0].dtype, *out);
}

Types squeeze_infer(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  std::vector<bool> drop(in.size(), false);
  if (ctx.has_input(1)) {
    FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> axes, constant_ints(ctx, 1, "axes"));
    for (int64_t a : axes) {
      FRAME_ASSIGN_OR_RETURN(int64_t n,
                             normalize_axis(ctx, a, static_cast<int64_t>(in.size()), "axes"));
      if (in[static_cast<size_t>(n)] != 1) {
        return ctx.error("axes: cannot squeeze axis {} of size {}", a, in[static_cast<size_t>(n)]);
      }
      drop[static_cast<size_t>(n)] = true;
    }
  } else {
    for (size_t i = 0; i < in.size(); ++i) drop[i] = in[i] == 1;
  }
  Shape out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!drop[i]) out.push_back(in[i]);
  }
  return one(ctx.input_types[0].dtype, out);
}

Types unsqueeze_infer(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> axes, constant_ints(ctx, 1, "axes"));
  const int64_t r = static_cast<int64_t>(in.size() + axes.size());
  std::vector<bool> ins(static_cast<size_t>(r), false);
  for (int64_t a : axes) {
    FRAME_ASSIGN_OR_RETURN(int64_t n, normalize_axis(ctx, a, r, "axes"));
    if (ins[static_cast<size_t>(n)]) return ctx.error("axes: axis {} appears twice", a);
    ins[static_cast<size_t>(n)] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < r; ++i) out.push_back(ins[static_cast<size_t>(i)] ? 1 : in[j++]);
  return one(ctx.input_types[0].dtype, out);
}

Types flatten_infer(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  const int64_t r = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attr_or<int64_t>("axis", 1);
  if (axis < -r || axis > r) return ctx.error("axis {} out of range [{}, {}]", axis, -r, r);
  if (axis < 0) axis += r;
  int64_t a = 1, b = 1;
  for (int64_t i = 0; i < r; ++i) (i < axis ? a : b) *= in[static_cast<size_t>(i)];
  return one(ctx.input_types[0].dtype, {a, b});
}

Types pad_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(dm::PadParams p, dm::pad_params(ctx, ctx.input_types[0].shape));
  if (ctx.has_input(2) && numel_of(ctx.input_types[2].shape) != 1) {
    return ctx.error("input 2 (constant_value) must hold one element, got shape {}",
                     shape_to_string(ctx.input_types[2].shape));
  }
  FRAME_RETURN_IF_ERROR(check_numel(ctx, p.out_shape));
  return one(ctx.input_types[0].dtype, p.out_shape);
}

Types tile_infer(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> reps, constant_ints(ctx, 1, "repeats"));
  if (reps.size() != in.size()) {
    return ctx.error("input 1 (repeats) has {} values, expected input rank {}", reps.size(),
                     in.size());
  }
  Shape out(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    if (reps[i] < 0) return ctx.error("input 1 (repeats) has negative value {}", reps[i]);
    if (in[i] != 0 && reps[i] > std::numeric_limits<int64_t>::max() / in[i]) {
      return ctx.error("output dim {} overflows int64", i);
    }
    out[i] = in[i] * reps[i];
  }
  FRAME_RETURN_IF_ERROR(check_numel(ctx, out));
  return one(ctx.input_types[0].dtype, out);
}

Types one_hot_infer(const NodeContext& ctx) {
  const Shape& idx = ctx.input_types[0].shape;
  const Tensor* depth = ctx.constant_input(1);
  if (depth == nullptr) {
    return ctx.error("input 1 (depth) must be a constant (ARCH-044: output shape must be static)");
  }
  if (depth->numel() != 1) return ctx.error("input 1 (depth) must hold one value");
  if (numel_of(ctx.input_types[2].shape) != 2 || ctx.input_types[2].shape.size() != 1) {
    return ctx.error("input 2 (values) must have shape [2], got {}",
                     shape_to_string(ctx.input_types[2].shape));
  }
  // Range-check in double before converting: a depth past int64 must not wrap.
  const double dd = std::floor(depth->element_as_double(0));
  if (!(dd >= 1.0) || dd > 9.0e18) {
    return ctx.error("input 1 (depth) must be in [1, 9e18], got {}", depth->element_as_double(0));
  }
  const int64_t d = static_cast<int64_t>(dd);
  const int64_t r = static_cast<int64_t>(idx.size()) + 1;
  FRAME_ASSIGN_OR_RETURN(int64_t axis,
                         normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1), r, "axis"));
  Shape out = idx;
  out.insert(out.begin() + axis, d);
  FRAME_RETURN_IF_ERROR(check_numel(ctx, out));
  return one(ctx.input_types[2].dtype, out);
}

Result<int64_t> blocksize(const NodeContext& ctx) {
  const int64_t b = ctx.attr_or<int64_t>("blocksize", 0);
  if (b < 1) return ctx.error("attribute 'blocksize' must be >= 1, got {}", b);
  if (ctx.input_types[0].shape.size() != 4) {
    return ctx.error("input 0 expects rank 4 (NCHW), got rank {}", ctx.input_types[0].rank());
  }
  return b;
}

Types depth_to_space_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(int64_t b, blocksize(ctx));
  const std::string mode = ctx.attr_or<std::string>("mode", "DCR");
  if (mode != "DCR" && mode != "CRD") return ctx.error("mode '{}' is not DCR or CRD", mode);
  const Shape& in = ctx.input_types[0].shape;
  if (in[1] % (b * b) != 0) {
    return ctx.error("channels {} not divisible by blocksize^2 = {}", in[1], b * b);
  }
  return one(ctx.input_types[0].dtype, {in[0], in[1] / (b * b), in[2] * b, in[3] * b});
}

Types space_to_depth_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(int64_t b, blocksize(ctx));
  const Shape& in = ctx.input_types[0].shape;
  if (in[2] % b != 0 || in[3] % b != 0) {
    return ctx.error("spatial dims {}x{} not divisible by blocksize {}", in[2], in[3], b);
  }
  return one(ctx.input_types[0].dtype, {in[0], in[1] * b * b, in[2] / b, in[3] / b});
}

Types resize_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(dm::ResizeParams p, dm::resize_params(ctx, ctx.input_types[0].shape));
  if (p.mode != dm::ResizeMode::kNearest && !is_floating(ctx.input_types[0].dtype)) {
    return ctx.error("mode '{}' needs a floating-point input 0, got {}",
                     ctx.attr_or<std::string>("mode", ""), dtype_name(ctx.input_types[0].dtype));
  }
  FRAME_RETURN_IF_ERROR(check_numel(ctx, p.out_shape));
  return one(ctx.input_types[0].dtype, p.out_shape);
}

Types trilu_infer(const NodeContext& ctx) {
  if (ctx.input_types[0].rank() < 2) {
    return ctx.error("input 0 expects rank >= 2, got {}", ctx.input_types[0].rank());
  }
  if (ctx.has_input(1) && numel_of(ctx.input_types[1].shape) != 1) {
    return ctx.error("input 1 (k) must hold one value");
  }
  return one(ctx.input_types[0].dtype, ctx.input_types[0].shape);
}

}  // namespace

FRAME_REGISTER_OP(reshape)
    .doc(
        "ONNX Reshape (opset 21): same data, new shape; 0 copies the input dim (unless "
        "allowzero), -1 is inferred.")
    .input("data", "tensor to reshape", kAllDTypes, "T")
    .input("shape", "int64 target shape; must be a constant (ARCH-044)", kI64)
    .shape_determining()
    .output("reshaped", "data with the new shape", kAllDTypes, "T")
    .attr("allowzero", AttrType::kInt, "1: a 0 in shape means an empty dim", int64_t{0})
    .view_of_input(0)
    .shape_infer(reshape_infer);

FRAME_REGISTER_OP(transpose)
    .doc("ONNX Transpose (opset 21): permutes axes; default perm reverses them.")
    .input("data", "input tensor", kAllDTypes, "T")
    .output("transposed", "output[i...] = data[perm-permuted i...]", kAllDTypes, "T")
    .optional_attr("perm", AttrType::kInts, "permutation of [0, rank)")
    .shape_infer(transpose_infer);

FRAME_REGISTER_OP(concat)
    .doc("ONNX Concat (opset 13): joins inputs along axis; all other dims equal.")
    .variadic_input("inputs", "tensors to join (>= 1, same dtype and rank)", 1, kAllDTypes, "T")
    .output("concat_result", "joined tensor", kAllDTypes, "T")
    .required_attr("axis", AttrType::kInt, "axis in [-rank, rank)")
    .shape_infer(concat_infer);

// ONNX Split has variadic outputs; frame declares one required output and optional ones up to
// dm::kMaxSplitOutputs, and the node's output count selects how many exist.
static OpSchemaBuilder& split_outputs(OpSchemaBuilder& b) {
  b.output("outputs_0", "first part", kAllDTypes, "T");
  for (int i = 1; i < dm::kMaxSplitOutputs; ++i) {
    b.optional_output(fmt::format("outputs_{}", i), "next part", kAllDTypes, "T");
  }
  return b;
}

[[maybe_unused]] static OpRegistration split_registration = split_outputs(
    OpSchemaBuilder("split", __FILE__, __LINE__)
        .doc("ONNX Split (opset 18): splits along axis by the `split` sizes, into num_outputs "
             "parts (last smaller), or into as many equal parts as the node has outputs.")
        .input("input", "tensor to split", kAllDTypes, "T")
        .optional_input("split", "int64 part sizes; must be a constant (ARCH-044)", kI64)
        .shape_determining()
        .attr("axis", AttrType::kInt, "axis in [-rank, rank)", int64_t{0})
        .optional_attr("num_outputs", AttrType::kInt, "number of parts")
        .shape_infer(split_infer)
        .decomposition(decompose_split));

FRAME_REGISTER_OP(slice)
    .doc(
        "ONNX Slice (opset 13): data[starts:ends:steps] on the given axes; indices clamp, "
        "negative steps walk backwards.")
    .input("data", "input tensor", kAllDTypes, "T")
    .input("starts", "start per axis (constant)", kIndexDTypes, "Tind")
    .shape_determining()
    .input("ends", "end (exclusive) per axis (constant)", kIndexDTypes, "Tind")
    .shape_determining()
    .optional_input("axes", "axes sliced (constant), default [0, len(starts))", kIndexDTypes,
                    "Tind")
    .shape_determining()
    .optional_input("steps", "steps (constant, non-zero), default 1", kIndexDTypes, "Tind")
    .shape_determining()
    .output("output", "sliced tensor", kAllDTypes, "T")
    .shape_infer(slice_infer);

FRAME_REGISTER_OP(gather)
    .doc(
        "ONNX Gather (opset 13): takes entries of data along axis at indices (negative "
        "indices count from the end).")
    .input("data", "input tensor, rank >= 1", kAllDTypes, "T")
    .input("indices", "int32/int64 indices in [-s, s-1]", kIndexDTypes)
    .output("output", "data[:axis] + indices.shape + data[axis+1:]", kAllDTypes, "T")
    .attr("axis", AttrType::kInt, "gather axis", int64_t{0})
    .shape_infer(gather_infer);

FRAME_REGISTER_OP(gather_elements)
    .doc("ONNX GatherElements (opset 13): out[i][j] = data[indices[i][j]][j] (for axis 0).")
    .input("data", "input tensor, rank >= 1", kAllDTypes, "T")
    .input("indices", "same rank as data", kIndexDTypes)
    .output("output", "shape of indices", kAllDTypes, "T")
    .attr("axis", AttrType::kInt, "gather axis", int64_t{0})
    .shape_infer(gather_elements_infer);

FRAME_REGISTER_OP(gather_nd)
    .doc(
        "ONNX GatherND (opset 13): gathers slices of data addressed by the last dim of "
        "indices, after batch_dims leading batch dims.")
    .input("data", "input tensor, rank >= 1", kAllDTypes, "T")
    .input("indices", "int64 index tuples", kI64)
    .output("output", "indices.shape[:-1] + data.shape[batch_dims + k:]", kAllDTypes, "T")
    .attr("batch_dims", AttrType::kInt, "leading batch dims", int64_t{0})
    .shape_infer(gather_nd_infer);

FRAME_REGISTER_OP(scatter_elements)
    .doc(
        "ONNX ScatterElements (opset 18): copy of data with updates written (or reduced) at "
        "indices along axis.")
    .input("data", "input tensor, rank >= 1", kAllDTypes, "T")
    .input("indices", "same rank as data", kIndexDTypes)
    .input("updates", "shape of indices", kAllDTypes, "T")
    .output("output", "shape of data", kAllDTypes, "T")
    .attr("axis", AttrType::kInt, "scatter axis", int64_t{0})
    .attr("reduction", AttrType::kString, "none, add, mul, max or min", std::string("none"))
    .shape_infer(scatter_elements_infer);

FRAME_REGISTER_OP(scatter_nd)
    .doc(
        "ONNX ScatterND (opset 18): copy of data with update slices written (or reduced) at "
        "the index tuples of indices.")
    .input("data", "input tensor", kAllDTypes, "T")
    .input("indices", "int64 index tuples, rank >= 1", kI64)
    .input("updates", "indices.shape[:-1] + data.shape[k:]", kAllDTypes, "T")
    .output("output", "shape of data", kAllDTypes, "T")
    .attr("reduction", AttrType::kString, "none, add, mul, max or min", std::string("none"))
    .shape_infer(scatter_nd_infer);

FRAME_REGISTER_OP(expand)
    .doc("ONNX Expand (opset 13): broadcasts input to broadcast(input.shape, shape).")
    .input("input", "input tensor", kAllDTypes, "T")
    .input("shape", "int64 target shape (constant)", kI64)
    .shape_determining()
    .output("output", "broadcast tensor", kAllDTypes, "T")
    .shape_infer(expand_infer);

FRAME_REGISTER_OP(squeeze)
    .doc("ONNX Squeeze (opset 21): removes the given size-1 axes (default: all size-1 axes).")
    .input("data", "input tensor", kAllDTypes, "T")
    .optional_input("axes", "int64 axes (constant)", kI64)
    .shape_determining()
    .output("squeezed", "data without those axes", kAllDTypes, "T")
    .view_of_input(0)
    .shape_infer(squeeze_infer);

FRAME_REGISTER_OP(unsqueeze)
    .doc("ONNX Unsqueeze (opset 21): inserts size-1 axes at the given output positions.")
    .input("data", "input tensor", kAllDTypes, "T")
    .input("axes", "int64 output axes (constant)", kI64)
    .shape_determining()
    .output("expanded", "data with the new axes", kAllDTypes, "T")
    .view_of_input(0)
    .shape_infer(unsqueeze_infer);

FRAME_REGISTER_OP(flatten)
    .doc("ONNX Flatten (opset 21): 2-D view [prod(dims[:axis]), prod(dims[axis:])].")
    .input("input", "input tensor", kAllDTypes, "T")
    .output("output", "2-D tensor", kAllDTypes, "T")
    .attr("axis", AttrType::kInt, "split point in [-rank, rank]", int64_t{1})
    .view_of_input(0)
    .shape_infer(flatten_infer);

FRAME_REGISTER_OP(pad)
    .doc(
        "ONNX Pad (opset 21): pads (or crops, for negative pads) each axis; modes constant, "
        "reflect, edge, wrap.")
    .input("data", "input tensor", kAllDTypes, "T")
    .input("pads", "int64 [x1_begin, x2_begin, ..., x1_end, x2_end, ...] (constant)", kI64)
    .shape_determining()
    .optional_input("constant_value", "one value used by mode constant (default 0)", kAllDTypes,
                    "T")
    .optional_input("axes", "axes the pads apply to (constant), default all", kIndexDTypes)
    .shape_determining()
    .output("output", "padded tensor", kAllDTypes, "T")
    .attr("mode", AttrType::kString, "constant, reflect, edge or wrap", std::string("constant"))
    .shape_infer(pad_infer);

FRAME_REGISTER_OP(tile)
    .doc("ONNX Tile (opset 13): repeats input repeats[i] times along axis i.")
    .input("input", "input tensor", kAllDTypes, "T")
    .input("repeats", "int64, one per axis (constant)", kI64)
    .shape_determining()
    .output("output", "tiled tensor", kAllDTypes, "T")
    .shape_infer(tile_infer);

FRAME_REGISTER_OP(one_hot)
    .doc(
        "ONNX OneHot (opset 11): values[1] where the new axis equals the index, values[0] "
        "elsewhere; negative indices count from depth, out-of-range ones give all off.")
    .input("indices", "numeric indices", kNumericDTypes)
    .input("depth", "scalar or one-element depth (constant)", kNumericDTypes)
    .shape_determining()
    .input("values", "[off_value, on_value]", kAllDTypes, "T")
    .output("output", "indices.shape with depth inserted at axis", kAllDTypes, "T")
    .attr("axis", AttrType::kInt, "position of the new axis in [-r-1, r]", int64_t{-1})
    .shape_infer(one_hot_infer);

FRAME_REGISTER_OP(depth_to_space)
    .doc("ONNX DepthToSpace (opset 13): [N,C,H,W] -> [N,C/b^2,H*b,W*b]; mode DCR or CRD.")
    .input("input", "NCHW tensor", kAllDTypes, "T")
    .output("output", "rearranged tensor", kAllDTypes, "T")
    .required_attr("blocksize", AttrType::kInt, "block size b >= 1")
    .attr("mode", AttrType::kString, "DCR (depth-column-row) or CRD", std::string("DCR"))
    .shape_infer(depth_to_space_infer);

FRAME_REGISTER_OP(space_to_depth)
    .doc("ONNX SpaceToDepth (opset 13): [N,C,H,W] -> [N,C*b^2,H/b,W/b].")
    .input("input", "NCHW tensor", kAllDTypes, "T")
    .output("output", "rearranged tensor", kAllDTypes, "T")
    .required_attr("blocksize", AttrType::kInt, "block size b >= 1")
    .shape_infer(space_to_depth_infer);

FRAME_REGISTER_OP(resize)
    .doc(
        "ONNX Resize (opset 19): nearest, linear or cubic resampling on the given axes; "
        "scales or sizes must be constants (ARCH-044). antialias is not supported.")
    .input("X", "input tensor", kAllDTypes, "T1")
    .optional_input("roi", "[starts..., ends...] for tf_crop_and_resize (constant)", kFloatDTypes,
                    "T2")
    .shape_determining()
    .optional_input("scales", "f32 scale per resized axis (constant)", {DTypeCode::kFloat32})
    .shape_determining()
    .optional_input("sizes", "int64 output size per resized axis (constant)", kI64)
    .shape_determining()
    .output("Y", "resized tensor", kAllDTypes, "T1")
    .attr("antialias", AttrType::kInt, "must be 0 (not supported)", int64_t{0})
    .optional_attr("axes", AttrType::kInts, "axes scales/sizes refer to")
    .attr("coordinate_transformation_mode", AttrType::kString,
          "half_pixel, half_pixel_symmetric, pytorch_half_pixel, align_corners, asymmetric or "
          "tf_crop_and_resize",
          std::string("half_pixel"))
    .attr("cubic_coeff_a", AttrType::kFloat, "cubic kernel coefficient", -0.75)
    .attr("exclude_outside", AttrType::kInt, "1: zero weights outside the input", int64_t{0})
    .attr("extrapolation_value", AttrType::kFloat, "outside value for tf_crop_and_resize", 0.0)
    .attr("keep_aspect_ratio_policy", AttrType::kString, "stretch, not_larger or not_smaller",
          std::string("stretch"))
    .attr("mode", AttrType::kString, "nearest, linear or cubic", std::string("nearest"))
    .attr("nearest_mode", AttrType::kString, "round_prefer_floor, round_prefer_ceil, floor or ceil",
          std::string("round_prefer_floor"))
    .shape_infer(resize_infer);

FRAME_REGISTER_OP(trilu)
    .doc(
        "ONNX Trilu (opset 14): keeps the upper (or lower) triangle of the last two dims, "
        "shifted by diagonal k; zeroes the rest.")
    .input("input", "tensor of rank >= 2", kAllDTypes, "T")
    .optional_input("k", "int64 diagonal offset (default 0)", kI64)
    .output("output", "triangular part", kAllDTypes, "T")
    .attr("upper", AttrType::kInt, "1: upper triangle, 0: lower", int64_t{1})
    .shape_infer(trilu_infer);

}  // namespace frame::ops
