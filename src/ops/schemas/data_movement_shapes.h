#pragma once
/// \file
/// Family-private helpers of the data-movement ops, shared by their shape functions
/// (src/ops/schemas/data_movement.cpp) and their cpu kernels, so both derive output shapes and
/// index parameters from the same code. A kernel calls them on a copy of its NodeContext
/// whose constant inputs point at the run-time input tensors.

#include <cstdint>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::dm {

/// Most outputs a split node may have (frame has no variadic outputs; ONNX Split has).
inline constexpr int kMaxSplitOutputs = 64;

/// ONNX Reshape output shape of `in` for the shape operand `spec` (0 copies, -1 infers).
Result<Shape> reshape_shape(const NodeContext& ctx, const Shape& in,
                            const std::vector<int64_t>& spec, bool allowzero);

/// The `perm` attribute (default: reversed axes), validated as a permutation of [0, rank).
Result<std::vector<int64_t>> transpose_perm(const NodeContext& ctx, size_t rank);

/// Part sizes of split along its axis: from the `split` input, the num_outputs attribute
/// (ceil-sized parts, last smaller) or, without both, ctx.num_outputs equal parts.
Result<std::vector<int64_t>> split_sizes(const NodeContext& ctx, const Shape& in);

/// Normalised slice: per data axis the first index and the step (0 and 1 when not sliced).
struct SliceParams {
  Shape out_shape;
  std::vector<int64_t> start;
  std::vector<int64_t> step;
};
/// ONNX Slice clamping rules (opset 13) on inputs 1..4 of ctx.
Result<SliceParams> slice_params(const NodeContext& ctx, const Shape& in);

/// "none", "add", "mul", "max" or "min" (scatter ops); error otherwise.
Status check_reduction(const NodeContext& ctx);

enum class PadMode : uint8_t { kConstant, kReflect, kEdge, kWrap };
/// Normalised pad: per data axis the leading pad (may be negative = crop).
struct PadParams {
  Shape out_shape;
  std::vector<int64_t> begin;
  PadMode mode = PadMode::kConstant;
};
/// ONNX Pad (opset 21) from input 1 (pads) and optional input 3 (axes) of ctx.
Result<PadParams> pad_params(const NodeContext& ctx, const Shape& in);

enum class ResizeMode : uint8_t { kNearest, kLinear, kCubic };
enum class CoordMode : uint8_t {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
};
enum class NearestMode : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
/// Everything a resize kernel needs, per data axis (axes not resized: scale 1, roi [0, 1]).
struct ResizeParams {
  Shape out_shape;
  std::vector<double> scale;
  std::vector<double> roi_start;
  std::vector<double> roi_end;
  ResizeMode mode = ResizeMode::kNearest;
  CoordMode coord = CoordMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation_value = 0.0;
};
/// ONNX Resize (opset 19) attributes and inputs 1..3 of ctx.
Result<ResizeParams> resize_params(const NodeContext& ctx, const Shape& in);
/// ONNX Resize coordinate transformation (coordinate_transformation_mode) of output index `o`
/// on axis `a` (input length `in`, output length `out`) to a fractional input coordinate; the
/// one home of these formulas for every backend's resize kernel.
double resize_source_coord(const ResizeParams& p, size_t a, int64_t o, int64_t in, int64_t out);
/// ONNX Resize nearest_mode: the input index for fractional input coordinate `x` (not clamped).
int64_t resize_nearest_index(NearestMode m, double x);
/// Most taps one output index of one axis reads (cubic).
inline constexpr int kResizeMaxTaps = 4;
/// The taps of output index `o` on axis `a` (input length `in`, output length `out`): the
/// (input index, weight) pairs with a nonzero weight, indices clamped to [0, in), written to
/// `idx` / `w` (kResizeMaxTaps each); returns their count. `*outside` is set when
/// tf_crop_and_resize extrapolates there. Nearest: one tap; linear: two (clamped coordinate);
/// cubic: four (Keys' kernel with `cubic_a`, renormalised over the inside ones with
/// exclude_outside). Every backend's resize kernel reads its weights from here.
int resize_axis_taps(const ResizeParams& p, size_t a, int64_t in, int64_t out, int64_t o,
                     int64_t* idx, double* w, bool* outside);
/// ONNX Pad: the input index read for output index `o` on an axis with `begin` padding before
/// it and input length `d`, per `mode` (constant, reflect, edge, wrap); -1 = the constant fill.
/// Negative `begin` crops. One home for every backend's pad kernel.
int64_t pad_source_index(PadMode mode, int64_t o, int64_t begin, int64_t d);

}  // namespace frame::ops::dm
