/// \file
/// cpu reference kernels of the layout ops: reshape-like copies, transpose, concat, split,
/// slice, expand, tile, depth_to_space, space_to_depth, pad, trilu. Index parameters come from
/// the same code as shape inference (ops/schemas/data_movement_shapes.h).

#include <algorithm>
#include <cstring>
#include <vector>

#include "backends/cpu/kernels/data_movement_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::backends::cpu {
namespace {

using ops::KernelContext;

// Byte copy of input 0 into output 0 (same element count): reshape, flatten, squeeze, ...
Status copy_through(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (in.nbytes() != out.nbytes()) {
    return ctx.node->error("output holds {} bytes, input {}", out.nbytes(), in.nbytes());
  }
  if (in.nbytes() > 0 && in.raw_data() != out.raw_data()) {
    std::memcpy(out.raw_data(), in.raw_data(), in.nbytes());
  }
  return Status();
}

// out = strided view of input 0; dims must equal the output shape's element count.
Status copy_view(KernelContext& ctx, int64_t offset, const std::vector<int64_t>& dims,
                 const std::vector<int64_t>& strides) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return Status();
  return dispatch_storage(in.dtype(), [&]<typename T>() {
    strided_copy<T>(in.data<T>(), offset, dims, strides, out.data<T>(), ctx.num_threads);
  });
}

Status transpose_cpu(KernelContext& ctx) {
  const Shape& in = ctx.input(0).shape();
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ops::dm::transpose_perm(*ctx.node, in.size()));
  const std::vector<int64_t> st = strides_of(in);
  std::vector<int64_t> dims(in.size()), strides(in.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = in[static_cast<size_t>(perm[i])];
    strides[i] = st[static_cast<size_t>(perm[i])];
  }
  return copy_view(ctx, 0, dims, strides);
}

Status slice_cpu(KernelContext& ctx) {
  const Shape& in = ctx.input(0).shape();
  ops::NodeContext rt = runtime_context(ctx);
  FRAME_ASSIGN_OR_RETURN(ops::dm::SliceParams p, ops::dm::slice_params(rt, in));
  const std::vector<int64_t> st = strides_of(in);
  int64_t offset = 0;
  std::vector<int64_t> strides(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    offset += p.start[i] * st[i];
    // A dim of at most one element never advances; its step may be huge (INT64_MAX), and
    // step * stride would overflow.
    strides[i] = p.out_shape[i] <= 1 ? 0 : p.step[i] * st[i];
  }
  return copy_view(ctx, offset, p.out_shape, strides);
}

Status expand_cpu(KernelContext& ctx) {
  const Shape& out = ctx.output(0).shape();
  return copy_view(ctx, 0, out, broadcast_strides(ctx.input(0).shape(), out));
}

// Output [r0*d0, r1*d1, ...] is the view [r0, d0, r1, d1, ...] with stride 0 on the r dims.
Status tile_cpu(KernelContext& ctx) {
  const Shape& in = ctx.input(0).shape();
  const Shape& out = ctx.output(0).shape();
  const std::vector<int64_t> st = strides_of(in);
  std::vector<int64_t> dims, strides;
  for (size_t i = 0; i < in.size(); ++i) {
    dims.push_back(in[i] == 0 ? 0 : out[i] / in[i]);
    strides.push_back(0);
    dims.push_back(in[i]);
    strides.push_back(st[i]);
  }
  return copy_view(ctx, 0, dims, strides);
}

// depth_to_space / space_to_depth: transpose of a reshaped 6-D view of the input.
Status block_rearrange(KernelContext& ctx, const std::vector<int64_t>& view,
                       const std::vector<int64_t>& perm) {
  const std::vector<int64_t> st = strides_of(view);
  std::vector<int64_t> dims(6), strides(6);
  for (size_t i = 0; i < 6; ++i) {
    dims[i] = view[static_cast<size_t>(perm[i])];
    strides[i] = st[static_cast<size_t>(perm[i])];
  }
  return copy_view(ctx, 0, dims, strides);
}

Status depth_to_space_cpu(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  const int64_t b = ctx.node->attr_or<int64_t>("blocksize", 1);
  const int64_t c = s[1] / (b * b);
  if (ctx.node->attr_or<std::string>("mode", "DCR") == "CRD") {
    return block_rearrange(ctx, {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3});
  }
  return block_rearrange(ctx, {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2});
}

Status space_to_depth_cpu(KernelContext& ctx) {
  const Shape& s = ctx.input(0).shape();
  const int64_t b = ctx.node->attr_or<int64_t>("blocksize", 1);
  return block_rearrange(ctx, {s[0], s[1], s[2] / b, b, s[3] / b, b}, {0, 3, 5, 1, 2, 4});
}

// Concat and split move whole [dim_i * inner] byte runs per outer index.
struct AxisSplit {
  int64_t outer = 1;
  int64_t inner_bytes = 0;
};
AxisSplit split_at(const Shape& s, int64_t axis, size_t elem) {
  AxisSplit r;
  int64_t inner = 1;
  for (int64_t i = 0; i < axis; ++i) r.outer *= s[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s.size(); ++i) inner *= s[i];
  r.inner_bytes = inner * static_cast<int64_t>(elem);
  return r;
}

Status concat_cpu(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const int64_t r = out.rank();
  int64_t axis = ctx.node->attr_or<int64_t>("axis", 0);
  if (axis < 0) axis += r;
  const AxisSplit sp = split_at(out.shape(), axis, dtype_size(out.dtype()));
  const int64_t out_row = out.dim(axis) * sp.inner_bytes;
  char* dst = static_cast<char*>(out.raw_data());
  int64_t col = 0;
  for (const Tensor& in : ctx.inputs) {
    const int64_t row = in.dim(axis) * sp.inner_bytes;
    const char* src = static_cast<const char*>(in.raw_data());
    const int nt = threads_for(sp.outer * row / 4, ctx.num_threads);
    ops::parallel_for(sp.outer, nt, [&](int64_t o) {
      std::memcpy(dst + o * out_row + col, src + o * row, static_cast<size_t>(row));
    });
    col += row;
  }
  return Status();
}

Status split_cpu(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const int64_t r = in.rank();
  int64_t axis = ctx.node->attr_or<int64_t>("axis", 0);
  if (axis < 0) axis += r;
  const AxisSplit sp = split_at(in.shape(), axis, dtype_size(in.dtype()));
  const int64_t in_row = in.dim(axis) * sp.inner_bytes;
  const char* src = static_cast<const char*>(in.raw_data());
  int64_t col = 0;
  for (Tensor& out : ctx.outputs) {
    const int64_t row = out.dim(axis) * sp.inner_bytes;
    char* dst = static_cast<char*>(out.raw_data());
    const int nt = threads_for(sp.outer * row / 4, ctx.num_threads);
    ops::parallel_for(sp.outer, nt, [&](int64_t o) {
      std::memcpy(dst + o * row, src + o * in_row + col, static_cast<size_t>(row));
    });
    col += row;
  }
  return Status();
}

Status pad_cpu(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  ops::NodeContext rt = runtime_context(ctx);
  FRAME_ASSIGN_OR_RETURN(ops::dm::PadParams p, ops::dm::pad_params(rt, in.shape()));
  if (out.numel() == 0) return Status();
  const size_t r = in.shape().size();
  if (r == 0) return copy_through(ctx);
  // Source indices are computed per row (outer axes) and per padded element (last axis): no
  // table per output index, whose size the model controls (docs/security.md, "Memory outside
  // the plan"). The copied range [lo, hi) of the last axis is one contiguous copy.
  const std::vector<int64_t> st = strides_of(in.shape());
  const bool has_value = ctx.inputs.size() > 2 && ctx.node->has_input(2);
  const int64_t inner = p.out_shape[r - 1], d_last = in.shape()[r - 1], b_last = p.begin[r - 1];
  const int64_t lo = std::clamp<int64_t>(b_last, 0, inner);
  const int64_t hi = std::clamp<int64_t>(b_last + d_last, lo, inner);
  const int64_t rows = out.numel() / inner;
  return dispatch_storage(in.dtype(), [&]<typename T>() {
    const T fill = has_value ? ctx.input(2).data<T>()[0] : T{};
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    const int nt = threads_for(out.numel(), ctx.num_threads);
    ops::parallel_for(rows, nt, [&](int64_t row) {
      int64_t rem = row, off = 0;
      bool filled = false;
      for (size_t a = r - 1; a-- > 0;) {
        const int64_t s =
            ops::dm::pad_source_index(p.mode, rem % p.out_shape[a], p.begin[a], in.shape()[a]);
        rem /= p.out_shape[a];
        filled = filled || s < 0;
        off += s * st[a];
      }
      T* o = dst + row * inner;
      if (filled) {
        std::fill(o, o + inner, fill);
        return;
      }
      // Explicit captures: clang 14 cannot reach the enclosing function's locals from a lambda
      // inside an OpenMP region of a generic lambda.
      auto padded = [o, src, fill, off, mode = p.mode, bl = b_last, dl = d_last](int64_t j0,
                                                                                 int64_t j1) {
        for (int64_t j = j0; j < j1; ++j) {
          const int64_t s = ops::dm::pad_source_index(mode, j, bl, dl);
          o[j] = s < 0 ? fill : src[off + s];
        }
      };
      padded(0, lo);
      std::copy(src + off + (lo - b_last), src + off + (hi - b_last), o + lo);
      padded(hi, inner);
    });
  });
}

Status trilu_cpu(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const bool upper = ctx.node->attr_or<int64_t>("upper", 1) != 0;
  const int64_t n = in.dim(in.rank() - 2), m = in.dim(in.rank() - 1);
  // Saturate k so i + k cannot overflow; beyond n + m every k acts the same.
  const int64_t k = std::clamp<int64_t>(
      ctx.inputs.size() > 1 && ctx.node->has_input(1) ? ctx.input(1).element_as_int64(0) : 0,
      -(n + m + 1), n + m + 1);
  const int64_t rows = n == 0 || m == 0 ? 0 : in.numel() / m;
  return dispatch_storage(in.dtype(), [&]<typename T>() {
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    const int nt = threads_for(in.numel(), ctx.num_threads);
    ops::parallel_for(rows, nt, [&](int64_t row) {
      const int64_t i = row % n;
      // Keep j - i >= k (upper) or j - i <= k (lower): one split point per row.
      const int64_t cut = std::clamp<int64_t>(upper ? i + k : i + k + 1, 0, m);
      const T* s = src + row * m;
      T* d = dst + row * m;
      for (int64_t j = 0; j < m; ++j) d[j] = (j < cut) == upper ? T{} : s[j];
    });
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(reshape, "cpu", copy_through).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(flatten, "cpu", copy_through).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(squeeze, "cpu", copy_through).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(unsqueeze, "cpu", copy_through).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(transpose, "cpu", transpose_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(concat, "cpu", concat_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(split, "cpu", split_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(slice, "cpu", slice_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(expand, "cpu", expand_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(tile, "cpu", tile_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(depth_to_space, "cpu", depth_to_space_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(space_to_depth, "cpu", space_to_depth_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(pad, "cpu", pad_cpu).dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(trilu, "cpu", trilu_cpu).dtypes(kAllDTypes);

}  // namespace frame::backends::cpu
