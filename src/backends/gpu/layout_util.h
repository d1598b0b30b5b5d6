#pragma once
/// \file
/// Index arithmetic both GPU backends' kernels share (docs/backends/gpu-codegen.md).

#include <cstdint>
#include <span>
#include <vector>

#include "backends/gpu/ew_formulas.h"
#include "frame/core/tensor.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::backends::gpu {

/// Strides of a tensor of shape `s`, right-aligned to the dims `norm` (e.g. a LayerNorm's
/// normalised dims), per dim of `norm`: 0 where `s` broadcasts (has 1 or lacks the dim), as
/// the cpu kernels' expand_to reads it. `s` may carry leading 1s beyond `norm`'s rank.
std::vector<int64_t> aligned_strides(const Shape& s, std::span<const int64_t> norm);

/// The code of ONNX Pad's mode in the generated `frame_pad_src` (0 constant, 1 edge, 2 wrap,
/// 3 reflect).
int pad_mode_code(ops::dm::PadMode m);

/// `frame_pad_src(mode, o, begin, d)` in dialect `d` over the integer type `int_type`: the
/// input index an output index `o` of a dim padded by `begin` in front and of input size `d`
/// reads, or -1 for the constant fill (ops::dm::pad_source_index, the cpu kernels' rule).
std::string pad_source_index_code(Dialect d, std::string_view int_type);

/// Resize's taps (ops::dm::resize_axis_taps) of every output index of every axis as one int32
/// table, computed on the host so the device applies exactly the cpu kernel's weights. Per
/// axis a, per output index o, one record of `record` ints: tap count, outside flag
/// (tf_crop_and_resize extrapolates), the kResizeMaxTaps input indices, then the weights as
/// float bits (one int each) or, with `double_weights`, double bits (two ints each, low first).
/// Axis a's records start at `axis_base[a]`.
struct ResizeTable {
  std::vector<int32_t> data;
  std::vector<int64_t> axis_base;
  int record = 0;
};
ResizeTable resize_table(const ops::dm::ResizeParams& p, const Shape& in, bool double_weights);

}  // namespace frame::backends::gpu
