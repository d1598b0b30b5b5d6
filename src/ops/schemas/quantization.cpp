/// \file
/// Quantization schemas (ONNX "Operators": QuantizeLinear and DequantizeLinear opsets 10/13/19,
/// DynamicQuantizeLinear 11, MatMulInteger 10, ConvInteger 10, QLinearMatMul 10, QLinearConv
/// 10). Integer kernels accumulate in int32; requantization rounds half to even and saturates
/// to the output type. float8 types and the blocked form (block_size, opset 21) are not
/// supported.

#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/nn_geometry.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;
using Types = Result<std::vector<TensorType>>;

constexpr DTypeSet kQ8{DTypeCode::kInt8, DTypeCode::kUInt8};
constexpr DTypeSet kDequantIn{DTypeCode::kInt8, DTypeCode::kUInt8, DTypeCode::kInt32};
constexpr DTypeSet kScale{DTypeCode::kFloat32, DTypeCode::kFloat16, DTypeCode::kBFloat16};
constexpr DTypeSet kF32{DTypeCode::kFloat32};
constexpr DTypeSet kI32{DTypeCode::kInt32};

bool is_scalar_like(const Shape& s) { return numel_of(s) == 1 && s.size() <= 1; }

// Scale/zero-point shape of (De)QuantizeLinear: one element (per tensor) or a 1-D tensor as
// long as input 0's `axis` dim (per axis, ONNX opset 13).
Status check_qparams(const NodeContext& ctx, const char* scale_name, const char* zp_name) {
  if (ctx.attr_or<int64_t>("block_size", 0) != 0) {
    return ctx.error("attribute 'block_size' (blocked quantization) is not supported");
  }
  const Shape& x = ctx.input_types[0].shape;
  const Shape& s = ctx.input_types[1].shape;
  if (!is_scalar_like(s)) {
    FRAME_ASSIGN_OR_RETURN(int64_t axis,
                           normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 1),
                                          static_cast<int64_t>(x.size()), "attribute 'axis'"));
    if (s.size() != 1 || s[0] != x[static_cast<size_t>(axis)]) {
      return ctx.error("input 1 ({}) {} must have one element or shape [{}] (input 0 dim {} of {})",
                       scale_name, shape_to_string(s), x.empty() ? 0 : x[static_cast<size_t>(axis)],
                       axis, shape_to_string(x));
    }
  }
  if (ctx.has_input(2) && ctx.input_types[2].shape != s &&
      !(is_scalar_like(s) && is_scalar_like(ctx.input_types[2].shape))) {
    return ctx.error("input 2 ({}) {} must have the shape of input 1 ({}) {}", zp_name,
                     shape_to_string(ctx.input_types[2].shape), scale_name, shape_to_string(s));
  }
  return Status();
}

Types infer_quantize(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(check_qparams(ctx, "y_scale", "y_zero_point"));
  DTypeCode out = DTypeCode::kUInt8;
  if (ctx.has_input(2)) out = ctx.input_types[2].dtype;
  const int64_t od = ctx.attr_or<int64_t>("output_dtype", 0);
  if (od != 0) {
    const DTypeCode want = od == 2 ? DTypeCode::kUInt8 : DTypeCode::kInt8;
    if (od != 2 && od != 3) {
      return ctx.error("attribute 'output_dtype' must be 2 (uint8) or 3 (int8), got {}", od);
    }
    if (ctx.has_input(2) && want != out) {
      return ctx.error("attribute 'output_dtype' {} disagrees with input 2 (y_zero_point) dtype {}",
                       od, dtype_name(out));
    }
    out = want;
  }
  return one_output(out, ctx.input_types[0].shape);
}

Types infer_dequantize(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(check_qparams(ctx, "x_scale", "x_zero_point"));
  return one_output(ctx.input_types[1].dtype, ctx.input_types[0].shape);
}

Types infer_dynamic_quantize(const NodeContext& ctx) {
  return std::vector<TensorType>{TensorType{DTypeCode::kUInt8, ctx.input_types[0].shape},
                                 TensorType{DTypeCode::kFloat32, {}},
                                 TensorType{DTypeCode::kUInt8, {}}};
}

// The ONNX function body of DynamicQuantizeLinear (opset 11): scale = (max(0, max x) -
// min(0, min x)) / 255, zero point = cast(round(clip(0 - min / scale, 0, 255))), then
// quantize_linear (ARCH-021).
Result<ir::Graph> decompose_dynamic_quantize(const NodeContext& ctx) {
  MicroGraph m(ctx);
  const ir::ValueId x = m.input(0);
  const ir::ValueId qmin = m.scalar(DTypeCode::kFloat32, 0.0);
  const ir::ValueId qmax = m.scalar(DTypeCode::kFloat32, 255.0);
  const ir::AttrMap all{{"keepdims", int64_t{0}}};
  const ir::ValueId lo = m.add("min", {m.add("reduce_min", {x}, all), qmin});
  const ir::ValueId hi = m.add("max", {m.add("reduce_max", {x}, all), qmin});
  const ir::ValueId scale = m.add("div", {m.add("sub", {hi, lo}), qmax});
  const ir::ValueId zp_f = m.add("sub", {qmin, m.add("div", {lo, scale})});
  const ir::ValueId zp =
      m.add("cast", {m.add("round", {m.add("clip", {zp_f, qmin, qmax})})}, {{"to", int64_t{2}}});
  const ir::ValueId y = m.add("quantize_linear", {x, scale, zp});
  return m.finish({y, scale, zp});
}

// Zero point of a MatMulInteger/QLinearMatMul operand: one element, or 1-D of length `len`
// (per row of A / per column of B).
Status check_mm_param(const NodeContext& ctx, size_t i, const char* name, int64_t len,
                      const char* what) {
  if (!ctx.has_input(i)) return Status();
  const Shape& s = ctx.input_types[i].shape;
  if (is_scalar_like(s) || (s.size() == 1 && s[0] == len)) return Status();
  return ctx.error("input {} ({}) {} must have one element or shape [{}] (one per {})", i, name,
                   shape_to_string(s), len, what);
}

// numpy.matmul shape of inputs `a` and `b` (both rank >= 1).
Result<Shape> matmul_shape(const NodeContext& ctx, size_t ia, size_t ib, int64_t* m_out,
                           int64_t* n_out) {
  const Shape& a = ctx.input_types[ia].shape;
  const Shape& b = ctx.input_types[ib].shape;
  if (a.empty() || b.empty()) return ctx.error("inputs {} and {} must have rank >= 1", ia, ib);
  const int64_t ka = a.back();
  const int64_t kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (ka != kb) {
    return ctx.error("inner dims differ: input {} {} has K={}, input {} {} has K={}", ia,
                     shape_to_string(a), ka, ib, shape_to_string(b), kb);
  }
  const std::span<const int64_t> ab(a.data(), a.size() > 2 ? a.size() - 2 : 0);
  const std::span<const int64_t> bb(b.data(), b.size() > 2 ? b.size() - 2 : 0);
  Result<Shape> batch = broadcast_shapes(ab, bb);
  if (!batch.is_ok()) {
    return ctx.error("batch dims of input {} {} and input {} {} do not broadcast", ia,
                     shape_to_string(a), ib, shape_to_string(b));
  }
  Shape out = *batch;
  *m_out = a.size() >= 2 ? a[a.size() - 2] : 1;
  *n_out = b.size() >= 2 ? b.back() : 1;
  if (a.size() >= 2) out.push_back(*m_out);
  if (b.size() >= 2) out.push_back(*n_out);
  return out;
}

Types infer_matmul_integer(const NodeContext& ctx) {
  int64_t m = 0, n = 0;
  FRAME_ASSIGN_OR_RETURN(Shape out, matmul_shape(ctx, 0, 1, &m, &n));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 2, "a_zero_point", m, "row of A"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 3, "b_zero_point", n, "column of B"));
  return one_output(DTypeCode::kInt32, out);
}

Types infer_qlinear_matmul(const NodeContext& ctx) {
  int64_t m = 0, n = 0;
  FRAME_ASSIGN_OR_RETURN(Shape out, matmul_shape(ctx, 0, 3, &m, &n));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 1, "a_scale", m, "row of A"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 2, "a_zero_point", m, "row of A"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 4, "b_scale", n, "column of B"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 5, "b_zero_point", n, "column of B"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 6, "y_scale", 1, "tensor"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 7, "y_zero_point", 1, "tensor"));
  return one_output(ctx.input_types[7].dtype, out);
}

// Output shape of an integer convolution with input `ix` and weights `iw` (ONNX Conv
// geometry: nn::resolve_window).
Result<Shape> qconv_shape(const NodeContext& ctx, size_t ix, size_t iw) {
  const Shape& x = ctx.input_types[ix].shape;
  const Shape& w = ctx.input_types[iw].shape;
  if (x.size() < 3) return ctx.error("input {} (x) expects rank >= 3, got {}", ix, x.size());
  if (w.size() != x.size()) {
    return ctx.error("input {} (w) expects rank {}, got {}", iw, x.size(), w.size());
  }
  const int64_t group = ctx.attr_or<int64_t>("group", 1);
  if (group < 1) return ctx.error("attribute 'group' must be >= 1, got {}", group);
  if (x[1] != w[1] * group || w[0] % group != 0) {
    return ctx.error("channel mismatch: x {} and w {} with group {}", shape_to_string(x),
                     shape_to_string(w), group);
  }
  const std::span<const int64_t> ws(w.data() + 2, w.size() - 2);
  if (const auto* ks = ctx.attr<std::vector<int64_t>>("kernel_shape");
      ks != nullptr && !ks->empty() && !std::equal(ks->begin(), ks->end(), ws.begin(), ws.end())) {
    return ctx.error("attribute 'kernel_shape' {} differs from w's spatial dims {}",
                     shape_to_string(*ks), shape_to_string(ws));
  }
  FRAME_ASSIGN_OR_RETURN(
      nn::WindowGeometry g,
      nn::resolve_window(ctx, std::span(x.data() + 2, x.size() - 2), ws, nn::WindowKind::kConv));
  Shape out{x[0], w[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  return out;
}

Types infer_conv_integer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(Shape out, qconv_shape(ctx, 0, 1));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 2, "x_zero_point", 1, "tensor"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 3, "w_zero_point", out[1], "output channel"));
  return one_output(DTypeCode::kInt32, out);
}

Types infer_qlinear_conv(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(Shape out, qconv_shape(ctx, 0, 3));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 1, "x_scale", 1, "tensor"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 2, "x_zero_point", 1, "tensor"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 4, "w_scale", out[1], "output channel"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 5, "w_zero_point", out[1], "output channel"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 6, "y_scale", 1, "tensor"));
  FRAME_RETURN_IF_ERROR(check_mm_param(ctx, 7, "y_zero_point", 1, "tensor"));
  if (ctx.has_input(8)) {
    const Shape& b = ctx.input_types[8].shape;
    if (b.size() != 1 || b[0] != out[1]) {
      return ctx.error("input 8 (B) expects shape [{}], got {}", out[1], shape_to_string(b));
    }
  }
  return one_output(ctx.input_types[7].dtype, out);
}

// Quantized operand `name` of a QLinear op, then its `name`_scale (f32) and `name`_zero_point
// (tied to the operand's dtype by `type_var`); `scale_note` says what the parameters may hold.
auto quantized_input(const char* name, const char* doc, const char* type_var,
                     const char* scale_note = "") {
  return [=](OpSchemaBuilder& b) {
    b.input(name, doc, kQ8, type_var)
        .input(fmt::format("{}_scale", name), fmt::format("scale of {}{}", name, scale_note), kF32)
        .input(fmt::format("{}_zero_point", name),
               fmt::format("zero point of {}{}", name, scale_note), kQ8, type_var);
  };
}

// y_scale and y_zero_point of a QLinear op: y's dtype is that of y_zero_point.
OpSchemaBuilder& output_quantization(OpSchemaBuilder& b) {
  return b.input("y_scale", "scale of y", kF32).input("y_zero_point", "zero point of y", kQ8, "T3");
}

// The conv attributes of conv_integer and qlinear_conv.
OpSchemaBuilder& conv_attrs(OpSchemaBuilder& b) {
  return b
      .attr("auto_pad", AttrType::kString, "NOTSET, SAME_UPPER, SAME_LOWER or VALID",
            std::string("NOTSET"))
      .optional_attr("dilations", AttrType::kInts, "dilation per spatial dim (default 1)")
      .attr("group", AttrType::kInt, "number of channel groups", int64_t{1})
      .optional_attr("kernel_shape", AttrType::kInts, "must match w's spatial dims if given")
      .optional_attr("pads", AttrType::kInts, "[x1_begin, ..., x1_end, ...] (default 0)")
      .optional_attr("strides", AttrType::kInts, "stride per spatial dim (default 1)");
}

}  // namespace

FRAME_REGISTER_OP(quantize_linear)
    .doc(
        "ONNX QuantizeLinear (opsets 10, 13, 19): y = saturate(round_half_even(x / y_scale) + "
        "y_zero_point) to the dtype of y_zero_point (u8 when absent, or `output_dtype`). "
        "y_scale/y_zero_point hold one element (per tensor) or are 1-D along `axis` (per "
        "axis). Shapes: x [...] -> y [...].")
    .input("x", "values to quantize", kScale, "T1")
    .input("y_scale", "scale: one element or [x.shape[axis]]", kScale, "T1")
    .optional_input("y_zero_point", "zero point, shape of y_scale (default 0 of u8)", kQ8)
    .output("y", "quantized values (u8 or i8)", kQ8)
    .attr("axis", AttrType::kInt, "quantization axis of a 1-D scale", int64_t{1})
    .attr("saturate", AttrType::kInt, "float8 outputs only; integer outputs always saturate",
          int64_t{1})
    .attr("block_size", AttrType::kInt, "blocked quantization; only 0 is supported", int64_t{0})
    .attr("output_dtype", AttrType::kInt, "ONNX dtype of y (0: from y_zero_point)", int64_t{0})
    .shape_infer(infer_quantize);

FRAME_REGISTER_OP(dequantize_linear)
    .doc(
        "ONNX DequantizeLinear (opsets 10, 13, 19): y = (x - x_zero_point) * x_scale in the "
        "dtype of x_scale. Per tensor or per `axis` as quantize_linear. Shapes: x [...] -> "
        "y [...].")
    .input("x", "quantized values (i8, u8 or i32)", kDequantIn, "T")
    .input("x_scale", "scale: one element or [x.shape[axis]]", kScale)
    .optional_input("x_zero_point", "zero point, shape of x_scale (default 0)", kDequantIn, "T")
    .output("y", "real values, dtype of x_scale", kScale)
    .attr("axis", AttrType::kInt, "quantization axis of a 1-D scale", int64_t{1})
    .attr("block_size", AttrType::kInt, "blocked quantization; only 0 is supported", int64_t{0})
    .shape_infer(infer_dequantize);

FRAME_REGISTER_OP(dynamic_quantize_linear)
    .doc(
        "ONNX DynamicQuantizeLinear (opset 11): u8 quantization with a scale and zero point "
        "computed from the data: scale = (max(0, max x) - min(0, min x)) / 255, zero_point = "
        "saturate(round_half_even(0 - min(0, min x) / scale)), y = quantize_linear(x, scale, "
        "zero_point). x [...] f32 -> y [...] u8, y_scale [] f32, y_zero_point [] u8. An all-zero "
        "x (scale 0) gives y = 0 and zero point 0 in the cpu kernel.")
    .input("x", "values to quantize", kF32)
    .output("y", "quantized values", DTypeSet{DTypeCode::kUInt8})
    .output("y_scale", "scalar scale", kF32)
    .output("y_zero_point", "scalar zero point", DTypeSet{DTypeCode::kUInt8})
    .shape_infer(infer_dynamic_quantize)
    .decomposition(decompose_dynamic_quantize);

FRAME_REGISTER_OP(matmul_integer)
    .doc(
        "ONNX MatMulInteger (opset 10): Y = (A - a_zero_point) x (B - b_zero_point) with "
        "numpy.matmul shapes ([..., M, K] x [..., K, N] -> [..., M, N]), accumulated in int32. "
        "a_zero_point: one element or [M] (per row); b_zero_point: one element or [N] (per "
        "column).")
    .input("A", "left operand (u8 or i8)", kQ8, "T1")
    .input("B", "right operand (u8 or i8)", kQ8, "T2")
    .optional_input("a_zero_point", "zero point of A (default 0)", kQ8, "T1")
    .optional_input("b_zero_point", "zero point of B (default 0)", kQ8, "T2")
    .output("Y", "int32 product", kI32)
    .shape_infer(infer_matmul_integer);

FRAME_REGISTER_OP(qlinear_matmul)
    .doc(
        "ONNX QLinearMatMul (opset 10): acc = (a - a_zero_point) x (b - b_zero_point) in int32 "
        "(numpy.matmul shapes), y = saturate(round_half_even(acc * a_scale * b_scale / "
        "y_scale) + y_zero_point) in the dtype of y_zero_point. a's parameters: one element or "
        "[M] (per row); b's: one element or [N] (per column); y's: one element.")
    .with(quantized_input("a", "left operand (u8 or i8)", "T1"))
    .with(quantized_input("b", "right operand (u8 or i8)", "T2"))
    .with(output_quantization)
    .output("y", "quantized product", kQ8, "T3")
    .shape_infer(infer_qlinear_matmul);

FRAME_REGISTER_OP(conv_integer)
    .doc(
        "ONNX ConvInteger (opset 10): Conv geometry (pads, strides, dilations, group, "
        "auto_pad) over (x - x_zero_point) and (w - w_zero_point), accumulated in int32; "
        "padding contributes 0. x [N, C, D...] and w [M, C/group, k...] -> y [N, M, O...] "
        "i32. x_zero_point: one element; w_zero_point: one element or [M] (per channel).")
    .input("x", "input (u8 or i8)", kQ8, "T1")
    .input("w", "weights (u8 or i8)", kQ8, "T2")
    .optional_input("x_zero_point", "zero point of x (default 0)", kQ8, "T1")
    .optional_input("w_zero_point", "zero point of w (default 0)", kQ8, "T2")
    .output("y", "int32 result", kI32)
    .with(conv_attrs)
    .shape_infer(infer_conv_integer);

FRAME_REGISTER_OP(qlinear_conv)
    .doc(
        "ONNX QLinearConv (opset 10): acc = conv_integer(x, w, x_zero_point, w_zero_point) + "
        "B (int32), y = saturate(round_half_even(acc * x_scale * w_scale[m] / y_scale) + "
        "y_zero_point) in the dtype of y_zero_point. w_scale/w_zero_point: one element or [M] "
        "(per output channel). Conv attributes as conv_integer.")
    .with(quantized_input("x", "input (u8 or i8)", "T1"))
    .with(quantized_input("w", "weights (u8 or i8)", "T2", ": one element or [M]"))
    .with(output_quantization)
    .optional_input("B", "int32 bias [M] in units of x_scale * w_scale", kI32)
    .output("y", "quantized result", kQ8, "T3")
    .with(conv_attrs)
    .shape_infer(infer_qlinear_conv);

}  // namespace frame::ops
