// intel_gpu kernels of the data-movement ops for every dtype: identity, expand, tile,
// depth_to_space, space_to_depth, concat, gather, pad, trilu and where move elements by their size
// (uchar / ushort / uint / ulong storage, one program per size), so integers and bool run like
// floats; cast converts between any two dtypes with the cpu kernel's rounding and saturation
// (ops::ew::CastOp). Shape-determining inputs must be constants, as for the cpu kernels' shape
// functions (ARCH-044). Constant gather indices are validated once at prepare (an out-of-range
// index is an error naming the node) and live in `meta`; indices computed at run time are
// checked on the device and an out-of-range one is reported at the run's end (Launch::
// device_error) with the cpu kernel's message. Index
// parameters come from the code the shape functions use (ops/schemas/data_movement_shapes.h).

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/gpu/layout_util.h"
#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/data_movement_shapes.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::intel_gpu {
namespace {

using ops::NodeContext;

// Output 0's type from the op's shape function (the same code the cpu path runs).
Result<ir::TensorType> inferred_type(const NodeContext& ctx) {
  const ops::OpSchema* schema =
      ctx.schema != nullptr ? ctx.schema : ops::OpRegistry::global().find(ctx.op);
  if (schema == nullptr) return ctx.error("intel_gpu: op '{}' has no schema", ctx.op);
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, schema->infer(ctx));
  return types.at(0);
}

Result<Shape> inferred_shape(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ir::TensorType t, inferred_type(ctx));
  return t.shape;
}

// Every input from `first` on that is present must be a constant (shape-determining inputs).
Status constant_inputs_from(const NodeContext& ctx, size_t first) {
  for (size_t k = first; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.constant_input(k) == nullptr) {
      return unimplemented("{} input {} is not a constant", ctx.op, k);
    }
  }
  return device_ready(ctx);
}

// expand's shape, tile's repeats.
Status shape_input_constant(const NodeContext& ctx) { return constant_inputs_from(ctx, 1); }

// A launch moving elements of input 0's dtype into an output of the same dtype.
LaunchSpec copy_spec(const NodeContext& ctx, std::string source, std::string name) {
  LaunchSpec spec;
  spec.in_elem_bytes = dtype_size(ctx.input_types[0].dtype);
  spec.out_elem_bytes = spec.in_elem_bytes;
  spec.source = std::move(source);
  spec.name = std::move(name);
  return spec;
}

// copy_spec of kernel `name`: in0 -> out in input 0's storage type, `body` (OpenCL C) sets out[i]
// for the work item's flat output index i; `meta` names the int meta argument.
LaunchSpec copy_kernel_spec(const NodeContext& ctx, std::string_view name, std::string_view meta,
                            std::string_view body) {
  return copy_spec(
      ctx,
      fmt::format("__kernel void {1}(__global const {0}* in0, __global {0}* out, "
                  "const int rank, __global const int* {2}) {{\n"
                  "  const int i = (int)get_global_id(0);\n{3}}}\n",
                  cl_storage_type(dtype_size(ctx.input_types[0].dtype)), name, meta, body),
      std::string(name));
}

Result<std::shared_ptr<void>> finish(const NodeContext& ctx, const LaunchSpec& spec) {
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// ---- identity ----

Result<std::shared_ptr<void>> identity_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  LaunchSpec spec = copy_kernel_spec(ctx, "frame_identity", "meta", "  out[i] = in0[i];\n");
  spec.out_shape = ctx.input_types[0].shape;
  spec.raw_meta.emplace();
  return finish(ctx, spec);
}

// ---- strided views of input 0: expand, tile, depth_to_space, space_to_depth ----

// out (contiguous, shape `dims`) = in0[sum_d coord_d * strides[d]] (launch.h's index code).
Result<std::shared_ptr<void>> view_launch(const NodeContext& ctx, Shape dims,
                                          std::vector<int64_t> strides) {
  const size_t e = dtype_size(ctx.input_types[0].dtype);
  LaunchSpec spec = copy_spec(
      ctx,
      fmt::format("__kernel void frame_view(__global const {0}* in0, __global {0}* out, const int "
                  "rank, __global const int* meta) {{\n{1}  out[i] = in0[idx0];\n}}\n",
                  cl_storage_type(e), index_code(1)),
      "frame_view");
  spec.out_shape = std::move(dims);
  spec.num_inputs = 1;
  spec.strides.emplace(1, std::move(strides));
  return finish(ctx, spec);
}

Result<std::shared_ptr<void>> expand_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(constant_inputs_from(ctx, 1).with_prefix(where(ctx)));
  FRAME_ASSIGN_OR_RETURN(Shape out, inferred_shape(ctx));
  const Shape& in = ctx.input_types[0].shape;
  const std::vector<int64_t> st = contiguous_strides(in);
  std::vector<int64_t> strides(out.size(), 0);
  for (size_t j = 0; j < in.size(); ++j) {  // right-aligned; size-1 dims broadcast
    strides[out.size() - in.size() + j] = in[j] == 1 ? 0 : st[j];
  }
  return view_launch(ctx, std::move(out), std::move(strides));
}

// Output [r0*d0, r1*d1, ...] is the view [r0, d0, r1, d1, ...] with stride 0 on the r dims.
Result<std::shared_ptr<void>> tile_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(constant_inputs_from(ctx, 1).with_prefix(where(ctx)));
  FRAME_ASSIGN_OR_RETURN(Shape out, inferred_shape(ctx));
  const Shape& in = ctx.input_types[0].shape;
  const std::vector<int64_t> st = contiguous_strides(in);
  Shape dims;
  std::vector<int64_t> strides;
  for (size_t i = 0; i < in.size(); ++i) {
    dims.push_back(in[i] == 0 ? 0 : out[i] / in[i]);
    strides.push_back(0);
    dims.push_back(in[i]);
    strides.push_back(st[i]);
  }
  return view_launch(ctx, std::move(dims), std::move(strides));
}

// depth_to_space / space_to_depth: a transpose of a 6-D view of the input (as on cpu).
Result<std::shared_ptr<void>> block_launch(const NodeContext& ctx, const Shape& view,
                                           const std::vector<int64_t>& perm) {
  const std::vector<int64_t> st = contiguous_strides(view);
  Shape dims(6);
  std::vector<int64_t> strides(6);
  for (size_t i = 0; i < 6; ++i) {
    dims[i] = view[static_cast<size_t>(perm[i])];
    strides[i] = st[static_cast<size_t>(perm[i])];
  }
  return view_launch(ctx, std::move(dims), std::move(strides));
}

Result<std::shared_ptr<void>> depth_to_space_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  FRAME_RETURN_IF_ERROR(inferred_shape(ctx).status());  // validates blocksize and mode
  const Shape& s = ctx.input_types[0].shape;
  const int64_t b = ctx.attr_or<int64_t>("blocksize", 1);
  const int64_t c = s[1] / (b * b);
  if (ctx.attr_or<std::string>("mode", "DCR") == "CRD") {
    return block_launch(ctx, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3});
  }
  return block_launch(ctx, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2});
}

Result<std::shared_ptr<void>> space_to_depth_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  FRAME_RETURN_IF_ERROR(inferred_shape(ctx).status());  // validates blocksize
  const Shape& s = ctx.input_types[0].shape;
  const int64_t b = ctx.attr_or<int64_t>("blocksize", 1);
  return block_launch(ctx, {s[0], s[1], s[2] / b, b, s[3] / b, b}, {0, 3, 5, 1, 2, 4});
}

// ---- concat ----

// meta: inner, out axis length, then the first axis index of each input and the total
// (n + 1 values). One kernel per (element size, input count); input k is read where the
// output's axis index lies in its range.
std::string concat_source(size_t elem_bytes, size_t n) {
  std::string s = "__kernel void frame_concat(";
  for (size_t k = 0; k < n; ++k) {
    s += fmt::format("__global const {}* in{}, ", cl_storage_type(elem_bytes), k);
  }
  s += fmt::format(
      "__global {}* out, const int rank, __global const int* m) {{\n"
      "  const int i = (int)get_global_id(0);\n"
      "  const int inner = m[0], len = m[1];\n"
      "  const int j = i % inner, a = (i / inner) % len, o = i / inner / len;\n"
      "  __global const int* st = m + 2;\n",
      cl_storage_type(elem_bytes));
  for (size_t k = 0; k < n; ++k) {
    s += fmt::format(
        "  {0}if (a < st[{2}]) out[i] = in{1}[(o * (st[{2}] - st[{1}]) + a - st[{1}]) * inner + "
        "j];\n",
        k == 0 ? "" : "else ", k, k + 1);
  }
  return s + "}\n";
}

Result<std::shared_ptr<void>> concat_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  FRAME_ASSIGN_OR_RETURN(Shape out, inferred_shape(ctx));
  FRAME_ASSIGN_OR_RETURN(int64_t axis,
                         ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                             static_cast<int64_t>(out.size()), "attribute 'axis'"));
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < out.size(); ++d) inner *= out[d];
  std::vector<int64_t> meta{inner, out[static_cast<size_t>(axis)], 0};
  for (const ir::TensorType& t : ctx.input_types) {
    meta.push_back(meta.back() + t.shape[static_cast<size_t>(axis)]);
  }
  const size_t e = dtype_size(ctx.input_types[0].dtype);
  LaunchSpec spec = copy_spec(ctx, concat_source(e, ctx.num_inputs()), "frame_concat");
  spec.out_shape = std::move(out);
  spec.raw_meta = std::move(meta);
  return finish(ctx, spec);
}

// ---- gather ----

constexpr DTypeSet kIndexTypes{DTypeCode::kInt32, DTypeCode::kInt64};

Status gather_accepts(const NodeContext& ctx) {
  if (ctx.constant_input(1) == nullptr && !kIndexTypes.contains(ctx.input_types[1].dtype)) {
    return unimplemented("gather indices of dtype {}", dtype_name(ctx.input_types[1].dtype));
  }
  return device_ready(ctx);
}

// Indices computed at run time (token ids, positions): one work-group first checks them all
// and records the first out-of-range one (each work-item scans every 256th index from its own
// and stops at its first bad one; the smallest position wins through a local atomic_min), then
// the gather reads each index again and writes 0 where it is out of range. The run reports the
// recorded index with the cpu kernel's message (Launch::device_error).
std::string gather_check_source(DTypeCode index_dtype) {
  return fmt::format(
      "__kernel __attribute__((reqd_work_group_size(256, 1, 1))) void frame_gather_check("
      "__global const {0}* idx, const int n, const int k, __global const int* dims, __global "
      "int* err) {{\n"
      "  __local int first;\n"
      "  const int lid = (int)get_local_id(0);\n"
      "  if (lid == 0) first = INT_MAX;\n"
      "  barrier(CLK_LOCAL_MEM_FENCE);\n"
      "  int mine = INT_MAX;\n"
      "  for (int j = lid; j < n; j += 256) {{\n"
      "    const long x = (long)idx[j];\n"
      "    const long dim = dims[j % k];\n"
      "    if (x < -dim || x >= dim) {{ mine = j; break; }}\n"
      "  }}\n"
      "  if (mine != INT_MAX) atomic_min(&first, mine);\n"
      "  barrier(CLK_LOCAL_MEM_FENCE);\n"
      "  if (mine != INT_MAX && mine == first) {{\n"
      "    const long x = (long)idx[mine];\n"
      "    err[1] = mine;\n    err[2] = (int)(x & 0xffffffffL);\n    err[3] = (int)(x >> 32);\n"
      "    err[0] = 1;\n"
      "  }}\n"
      "}}\n",
      DTypeSet{DTypeCode::kInt64}.contains(index_dtype) ? "long" : "int");
}

using gpu::IndexError;

// The launch of `spec` (a gather-family kernel reading the n run-time indices of input 1, index
// j in [-dims[j % k], dims[j % k]) for k = dims.size()) preceded by the index check on the same
// queue, and `error` for a bad one (Launch::device_error).
Result<std::shared_ptr<void>> index_checked_launch(const NodeContext& ctx, const LaunchSpec& spec,
                                                   int64_t n, const std::vector<int64_t>& dims,
                                                   IndexError error) {
  const DTypeCode it = ctx.input_types[1].dtype;
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  l->in_bytes[1] = static_cast<size_t>(n) * dtype_size(it);  // copy_spec sized it as data
  // The index check: its own program, run before the gather on the same queue.
  Result<ClKernel> check = make_kernel(*l->dev, gather_check_source(it), "", "frame_gather_check");
  if (!check.is_ok()) return check.status().with_prefix(where(ctx));
  auto check_kernel = std::make_shared<ClKernel>(std::move(check).value());
  // The bounds, one per tuple position, in a small buffer of their own.
  std::vector<cl_int> bounds(dims.begin(), dims.end());
  auto bounds_buf = std::make_shared<ClMem>();
  FRAME_ASSIGN_OR_RETURN(*bounds_buf, make_buffer(*l->dev, bounds.size() * sizeof(cl_int),
                                                  CL_MEM_READ_ONLY, "index bounds"));
  if (const cl_int e =
          clEnqueueWriteBuffer(l->dev->queue, bounds_buf->get(), CL_TRUE, 0,
                               bounds.size() * sizeof(cl_int), bounds.data(), 0, nullptr, nullptr);
      e != CL_SUCCESS) {
    return ctx.error("intel_gpu: writing index bounds: {}", cl_error_name(e));
  }
  Launch* lp = l.get();
  const auto n32 = static_cast<cl_int>(n), k32 = static_cast<cl_int>(dims.size());
  l->custom = [lp, check_kernel, bounds_buf, n32, k32](
                  cl_command_queue q, std::span<const cl_mem> inputs, cl_mem output) -> Status {
    cl_kernel k = check_kernel->get();
    if (lp->error_buffer == nullptr) {
      return internal_error("a kernel with run-time indices enqueued without an error buffer");
    }
    if (n32 > 0) {
      FRAME_RETURN_IF_ERROR(set_arg(k, 0, inputs[1]));
      FRAME_RETURN_IF_ERROR(set_arg(k, 1, n32));
      FRAME_RETURN_IF_ERROR(set_arg(k, 2, k32));
      FRAME_RETURN_IF_ERROR(set_arg(k, 3, bounds_buf->get()));
      FRAME_RETURN_IF_ERROR(set_arg(k, 4, lp->error_buffer));
      const size_t one_group = 256;
      const cl_int e =
          clEnqueueNDRangeKernel(q, k, 1, nullptr, &one_group, &one_group, 0, nullptr, nullptr);
      if (e != CL_SUCCESS) return internal_error("index check launch: {}", cl_error_name(e));
    }
    FRAME_RETURN_IF_ERROR(bind_buffers(*lp, inputs, output));
    return enqueue_kernel(*lp, q);
  };
  l->device_error = [error = std::move(error)](const std::array<int32_t, 4>& err) {
    const int64_t x =
        (static_cast<int64_t>(err[3]) << 32) | static_cast<int64_t>(static_cast<uint32_t>(err[2]));
    return error(err[1], x);
  };
  return std::shared_ptr<void>(std::move(l));
}

Result<std::shared_ptr<void>> gather_runtime_prepare(const NodeContext& ctx, int64_t axis,
                                                     const Shape& out) {
  const Shape& data = ctx.input_types[0].shape;
  const DTypeCode it = ctx.input_types[1].dtype;
  const int64_t dim = data[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < data.size(); ++d) inner *= data[d];
  const int64_t n = numel_of(ctx.input_types[1].shape);
  const size_t e = dtype_size(ctx.input_types[0].dtype);
  LaunchSpec spec = copy_spec(
      ctx,
      fmt::format("__kernel void frame_gather_rt(__global const {0}* in0, __global const {1}* "
                  "in1, __global {0}* out, const int rank, __global const int* m) {{\n"
                  "  const int i = (int)get_global_id(0);\n"
                  "  const int n = m[0], inner = m[1], dim = m[2];\n"
                  "  const int j = (i / inner) % n, o = i / inner / n;\n"
                  "  long x = (long)in1[j];\n"
                  "  if (x < 0) x += dim;\n"
                  "  out[i] = x < 0 || x >= dim ? ({0})0 : in0[(o * dim + (int)x) * inner + i % "
                  "inner];\n"
                  "}}\n",
                  cl_storage_type(e), DTypeSet{DTypeCode::kInt64}.contains(it) ? "long" : "int"),
      "frame_gather_rt");
  spec.out_shape = out;
  spec.num_inputs = 2;
  spec.raw_meta = std::vector<int64_t>{n, inner, dim};
  return index_checked_launch(ctx, spec, n, {dim}, gpu::index_range_error(ctx, dim));
}

// meta: n (index count), inner, the n indices (checked, normalised to [0, dim)), dim.
Result<std::shared_ptr<void>> gather_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(gather_accepts(ctx).with_prefix(where(ctx)));
  FRAME_ASSIGN_OR_RETURN(Shape out, inferred_shape(ctx));
  const Shape& data = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                        static_cast<int64_t>(data.size()), "attribute 'axis'"));
  if (ctx.constant_input(1) == nullptr) return gather_runtime_prepare(ctx, axis, out);
  const int64_t dim = data[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < data.size(); ++d) inner *= data[d];
  const Tensor& idx = *ctx.constant_input(1);
  std::vector<int64_t> meta{idx.numel(), inner};
  for (int64_t i = 0; i < idx.numel(); ++i) {
    const int64_t x = idx.element_as_int64(i);
    if (x < -dim || x >= dim) {
      return ctx.error("input 1 (indices) value {} at {} out of range [{}, {}]", x, i, -dim,
                       dim - 1);
    }
    meta.push_back(x < 0 ? x + dim : x);
  }
  LaunchSpec spec = copy_kernel_spec(ctx, "frame_gather", "m",
                                     "  const int n = m[0], inner = m[1], dim = m[2 + n];\n"
                                     "  const int j = (i / inner) % n, o = i / inner / n;\n"
                                     "  out[i] = in0[(o * dim + m[2 + j]) * inner + i % inner];\n");
  meta.push_back(dim);  // after the indices: m[2 + n]
  spec.out_shape = std::move(out);
  spec.num_inputs = 1;
  spec.raw_meta = std::move(meta);
  return finish(ctx, spec);
}

// ---- gather_elements ----

// out[i] = data at i's coordinates with the axis coordinate replaced by indices[i] (ONNX
// GatherElements); the indices (constant or computed, i32/i64) are checked on the device as
// gather's run-time ones. meta: rank r, the indices dims[r], the data strides[r], axis, dim.
Result<std::shared_ptr<void>> gather_elements_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(gather_accepts(ctx).with_prefix(where(ctx)));
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  const DTypeCode it = ctx.input_types[1].dtype;
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                        static_cast<int64_t>(data.size()), "attribute 'axis'"));
  const int64_t dim = data[static_cast<size_t>(axis)];
  std::vector<int64_t> st(data.size(), 1);
  for (size_t d = data.size(); d-- > 1;) st[d - 1] = st[d] * data[d];
  std::vector<int64_t> meta{static_cast<int64_t>(idx.size())};
  meta.insert(meta.end(), idx.begin(), idx.end());
  meta.insert(meta.end(), st.begin(), st.end());
  meta.push_back(axis);
  meta.push_back(dim);
  LaunchSpec spec = copy_spec(
      ctx,
      fmt::format("__kernel void frame_gather_elements(__global const {0}* in0, __global const "
                  "{1}* in1, __global {0}* out, const int rank, __global const int* m) {{\n"
                  "  const int i = (int)get_global_id(0);\n"
                  "  const int r = m[0], axis = m[1 + 2 * r], dim = m[2 + 2 * r];\n"
                  "  long x = (long)in1[i];\n"
                  "  if (x < 0) x += dim;\n"
                  "  if (x < 0 || x >= dim) {{ out[i] = ({0})0; return; }}\n"
                  "  int rem = i, off = 0;\n"
                  "  for (int d = r - 1; d >= 0; --d) {{\n"
                  "    const int q = rem % m[1 + d];\n"
                  "    rem /= m[1 + d];\n"
                  "    off += (d == axis ? (int)x : q) * m[1 + r + d];\n"
                  "  }}\n"
                  "  out[i] = in0[off];\n"
                  "}}\n",
                  cl_storage_type(dtype_size(ctx.input_types[0].dtype)),
                  DTypeSet{DTypeCode::kInt64}.contains(it) ? "long" : "int"),
      "frame_gather_elements");
  spec.out_shape = idx;
  spec.num_inputs = 2;
  spec.raw_meta = std::move(meta);
  return index_checked_launch(ctx, spec, numel_of(idx), {dim}, gpu::index_range_error(ctx, dim));
}

// ---- gather_nd ----

// out = the slices of data addressed by the index tuples (the last dim of indices, k long)
// after batch_dims leading batch dims (ONNX GatherND); indices checked on the device as
// gather's, each tuple position against its own data dim; the error names the bad value and
// its dim as the cpu kernel's does. meta: slice, tuples per batch, batch stride, then the k
// data dims and strides the tuple indexes.
Result<std::shared_ptr<void>> gather_nd_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  FRAME_ASSIGN_OR_RETURN(gpu::GatherNdGeometry g, gpu::gather_nd_geometry(ctx));
  FRAME_ASSIGN_OR_RETURN(Shape out, inferred_shape(ctx));
  std::vector<int64_t> meta{g.slice, g.per_batch, g.batch_stride, g.k};
  meta.insert(meta.end(), g.dims.begin(), g.dims.end());
  meta.insert(meta.end(), g.strides.begin(), g.strides.end());
  LaunchSpec spec = copy_spec(
      ctx,
      fmt::format("__kernel void frame_gather_nd(__global const {0}* in0, __global const long* "
                  "in1, __global {0}* out, const int rank, __global const int* m) {{\n"
                  "  const int i = (int)get_global_id(0);\n"
                  "  const int k = m[3];\n"
                  "  const int t = i / m[0], s = i % m[0];\n"
                  "  int off = (t / m[1]) * m[2] + s;\n"
                  "  for (int j = 0; j < k; ++j) {{\n"
                  "    long x = in1[t * k + j];\n"
                  "    const long dim = m[4 + j];\n"
                  "    if (x < -dim || x >= dim) {{ out[i] = ({0})0; return; }}\n"
                  "    off += (int)(x < 0 ? x + dim : x) * m[4 + k + j];\n"
                  "  }}\n"
                  "  out[i] = in0[off];\n"
                  "}}\n",
                  cl_storage_type(dtype_size(ctx.input_types[0].dtype))),
      "frame_gather_nd");
  spec.out_shape = out;
  spec.num_inputs = 2;
  spec.raw_meta = std::move(meta);
  return index_checked_launch(ctx, spec, numel_of(ctx.input_types[1].shape), g.dims,
                              gpu::gather_nd_error(ctx, g));
}

// ---- pad ----

// meta: r, mode, out dims[r], begin[r], in dims[r], in strides[r]; pad_source_index in
// OpenCL C (-1: the constant fill, input 2's value or 0).
std::string pad_source(size_t elem_bytes, bool has_value) {
  return gpu::pad_source_index_code(gpu::Dialect::kOpenCL, "int") +
         fmt::format(
             R"(__kernel void frame_pad(__global const {0}* in0, __global const {0}* in1, __global const {0}* in2,
                        __global {0}* out, const int rank, __global const int* m) {{
  const int i = (int)get_global_id(0);
  const int r = m[0], mode = m[1];
  __global const int* od = m + 2;
  __global const int* bg = od + r;
  __global const int* id = bg + r;
  __global const int* is = id + r;
  int rem = i, off = 0;
  for (int d = r - 1; d >= 0; --d) {{
    const int s = frame_pad_src(mode, rem % od[d], bg[d], id[d]);
    rem /= od[d];
    if (s < 0) {{
      out[i] = {1};
      return;
    }}
    off += s * is[d];
  }}
  out[i] = in0[off];
}}
)",
             cl_storage_type(elem_bytes), has_value ? "in2[0]" : "0");
}

// pads (input 1) and axes (input 3) must be constants; constant_value (input 2) is read on
// the device, so it may be computed.
Status pad_accepts(const NodeContext& ctx) {
  for (size_t k : {size_t{1}, size_t{3}}) {
    if (ctx.has_input(k) && ctx.constant_input(k) == nullptr) {
      return unimplemented("pad input {} is not a constant", k);
    }
  }
  return device_ready(ctx);
}

Result<std::shared_ptr<void>> pad_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(pad_accepts(ctx).with_prefix(where(ctx)));
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(ops::dm::PadParams p, ops::dm::pad_params(ctx, in));
  const auto r = static_cast<int64_t>(in.size());
  std::vector<int64_t> meta{r, gpu::pad_mode_code(p.mode)};
  const std::vector<int64_t> st = contiguous_strides(in);
  for (const std::vector<int64_t>* v :
       std::initializer_list<const std::vector<int64_t>*>{&p.out_shape, &p.begin, &in, &st}) {
    meta.insert(meta.end(), v->begin(), v->end());
  }
  const bool has_value = ctx.has_input(2);
  const size_t e = dtype_size(ctx.input_types[0].dtype);
  LaunchSpec spec = copy_spec(ctx, pad_source(e, has_value), "frame_pad");
  spec.out_shape = p.out_shape;
  spec.raw_meta = std::move(meta);
  // The kernel reads inputs 0 and 2; input 1 (pads, int64) only sits between them.
  spec.num_inputs = has_value ? 3 : 1;
  spec.input_slots = 3;
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  if (has_value) {  // make_launch sizes every input by input 0's element size
    l->in_bytes[1] = static_cast<size_t>(numel_of(ctx.input_types[1].shape)) *
                     dtype_size(ctx.input_types[1].dtype);
  }
  return std::shared_ptr<void>(std::move(l));
}

// ---- trilu ----

// k (input 1) must be a constant: it is clamped like the cpu kernel's (beyond n + m every k
// acts the same) and stored in `meta`.
Status trilu_accepts(const NodeContext& ctx) {
  if (ctx.has_input(1) && ctx.constant_input(1) == nullptr) {
    return unimplemented("trilu input 1 (k) is not a constant");
  }
  return device_ready(ctx);
}

// meta: n, m (the last two dims), upper, k. Element (row, j) is kept when j - row >= k (upper)
// or j - row <= k (lower), else zero (all-zero bits are 0 / false in every dtype).
Result<std::shared_ptr<void>> trilu_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(trilu_accepts(ctx).with_prefix(where(ctx)));
  const Shape& in = ctx.input_types[0].shape;
  if (in.size() < 2) return ctx.error("input rank {} < 2", in.size());
  const int64_t n = in[in.size() - 2], m = in.back();
  const Tensor* kt = ctx.has_input(1) ? ctx.constant_input(1) : nullptr;
  if (kt != nullptr && kt->numel() != 1) return ctx.error("input 1 (k) must hold one value");
  const int64_t k =
      std::clamp<int64_t>(kt != nullptr ? kt->element_as_int64(0) : 0, -(n + m + 1), n + m + 1);
  const size_t e = dtype_size(ctx.input_types[0].dtype);
  LaunchSpec spec = copy_kernel_spec(
      ctx, "frame_trilu", "meta",
      fmt::format("  const int n = meta[0], m = meta[1], upper = meta[2];\n"
                  "  const int j = i % m, row = (i / m) % n;\n"
                  "  const long cut = clamp((long)row + meta[3] + (upper ? 0 : 1), 0L, (long)m);\n"
                  "  out[i] = ((long)j < cut) == (upper != 0) ? ({0})0 : in0[i];\n",
                  cl_storage_type(e)));
  spec.out_shape = in;
  spec.num_inputs = 1;
  spec.raw_meta = std::vector<int64_t>{n, m, ctx.attr_or<int64_t>("upper", 1) != 0 ? 1 : 0, k};
  return finish(ctx, spec);
}

// ---- where ----

Result<std::shared_ptr<void>> where_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  FRAME_ASSIGN_OR_RETURN(Shape out, broadcast_shapes(ctx));
  const size_t e = dtype_size(ctx.input_types[1].dtype);
  LaunchSpec spec;
  spec.in_elem_bytes = e;
  spec.out_elem_bytes = e;
  spec.source = fmt::format(
      "__kernel void frame_where(__global const uchar* in0, __global const {0}* in1, __global "
      "const {0}* in2, __global {0}* out, const int rank, __global const int* meta) {{\n{1}"
      "  out[i] = in0[idx0] ? in1[idx1] : in2[idx2];\n}}\n",
      cl_storage_type(e), index_code(3));
  spec.name = "frame_where";
  spec.out_shape = std::move(out);
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  // The condition is bool (one byte an element); make_launch sized it like X.
  l->in_bytes[0] = static_cast<size_t>(numel_of(ctx.input_types[0].shape));
  return std::shared_ptr<void>(std::move(l));
}

// ---- cast ----

// How cast reads, computes and saturates each dtype: the OpenCL C type a value is read into
// (16-bit floats widen to float, bool is 0/1) and, for integers, the limits as doubles (the
// thresholds CastOp compares with) and as OpenCL C constants (the saturated results).
struct CastSpelling {
  DTypeCode dtype;
  std::string_view value;
  double lo = 0, hi = 0;
  std::string_view lo_name = "0", hi_name = "0";
};
constexpr CastSpelling kCastSpellings[] = {
    {DTypeCode::kFloat32, "float"},
    {DTypeCode::kFloat64, "double"},
    {DTypeCode::kFloat16, "float"},
    {DTypeCode::kBFloat16, "float"},
    {DTypeCode::kInt8, "char", -128.0, 127.0, "CHAR_MIN", "CHAR_MAX"},
    {DTypeCode::kInt16, "short", -32768.0, 32767.0, "SHRT_MIN", "SHRT_MAX"},
    {DTypeCode::kInt32, "int", static_cast<double>(INT32_MIN), static_cast<double>(INT32_MAX),
     "INT_MIN", "INT_MAX"},
    {DTypeCode::kInt64, "long", static_cast<double>(INT64_MIN), static_cast<double>(INT64_MAX),
     "LONG_MIN", "LONG_MAX"},
    {DTypeCode::kUInt8, "uchar", 0.0, 255.0, "0", "UCHAR_MAX"},
    {DTypeCode::kBool, "uchar"},
    {DTypeCode::kUInt16, "ushort", 0.0, 65535.0, "0", "USHRT_MAX"},
    {DTypeCode::kUInt32, "uint", 0.0, static_cast<double>(UINT32_MAX), "0", "UINT_MAX"},
    {DTypeCode::kUInt64, "ulong", 0.0, static_cast<double>(UINT64_MAX), "0", "ULONG_MAX"},
};

const CastSpelling& cast_spelling(DTypeCode d) {
  for (const CastSpelling& s : kCastSpellings) {
    if (s.dtype == d) return s;
  }
  return kCastSpellings[0];  // unreachable: the table covers every dtype
}

// Targets stored through cl_store (rounded from float); f32 and f64 are plain conversions.
constexpr DTypeSet kHalfTypes{DTypeCode::kFloat16, DTypeCode::kBFloat16};

bool needs_fp64(DTypeCode d) {
  const ClType* t = cl_type(d);
  return t != nullptr && t->fp64;
}

// ops::ew::CastOp in OpenCL C: to bool `v != 0` (NaN -> true); float to integer truncates,
// NaN -> 0, saturating at the limits (compared in the source's compute type: each limit as a
// literal of that type rounds up to the next representable value and none lies between, so
// the answer is the cpu's double compare); integer/bool to integer wraps (C conversion); to a
// float rounds to nearest even, through float for f16/bf16 (the cpu's compute type first, then
// storage).
std::string cast_source(DTypeCode from, DTypeCode to) {
  const ClType* ft = cl_type(from);
  const ClType* tt = cl_type(to);
  const CastSpelling& fs = cast_spelling(from);
  const CastSpelling& ts = cast_spelling(to);
  std::string s =
      needs_fp64(from) || needs_fp64(to) ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
  // The bf16 load/store helpers (the prelude's typedef of T is not used here).
  constexpr DTypeSet kBf16{DTypeCode::kBFloat16};
  if (kBf16.contains(from) || kBf16.contains(to)) {
    s += cl_type_prelude(*cl_type(DTypeCode::kBFloat16));
  }
  s += fmt::format(
      "__kernel void frame_cast(__global const {0}* in0, __global {1}* out, const int rank, "
      "__global const int* meta) {{\n"
      "  const int i = (int)get_global_id(0);\n"
      "  const {2} v = {3};\n",
      ft != nullptr ? ft->pointee : fs.value, tt != nullptr ? tt->pointee : ts.value, fs.value,
      ft != nullptr ? cl_load(*ft, "in0", "i") : "in0[i]");
  if (kBoolDType.contains(to)) {
    s += "  out[i] = v != 0 ? 1 : 0;\n";
  } else if (is_integral(to) && ft != nullptr) {
    s += fmt::format(
        "  const {0} t = trunc(v);\n"
        "  out[i] = isnan(v) ? ({1})0 : t >= {2} ? ({1}){3} : t <= {4} ? ({1}){5} : ({1})t;\n",
        fs.value, ts.value, cl_literal(ts.hi, ft->fp64), ts.hi_name, cl_literal(ts.lo, ft->fp64),
        ts.lo_name);
  } else if (kHalfTypes.contains(to)) {
    s += "  " + cl_store(*tt, "out", "i", "(float)v") + "\n";
  } else {
    s += fmt::format("  out[i] = ({})v;\n", ts.value);
  }
  return s + "}\n";
}

Result<DTypeCode> cast_target(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ir::TensorType t, inferred_type(ctx));
  return t.dtype;
}

Status cast_accepts(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  Result<DTypeCode> to = cast_target(ctx);
  if (!to.is_ok()) return unimplemented("cast target dtype: {}", to.status().message());
  const Device* dev = selected_device();
  if ((needs_fp64(ctx.input_types[0].dtype) || needs_fp64(*to)) && !dev->fp64) {
    return unimplemented("the OpenCL device '{}' has no cl_khr_fp64", dev->device_name);
  }
  return Status();
}

Result<std::shared_ptr<void>> cast_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(cast_accepts(ctx).with_prefix(where(ctx)));
  FRAME_ASSIGN_OR_RETURN(DTypeCode to, cast_target(ctx));
  const DTypeCode from = ctx.input_types[0].dtype;
  LaunchSpec spec;
  spec.source = cast_source(from, to);
  spec.name = "frame_cast";
  spec.in_elem_bytes = dtype_size(from);
  spec.out_elem_bytes = dtype_size(to);
  spec.out_shape = ctx.input_types[0].shape;
  spec.num_inputs = 1;
  spec.raw_meta.emplace();
  return finish(ctx, spec);
}

}  // namespace

FRAME_REGISTER_KERNEL(identity, "intel_gpu", run_launch)
    .prepare(identity_prepare)
    .accepts(device_ready)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(expand, "intel_gpu", run_launch)
    .prepare(expand_prepare)
    .accepts(shape_input_constant)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(tile, "intel_gpu", run_launch)
    .prepare(tile_prepare)
    .accepts(shape_input_constant)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(depth_to_space, "intel_gpu", run_launch)
    .prepare(depth_to_space_prepare)
    .accepts(device_ready)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(space_to_depth, "intel_gpu", run_launch)
    .prepare(space_to_depth_prepare)
    .accepts(device_ready)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(concat, "intel_gpu", run_launch)
    .prepare(concat_prepare)
    .accepts(device_ready)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather, "intel_gpu", run_launch)
    .prepare(gather_prepare)
    .accepts(gather_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather_elements, "intel_gpu", run_launch)
    .prepare(gather_elements_prepare)
    .accepts(gather_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(gather_nd, "intel_gpu", run_launch)
    .prepare(gather_nd_prepare)
    .accepts(device_ready)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(pad, "intel_gpu", run_launch)
    .prepare(pad_prepare)
    .accepts(pad_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(trilu, "intel_gpu", run_launch)
    .prepare(trilu_prepare)
    .accepts(trilu_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(where, "intel_gpu", run_launch)
    .prepare(where_prepare)
    .accepts(device_ready)
    .dtypes(kAllDTypes)
    .dtype_input(1);
FRAME_REGISTER_KERNEL(cast, "intel_gpu", run_launch)
    .prepare(cast_prepare)
    .accepts(cast_accepts)
    .dtypes(kAllDTypes);

}  // namespace frame::backends::intel_gpu
