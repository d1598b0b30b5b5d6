// intel_gpu kernel of resize (ONNX Resize, opset 19: nearest, linear, cubic, every coordinate
// transformation mode): the taps of every output index of every axis are computed on the host
// by the cpu kernel's rule (ops::dm::resize_axis_taps) into a table in `meta`
// (gpu::resize_table), so the device applies exactly the cpu's weights; each work-item sums
// its element's taps over the product of its axes' taps. Nearest runs for every dtype (an
// element copy by size), linear and cubic for the float dtypes.

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/gpu/layout_util.h"
#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::backends::intel_gpu {
namespace {

using ops::NodeContext;
using ops::dm::ResizeMode;

constexpr int kTaps = ops::dm::kResizeMaxTaps;

// meta: r, out dims[r], in strides[r], axis record offsets[r] (from the table's start), the
// record size, the extrapolation value's storage bits (low, high), then the table.
constexpr std::string_view kHeader = R"(
  const int i = (int)get_global_id(0);
  const int r = m[0];
  __global const int* od = m + 1;
  __global const int* is = od + r;
  __global const int* base = is + r;
  const int rec = base[r];
  __global const int* table = base + r + 3;
  int at[8];
  int rem = i, outside = 0, empty = 0;
  for (int d = r - 1; d >= 0; --d) {
    at[d] = base[d] + rec * (rem % od[d]);
    rem /= od[d];
    outside |= table[at[d] + 1];
    empty |= table[at[d]] == 0;
  }
)";

// Nearest, by element size: the single tap of each axis.
std::string nearest_source(size_t elem_bytes) {
  const std::string_view e = cl_storage_type(elem_bytes);
  return fmt::format(
      "__kernel void frame_resize(__global const {0}* in0, __global {0}* out, const int rank, "
      "__global const int* m) {{{1}"
      "  if (outside) {{\n"
      "    const ulong bits = ((ulong)(uint)base[r + 2] << 32) | (ulong)(uint)base[r + 1];\n"
      "    out[i] = ({0})bits;\n"
      "    return;\n"
      "  }}\n"
      "  (void)empty;\n"
      "  int off = 0;\n"
      "  for (int d = 0; d < r; ++d) off += table[at[d] + 2] * is[d];\n"
      "  out[i] = in0[off];\n"
      "}}\n",
      e, kHeader);
}

// Linear / cubic over a float dtype: the weighted sum over every combination of the axes' taps
// (an odometer over the per-axis counts), in the compute type T.
std::string interpolate_source(const ClType& t) {
  const std::string weight =
      t.fp64 ? fmt::format(
                   "as_double((int2)(table[at[d] + {0} + 2 * k[d]], table[at[d] + {0} + "
                   "2 * k[d] + 1]))",
                   2 + kTaps)
             : fmt::format("as_float(table[at[d] + {} + k[d]])", 2 + kTaps);
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_resize(__global const {0}* in0, __global {0}* out, const int "
             "rank, __global const int* m, const T extrapolation) {{{1}"
             "  if (outside) {{\n    {2}\n    return;\n  }}\n"
             // An axis whose taps all weigh 0 (exclude_outside renormalising a zero sum) has no
             // taps: the sum is empty, 0, as on cpu.
             "  if (empty) {{\n    {6}\n    return;\n  }}\n"
             "  int k[8];\n"
             "  for (int d = 0; d < r; ++d) k[d] = 0;\n"
             "  T acc = (T)0;\n"
             "  for (;;) {{\n"
             "    T w = (T)1;\n"
             "    int off = 0;\n"
             "    for (int d = 0; d < r; ++d) {{\n"
             "      w *= (T){3};\n"
             "      off += table[at[d] + 2 + k[d]] * is[d];\n"
             "    }}\n"
             "    acc += w * {4};\n"
             "    int d = r - 1;\n"
             "    while (d >= 0 && ++k[d] == table[at[d]]) {{ k[d] = 0; --d; }}\n"
             "    if (d < 0) break;\n"
             "  }}\n"
             "  {5}\n"
             "}}\n",
             t.pointee, kHeader, cl_store(t, "out", "i", "extrapolation"), weight,
             cl_load(t, "in0", "off"), cl_store(t, "out", "i", "acc"),
             cl_store(t, "out", "i", "(T)0"));
}

Status resize_accepts(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.constant_input(k) == nullptr) {
      return unimplemented("resize input {} is not a constant", k);
    }
  }
  const Shape& in = ctx.input_types[0].shape;
  if (in.size() > 8) return unimplemented("resize of rank {}", in.size());
  FRAME_ASSIGN_OR_RETURN(ops::dm::ResizeParams p, ops::dm::resize_params(ctx, in));
  if (p.mode != ResizeMode::kNearest) {
    const ClType* t = cl_type(ctx.input_types[0].dtype);
    if (t == nullptr) return unimplemented("linear / cubic resize of a non-float dtype");
    if (t->fp64 && !selected_device()->fp64) {
      return unimplemented("the OpenCL device '{}' has no cl_khr_fp64",
                           selected_device()->device_name);
    }
  }
  return Status();
}

Result<std::shared_ptr<void>> resize_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(resize_accepts(ctx).with_prefix(where(ctx)));
  const Shape& in = ctx.input_types[0].shape;
  const DTypeCode dt = ctx.input_types[0].dtype;
  FRAME_ASSIGN_OR_RETURN(ops::dm::ResizeParams p, ops::dm::resize_params(ctx, in));
  const bool nearest = p.mode == ResizeMode::kNearest;
  const ClType* t = cl_type(dt);
  const gpu::ResizeTable table = gpu::resize_table(p, in, !nearest && t->fp64);
  std::vector<int64_t> meta{static_cast<int64_t>(in.size())};
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> rest, gpu::resize_meta(p, in, table, dt));
  meta.insert(meta.end(), rest.begin(), rest.end());
  meta.insert(meta.end(), table.data.begin(), table.data.end());
  LaunchSpec spec;
  spec.source = nearest ? nearest_source(dtype_size(dt)) : interpolate_source(*t);
  spec.options = nearest ? std::string_view() : cl_build_options(*t);
  spec.name = "frame_resize";
  spec.out_shape = p.out_shape;
  spec.in_elem_bytes = dtype_size(dt);
  spec.out_elem_bytes = spec.in_elem_bytes;
  spec.num_inputs = 1;  // roi, scales and sizes stay on the host
  spec.raw_meta = std::move(meta);
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  if (!nearest) FRAME_RETURN_IF_ERROR(set_t_arg(*l, *t, 4, p.extrapolation_value));
  return std::shared_ptr<void>(std::move(l));
}

}  // namespace

FRAME_REGISTER_KERNEL(resize, "intel_gpu", run_launch)
    .prepare(resize_prepare)
    .accepts(resize_accepts)
    .dtypes(kAllDTypes);

}  // namespace frame::backends::intel_gpu
