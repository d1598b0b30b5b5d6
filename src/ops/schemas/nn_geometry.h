#pragma once
/// \file
/// Spatial geometry of convolution and pooling nodes (ONNX Conv/ConvTranspose/MaxPool/
/// AveragePool, opset 22): output sizes and effective pads from the attributes `kernel_shape`,
/// `strides`, `dilations`, `pads`, `auto_pad`, `ceil_mode`, `output_padding`, `output_shape`.
/// Shared by the schemas (shape inference) and the cpu kernels so both agree on every pad.

#include <cstdint>
#include <span>
#include <vector>

#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::ops::nn {

/// Which formula the output size follows.
enum class WindowKind : uint8_t {
  kConv,           ///< Conv: floor((in + pads - dilated_kernel) / stride) + 1
  kPool,           ///< MaxPool/AveragePool: as kConv, `ceil_mode` rounds up
  kConvTranspose,  ///< ConvTranspose: stride*(in-1) + output_padding + dilated_kernel - pads
};

/// Resolved per-spatial-dim geometry (all vectors have `rank` entries).
struct WindowGeometry {
  int64_t rank = 0;
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;
  /// ConvTranspose only: the extra size added at the end of each dim.
  std::vector<int64_t> output_padding;
};

/// Resolves the geometry of a node from its attributes. `in` are the input spatial dims,
/// `kernel` the kernel spatial dims (from W or kernel_shape). Errors (naming the node):
/// attribute lengths that disagree with the spatial rank, non-positive strides/dilations,
/// negative pads, an unknown auto_pad, or a non-positive output size.
Result<WindowGeometry> resolve_window(const NodeContext& ctx, std::span<const int64_t> in,
                                      std::span<const int64_t> kernel, WindowKind kind);

}  // namespace frame::ops::nn

namespace frame::ops::nn {

/// Axes reduced by a ReduceXxx node (ONNX ReduceSum opset 18 semantics for every reduction):
/// taken from input 1 (`axes`, int64 1-D) when `axes_input` is non-null, else from the `axes`
/// ints attribute. Empty axes reduce every dim unless `noop_with_empty_axes` is 1, which
/// reduces none. Returns a per-dim flag. Errors: an axis outside [-rank, rank-1], or repeated.
Result<std::vector<bool>> resolve_reduce_axes(const NodeContext& ctx, int64_t rank,
                                              const Tensor* axes_input);

}  // namespace frame::ops::nn
