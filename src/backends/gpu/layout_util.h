#pragma once
/// \file
/// Index arithmetic both GPU backends' kernels share (docs/backends/gpu-codegen.md).

#include <cstdint>
#include <functional>
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

/// The meta values of a resize kernel after the rank: the output dims[r], the input's
/// contiguous strides[r], each axis's record offset in `table`[r], the record size, and the
/// extrapolation value converted to `dtype` as the cpu kernel converts it, as its storage bits
/// (low 32, high 32; nearest copies bits, the float modes take it as a parameter). Errors: those
/// of the conversion.
Result<std::vector<int64_t>> resize_meta(const ops::dm::ResizeParams& p, const Shape& in,
                                         const ResizeTable& table, DTypeCode dtype);

/// The error of an index found out of range on the device, from its flat position in the
/// indices and its value: the cpu kernels' messages (src/backends/cpu/kernels/
/// data_movement_index.cpp) with the node's prefix.
using IndexError = std::function<Status(int64_t position, int64_t value)>;

/// Gather / GatherElements: "input 1 (indices) value V at P out of range [-dim, dim - 1]".
IndexError index_range_error(const ops::NodeContext& ctx, int64_t dim);

/// GatherND's geometry (ONNX GatherND: index tuples of the last dim of indices, k long, after
/// batch_dims leading batch dims): elements per tuple, tuples per batch (at least 1), the batch
/// stride, and the k data dims and strides a tuple indexes.
struct GatherNdGeometry {
  int64_t batch_dims = 0, k = 0, slice = 1, per_batch = 1, batch_stride = 0;
  std::vector<int64_t> dims, strides;
};
/// Errors: kInvalidArgument naming the node for a batch_dims or tuple length the ranks refuse.
Result<GatherNdGeometry> gather_nd_geometry(const ops::NodeContext& ctx);

/// GatherND: "input 1 (indices) value V out of range [-dim, dim - 1] for data dim D".
IndexError gather_nd_error(const ops::NodeContext& ctx, const GatherNdGeometry& g);

}  // namespace frame::backends::gpu
