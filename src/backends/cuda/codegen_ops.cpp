// CUDA C++ of the cuda backend's data-movement and row kernels (codegen.h, other_kernel):
// element copies and strided gathers by element size (so every dtype runs the same code),
// concat, cast, where, and softmax / log_softmax / layer_normalization with one warp per row.
// Parameters come from the code the shape functions use (ops/schemas/data_movement_shapes.h,
// schema_util.h), so a kernel indexes exactly what shape inference promised.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/codegen.h"
#include "backends/gpu/ew_formulas.h"
#include "backends/gpu/layout_util.h"
#include "backends/gpu/reductions.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/data_movement_shapes.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::cuda {
namespace {

using ops::NodeContext;

constexpr DTypeSet kDouble{DTypeCode::kFloat64};

// Output 0's type from the op's shape function (the same code the cpu path runs).
Result<ir::TensorType> inferred_type(const NodeContext& ctx) {
  const ops::OpSchema* schema =
      ctx.schema != nullptr ? ctx.schema : ops::OpRegistry::global().find(ctx.op);
  if (schema == nullptr) return ctx.error("cuda: op '{}' has no schema", ctx.op);
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, schema->infer(ctx));
  return types.at(0);
}

size_t bytes_of(const ir::TensorType& t) {
  return static_cast<size_t>(numel_of(t.shape)) * dtype_size(t.dtype);
}

// The unsigned type holding one element of `bytes` bytes.
std::string_view storage_of(size_t bytes) {
  return bytes == 1   ? "unsigned char"
         : bytes == 2 ? "unsigned short"
         : bytes == 4 ? "unsigned int"
                      : "unsigned long long";
}

// Row-major strides of `s`.
std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

// The head every kernel here starts with: the index type and a FrameMeta of `values` Is.
std::string head(bool wide, size_t values, std::string_view what) {
  return fmt::format(
      "// frame cuda {} kernel (src/backends/cuda/codegen_ops.cpp)\n"
      "#define FRAME_FN __device__ __forceinline__\ntypedef {} I;\n"
      "struct FrameMeta {{ I v[{}]; }};\n",
      what, wide ? "long long" : "int", std::max<size_t>(values, 1));
}

// `extern "C"` kernel signature with `n` input pointers of `in_type` and output `out_type`,
// and the grid-stride loop's first statements (`first`, `step`).
std::string signature(size_t n, std::string_view in_type, std::string_view out_type,
                      std::string_view t_type = "float") {
  std::string s = "extern \"C\" __global__ void __launch_bounds__(256) frame_kernel(";
  for (size_t k = 0; k < n; ++k) s += fmt::format("const {}* __restrict__ in{}, ", in_type, k);
  s += fmt::format(
      "{0}* __restrict__ out, const I n, const FrameMeta meta, const {1} p0, const {1} p1) {{\n"
      "  const I step = (I)gridDim.x * (I)blockDim.x;\n"
      "  const I first = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;\n",
      out_type, t_type);
  return s;
}

bool is_wide(int64_t elements) { return elements >= (int64_t{1} << 31); }

// ---- element copies and strided gathers ----

// out[i] = in0[i] (rank 0), or in0[base + sum_d q_d * strides_d] over the output dims.
NodeKernel strided(const NodeContext& ctx, const Shape& out, int64_t base,
                   const std::vector<int64_t>& strides) {
  const DTypeCode dt = ctx.input_types[0].dtype;
  const int64_t n = numel_of(out);
  const bool wide = is_wide(std::max(n, numel_of(ctx.input_types[0].shape)));
  const size_t rank = strides.size();
  NodeKernel k;
  k.geometry = {1, rank, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0])};
  k.out_bytes = static_cast<size_t>(n) * dtype_size(dt);
  k.work_items = n;
  const std::string_view e = storage_of(dtype_size(dt));
  std::vector<int64_t> meta{base};
  meta.insert(meta.end(), out.begin(), out.end());
  meta.insert(meta.end(), strides.begin(), strides.end());
  k.source = head(wide, meta.size(), rank == 0 ? "copy" : "strided gather");
  k.source += signature(1, e, e);
  if (rank == 0) {
    k.source += "  (void)meta;\n  for (I i = first; i < n; i += step) out[i] = in0[i];\n}\n";
  } else {
    k.source += fmt::format(
        "  for (I i = first; i < n; i += step) {{\n"
        "    I rem = i, src = meta.v[0];\n"
        "#pragma unroll\n"
        "    for (int d = {0} - 1; d >= 0; --d) {{\n"
        "      const I q = rem % meta.v[1 + d];\n"
        "      rem /= meta.v[1 + d];\n"
        "      src += q * meta.v[1 + {0} + d];\n"
        "    }}\n"
        "    out[i] = in0[src];\n"
        "  }}\n}}\n",
        rank);
  }
  k.meta = pack_values(meta, wide);
  return k;
}

Result<NodeKernel> copy_kernel(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ir::TensorType out, inferred_type(ctx));
  if (numel_of(out.shape) != numel_of(ctx.input_types[0].shape)) {
    return ctx.error("cuda: {} changes the element count", ctx.op);
  }
  return strided(ctx, out.shape, 0, {});
}

Result<NodeKernel> transpose_kernel(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  if (in.size() > kMaxRank) return unimplemented("transpose of rank {}", in.size());
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ops::dm::transpose_perm(ctx, in.size()));
  const std::vector<int64_t> ist = strides_of(in);
  Shape out;
  std::vector<int64_t> st;
  for (int64_t p : perm) {
    out.push_back(in[static_cast<size_t>(p)]);
    st.push_back(ist[static_cast<size_t>(p)]);
  }
  return strided(ctx, out, 0, st);
}

Result<NodeKernel> expand_kernel(const NodeContext& ctx) {
  if (ctx.constant_input(1) == nullptr) return unimplemented("expand shape that is not a constant");
  FRAME_ASSIGN_OR_RETURN(ir::TensorType t, inferred_type(ctx));
  const Shape& in = ctx.input_types[0].shape;
  const Shape& out = t.shape;
  if (out.size() > kMaxRank) return unimplemented("expand to rank {}", out.size());
  const std::vector<int64_t> ist = strides_of(in);
  std::vector<int64_t> st(out.size(), 0);
  for (size_t j = 0; j < in.size(); ++j) {
    const size_t d = out.size() - in.size() + j;
    st[d] = in[j] == 1 ? 0 : ist[j];
  }
  return strided(ctx, out, 0, st);
}

Result<NodeKernel> slice_kernel(const NodeContext& ctx) {
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.constant_input(k) == nullptr) {
      return unimplemented("slice input {} is not a constant", k);
    }
  }
  const Shape& in = ctx.input_types[0].shape;
  if (in.size() > kMaxRank) return unimplemented("slice of rank {}", in.size());
  FRAME_ASSIGN_OR_RETURN(ops::dm::SliceParams p, ops::dm::slice_params(ctx, in));
  const std::vector<int64_t> ist = strides_of(in);
  int64_t base = 0;
  std::vector<int64_t> st(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    base += p.start[d] * ist[d];
    st[d] = ist[d] * p.step[d];
  }
  return strided(ctx, p.out_shape, base, st);
}

// ---- gather ----

// The signature of a kernel reading data (storage `e`) at indices (`index_bytes` wide) that
// reports bad indices through `err` (NodeKernel::device_error), and its grid step.
std::string indexed_signature(std::string_view e, size_t index_bytes) {
  return fmt::format(
      "extern \"C\" __global__ void __launch_bounds__(256) frame_kernel(const {0}* __restrict__ "
      "in0, const {1}* __restrict__ in1, {0}* __restrict__ out, const I n, const FrameMeta meta, "
      "const float p0, const float p1, int* __restrict__ err) {{\n"
      "  const I step = (I)gridDim.x * (I)blockDim.x;\n",
      e, index_bytes == 8 ? "long long" : "int");
}

// Constant indices are checked here (an out-of-range one is the cpu kernel's error at
// prepare); computed ones on the device: a bad index at position j stores
// atomicMax(err, 0x7fffffff - j), so the flag names the first bad position, and writes 0.
Result<NodeKernel> gather_kernel(const NodeContext& ctx) {
  constexpr DTypeSet kIndexTypes{DTypeCode::kInt32, DTypeCode::kInt64};
  if (ctx.num_inputs() < 2 || !kIndexTypes.contains(ctx.input_types[1].dtype)) {
    return unimplemented("gather indices of dtype {}", dtype_name(ctx.input_types[1].dtype));
  }
  const Shape& data = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                        static_cast<int64_t>(data.size()), "attribute 'axis'"));
  const int64_t dim = data[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < data.size(); ++d) inner *= data[d];
  const int64_t count = numel_of(ctx.input_types[1].shape);
  if (count >= 0x7fffffff) return unimplemented("gather of {} indices", count);
  if (const Tensor* idx = ctx.constant_input(1)) {
    for (int64_t i = 0; i < idx->numel(); ++i) {
      const int64_t x = idx->element_as_int64(i);
      if (x < -dim || x >= dim) {
        return ctx.error("input 1 (indices) value {} at {} out of range [{}, {}]", x, i, -dim,
                         dim - 1);
      }
    }
  }
  FRAME_ASSIGN_OR_RETURN(ir::TensorType out, inferred_type(ctx));
  const int64_t n = numel_of(out.shape);
  const bool wide = is_wide(std::max(n, numel_of(data)));
  const size_t isz = dtype_size(ctx.input_types[1].dtype);
  NodeKernel k;
  k.geometry = {2, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0]), bytes_of(ctx.input_types[1])};
  k.out_bytes = bytes_of(out);
  k.work_items = n;
  const std::string_view e = storage_of(dtype_size(ctx.input_types[0].dtype));
  k.source = head(wide, 3, "gather") + indexed_signature(e, isz) +
             fmt::format(
                 "  const I count = meta.v[0], inner = meta.v[1], dim = meta.v[2];\n"
                 "  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += "
                 "step) {{\n"
                 "    const I j = (i / inner) % count, o = i / inner / count;\n"
                 "    long long x = (long long)in1[j];\n"
                 "    if (x < -(long long)dim || x >= (long long)dim) {{\n"
                 "      atomicMax(err, 0x7fffffff - (int)j);\n"
                 "      out[i] = 0;\n"
                 "      continue;\n"
                 "    }}\n"
                 "    if (x < 0) x += dim;\n"
                 "    out[i] = in0[(o * dim + (I)x) * inner + i % inner];\n"
                 "  }}\n  (void)p0; (void)p1;\n}}\n",
                 e, isz == 8 ? "long long" : "int");
  k.meta = pack_values({count, inner, dim}, wide);
  k.error_input = 1;
  k.error_elem_bytes = isz;
  k.device_error = gpu::index_range_error(ctx, dim);
  return k;
}

// out[i] = data at i's coordinates with the axis coordinate replaced by indices[i] (ONNX
// GatherElements); indices checked on the device as gather's. meta: the indices dims[r], the
// data strides[r], axis, dim.
Result<NodeKernel> gather_elements_kernel(const NodeContext& ctx) {
  constexpr DTypeSet kIndexTypes{DTypeCode::kInt32, DTypeCode::kInt64};
  if (ctx.num_inputs() < 2 || !kIndexTypes.contains(ctx.input_types[1].dtype)) {
    return unimplemented("gather_elements indices of dtype {}",
                         dtype_name(ctx.input_types[1].dtype));
  }
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  if (idx.size() > kMaxRank) return unimplemented("gather_elements of rank {}", idx.size());
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                        static_cast<int64_t>(data.size()), "attribute 'axis'"));
  const int64_t dim = data[static_cast<size_t>(axis)];
  const int64_t n = numel_of(idx);
  if (n >= 0x7fffffff) return unimplemented("gather_elements of {} indices", n);
  const bool wide = is_wide(std::max(n, numel_of(data)));
  const size_t isz = dtype_size(ctx.input_types[1].dtype);
  const size_t r = idx.size();
  std::vector<int64_t> meta(idx.begin(), idx.end());
  const std::vector<int64_t> st = strides_of(data);
  meta.insert(meta.end(), st.begin(), st.end());
  meta.push_back(axis);
  meta.push_back(dim);
  NodeKernel k;
  k.geometry = {2, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0]), bytes_of(ctx.input_types[1])};
  k.out_bytes = static_cast<size_t>(n) * dtype_size(ctx.input_types[0].dtype);
  k.work_items = n;
  const std::string_view e = storage_of(dtype_size(ctx.input_types[0].dtype));
  k.source = head(wide, meta.size(), "gather_elements") + indexed_signature(e, isz) +
             fmt::format(
                 "  const I axis = meta.v[{2} * 2], dim = meta.v[{2} * 2 + 1];\n"
                 "  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += "
                 "step) {{\n"
                 "    long long x = (long long)in1[i];\n"
                 "    if (x < -(long long)dim || x >= (long long)dim) {{\n"
                 "      atomicMax(err, 0x7fffffff - (int)i);\n"
                 "      out[i] = 0;\n"
                 "      continue;\n"
                 "    }}\n"
                 "    if (x < 0) x += dim;\n"
                 "    I rem = i, off = 0;\n"
                 "    for (int d = {2} - 1; d >= 0; --d) {{\n"
                 "      const I q = rem % meta.v[d];\n"
                 "      rem /= meta.v[d];\n"
                 "      off += (d == axis ? (I)x : q) * meta.v[{2} + d];\n"
                 "    }}\n"
                 "    out[i] = in0[off];\n"
                 "  }}\n  (void)p0; (void)p1;\n}}\n",
                 e, isz == 8 ? "long long" : "int", r);
  k.meta = pack_values(meta, wide);
  k.error_input = 1;
  k.error_elem_bytes = isz;
  k.device_error = gpu::index_range_error(ctx, dim);
  return k;
}

// out = the slices of data addressed by the index tuples (the last dim of indices, k long),
// after batch_dims leading batch dims (ONNX GatherND); indices checked on the device: a bad
// index at flat position p stores atomicMax(err, 0x7fffffff - p), and the error names its
// value and data dim as the cpu kernel does. meta: slice (elements per tuple), tuples per
// batch, batch stride, then the k data dims and strides the tuple indexes.
Result<NodeKernel> gather_nd_kernel(const NodeContext& ctx) {
  if (ctx.num_inputs() < 2 || !DTypeSet{DTypeCode::kInt64}.contains(ctx.input_types[1].dtype)) {
    return unimplemented("gather_nd indices of dtype {}", dtype_name(ctx.input_types[1].dtype));
  }
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  FRAME_ASSIGN_OR_RETURN(gpu::GatherNdGeometry g, gpu::gather_nd_geometry(ctx));
  FRAME_ASSIGN_OR_RETURN(ir::TensorType out, inferred_type(ctx));
  if (numel_of(idx) >= 0x7fffffff) return unimplemented("gather_nd of {} indices", numel_of(idx));
  std::vector<int64_t> meta{g.slice, g.per_batch, g.batch_stride};
  meta.insert(meta.end(), g.dims.begin(), g.dims.end());
  meta.insert(meta.end(), g.strides.begin(), g.strides.end());
  const int64_t n = numel_of(out.shape);
  const bool wide = is_wide(std::max(n, numel_of(data)));
  NodeKernel kn;
  kn.geometry = {2, 0, wide};
  kn.in_bytes = {bytes_of(ctx.input_types[0]), bytes_of(ctx.input_types[1])};
  kn.out_bytes = bytes_of(out);
  kn.work_items = n;
  const std::string_view e = storage_of(dtype_size(ctx.input_types[0].dtype));
  kn.source = head(wide, meta.size(), "gather_nd") + indexed_signature(e, 8) +
              fmt::format(
                  "  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += "
                  "step) {{\n"
                  "    const I t = i / meta.v[0], s = i % meta.v[0];\n"
                  "    I off = (t / meta.v[1]) * meta.v[2] + s;\n"
                  "    bool bad = false;\n"
                  "    for (int j = 0; j < {0}; ++j) {{\n"
                  "      long long x = in1[t * {0} + j];\n"
                  "      const long long dim = meta.v[3 + j];\n"
                  "      if (x < -dim || x >= dim) {{\n"
                  "        atomicMax(err, 0x7fffffff - (int)(t * {0} + j));\n"
                  "        bad = true;\n"
                  "        break;\n"
                  "      }}\n"
                  "      off += (I)(x < 0 ? x + dim : x) * meta.v[3 + {0} + j];\n"
                  "    }}\n"
                  "    out[i] = bad ? 0 : in0[off];\n"
                  "  }}\n  (void)p0; (void)p1;\n}}\n",
                  g.k);
  kn.meta = pack_values(meta, wide);
  kn.error_input = 1;
  kn.error_elem_bytes = 8;
  kn.device_error = gpu::gather_nd_error(ctx, g);
  return kn;
}

// ---- pad ----

// ONNX Pad (constant, edge, wrap, reflect; pads and axes constant, constant_value read on the
// device, so it may be computed). meta: mode, the output dims[r], begin[r], input dims[r],
// input strides[r].
Result<NodeKernel> pad_kernel(const NodeContext& ctx) {
  for (size_t k : {size_t{1}, size_t{3}}) {
    if (ctx.has_input(k) && ctx.constant_input(k) == nullptr) {
      return unimplemented("pad input {} is not a constant", k);
    }
  }
  const Shape& in = ctx.input_types[0].shape;
  if (in.size() > kMaxRank || in.empty()) return unimplemented("pad of rank {}", in.size());
  FRAME_ASSIGN_OR_RETURN(ops::dm::PadParams p, ops::dm::pad_params(ctx, in));
  const size_t r = in.size();
  std::vector<int64_t> meta{gpu::pad_mode_code(p.mode)};
  const std::vector<int64_t> st = strides_of(in);
  for (const std::vector<int64_t>* v :
       std::initializer_list<const std::vector<int64_t>*>{&p.out_shape, &p.begin, &in, &st}) {
    meta.insert(meta.end(), v->begin(), v->end());
  }
  const bool has_value = ctx.has_input(2);
  const int64_t n = numel_of(p.out_shape);
  const bool wide = is_wide(std::max(n, numel_of(in)));
  NodeKernel k;
  k.geometry = {3, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0]), 0, has_value ? bytes_of(ctx.input_types[2]) : 0};
  k.out_bytes = static_cast<size_t>(n) * dtype_size(ctx.input_types[0].dtype);
  k.work_items = n;
  const std::string_view e = storage_of(dtype_size(ctx.input_types[0].dtype));
  k.source = head(wide, meta.size(), "pad") + gpu::pad_source_index_code(gpu::Dialect::kCuda, "I") +
             signature(3, e, e) +
             fmt::format(
                 "  const {0} fill = {1};\n"
                 "  for (I i = first; i < n; i += step) {{\n"
                 "    I rem = i, off = 0;\n"
                 "    bool inside = true;\n"
                 "    for (int d = {2} - 1; d >= 0; --d) {{\n"
                 "      const I s = frame_pad_src((int)meta.v[0], rem % meta.v[1 + d], "
                 "meta.v[1 + {2} + d], meta.v[1 + 2 * {2} + d]);\n"
                 "      rem /= meta.v[1 + d];\n"
                 "      if (s < 0) {{ inside = false; break; }}\n"
                 "      off += s * meta.v[1 + 3 * {2} + d];\n"
                 "    }}\n"
                 "    out[i] = inside ? in0[off] : fill;\n"
                 "  }}\n  (void)in1; (void)p0; (void)p1;\n}}\n",
                 e, has_value ? "in2[0]" : "0", r);
  k.meta = pack_values(meta, wide);
  return k;
}

// ---- resize ----

// The taps of every output index of every axis computed on the host by the cpu kernel's rule
// (gpu::resize_table), read through the `table` parameter; each thread sums its element's
// taps over the product of its axes' taps (an odometer over the per-axis counts). Nearest
// copies by element size for every dtype; linear and cubic compute in T for float dtypes.
// meta: the output dims[r], the input strides[r], each axis's record offset[r], the record
// size, the extrapolation value's storage bits (low, high).
Result<NodeKernel> resize_kernel(const NodeContext& ctx) {
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.constant_input(k) == nullptr) {
      return unimplemented("resize input {} is not a constant", k);
    }
  }
  const Shape& in = ctx.input_types[0].shape;
  const DTypeCode dt = ctx.input_types[0].dtype;
  if (in.empty() || in.size() > kMaxRank) return unimplemented("resize of rank {}", in.size());
  FRAME_ASSIGN_OR_RETURN(ops::dm::ResizeParams p, ops::dm::resize_params(ctx, in));
  const bool nearest = p.mode == ops::dm::ResizeMode::kNearest;
  if (!nearest && !kCudaFloatTypes.contains(dt)) {
    return unimplemented("linear / cubic resize of {}", dtype_name(dt));
  }
  const bool fp64 = kDouble.contains(dt);
  gpu::ResizeTable table = gpu::resize_table(p, in, !nearest && fp64);
  const size_t r = in.size();
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> meta, gpu::resize_meta(p, in, table, dt));
  const int64_t n = numel_of(p.out_shape);
  const bool wide = is_wide(std::max(n, numel_of(in)));
  NodeKernel k;
  k.geometry = {1, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0])};
  k.out_bytes = static_cast<size_t>(n) * dtype_size(dt);
  k.work_items = n;
  k.t_is_double = fp64 && !nearest;
  k.p0 = p.extrapolation_value;
  const std::string head_loop = fmt::format(
      "  for (I i = first; i < n; i += step) {{\n"
      "    I at[{0}];\n"
      "    I rem = i;\n"
      "    int outside = 0, empty = 0;\n"
      "    for (int d = {0} - 1; d >= 0; --d) {{\n"
      "      at[d] = meta.v[2 * {0} + d] + meta.v[3 * {0}] * (rem % meta.v[d]);\n"
      "      rem /= meta.v[d];\n"
      "      outside |= table[at[d] + 1];\n"
      "      empty |= table[at[d]] == 0;\n"
      "    }}\n",
      r);
  if (nearest) {
    const std::string_view e = storage_of(dtype_size(dt));
    k.source =
        head(wide, meta.size(), "resize") +
        fmt::format(
            "extern \"C\" __global__ void __launch_bounds__(256) frame_kernel(const {0}* "
            "__restrict__ in0, {0}* __restrict__ out, const I n, const FrameMeta meta, "
            "const float p0, const float p1, const int* __restrict__ table) {{\n"
            "  const I step = (I)gridDim.x * (I)blockDim.x;\n"
            "  const I first = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;\n"
            "  const {0} fill = ({0})(((unsigned long long)(unsigned)meta.v[3 * {1} + 2] "
            "<< 32) | (unsigned long long)(unsigned)meta.v[3 * {1} + 1]);\n",
            e, r) +
        head_loop +
        fmt::format(
            "    if (outside) {{ out[i] = fill; continue; }}\n"
            "    I off = 0;\n"
            "    for (int d = 0; d < {0}; ++d) off += (I)table[at[d] + 2] * meta.v[{0} + d];\n"
            "    out[i] = in0[off];\n"
            "  }}\n  (void)p0; (void)p1;\n}}\n",
            r);
  } else {
    constexpr int kTaps = ops::dm::kResizeMaxTaps;
    const std::string weight =
        fp64 ? fmt::format(
                   "__hiloint2double(table[at[d] + {0} + 2 * kk[d] + 1], table[at[d] + "
                   "{0} + 2 * kk[d]])",
                   2 + kTaps)
             : fmt::format("__int_as_float(table[at[d] + {} + kk[d]])", 2 + kTaps);
    k.source =
        head(wide, meta.size(), "resize") + type_prelude(dt) +
        fmt::format(
            "extern \"C\" __global__ void __launch_bounds__(256) frame_kernel(const S* "
            "__restrict__ in0, S* __restrict__ out, const I n, const FrameMeta meta, const T p0, "
            "const T p1, const int* __restrict__ table) {{\n"
            "  const I step = (I)gridDim.x * (I)blockDim.x;\n"
            "  const I first = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;\n") +
        head_loop +
        fmt::format(
            "    if (outside) {{ out[i] = frame_st(p0); continue; }}\n"
            // An axis whose taps all weigh 0 has none: the sum is empty, 0, as on cpu.
            "    if (empty) {{ out[i] = frame_st((T)0); continue; }}\n"
            "    int kk[{0}];\n"
            "    for (int d = 0; d < {0}; ++d) kk[d] = 0;\n"
            "    T acc = (T)0;\n"
            "    for (;;) {{\n"
            "      T w = (T)1;\n"
            "      I off = 0;\n"
            "      for (int d = 0; d < {0}; ++d) {{\n"
            "        w *= (T){1};\n"
            "        off += (I)table[at[d] + 2 + kk[d]] * meta.v[{0} + d];\n"
            "      }}\n"
            "      acc += w * frame_ld(in0[off]);\n"
            "      int d = {0} - 1;\n"
            "      while (d >= 0 && ++kk[d] == table[at[d]]) {{ kk[d] = 0; --d; }}\n"
            "      if (d < 0) break;\n"
            "    }}\n"
            "    out[i] = frame_st(acc);\n"
            "  }}\n  (void)p1;\n}}\n",
            r, weight);
  }
  k.meta = pack_values(meta, wide);
  k.table = std::move(table.data);
  return k;
}

// ---- concat ----

Result<NodeKernel> concat_kernel(const NodeContext& ctx) {
  const size_t n_in = ctx.num_inputs();
  if (n_in == 0 || n_in > kMaxInputs) return unimplemented("concat of {} inputs", n_in);
  const DTypeCode dt = ctx.input_types[0].dtype;
  for (const ir::TensorType& t : ctx.input_types) {
    if (t.dtype != dt) return unimplemented("inputs of different dtypes");
  }
  FRAME_ASSIGN_OR_RETURN(ir::TensorType out, inferred_type(ctx));
  const Shape& os = out.shape;
  FRAME_ASSIGN_OR_RETURN(int64_t axis,
                         ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", 0),
                                             static_cast<int64_t>(os.size()), "attribute 'axis'"));
  int64_t inner = 1;
  for (size_t d = static_cast<size_t>(axis) + 1; d < os.size(); ++d) inner *= os[d];
  // meta: row (axis * inner of the output), then each input's first column in a row, then the
  // row length: input k holds columns [v[1 + k], v[2 + k]).
  std::vector<int64_t> meta{os[static_cast<size_t>(axis)] * inner};
  int64_t at = 0;
  NodeKernel k;
  for (const ir::TensorType& t : ctx.input_types) {
    meta.push_back(at);
    at += t.shape[static_cast<size_t>(axis)] * inner;
    k.in_bytes.push_back(bytes_of(t));
  }
  meta.push_back(at);
  const int64_t n = numel_of(os);
  const bool wide = is_wide(n);
  k.geometry = {n_in, 0, wide};
  k.out_bytes = bytes_of(out);
  k.work_items = n;
  const std::string_view e = storage_of(dtype_size(dt));
  k.source = head(wide, meta.size(), "concat") + signature(n_in, e, e);
  k.source +=
      "  for (I i = first; i < n; i += step) {\n"
      "    const I row = i / meta.v[0], col = i % meta.v[0];\n";
  for (size_t j = 0; j < n_in; ++j) {
    k.source += fmt::format(
        "    {}if (col < meta.v[{}]) out[i] = in{}[row * (meta.v[{}] - meta.v[{}]) + col - "
        "meta.v[{}]];\n",
        j == 0 ? "" : "else ", 2 + j, j, 2 + j, 1 + j, 1 + j);
  }
  k.source += "  }\n}\n";
  k.meta = pack_values(meta, wide);
  return k;
}

// ---- cast ----

// CUDA spelling of a dtype for cast: its storage type, the type values are computed in, the
// load expression template ({} = the element), and for integer targets the saturation bounds.
struct CastType {
  DTypeCode dtype;
  std::string_view storage;
  std::string_view compute;
  std::string_view load;  // fmt pattern over the stored element
  double lo = 0, hi = 0;  // integer targets: saturation bounds
  std::string_view lo_name, hi_name;
};

constexpr CastType kCastTypes[] = {
    {DTypeCode::kFloat32, "float", "float", "{}", 0.0, 0.0, "", ""},
    {DTypeCode::kFloat64, "double", "double", "{}", 0.0, 0.0, "", ""},
    {DTypeCode::kFloat16, "unsigned short", "float", "frame_h2f({})", 0.0, 0.0, "", ""},
    {DTypeCode::kBFloat16, "unsigned short", "float", "frame_b2f({})", 0.0, 0.0, "", ""},
    {DTypeCode::kInt8, "signed char", "long long", "(long long){}", -128.0, 127.0, "-128", "127"},
    {DTypeCode::kInt16, "short", "long long", "(long long){}", -32768.0, 32767.0, "-32768",
     "32767"},
    {DTypeCode::kInt32, "int", "long long", "(long long){}", -2147483648.0, 2147483647.0,
     "(-2147483647 - 1)", "2147483647"},
    {DTypeCode::kInt64, "long long", "long long", "{}", -9223372036854775808.0,
     9223372036854775807.0, "(-9223372036854775807LL - 1)", "9223372036854775807LL"},
    {DTypeCode::kUInt8, "unsigned char", "unsigned long long", "(unsigned long long){}", 0.0, 255.0,
     "0", "255"},
    {DTypeCode::kBool, "unsigned char", "unsigned long long", "(unsigned long long)({} != 0)", 0.0,
     1.0, "0", "1"},
    {DTypeCode::kUInt16, "unsigned short", "unsigned long long", "(unsigned long long){}", 0.0,
     65535.0, "0", "65535"},
    {DTypeCode::kUInt32, "unsigned int", "unsigned long long", "(unsigned long long){}", 0.0,
     4294967295.0, "0", "4294967295u"},
    {DTypeCode::kUInt64, "unsigned long long", "unsigned long long", "{}", 0.0,
     18446744073709551615.0, "0", "18446744073709551615ULL"},
};

const CastType* cast_type(DTypeCode d) {
  for (const CastType& t : kCastTypes) {
    if (t.dtype == d) return &t;
  }
  return nullptr;
}

constexpr DTypeSet kCastFloats{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16,
                               DTypeCode::kBFloat16};

// ops::ew::CastOp in CUDA: to bool `v != 0` (NaN -> true); float to integer truncates, NaN ->
// 0, saturating at the limits (compared in the source's compute type, where each limit's
// literal rounds up to the next representable value, as intel_gpu's cast); integer/bool to
// integer wraps (C conversion); to a float rounds to nearest even, through float for f16/bf16.
std::string cast_body(const CastType& f, const CastType& t) {
  std::string s =
      fmt::format("    const {} v = {};\n", f.compute, fmt::format(fmt::runtime(f.load), "in0[i]"));
  if (t.dtype == DTypeCode::kBool) {
    s += "    out[i] = v != 0 ? 1 : 0;\n";
  } else if (is_integral(t.dtype) && kCastFloats.contains(f.dtype)) {
    const bool fd = f.dtype == DTypeCode::kFloat64;
    auto lit = [&](double v) {
      return fd ? fmt::format("{:a}", v) : fmt::format("{:a}f", static_cast<float>(v));
    };
    s += fmt::format(
        "    const {0} tv = trunc(v);\n"
        "    out[i] = isnan(v) ? ({1})0 : tv >= {2} ? ({1}){3} : tv <= {4} ? ({1}){5} : "
        "({1})tv;\n",
        f.compute, t.storage, lit(t.hi), t.hi_name, lit(t.lo), t.lo_name);
  } else if (t.dtype == DTypeCode::kFloat16) {
    s += "    out[i] = frame_f2h((float)v);\n";
  } else if (t.dtype == DTypeCode::kBFloat16) {
    s += "    out[i] = frame_f2b((float)v);\n";
  } else {
    s += fmt::format("    out[i] = ({})v;\n", t.storage);
  }
  return s;
}

Result<NodeKernel> cast_kernel(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ir::TensorType out, inferred_type(ctx));
  const CastType* f = cast_type(ctx.input_types[0].dtype);
  const CastType* t = cast_type(out.dtype);
  if (f == nullptr || t == nullptr) return unimplemented("cast between these dtypes");
  const int64_t n = numel_of(out.shape);
  const bool wide = is_wide(n);
  NodeKernel k;
  k.geometry = {1, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0])};
  k.out_bytes = bytes_of(out);
  k.work_items = n;
  k.source = head(wide, 1, "cast") + type_prelude(DTypeCode::kFloat32) +
             signature(1, f->storage, t->storage) +
             "  (void)meta;\n  for (I i = first; i < n; i += step) {\n" + cast_body(*f, *t) +
             "  }\n}\n";
  k.meta = pack_values({0}, wide);
  return k;
}

// ---- where ----

Result<NodeKernel> where_kernel(const NodeContext& ctx) {
  if (ctx.num_inputs() != 3) return ctx.error("cuda: where takes 3 inputs");
  if (ctx.input_types[0].dtype != DTypeCode::kBool) return unimplemented("a non-bool condition");
  const DTypeCode dt = ctx.input_types[1].dtype;
  if (ctx.input_types[2].dtype != dt) return unimplemented("x and y of different dtypes");
  FRAME_ASSIGN_OR_RETURN(ir::TensorType out, inferred_type(ctx));
  if (out.shape.size() > kMaxRank) return unimplemented("where of rank {}", out.shape.size());
  std::vector<Shape> ins;
  for (const ir::TensorType& t : ctx.input_types) ins.push_back(t.shape);
  NodeKernel k;
  k.geometry = geometry_of(out.shape, ins);
  k.geometry.rank = out.shape.size();  // indexed through meta (the inputs differ in size)
  for (const ir::TensorType& t : ctx.input_types) k.in_bytes.push_back(bytes_of(t));
  k.out_bytes = bytes_of(out);
  k.work_items = numel_of(out.shape);
  k.meta = pack_meta(out.shape, broadcast_strides(out.shape, ins), 3, k.geometry.wide);
  const std::string_view e = storage_of(dtype_size(dt));
  k.source = fmt::format(
      "// frame cuda where kernel (src/backends/cuda/codegen_ops.cpp)\n"
      "typedef {0} I;\n"
      "struct FrameMeta {{\n  int rank;\n  I dims[{1}];\n  I strides[3][{1}];\n}};\n"
      "extern \"C\" __global__ void __launch_bounds__(256) frame_kernel(const unsigned char* "
      "__restrict__ in0, const {2}* __restrict__ in1, const {2}* __restrict__ in2, {2}* "
      "__restrict__ out, const I n, const FrameMeta meta, const float p0, const float p1) {{\n"
      "  const I step = (I)gridDim.x * (I)blockDim.x;\n"
      "  for (I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; i < n; i += step) {{\n"
      "    I rem = i, c = 0, a = 0, b = 0;\n"
      "    for (int d = meta.rank - 1; d >= 0; --d) {{\n"
      "      const I q = rem % meta.dims[d];\n"
      "      rem /= meta.dims[d];\n"
      "      c += q * meta.strides[0][d];\n"
      "      a += q * meta.strides[1][d];\n"
      "      b += q * meta.strides[2][d];\n"
      "    }}\n"
      "    out[i] = in0[c] ? in1[a] : in2[b];\n"
      "  }}\n}}\n",
      k.geometry.wide ? "long long" : "int", kMaxRank, e);
  return k;
}

// ---- rows: softmax, log_softmax, layer_normalization ----

// Warp-wide reductions (every lane ends with the result); NaN propagates through frame_max.
constexpr std::string_view kWarpHelpers = R"(FRAME_FN T frame_warp_sum(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
FRAME_FN T frame_warp_max(T v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const T w = __shfl_xor_sync(0xffffffffu, v, o);
    v = isnan(v) || isnan(w) ? (isnan(v) ? v : w) : (v < w ? w : v);
  }
  return v;
}
)";

// One warp per row: threads t of a row share t / 32 (n is a multiple of 32 and the block and
// grid sizes are too, so whole warps enter and leave the loop together).
constexpr std::string_view kRowLoop =
    "  for (I t = first; t < n; t += step) {\n"
    "    const I row = t / 32;\n"
    "    const int lane = (int)(t % 32);\n";

Status float_only(const NodeContext& ctx) {
  if (!kCudaFloatTypes.contains(ctx.input_types[0].dtype)) {
    return unimplemented("dtype {}", dtype_name(ctx.input_types[0].dtype));
  }
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.input_types[k].dtype != ctx.input_types[0].dtype) {
      return unimplemented("inputs of different dtypes");
    }
  }
  return Status();
}

Result<NodeKernel> softmax_kernel(const NodeContext& ctx, bool log) {
  FRAME_RETURN_IF_ERROR(float_only(ctx));
  const DTypeCode dt = ctx.input_types[0].dtype;
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(const ops::SoftmaxView v, ops::softmax_view(ctx, in));
  const int64_t rows = v.outer * v.inner;
  const bool wide = is_wide(rows * 32) || is_wide(numel_of(in));
  NodeKernel k;
  k.geometry = {1, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0])};
  k.out_bytes = k.in_bytes[0];
  k.work_items = v.n == 0 ? 0 : rows * 32;
  k.t_is_double = kDouble.contains(dt);
  // meta: n (the normalised length), inner; element j of row r at
  // ((r / inner) * n + j) * inner + r % inner.
  const std::vector<int64_t> meta{v.n, v.inner};
  k.source = head(wide, meta.size(), log ? "log_softmax" : "softmax") + type_prelude(dt) +
             std::string(kWarpHelpers) + signature(1, "S", "S", "T") + std::string(kRowLoop);
  k.source += fmt::format(
      "    const I len = meta.v[0], inner = meta.v[1];\n"
      "    const I base = (row / inner) * len * inner + row % inner;\n"
      "    T m = -(T)__int_as_float(0x7f800000);\n"
      "    for (I j = lane; j < len; j += 32) {{\n"
      "      const T x = frame_ld(in0[base + j * inner]);\n"
      "      m = isnan(m) || isnan(x) ? (isnan(m) ? m : x) : (m < x ? x : m);\n"
      "    }}\n"
      "    m = frame_warp_max(m);\n"
      "    T s = 0;\n"
      "    for (I j = lane; j < len; j += 32) s += exp(frame_ld(in0[base + j * inner]) - m);\n"
      "    s = frame_warp_sum(s);\n"
      "{}"
      "    for (I j = lane; j < len; j += 32) {{\n"
      "      const T d = frame_ld(in0[base + j * inner]) - m;\n"
      "      out[base + j * inner] = frame_st({});\n"
      "    }}\n"
      "  }}\n  (void)p0; (void)p1;\n}}\n",
      log ? "    const T ls = log(s);\n" : "", log ? "d - ls" : "exp(d) / s");
  k.meta = pack_values(meta, wide);
  return k;
}

Result<NodeKernel> layer_norm_kernel(const NodeContext& ctx) {
  if (ctx.num_outputs > 1)
    return unimplemented("layer_normalization with Mean / InvStdDev outputs");
  FRAME_RETURN_IF_ERROR(float_only(ctx));
  const DTypeCode dt = ctx.input_types[0].dtype;
  const Shape& x = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(int64_t axis,
                         ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1),
                                             static_cast<int64_t>(x.size()), "attribute 'axis'"));
  const std::span<const int64_t> norm(x.data() + axis, x.size() - static_cast<size_t>(axis));
  if (norm.size() > kMaxRank) return unimplemented("layer_normalization over {} dims", norm.size());
  const int64_t len = numel_of(norm);
  const int64_t rows = len == 0 ? 0 : numel_of(x) / len;
  const bool has_bias = ctx.has_input(2);
  const bool wide = is_wide(rows * 32) || is_wide(numel_of(x));
  NodeKernel k;
  k.geometry = {3, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0]), bytes_of(ctx.input_types[1]),
                has_bias ? bytes_of(ctx.input_types[2]) : 0};
  k.out_bytes = k.in_bytes[0];
  k.work_items = rows * 32;
  k.t_is_double = kDouble.contains(dt);
  k.p0 = ctx.attr_or<double>("epsilon", 1e-5);
  // meta: len, nr, the normalised dims, scale strides, bias strides (0 where they broadcast).
  std::vector<int64_t> meta{len, static_cast<int64_t>(norm.size())};
  meta.insert(meta.end(), norm.begin(), norm.end());
  for (size_t in : {size_t{1}, size_t{2}}) {
    const std::vector<int64_t> st = ctx.has_input(in)
                                        ? gpu::aligned_strides(ctx.input_types[in].shape, norm)
                                        : std::vector<int64_t>(norm.size(), 0);
    meta.insert(meta.end(), st.begin(), st.end());
  }
  const size_t nr = norm.size();
  k.source = head(wide, meta.size(), "layer_normalization") + type_prelude(dt) +
             std::string(kWarpHelpers) + signature(3, "S", "S", "T") + std::string(kRowLoop);
  // y = (x - mean) * inv * scale + bias with inv = 1 / sqrt(var + eps), the cpu kernel's order.
  k.source += fmt::format(
      "    const I len = meta.v[0];\n"
      "    const I base = row * len;\n"
      "    T s = 0;\n"
      "    for (I j = lane; j < len; j += 32) s += frame_ld(in0[base + j]);\n"
      "    const T mean = frame_warp_sum(s) / (T)len;\n"
      "    T q = 0;\n"
      "    for (I j = lane; j < len; j += 32) {{\n"
      "      const T d = frame_ld(in0[base + j]) - mean;\n"
      "      q += d * d;\n"
      "    }}\n"
      "    const T inv = (T)1 / sqrt(frame_warp_sum(q) / (T)len + p0);\n"
      "    for (I j = lane; j < len; j += 32) {{\n"
      "      I rem = j, so = 0, bo = 0;\n"
      "      for (int d = {0} - 1; d >= 0; --d) {{\n"
      "        const I qd = rem % meta.v[2 + d];\n"
      "        rem /= meta.v[2 + d];\n"
      "        so += qd * meta.v[2 + {0} + d];\n"
      "        bo += qd * meta.v[2 + 2 * {0} + d];\n"
      "      }}\n"
      "      const T v = (frame_ld(in0[base + j]) - mean) * inv * frame_ld(in1[so]){1};\n"
      "      out[base + j] = frame_st(v);\n"
      "    }}\n"
      "  }}\n  (void)p1;\n}}\n",
      nr, has_bias ? " + frame_ld(in2[bo])" : "");
  k.meta = pack_values(meta, wide);
  return k;
}

// ---- reductions ----

// One warp per output element: each lane folds every 32nd reduced element, the lanes'
// partials are combined by shuffles (the table's combine), lane 0 finishes and stores. meta:
// the kept dims and strides, then the reduced dims and strides, then the reduced count.
Result<NodeKernel> reduce_kernel(const NodeContext& ctx, const gpu::Reduction& r,
                                 const gpu::ReduceGeometry& g) {
  FRAME_RETURN_IF_ERROR(float_only(ctx));
  const DTypeCode dt = ctx.input_types[0].dtype;
  const size_t nk = g.kept_dims.size(), nr = g.reduced_dims.size();
  const int64_t threads = g.outputs * 32;
  const bool wide = is_wide(threads) || is_wide(numel_of(ctx.input_types[0].shape));
  NodeKernel k;
  k.geometry = {1, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0])};
  k.out_bytes = static_cast<size_t>(g.outputs) * dtype_size(dt);
  k.work_items = g.reduced == 0 && g.outputs == 0 ? 0 : threads;
  k.t_is_double = kDouble.contains(dt);
  std::vector<int64_t> meta = g.kept_dims;
  meta.insert(meta.end(), g.kept_strides.begin(), g.kept_strides.end());
  meta.insert(meta.end(), g.reduced_dims.begin(), g.reduced_dims.end());
  meta.insert(meta.end(), g.reduced_strides.begin(), g.reduced_strides.end());
  meta.push_back(g.reduced);
  const bool fp64 = k.t_is_double;
  k.source =
      head(wide, meta.size(), r.op) + type_prelude(dt) + gpu::ew_prelude(gpu::Dialect::kCuda);
  k.source += fmt::format(
      "FRAME_FN T frame_combine(const T a, const T b) {{ return {}; }}\n"
      "FRAME_FN T frame_finish(const T acc, const I n) {{ return {}; }}\n",
      r.combine, r.finish);
  k.source += signature(1, "S", "S", "T") + std::string(kRowLoop);
  k.source += "    I base = 0, o = row;\n";
  for (size_t d = nk; d-- > 0;) {
    k.source += fmt::format("    base += (o % meta.v[{0}]) * meta.v[{1}];\n    o /= meta.v[{0}];\n",
                            d, nk + d);
  }
  k.source += fmt::format("    const I count = meta.v[{}];\n    T acc = {};\n", 2 * nk + 2 * nr,
                          gpu::c_literal(r.init, fp64, gpu::Dialect::kCuda));
  k.source += "    for (I j = lane; j < count; j += 32) {\n      I off = base, rem = j;\n";
  for (size_t d = nr; d-- > 0;) {
    k.source +=
        fmt::format("      off += (rem % meta.v[{0}]) * meta.v[{1}];\n      rem /= meta.v[{0}];\n",
                    2 * nk + d, 2 * nk + nr + d);
  }
  k.source += fmt::format(
      "      const T v = frame_ld(in0[off]);\n      {}\n    }}\n"
      "#pragma unroll\n"
      "    for (int s = 16; s > 0; s >>= 1) acc = frame_combine(acc, __shfl_xor_sync(0xffffffffu, "
      "acc, s));\n"
      "    if (lane == 0) out[row] = frame_st(frame_finish(acc, count));\n"
      "  }}\n  (void)p0; (void)p1;\n}}\n",
      r.fold);
  k.meta = pack_values(meta, wide);
  return k;
}

// global_average_pool / global_max_pool: reduce_mean / reduce_max over the spatial dims.
Result<NodeKernel> global_pool_kernel(const NodeContext& ctx, std::string_view reduction) {
  const Shape& x = ctx.input_types[0].shape;
  if (x.size() < 3) return ctx.error("cuda: {} of rank {}", ctx.op, x.size());
  const std::vector<int64_t> st = strides_of(x);
  gpu::ReduceGeometry g;
  for (size_t d = 0; d < x.size(); ++d) {
    if (d < 2) {
      g.kept_dims.push_back(x[d]);
      g.kept_strides.push_back(st[d]);
      g.outputs *= x[d];
    } else {
      g.reduced_dims.push_back(x[d]);
      g.reduced_strides.push_back(st[d]);
      g.reduced *= x[d];
    }
  }
  return reduce_kernel(ctx, *gpu::find_reduction(reduction), g);
}

// ---- clip ----

// y = min(max(x, lo), hi) as the cpu ClipOp (NaN passes through); the bounds are the optional
// scalar inputs 1 and 2, read on the device (meta: has_min, has_max; an absent bound's pointer
// is never read).
Result<NodeKernel> clip_kernel(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(float_only(ctx));
  const DTypeCode dt = ctx.input_types[0].dtype;
  const bool has_min = ctx.has_input(1), has_max = ctx.has_input(2);
  for (size_t k = 1; k < 3; ++k) {
    if (ctx.has_input(k) && numel_of(ctx.input_types[k].shape) != 1) {
      return ctx.error("input {} ({}) must be a scalar", k, k == 1 ? "min" : "max");
    }
  }
  const int64_t n = numel_of(ctx.input_types[0].shape);
  const bool wide = is_wide(n);
  NodeKernel k;
  k.geometry = {3, 0, wide};
  k.in_bytes = {bytes_of(ctx.input_types[0]), has_min ? dtype_size(dt) : 0,
                has_max ? dtype_size(dt) : 0};
  k.out_bytes = k.in_bytes[0];
  k.work_items = n;
  k.t_is_double = kDouble.contains(dt);
  k.source = head(wide, 2, "clip") + type_prelude(dt) + signature(3, "S", "S", "T") +
             "  const T lo = meta.v[0] ? frame_ld(in1[0]) : (T)0;\n"
             "  const T hi = meta.v[1] ? frame_ld(in2[0]) : (T)0;\n"
             "  for (I i = first; i < n; i += step) {\n"
             "    const T x = frame_ld(in0[i]);\n"
             "    const T y = meta.v[0] && x < lo ? lo : x;\n"
             "    out[i] = frame_st(meta.v[1] && y > hi ? hi : y);\n"
             "  }\n  (void)p0; (void)p1;\n}\n";
  k.meta = pack_values({has_min ? 1 : 0, has_max ? 1 : 0}, wide);
  return k;
}

}  // namespace

Result<NodeKernel> other_kernel(const NodeContext& ctx) {
  const std::string_view op = ctx.op;
  if (ctx.num_inputs() == 0 || !ctx.has_input(0)) return unimplemented("input 0 is absent");
  if (op == "identity" || op == "reshape" || op == "flatten" || op == "squeeze" ||
      op == "unsqueeze") {
    return copy_kernel(ctx);
  }
  if (op == "transpose") return transpose_kernel(ctx);
  if (op == "expand") return expand_kernel(ctx);
  if (op == "slice") return slice_kernel(ctx);
  if (op == "concat") return concat_kernel(ctx);
  if (op == "gather") return gather_kernel(ctx);
  if (op == "gather_elements") return gather_elements_kernel(ctx);
  if (op == "pad") return pad_kernel(ctx);
  if (op == "gather_nd") return gather_nd_kernel(ctx);
  if (op == "resize") return resize_kernel(ctx);
  if (op == "cast") return cast_kernel(ctx);
  if (op == "where") return where_kernel(ctx);
  if (op == "softmax") return softmax_kernel(ctx, false);
  if (op == "log_softmax") return softmax_kernel(ctx, true);
  if (op == "layer_normalization") return layer_norm_kernel(ctx);
  if (const gpu::Reduction* r = gpu::find_reduction(op)) {
    FRAME_ASSIGN_OR_RETURN(gpu::ReduceGeometry g, gpu::reduce_geometry(ctx));
    return reduce_kernel(ctx, *r, g);
  }
  if (op == "global_average_pool") return global_pool_kernel(ctx, "reduce_mean");
  if (op == "global_max_pool") return global_pool_kernel(ctx, "reduce_max");
  if (op == "clip") return clip_kernel(ctx);
  return not_found("cuda: no generator for op '{}'", op);
}

}  // namespace frame::backends::cuda
