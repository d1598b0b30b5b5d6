// Convolution and pooling schemas: Conv, ConvTranspose (opset 22 attrs), MaxPool,
// AveragePool (opset 22), GlobalAveragePool, GlobalMaxPool. Geometry in nn_geometry.cpp.

#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/nn_geometry.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;

constexpr DTypeSet kMaxPoolDTypes = kFloatDTypes | DTypeSet{DTypeCode::kInt8, DTypeCode::kUInt8};

Status expect_nchw(const NodeContext& ctx) {
  const int64_t r = ctx.input_types[0].rank();
  if (r < 3) {
    return ctx.error("input 0 (X) expects rank >= 3 (N, C, spatial...), got rank {}", r);
  }
  return Status();
}

// Checks the optional kernel_shape attribute against the weight's spatial dims.
Status check_kernel_shape(const NodeContext& ctx, std::span<const int64_t> w_spatial) {
  const auto* ks = ctx.attr<std::vector<int64_t>>("kernel_shape");
  if (ks == nullptr || ks->empty()) return Status();
  if (!std::equal(ks->begin(), ks->end(), w_spatial.begin(), w_spatial.end())) {
    return ctx.error("attribute 'kernel_shape' {} differs from the spatial dims {} of input 1 (W)",
                     shape_to_string(*ks), shape_to_string(w_spatial));
  }
  return Status();
}

Status check_bias(const NodeContext& ctx, int64_t m) {
  if (!ctx.has_input(2)) return Status();
  const Shape& b = ctx.input_types[2].shape;
  if (b.size() != 1 || b[0] != m) {
    return ctx.error("input 2 (B) expects shape [{}] (one value per output channel), got {}", m,
                     shape_to_string(b));
  }
  return Status();
}

Result<std::vector<TensorType>> infer_conv(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(expect_nchw(ctx));
  const Shape& x = ctx.input_types[0].shape;
  const int64_t r = static_cast<int64_t>(x.size());
  FRAME_RETURN_IF_ERROR(expect_rank(ctx, 1, r, "W"));
  const Shape& w = ctx.input_types[1].shape;
  const int64_t group = ctx.attr_or<int64_t>("group", 1);
  if (group < 1) return ctx.error("attribute 'group' must be >= 1, got {}", group);
  if (x[1] != w[1] * group) {
    return ctx.error(
        "channel mismatch: input 0 (X) has {} channels, input 1 (W) expects "
        "{} (W dim 1 = {} x group {})",
        x[1], w[1] * group, w[1], group);
  }
  if (w[0] % group != 0) {
    return ctx.error("input 1 (W) has {} output channels, not divisible by group {}", w[0], group);
  }
  const std::span<const int64_t> ws(w.data() + 2, w.size() - 2);
  FRAME_RETURN_IF_ERROR(check_kernel_shape(ctx, ws));
  FRAME_RETURN_IF_ERROR(check_bias(ctx, w[0]));
  FRAME_ASSIGN_OR_RETURN(
      nn::WindowGeometry g,
      nn::resolve_window(ctx, std::span(x.data() + 2, x.size() - 2), ws, nn::WindowKind::kConv));
  Shape out{x[0], w[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return one_output(ctx.input_types[0].dtype, out);
}

constexpr const char* kAutoPadDoc = "NOTSET, SAME_UPPER, SAME_LOWER or VALID";
constexpr const char* kDilationsDoc = "dilation per spatial dim (default 1)";

// X, W (documented by `w_doc`), optional B and Y of conv and conv_transpose.
auto conv_io(const char* w_doc) {
  return [w_doc](OpSchemaBuilder& b) {
    b.input("X", "input [N, C, D1, ..., Dk]", kFloatDTypes, "T")
        .input("W", w_doc, kFloatDTypes, "T")
        .optional_input("B", "bias [M]", kFloatDTypes, "T")
        .output("Y", "output [N, M, O1, ..., Ok]", kFloatDTypes, "T");
  };
}

// The window attributes conv and conv_transpose share (each adds its pads and strides).
OpSchemaBuilder& conv_window_attrs(OpSchemaBuilder& b) {
  return b.attr("auto_pad", AttrType::kString, kAutoPadDoc, std::string("NOTSET"))
      .optional_attr("dilations", AttrType::kInts, kDilationsDoc)
      .attr("group", AttrType::kInt, "number of channel groups", int64_t{1})
      .optional_attr("kernel_shape", AttrType::kInts, "must match W's spatial dims if given");
}

FRAME_REGISTER_OP(conv)
    .doc(
        "N-d convolution (cross-correlation) (ONNX Conv opset 22). X: [N, C, D1..Dk], "
        "W: [M, C/group, k1..kk], optional B: [M] -> Y: [N, M, O1..Ok]. pads are "
        "[begin..., end...]; auto_pad SAME_UPPER/SAME_LOWER give ceil(D/stride) outputs with "
        "the odd pad at the end/beginning; VALID uses no pad. Computed in float (double for "
        "f64) and rounded once.")
    .with(conv_io("weights [M, C/group, k1, ..., kk]"))
    .with(conv_window_attrs)
    .optional_attr("pads", AttrType::kInts, "[x1_begin, x2_begin, ..., x1_end, ...] (default 0)")
    .optional_attr("strides", AttrType::kInts, "stride per spatial dim (default 1)")
    .shape_infer(infer_conv);

Result<std::vector<TensorType>> infer_conv_transpose(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(expect_nchw(ctx));
  const Shape& x = ctx.input_types[0].shape;
  const int64_t r = static_cast<int64_t>(x.size());
  FRAME_RETURN_IF_ERROR(expect_rank(ctx, 1, r, "W"));
  const Shape& w = ctx.input_types[1].shape;
  const int64_t group = ctx.attr_or<int64_t>("group", 1);
  if (group < 1) return ctx.error("attribute 'group' must be >= 1, got {}", group);
  if (x[1] != w[0]) {
    return ctx.error("channel mismatch: input 0 (X) has {} channels, input 1 (W) dim 0 is {}", x[1],
                     w[0]);
  }
  if (w[0] % group != 0) {
    return ctx.error("input 1 (W) has {} input channels, not divisible by group {}", w[0], group);
  }
  const int64_t m = w[1] * group;
  const std::span<const int64_t> ws(w.data() + 2, w.size() - 2);
  FRAME_RETURN_IF_ERROR(check_kernel_shape(ctx, ws));
  FRAME_RETURN_IF_ERROR(check_bias(ctx, m));
  FRAME_ASSIGN_OR_RETURN(nn::WindowGeometry g,
                         nn::resolve_window(ctx, std::span(x.data() + 2, x.size() - 2), ws,
                                            nn::WindowKind::kConvTranspose));
  Shape out{x[0], m};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return one_output(ctx.input_types[0].dtype, out);
}

FRAME_REGISTER_OP(conv_transpose)
    .doc(
        "N-d transposed convolution (ONNX ConvTranspose opset 22). X: [N, C, D1..Dk], "
        "W: [C, M/group, k1..kk], optional B: [M] -> Y: [N, M, O1..Ok] with "
        "O = stride*(D-1) + output_padding + (k-1)*dilation + 1 - pad_begin - pad_end. "
        "output_shape (spatial dims, or N and C first) derives the pads: SAME_UPPER puts the "
        "odd pad at the end, otherwise at the beginning; auto_pad SAME_* without output_shape "
        "targets D*stride.")
    .with(conv_io("weights [C, M/group, k1, ..., kk]"))
    .with(conv_window_attrs)
    .optional_attr("output_padding", AttrType::kInts, "extra size at the end of each dim")
    .optional_attr("output_shape", AttrType::kInts, "requested output size (pads derived)")
    .optional_attr("pads", AttrType::kInts, "[x1_begin, ..., x1_end, ...] (default 0)")
    .optional_attr("strides", AttrType::kInts, "stride per spatial dim (default 1)")
    .shape_infer(infer_conv_transpose);

Result<std::vector<TensorType>> infer_pool(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(expect_nchw(ctx));
  const Shape& x = ctx.input_types[0].shape;
  const auto* ks = ctx.attr<std::vector<int64_t>>("kernel_shape");
  if (ks == nullptr || ks->size() != x.size() - 2) {
    return ctx.error(
        "attribute 'kernel_shape' must have {} values (one per spatial dim), got "
        "{}",
        x.size() - 2, ks == nullptr ? 0 : ks->size());
  }
  const int64_t so = ctx.attr_or<int64_t>("storage_order", 0);
  if (so != 0 && so != 1) return ctx.error("attribute 'storage_order' must be 0 or 1, got {}", so);
  FRAME_ASSIGN_OR_RETURN(
      nn::WindowGeometry g,
      nn::resolve_window(ctx, std::span(x.data() + 2, x.size() - 2), *ks, nn::WindowKind::kPool));
  Shape out{x[0], x[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  std::vector<TensorType> types{TensorType{ctx.input_types[0].dtype, out}};
  if (ctx.num_outputs > 1) types.push_back(TensorType{DTypeCode::kInt64, out});
  return types;
}

// The window attributes of max_pool and average_pool.
OpSchemaBuilder& pool_attrs(OpSchemaBuilder& b) {
  return b.attr("auto_pad", AttrType::kString, kAutoPadDoc, std::string("NOTSET"))
      .attr("ceil_mode", AttrType::kInt,
            "round the output size up (last window must start inside the input or begin pad)",
            int64_t{0})
      .optional_attr("dilations", AttrType::kInts, kDilationsDoc)
      .required_attr("kernel_shape", AttrType::kInts, "window size per spatial dim")
      .optional_attr("pads", AttrType::kInts, "[x1_begin, ..., x1_end, ...] (default 0)")
      .optional_attr("strides", AttrType::kInts, "stride per spatial dim (default 1)");
}

FRAME_REGISTER_OP(max_pool)
    .doc(
        "N-d max pooling (ONNX MaxPool opset 22). X: [N, C, D1..Dk] -> Y: [N, C, O1..Ok]; "
        "pads are -inf (never selected). Optional Indices (int64): flat index of the selected "
        "element in X (including the N and C offsets), row-major (storage_order=0) or with "
        "spatial dims column-major (storage_order=1); ties keep the first element in window "
        "order.")
    .input("X", "input [N, C, D1, ..., Dk]", kMaxPoolDTypes, "T")
    .output("Y", "pooled values", kMaxPoolDTypes, "T")
    .optional_output("Indices", "flat int64 index of each selected value",
                     DTypeSet{DTypeCode::kInt64})
    .attr("storage_order", AttrType::kInt, "0 = row major, 1 = column major indices", int64_t{0})
    .with(pool_attrs)
    .shape_infer(infer_pool);

FRAME_REGISTER_OP(average_pool)
    .doc(
        "N-d average pooling (ONNX AveragePool opset 22). X: [N, C, D1..Dk] -> Y. With "
        "count_include_pad=0 the divisor counts window taps inside X; with 1 it counts taps "
        "inside X plus its explicit/auto pads (taps added by ceil_mode past the pads are not "
        "counted, as PyTorch/ORT).")
    .input("X", "input [N, C, D1, ..., Dk]", kFloatDTypes, "T")
    .output("Y", "pooled values", kFloatDTypes, "T")
    .attr("count_include_pad", AttrType::kInt, "count pad taps in the divisor", int64_t{0})
    .with(pool_attrs)
    .shape_infer(infer_pool);

Result<std::vector<TensorType>> infer_global_pool(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(expect_nchw(ctx));
  Shape out = ctx.input_types[0].shape;
  for (size_t i = 2; i < out.size(); ++i) {
    if (out[i] == 0) return ctx.error("cannot pool over empty spatial dim {}", i);
    out[i] = 1;
  }
  return one_output(ctx.input_types[0].dtype, out);
}

FRAME_REGISTER_OP(global_average_pool)
    .doc(
        "Mean over all spatial dims (ONNX GlobalAveragePool opset 22): [N, C, D...] -> "
        "[N, C, 1...].")
    .input("X", "input [N, C, D1, ..., Dk]", kFloatDTypes, "T")
    .output("Y", "[N, C, 1, ..., 1]", kFloatDTypes, "T")
    .shape_infer(infer_global_pool);

FRAME_REGISTER_OP(global_max_pool)
    .doc(
        "Max over all spatial dims (ONNX GlobalMaxPool opset 22): [N, C, D...] -> "
        "[N, C, 1...]; NaN propagates.")
    .input("X", "input [N, C, D1, ..., Dk]", kFloatDTypes, "T")
    .output("Y", "[N, C, 1, ..., 1]", kFloatDTypes, "T")
    .shape_infer(infer_global_pool);

}  // namespace
}  // namespace frame::ops
