// `onednn` kernels of the layout ops that move bytes: transpose (tiled), slice (strided runs),
// concat and split (one parallel copy split evenly by bytes). Every dtype: elements are moved
// by size (1, 2, 4 or 8 bytes), never by dtype arithmetic (ARCH-042). The copy plan (merged
// dims, strides, row sizes) is computed once at prepare from the static shapes.

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/laid_out.h"
#include "backends/onednn/kernels/parallel.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;

// Block of the tiled transpose: kBlockA elements along the source's contiguous dim (long
// contiguous reads per source row) x kBlock along the output's; at most 128 x 32 x 8 bytes =
// 32 KiB, within L1.
constexpr int64_t kBlockA = 128;
constexpr int64_t kBlock = 32;

// ---- strided copy: transpose and slice ----

// dst (contiguous, shape dims) = src[offset + sum_d i_d * strides[d]], with size-1 dims dropped
// and dims contiguous in the source merged.
struct StridedPlan {
  std::vector<int64_t> dims, strides;
  int64_t offset = 0;
  int64_t numel = 0;
  size_t elem = 1;
  int tiled_dim = -1;  // a dim (not the last) with source stride 1: blocked 2-D transpose
};

StridedPlan make_plan(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                      int64_t offset, size_t elem) {
  StridedPlan p;
  p.offset = offset;
  p.elem = elem;
  p.numel = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    p.numel *= dims[d];
    if (dims[d] == 1) continue;
    if (!p.dims.empty() && p.strides.back() == strides[d] * dims[d]) {
      p.dims.back() *= dims[d];
      p.strides.back() = strides[d];
      continue;
    }
    p.dims.push_back(dims[d]);
    p.strides.push_back(strides[d]);
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    p.strides.push_back(1);
  }
  if (p.strides.back() != 1) {
    for (size_t d = 0; d + 1 < p.dims.size(); ++d) {
      if (p.strides[d] == 1) p.tiled_dim = static_cast<int>(d);
    }
  }
  return p;
}

// Source offset of the row-major output position `pos` over dims [0, upto) (skipping `skip`).
int64_t source_offset(const StridedPlan& p, int64_t pos, size_t upto, int skip = -1) {
  int64_t off = 0;
  for (size_t d = upto; d-- > 0;) {
    if (static_cast<int>(d) == skip) continue;
    off += (pos % p.dims[d]) * p.strides[d];
    pos /= p.dims[d];
  }
  return off;
}

// Rows [r0, r1) of the output. The row's source offset comes from one division chain at r0;
// after that an odometer over the outer dims steps it (a division chain per row cost more than
// copying a short row: attention's [S, B*H, D] -> [B*H, S, D] transposes move rows of 16).
template <typename E>
void strided_rows(const StridedPlan& p, const E* src, E* dst, int64_t r0, int64_t r1) {
  const size_t last = p.dims.size() - 1;
  const int64_t n = p.dims[last], st = p.strides[last];
  constexpr size_t kMaxDims = 8;
  if (last > kMaxDims) {
    for (int64_t r = r0; r < r1; ++r) {
      const E* s = src + p.offset + source_offset(p, r, last);
      E* d = dst + r * n;
      for (int64_t i = 0; i < n; ++i) d[i] = s[i * st];
    }
    return;
  }
  std::array<int64_t, kMaxDims> idx{};
  int64_t off = p.offset;
  for (int64_t pos = r0, d = static_cast<int64_t>(last); d-- > 0;) {
    idx[static_cast<size_t>(d)] = pos % p.dims[static_cast<size_t>(d)];
    pos /= p.dims[static_cast<size_t>(d)];
    off += idx[static_cast<size_t>(d)] * p.strides[static_cast<size_t>(d)];
  }
  E* d = dst + r0 * n;
  for (int64_t r = r0; r < r1; ++r, d += n) {
    const E* s = src + off;
    if (st == 1) {
      std::memcpy(d, s, static_cast<size_t>(n) * sizeof(E));
    } else {
      for (int64_t i = 0; i < n; ++i) d[i] = s[i * st];
    }
    // Next row: the innermost outer dim steps; a dim that wraps carries into the one before.
    for (size_t k = last; k-- > 0;) {
      off += p.strides[k];
      if (++idx[k] < p.dims[k]) break;
      off -= idx[k] * p.strides[k];
      idx[k] = 0;
    }
  }
}

// Output dims [..., J (source stride 1), ..., K (last)]: items are (other dims, J block); each
// copies a kBlockA x K panel in kBlockA x kBlock blocks.
template <typename E>
void tiled_items(const StridedPlan& p, const E* src, E* dst, int64_t i0, int64_t i1,
                 const VecTable* vt) {
  const auto j = static_cast<size_t>(p.tiled_dim);
  const size_t last = p.dims.size() - 1;
  const int64_t dj = p.dims[j], dk = p.dims[last], sk = p.strides[last];
  int64_t out_stride_j = 1;  // output element stride of dim j
  for (size_t d = j + 1; d < p.dims.size(); ++d) out_stride_j *= p.dims[d];
  const int64_t jblocks = (dj + kBlockA - 1) / kBlockA;
  for (int64_t item = i0; item < i1; ++item) {
    const int64_t outer = item / jblocks;  // index over dims other than j and last
    const int64_t a0 = (item % jblocks) * kBlockA;
    const int64_t a1 = std::min(dj, a0 + kBlockA);
    // Output base and source base of this (outer) position.
    int64_t rem = outer, src_off = p.offset, dst_off = 0, out_stride = dk;
    for (size_t d = last; d-- > 0;) {
      if (d == j) {
        out_stride *= p.dims[d];
        continue;
      }
      const int64_t idx = rem % p.dims[d];
      rem /= p.dims[d];
      src_off += idx * p.strides[d];
      dst_off += idx * out_stride;
      out_stride *= p.dims[d];
    }
    const int64_t na = a1 - a0;
    if constexpr (sizeof(E) == 4) {
      // Blocks of 8 x 8 (4 x 4) in registers (VecTable::transpose32): the scalar loops below
      // moved ConvNeXt-T's [1, 96, 56, 56] <-> [1, 56, 56, 96] permutes at 2.5-3x ONNX
      // Runtime's time. K by chunks of kBlockA, so the output lines a chunk writes stay in
      // L1.
      if (vt != nullptr) {
        for (int64_t b0 = 0; b0 < dk; b0 += kBlockA) {
          vt->transpose32(src + src_off + a0 + b0 * sk, static_cast<size_t>(sk),
                          dst + dst_off + a0 * out_stride_j + b0, static_cast<size_t>(out_stride_j),
                          static_cast<size_t>(std::min(dk, b0 + kBlockA) - b0),
                          static_cast<size_t>(na));
        }
        continue;
      }
    }
    if (dk <= kBlockA) {
      // A short K: the dk source lines a row touches stay in L1 across the block's rows.
      for (int64_t a = 0; a < na; ++a) {
        const E* s = src + src_off + a0 + a;
        E* d = dst + dst_off + (a0 + a) * out_stride_j;
        for (int64_t b = 0; b < dk; ++b) d[b] = s[b * sk];
      }
      continue;
    }
    // A long K: each block goes through an L1 buffer, read along the source's contiguous dim
    // (a) and written along the output's (b), so both memory sides are contiguous runs.
    E buf[kBlockA][kBlock];
    for (int64_t b0 = 0; b0 < dk; b0 += kBlock) {
      const int64_t nb = std::min(dk, b0 + kBlock) - b0;
      for (int64_t b = 0; b < nb; ++b) {
        const E* s = src + src_off + a0 + (b0 + b) * sk;
        for (int64_t a = 0; a < na; ++a) buf[a][b] = s[a];
      }
      for (int64_t a = 0; a < na; ++a) {
        E* d = dst + dst_off + (a0 + a) * out_stride_j + b0;
        for (int64_t b = 0; b < nb; ++b) d[b] = buf[a][b];
      }
    }
  }
}

template <typename E>
void run_strided(const StridedPlan& p, const void* src_v, void* dst_v, int threads) {
  const E* src = static_cast<const E*>(src_v);
  E* dst = static_cast<E*>(dst_v);
  const int nt = threads_for_bytes(p.numel * static_cast<int64_t>(sizeof(E)), threads);
  if (p.tiled_dim >= 0) {
    const int64_t dj = p.dims[static_cast<size_t>(p.tiled_dim)];
    const int64_t items = p.numel / (dj * p.dims.back()) * ((dj + kBlockA - 1) / kBlockA);
    const VecTable* vt = &vec_table();
    if (vt->transpose32 == nullptr) vt = nullptr;
    parallel_ranges(items, nt, [&](int64_t a, int64_t b) { tiled_items(p, src, dst, a, b, vt); });
  } else {
    const int64_t rows = p.numel / p.dims.back();
    parallel_ranges(rows, nt, [&](int64_t a, int64_t b) { strided_rows(p, src, dst, a, b); });
  }
}

Status strided_kernel(KernelContext& ctx) {
  const auto* p = static_cast<const StridedPlan*>(ctx.state);
  if (p == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  Tensor& out = ctx.output(0);
  if (out.numel() != p->numel) {
    return ctx.node->error("output has {} elements, prepared for {}", out.numel(), p->numel);
  }
  if (p->numel == 0) return Status();
  const void* src = ctx.input(0).raw_data();
  by_element_size(p->elem,
                  [&]<typename E>() { run_strided<E>(*p, src, out.raw_data(), ctx.num_threads); });
  return Status();
}

Result<std::shared_ptr<void>> transpose_prepare(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ops::dm::transpose_perm(ctx, in.size()));
  const std::vector<int64_t> st = contiguous_strides(in);
  std::vector<int64_t> dims(in.size()), strides(in.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = in[static_cast<size_t>(perm[i])];
    strides[i] = st[static_cast<size_t>(perm[i])];
  }
  return std::shared_ptr<void>(std::make_shared<StridedPlan>(
      make_plan(dims, strides, 0, dtype_size(ctx.input_types[0].dtype))));
}

Status slice_accepts(const NodeContext& ctx) {
  Result<ops::dm::SliceParams> p = ops::dm::slice_params(ctx, ctx.input_types[0].shape);
  if (!p.is_ok()) return unimplemented("slice parameters are not constants at prepare");
  return Status();
}

Result<std::shared_ptr<void>> slice_prepare(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(ops::dm::SliceParams p, ops::dm::slice_params(ctx, in));
  const std::vector<int64_t> st = contiguous_strides(in);
  int64_t offset = 0;
  std::vector<int64_t> strides(in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    offset += p.start[i] * st[i];
    // As in the cpu slice: a dim of at most one element never advances (its step may be huge).
    strides[i] = p.out_shape[i] <= 1 ? 0 : p.step[i] * st[i];
  }
  return std::shared_ptr<void>(std::make_shared<StridedPlan>(
      make_plan(p.out_shape, strides, offset, dtype_size(ctx.input_types[0].dtype))));
}

// ---- concat and split: rows of the joined tensor ----

// The joined tensor (concat's output, split's input) is `outer` rows of `row` bytes; part k
// holds bytes [col[k], col[k] + width[k]) of every row.
struct JoinPlan {
  int64_t outer = 1;
  int64_t row = 0;
  std::vector<int64_t> col, width;
};

Result<JoinPlan> join_plan(const NodeContext& ctx, const std::vector<Shape>& parts, int64_t axis);

// The plan of joining `parts` along `axis` (negative: from the end) of the node's attribute
// "axis", elements of the node's input dtype.
Result<JoinPlan> join_plan(const NodeContext& ctx, const std::vector<Shape>& parts) {
  return join_plan(ctx, parts, ctx.attr_or<int64_t>("axis", 0));
}

Result<JoinPlan> join_plan(const NodeContext& ctx, const std::vector<Shape>& parts, int64_t axis) {
  const Shape& s0 = parts.front();
  if (axis < 0) axis += static_cast<int64_t>(s0.size());
  if (axis < 0 || axis >= static_cast<int64_t>(s0.size())) {
    return ctx.error("axis {} is out of range for rank {}", axis, s0.size());
  }
  JoinPlan p;
  int64_t inner = static_cast<int64_t>(dtype_size(ctx.input_types[0].dtype));
  for (int64_t i = 0; i < axis; ++i) p.outer *= s0[static_cast<size_t>(i)];
  for (size_t i = static_cast<size_t>(axis) + 1; i < s0.size(); ++i) inner *= s0[i];
  for (const Shape& s : parts) {
    p.col.push_back(p.row);
    p.width.push_back(s[static_cast<size_t>(axis)] * inner);
    p.row += p.width.back();
  }
  return p;
}

// Copies the joined bytes [b0, b1) between the joined buffer and the parts; `to_joined` is
// concat's direction.
void join_range(const JoinPlan& p, std::byte* joined, std::byte* const* parts, bool to_joined,
                int64_t b0, int64_t b1) {
  if (p.row == 0) return;
  int64_t pos = b0;
  while (pos < b1) {
    const int64_t o = pos / p.row;  // once per segment, not per byte
    const int64_t in_row = pos - o * p.row;
    size_t k = 0;
    while (in_row >= p.col[k] + p.width[k]) ++k;
    const int64_t off = in_row - p.col[k];
    const int64_t n = std::min(b1 - pos, p.width[k] - off);
    std::byte* part = parts[k] + o * p.width[k] + off;
    if (to_joined) {
      std::memcpy(joined + pos, part, static_cast<size_t>(n));
    } else {
      std::memcpy(part, joined + pos, static_cast<size_t>(n));
    }
    pos += n;
  }
}

Status join_kernel(KernelContext& ctx, bool concat) {
  const auto* p = static_cast<const JoinPlan*>(ctx.state);
  if (p == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  const size_t nparts = concat ? ctx.inputs.size() : ctx.outputs.size();
  if (nparts != p->col.size()) {
    return ctx.node->error("{} parts, prepared for {}", nparts, p->col.size());
  }
  std::array<std::byte*, 64> small{};
  std::vector<std::byte*> large;
  std::byte** parts = small.data();
  if (nparts > small.size()) {
    large.resize(nparts);
    parts = large.data();
  }
  for (size_t k = 0; k < nparts; ++k) {
    parts[k] = concat ? static_cast<std::byte*>(const_cast<void*>(ctx.input(k).raw_data()))
                      : static_cast<std::byte*>(ctx.output(k).raw_data());
  }
  std::byte* joined = concat ? static_cast<std::byte*>(ctx.output(0).raw_data())
                             : static_cast<std::byte*>(const_cast<void*>(ctx.input(0).raw_data()));
  const int64_t total = p->outer * p->row;
  parallel_ranges(total, threads_for_bytes(total, ctx.num_threads),
                  [&](int64_t a, int64_t b) { join_range(*p, joined, parts, concat, a, b); });
  return Status();
}

Status concat_kernel(KernelContext& ctx) { return join_kernel(ctx, true); }
Status split_kernel(KernelContext& ctx) { return join_kernel(ctx, false); }

Result<std::shared_ptr<void>> concat_prepare(const NodeContext& ctx) {
  std::vector<Shape> parts;
  for (const ir::TensorType& t : ctx.input_types) parts.push_back(t.shape);
  FRAME_ASSIGN_OR_RETURN(JoinPlan p, join_plan(ctx, parts));
  return std::shared_ptr<void>(std::make_shared<JoinPlan>(std::move(p)));
}

Result<std::shared_ptr<void>> split_prepare(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ops::dm::split_sizes(ctx, in));
  int64_t axis = ctx.attr_or<int64_t>("axis", 0);
  if (axis < 0) axis += static_cast<int64_t>(in.size());
  std::vector<Shape> parts;
  for (int64_t s : sizes) {
    Shape part = in;
    part[static_cast<size_t>(axis)] = s;
    parts.push_back(part);
  }
  FRAME_ASSIGN_OR_RETURN(JoinPlan p, join_plan(ctx, parts));
  return std::shared_ptr<void>(std::make_shared<JoinPlan>(std::move(p)));
}

Status split_accepts(const NodeContext& ctx) {
  if (!ops::dm::split_sizes(ctx, ctx.input_types[0].shape).is_ok()) {
    return unimplemented("split sizes are not known at prepare");
  }
  return Status();
}

}  // namespace

// Channels-last [N, C_k, H, W] parts are [N, H, W, C_k] row-major: joining channels joins the
// last dim of those, rows of N*H*W.
Result<std::shared_ptr<void>> laid_out_concat_prepare(const NodeContext& ctx,
                                                      ops::fused::ActivationLayout layout) {
  const int64_t block = ops::fused::channel_block(layout);
  const bool nhwc = layout == ops::fused::ActivationLayout::kNhwc;
  std::vector<Shape> parts;
  for (const ir::TensorType& t : ctx.input_types) {
    const Shape& s = t.shape;
    if (s.size() != 4)
      return ctx.error("laid-out concat needs rank-4 parts, got rank {}", s.size());
    if (s[1] % block != 0) {
      return ctx.error("a part of {} channels is not a multiple of the layout's block {}", s[1],
                       block);
    }
    // nhwc: [N, H, W, C] joined on C; blocked: [N, C/b, H*W*b] joined on the blocks.
    parts.push_back(nhwc ? Shape{s[0], s[2], s[3], s[1]}
                         : Shape{s[0], s[1] / block, s[2] * s[3] * block});
  }
  FRAME_ASSIGN_OR_RETURN(JoinPlan p, join_plan(ctx, parts, nhwc ? 3 : 1));
  return std::shared_ptr<void>(std::make_shared<JoinPlan>(std::move(p)));
}

Status run_concat(KernelContext& ctx) { return concat_kernel(ctx); }

FRAME_REGISTER_KERNEL(transpose, "onednn", strided_kernel)
    .dtypes(kAllDTypes)
    .prepare(transpose_prepare);
FRAME_REGISTER_KERNEL(slice, "onednn", strided_kernel)
    .dtypes(kAllDTypes)
    .prepare(slice_prepare)
    .accepts(slice_accepts);
FRAME_REGISTER_KERNEL(concat, "onednn", concat_kernel).dtypes(kAllDTypes).prepare(concat_prepare);
FRAME_REGISTER_KERNEL(split, "onednn", split_kernel)
    .dtypes(kAllDTypes)
    .prepare(split_prepare)
    .accepts(split_accepts);

}  // namespace frame::backends::onednn
