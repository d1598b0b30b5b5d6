// Signal-processing schemas (ONNX opset 17): HannWindow, HammingWindow, BlackmanWindow,
// MelWeightMatrix, DFT and STFT. The windows decompose into range/mul/cos/sub/add (ARCH-021, the
// ONNX function body with the angle increment folded from the constant size).

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "frame/ops/elementwise.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;

constexpr DTypeSet kSignalIntDTypes{DTypeCode::kInt32, DTypeCode::kInt64};

// The output dtype named by attribute `output_datatype` (ONNX TensorProto code, default 1 =
// float); any numeric frame dtype.
Result<DTypeCode> output_datatype(const NodeContext& ctx) {
  Result<DTypeCode> d = ew::dtype_from_onnx(ctx.attr_or<int64_t>("output_datatype", 1));
  if (!d.is_ok()) return ctx.error("attribute 'output_datatype': {}", d.status().message());
  if (!kNumericDTypes.contains(*d)) {
    return ctx.error("attribute 'output_datatype' must name a numeric dtype, got {}",
                     dtype_name(*d));
  }
  return d;
}

// The value of constant scalar integer input `i` (ARCH-044: it decides the output shape).
Result<int64_t> constant_scalar(const NodeContext& ctx, size_t i, std::string_view name) {
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> v, constant_ints(ctx, i, name));
  if (v.size() != 1)
    return ctx.error("input {} ({}) must be a scalar, got {} values", i, name, v.size());
  return v[0];
}

Result<std::vector<TensorType>> infer_window(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(DTypeCode d, output_datatype(ctx));
  FRAME_ASSIGN_OR_RETURN(int64_t size, constant_scalar(ctx, 0, "size"));
  if (size < 0) return ctx.error("input 0 (size) must be >= 0, got {}", size);
  return one_output(d, {size});
}

// Generalised cosine window coefficients: w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N)
// (ONNX HannWindow, HammingWindow, BlackmanWindow).
struct WindowCoeffs {
  double a0, a1, a2;
};
WindowCoeffs window_coeffs(std::string_view op) {
  if (op == "hamming_window") return {25.0 / 46.0, 21.0 / 46.0, 0.0};
  if (op == "blackman_window") return {0.42, 0.5, 0.08};
  return {0.5, 0.5, 0.0};
}

// The ONNX function body with the constant size folded: range in f32 (f64 for f64 outputs),
// one multiply by the angle increment 2 pi / N computed in double, cos, then a cast.
Result<ir::Graph> decompose_window(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(DTypeCode out, output_datatype(ctx));
  FRAME_ASSIGN_OR_RETURN(int64_t size, constant_scalar(ctx, 0, "size"));
  const DTypeCode cd = out == DTypeCode::kFloat64 ? out : DTypeCode::kFloat32;
  const bool periodic = ctx.attr_or<int64_t>("periodic", 1) != 0;
  const int64_t n = periodic ? size : size - 1;
  const WindowCoeffs c = window_coeffs(ctx.op);
  MicroGraph m(ctx);
  ir::ValueId k = m.add(
      "range", {m.scalar(cd, 0.0), m.scalar(cd, static_cast<double>(size)), m.scalar(cd, 1.0)});
  ir::ValueId w;
  if (n == 0) {
    w = m.add("add", {m.add("mul", {k, m.scalar(cd, 0.0)}), m.scalar(cd, 1.0)});
  } else {
    const double inc = 2.0 * std::numbers::pi / static_cast<double>(n);
    ir::ValueId ang = m.add("mul", {k, m.scalar(cd, inc)});
    w = m.add("sub", {m.scalar(cd, c.a0), m.add("mul", {m.scalar(cd, c.a1), m.add("cos", {ang})})});
    if (c.a2 != 0.0) {
      ir::ValueId ang2 = m.add("mul", {k, m.scalar(cd, 2.0 * inc)});
      w = m.add("add", {w, m.add("mul", {m.scalar(cd, c.a2), m.add("cos", {ang2})})});
    }
  }
  if (out != cd) w = m.add("cast", {w}, {{"to", ctx.attr_or<int64_t>("output_datatype", 1)}});
  return m.finish({w});
}

Result<std::vector<TensorType>> infer_mel(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(DTypeCode d, output_datatype(ctx));
  FRAME_ASSIGN_OR_RETURN(int64_t bins, constant_scalar(ctx, 0, "num_mel_bins"));
  FRAME_ASSIGN_OR_RETURN(int64_t dft, constant_scalar(ctx, 1, "dft_length"));
  if (bins < 1) return ctx.error("input 0 (num_mel_bins) must be >= 1, got {}", bins);
  if (dft < 1) return ctx.error("input 1 (dft_length) must be >= 1, got {}", dft);
  for (size_t i = 2; i < 5; ++i) {
    if (ctx.input_types[i].shape.size() > 1 || numel_of(ctx.input_types[i].shape) != 1) {
      return ctx.error("input {} must be a scalar, got {}", i,
                       shape_to_string(ctx.input_types[i].shape));
    }
  }
  return one_output(d, {dft / 2 + 1, bins});
}

#define FRAME_WINDOW_SCHEMA(name, onnx_name, formula)                                          \
  FRAME_REGISTER_OP(name)                                                                      \
      .doc("ONNX " onnx_name " (opset 17): " formula                                           \
           " for k in [0, size), N = size (periodic=1) or size - 1 (periodic=0); a symmetric " \
           "window of size 1 is [1]. Computed in double, rounded once to output_datatype.")    \
      .input("size", "int32/int64 scalar window length (constant)", kSignalIntDTypes)          \
      .shape_determining()                                                                     \
      .output("output", "[size] window", kNumericDTypes)                                       \
      .attr("periodic", AttrType::kInt, "1 = periodic (N = size), 0 = symmetric", int64_t{1})  \
      .attr("output_datatype", AttrType::kInt, "ONNX TensorProto data type (1 = float)",       \
            int64_t{1})                                                                        \
      .shape_infer(infer_window)                                                               \
      .decomposition(decompose_window)

FRAME_WINDOW_SCHEMA(hann_window, "HannWindow", "w[k] = 0.5 - 0.5 cos(2 pi k / N)");
FRAME_WINDOW_SCHEMA(hamming_window, "HammingWindow", "w[k] = 25/46 - 21/46 cos(2 pi k / N)");
FRAME_WINDOW_SCHEMA(blackman_window, "BlackmanWindow",
                    "w[k] = 0.42 - 0.5 cos(2 pi k / N) + 0.08 cos(4 pi k / N)");

#undef FRAME_WINDOW_SCHEMA

FRAME_REGISTER_OP(mel_weight_matrix)
    .doc(
        "ONNX MelWeightMatrix (opset 17): [dft_length / 2 + 1, num_mel_bins] triangular "
        "filters. mel(f) = 2595 log10(1 + f / 700); num_mel_bins + 2 points spaced by "
        "(mel(upper) - mel(lower)) / (num_mel_bins + 2) from mel(lower) are mapped back to Hz "
        "and to bins floor((dft_length + 1) * f / sample_rate); filter i rises linearly from "
        "bin b[i] to 1 at b[i+1] and falls to b[i+2] (a zero-width rise puts 1 at b[i+1]). "
        "A bin beyond dft_length / 2 is an error. Computed in double.")
    .input("num_mel_bins", "int scalar (constant)", kSignalIntDTypes, "T1")
    .shape_determining()
    .input("dft_length", "int scalar (constant)", kSignalIntDTypes, "T1")
    .shape_determining()
    .input("sample_rate", "int scalar, Hz", kSignalIntDTypes, "T1")
    .input("lower_edge_hertz", "float scalar", kFloatDTypes, "T2")
    .input("upper_edge_hertz", "float scalar", kFloatDTypes, "T2")
    .output("output", "[dft_length / 2 + 1, num_mel_bins]", kNumericDTypes)
    .attr("output_datatype", AttrType::kInt, "ONNX TensorProto data type (1 = float)", int64_t{1})
    .shape_infer(infer_mel);

// DFT: input [batch, d1, ..., dn, 1 or 2]; the axis must be a signal dim, not the last one.
Result<int64_t> dft_axis(const NodeContext& ctx) {
  const int64_t r = ctx.input_types[0].rank();
  int64_t axis = ctx.attr_or<int64_t>("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 0 || axis > r - 2) {
    return ctx.error("attribute 'axis' {} must name a dim in [0, {}] (not the last, complex dim)",
                     ctx.attr_or<int64_t>("axis", 1), r - 2);
  }
  return axis;
}

Result<std::vector<TensorType>> infer_dft(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() < 3 || (x.shape.back() != 1 && x.shape.back() != 2)) {
    return ctx.error("input 0 (input) expects [batch, d1, ..., 1 or 2] (real or complex), got {}",
                     shape_to_string(x.shape));
  }
  FRAME_ASSIGN_OR_RETURN(int64_t axis, dft_axis(ctx));
  int64_t n = x.shape[static_cast<size_t>(axis)];
  if (ctx.has_input(1)) {
    FRAME_ASSIGN_OR_RETURN(n, constant_scalar(ctx, 1, "dft_length"));
    if (n < 1) return ctx.error("input 1 (dft_length) must be >= 1, got {}", n);
  }
  const bool onesided = ctx.attr_or<int64_t>("onesided", 0) != 0;
  if (onesided && ctx.attr_or<int64_t>("inverse", 0) != 0) {
    return ctx.error("onesided=1 with inverse=1 is not supported");
  }
  Shape out = x.shape;
  out[static_cast<size_t>(axis)] = onesided ? n / 2 + 1 : n;
  out.back() = 2;
  return one_output(x.dtype, out);
}

FRAME_REGISTER_OP(dft)
    .doc(
        "ONNX DFT (opset 17): discrete Fourier transform along `axis` of input [batch, d1, "
        "..., dn, 1 (real) or 2 (complex)]; output [..., 2] complex. dft_length (optional "
        "constant) zero-pads or truncates the axis to n. X[k] = sum_j x[j] exp(-2 pi i j k / "
        "n); inverse=1 uses exp(+...) and divides by n; onesided=1 keeps bins [0, n/2] "
        "(forward only). Computed in double with exact twiddles.")
    .input("input", "[batch, d1, ..., dn, 1 or 2]", kFloatDTypes, "T")
    .optional_input("dft_length", "int scalar (constant), transform length", kSignalIntDTypes)
    .shape_determining()
    .output("output", "[batch, ..., n (or n/2 + 1 onesided), ..., 2]", kFloatDTypes, "T")
    .attr("axis", AttrType::kInt, "transformed dim, in [0, rank - 2] (negative from the back)",
          int64_t{1})
    .attr("inverse", AttrType::kInt, "1 = inverse transform (scaled by 1/n)", int64_t{0})
    .attr("onesided", AttrType::kInt, "1 = keep only bins [0, n/2]", int64_t{0})
    .shape_infer(infer_dft);

// STFT frame length: the frame_length input, else the window's length.
Result<int64_t> stft_frame_length(const NodeContext& ctx) {
  const bool has_window = ctx.has_input(2);
  if (has_window && ctx.input_types[2].rank() != 1) {
    return ctx.error("input 2 (window) expects rank 1, got {}",
                     shape_to_string(ctx.input_types[2].shape));
  }
  if (ctx.has_input(3)) {
    FRAME_ASSIGN_OR_RETURN(int64_t len, constant_scalar(ctx, 3, "frame_length"));
    if (has_window && ctx.input_types[2].shape[0] != len) {
      return ctx.error("input 2 (window) has length {}, frame_length is {}",
                       ctx.input_types[2].shape[0], len);
    }
    return len;
  }
  if (!has_window) return ctx.error("one of input 2 (window) and input 3 (frame_length) is needed");
  return ctx.input_types[2].shape[0];
}

Result<std::vector<TensorType>> infer_stft(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() != 3 || (x.shape[2] != 1 && x.shape[2] != 2)) {
    return ctx.error("input 0 (signal) expects [batch, length, 1 or 2], got {}",
                     shape_to_string(x.shape));
  }
  FRAME_ASSIGN_OR_RETURN(int64_t step, constant_scalar(ctx, 1, "frame_step"));
  FRAME_ASSIGN_OR_RETURN(int64_t len, stft_frame_length(ctx));
  if (step < 1) return ctx.error("input 1 (frame_step) must be >= 1, got {}", step);
  if (len < 1 || len > x.shape[1]) {
    return ctx.error("frame length {} must be in [1, signal length {}]", len, x.shape[1]);
  }
  const bool onesided = ctx.attr_or<int64_t>("onesided", 1) != 0;
  const int64_t frames = (x.shape[1] - len) / step + 1;
  return one_output(x.dtype, {x.shape[0], frames, onesided ? len / 2 + 1 : len, 2});
}

FRAME_REGISTER_OP(stft)
    .doc(
        "ONNX STFT (opset 17): short-time Fourier transform of signal [batch, length, 1 or 2]. "
        "Frame f covers samples [f * frame_step, f * frame_step + L) with L = frame_length "
        "(or the window's length), multiplied by `window` when given, and is transformed by a "
        "length-L DFT; frames = (length - L) / frame_step + 1. Output [batch, frames, L/2 + 1 "
        "(onesided=1, default) or L, 2]. Computed in double with exact twiddles.")
    .input("signal", "[batch, length, 1 or 2]", kFloatDTypes, "T")
    .input("frame_step", "int scalar (constant), hop between frames", kSignalIntDTypes, "T1")
    .shape_determining()
    .optional_input("window", "[L] window applied to every frame", kFloatDTypes, "T")
    .optional_input("frame_length", "int scalar (constant) L", kSignalIntDTypes, "T1")
    .shape_determining()
    .output("output", "[batch, frames, bins, 2]", kFloatDTypes, "T")
    .attr("onesided", AttrType::kInt, "1 = keep only bins [0, L/2]", int64_t{1})
    .shape_infer(infer_stft);

}  // namespace
}  // namespace frame::ops
