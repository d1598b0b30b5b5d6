// `onednn` kernels of the indexed and padding data-movement ops: gather (one memcpy of the inner
// block per (outer, index) pair), pad (per output row: interior runs by memcpy, fills by
// element) and resize (nearest and f32 linear over H, W of NCHW, per output row from index and
// weight tables). Every dtype: elements are moved by size (1, 2, 4 or 8 bytes), never by dtype
// arithmetic (ARCH-042). Shapes are static, so the copy plans are built once at prepare.

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "backends/onednn/kernels/parallel.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;

// ---- gather (ONNX Gather, opset 13) ----

// data viewed as [outer, dim, inner]; output as [outer, n_idx, inner].
struct GatherPlan {
  int64_t outer = 1;
  int64_t dim = 0;
  int64_t chunk = 0;  // bytes of one inner block
};

Result<std::shared_ptr<void>> gather_prepare(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  const int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = ctx.attr_or<int64_t>("axis", 0);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return ctx.error("axis {} is out of range for rank {}", axis, rank);
  GatherPlan p;
  p.dim = in[static_cast<size_t>(axis)];
  p.chunk = static_cast<int64_t>(dtype_size(ctx.input_types[0].dtype));
  for (int64_t i = 0; i < axis; ++i) p.outer *= in[static_cast<size_t>(i)];
  for (int64_t i = axis + 1; i < rank; ++i) p.chunk *= in[static_cast<size_t>(i)];
  return std::shared_ptr<void>(std::make_shared<GatherPlan>(p));
}

// Copies output items [r0, r1) (item = (outer o, index j)); N > 0: chunk is N bytes (a
// fixed-size move), N == 0: `chunk` bytes.
template <size_t N, typename I>
void gather_items(const GatherPlan& p, const I* ix, int64_t n, const std::byte* src, std::byte* dst,
                  int64_t r0, int64_t r1) {
  const size_t chunk = N > 0 ? N : static_cast<size_t>(p.chunk);
  int64_t o = r0 / n, j = r0 - (r0 / n) * n;
  for (int64_t r = r0; r < r1; ++r) {
    int64_t x = static_cast<int64_t>(ix[j]);
    x = x < 0 ? x + p.dim : x;  // range checked before any copy
    std::memcpy(dst + static_cast<size_t>(r) * chunk,
                src + static_cast<size_t>(o * p.dim + x) * chunk, chunk);
    if (++j == n) {
      j = 0;
      ++o;
    }
  }
}

// Copies output bytes [b0, b1), which may start and end inside blocks.
template <typename I>
void gather_bytes(const GatherPlan& p, const I* ix, int64_t n, const std::byte* src, std::byte* dst,
                  int64_t b0, int64_t b1) {
  for (int64_t r = b0 / p.chunk; r * p.chunk < b1; ++r) {
    const int64_t lo = std::max(b0, r * p.chunk), hi = std::min(b1, (r + 1) * p.chunk);
    const int64_t o = r / n;
    int64_t x = static_cast<int64_t>(ix[r - o * n]);
    x = x < 0 ? x + p.dim : x;
    std::memcpy(dst + lo, src + (o * p.dim + x) * p.chunk + (lo - r * p.chunk),
                static_cast<size_t>(hi - lo));
  }
}

template <typename I>
Status gather_run(KernelContext& ctx, const GatherPlan& p) {
  const Tensor& idx = ctx.input(1);
  const I* ix = idx.data<I>();
  const int64_t n = idx.numel();
  // Every index is checked before anything is written.
  for (int64_t i = 0; i < n; ++i) {
    const int64_t x = static_cast<int64_t>(ix[i]);
    if (x < -p.dim || x >= p.dim) {
      return ctx.node->error("input 1 (indices) value {} at {} out of range [{}, {}]", x, i, -p.dim,
                             p.dim - 1);
    }
  }
  const int64_t items = p.outer * n;
  if (items == 0 || p.chunk == 0) return Status();
  const auto* src = static_cast<const std::byte*>(ctx.input(0).raw_data());
  auto* dst = static_cast<std::byte*>(ctx.output(0).raw_data());
  const int nt = threads_for_bytes(items * p.chunk, ctx.num_threads);
  if (items < nt) {  // few large blocks: split the output bytes evenly instead
    parallel_ranges(items * p.chunk, nt,
                    [&](int64_t b0, int64_t b1) { gather_bytes(p, ix, n, src, dst, b0, b1); });
    return Status();
  }
  auto run = [&]<size_t N>() {
    parallel_ranges(items, nt,
                    [&](int64_t a, int64_t b) { gather_items<N, I>(p, ix, n, src, dst, a, b); });
  };
  switch (p.chunk) {  // small blocks: a fixed-size move instead of a memcpy call
    case 1:
      run.template operator()<1>();
      break;
    case 2:
      run.template operator()<2>();
      break;
    case 4:
      run.template operator()<4>();
      break;
    case 8:
      run.template operator()<8>();
      break;
    case 16:
      run.template operator()<16>();
      break;
    default:
      run.template operator()<0>();
      break;
  }
  return Status();
}

Status gather_kernel(KernelContext& ctx) {
  const auto* p = static_cast<const GatherPlan*>(ctx.state);
  if (p == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  constexpr DTypeSet kIndexDTypes{DTypeCode::kInt32, DTypeCode::kInt64};
  return dispatch_dtype<kIndexDTypes>(ctx.input(1).dtype(),
                                      [&]<typename I>() { return gather_run<I>(ctx, *p); });
}

// ---- pad (ONNX Pad, opset 21) ----

// One run of an output row: `len` elements at `dst` either filled, copied from `src`, or (repeat)
// the one source block of `inner` elements at `src` repeated (edge padding); `dst` and `src` in
// elements, relative to the output row and to the source row base.
struct PadSegment {
  int64_t dst = 0;
  int64_t src = 0;
  int64_t len = 0;
  bool fill = false;
  bool repeat = false;
};

// The output is `rows` rows of `row` elements: the axes before the last padded one (k) index
// the rows; axis k and the unpadded axes after it make up a row. The source index of a row on
// each axis a < k is computed per row (pad_source_index): no table per output index, whose size
// the model controls (docs/security.md, "Memory outside the plan").
struct PadPlan {
  size_t elem = 1;
  ops::dm::PadMode mode = ops::dm::PadMode::kConstant;
  std::vector<int64_t> out_dims;    // axes [0, k)
  std::vector<int64_t> in_dims;     // axes [0, k)
  std::vector<int64_t> begin;       // axes [0, k)
  std::vector<int64_t> src_stride;  // input strides (elements) of axes [0, k)
  std::vector<PadSegment> segs;
  int64_t inner = 1;
  int64_t row = 0;
  int64_t rows = 0;
};

// Reflect and wrap padding of the last padded axis k become one segment per source run; more
// padded indices than this on axis k go to the cpu kernel, which needs no segment table.
constexpr int64_t kMaxPeriodicPadIndices = int64_t{1} << 16;

// The last axis whose output differs from the input (r when none).
size_t last_padded_axis(const ops::dm::PadParams& pp, const Shape& in) {
  size_t k = in.size();
  for (size_t a = 0; a < in.size(); ++a) {
    if (pp.begin[a] != 0 || pp.out_shape[a] != in[a]) k = a;
  }
  return k;
}

Status pad_accepts(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  Result<ops::dm::PadParams> pp = ops::dm::pad_params(ctx, in);
  if (!pp.is_ok()) return unimplemented("pads or axes are not constants at prepare");
  const size_t k = last_padded_axis(*pp, in);
  if (k < in.size() &&
      (pp->mode == ops::dm::PadMode::kReflect || pp->mode == ops::dm::PadMode::kWrap)) {
    // Output indices of axis k outside the copied input range.
    const int64_t ok = pp->out_shape[k], lo = std::clamp<int64_t>(pp->begin[k], 0, ok);
    const int64_t hi = std::clamp<int64_t>(pp->begin[k] + in[k], lo, ok);
    if (lo + (ok - hi) > kMaxPeriodicPadIndices) {
      return unimplemented("reflect/wrap pad of {} indices on axis {} (at most {})", lo + (ok - hi),
                           k, kMaxPeriodicPadIndices);
    }
  }
  return Status();
}

Result<std::shared_ptr<void>> pad_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(pad_accepts(ctx));
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(ops::dm::PadParams pp, ops::dm::pad_params(ctx, in));
  const size_t r = in.size();
  auto p = std::make_shared<PadPlan>();
  p->elem = dtype_size(ctx.input_types[0].dtype);
  p->mode = pp.mode;
  // k: the last padded axis; the axes after it are whole rows.
  const size_t k = last_padded_axis(pp, in);
  int64_t inner = 1;
  for (size_t a = (k == r ? 0 : k + 1); a < r; ++a) inner *= in[a];
  p->inner = inner;
  const std::vector<int64_t> st = contiguous_strides(in);
  p->rows = 1;
  if (k == r) {  // nothing padded: one row, one copy
    p->row = inner;
    if (inner > 0) p->segs.push_back({0, 0, inner, false, false});
    return std::shared_ptr<void>(std::move(p));
  }
  for (size_t a = 0; a < k; ++a) {
    p->out_dims.push_back(pp.out_shape[a]);
    p->in_dims.push_back(in[a]);
    p->begin.push_back(pp.begin[a]);
    p->src_stride.push_back(st[a]);
    p->rows *= pp.out_shape[a];
  }
  // Axis k: the copied input range [lo, hi) is one copy; the padding before and after it is one
  // fill (constant) or one repeat (edge) each, computed without visiting every index; reflect
  // and wrap padding (at most kMaxPeriodicPadIndices indices, pad_accepts) merges runs of
  // consecutive source indices into one copy.
  const int64_t ok = pp.out_shape[k], dk = in[k], bk = pp.begin[k];
  p->row = ok * inner;
  if (inner == 0 || ok == 0) return std::shared_ptr<void>(std::move(p));
  const int64_t lo = std::clamp<int64_t>(bk, 0, ok), hi = std::clamp<int64_t>(bk + dk, lo, ok);
  auto padding = [&](int64_t o0, int64_t o1) {
    if (o0 >= o1) return;
    if (pp.mode == ops::dm::PadMode::kConstant || dk == 0) {
      p->segs.push_back({o0 * inner, 0, (o1 - o0) * inner, true, false});
      return;
    }
    if (pp.mode == ops::dm::PadMode::kEdge || dk == 1) {
      const int64_t s = ops::dm::pad_source_index(pp.mode, o0, bk, dk);
      p->segs.push_back({o0 * inner, s * inner, (o1 - o0) * inner, false, true});
      return;
    }
    for (int64_t o = o0; o < o1;) {
      const int64_t s = ops::dm::pad_source_index(pp.mode, o, bk, dk);
      int64_t e = o + 1;
      while (e < o1 && ops::dm::pad_source_index(pp.mode, e, bk, dk) == s + (e - o)) ++e;
      p->segs.push_back({o * inner, s * inner, (e - o) * inner, false, false});
      o = e;
    }
  };
  padding(0, lo);
  if (lo < hi) p->segs.push_back({lo * inner, (lo - bk) * inner, (hi - lo) * inner, false, false});
  padding(hi, ok);
  return std::shared_ptr<void>(std::move(p));
}

// Writes output elements [e0, e1) (any part of any rows, so a few long rows still split
// evenly over threads).
template <typename E>
void pad_range(const PadPlan& p, const E* src, E* dst, E fill, int64_t e0, int64_t e1) {
  const size_t k = p.out_dims.size();
  for (int64_t row = e0 / p.row; row * p.row < e1; ++row) {
    const int64_t base = row * p.row;
    const int64_t lo = std::max(e0, base) - base, hi = std::min(e1, base + p.row) - base;
    int64_t rem = row, off = 0;
    bool filled = false;
    for (size_t a = k; a-- > 0;) {  // one division chain per row
      const int64_t s =
          ops::dm::pad_source_index(p.mode, rem % p.out_dims[a], p.begin[a], p.in_dims[a]);
      rem /= p.out_dims[a];
      filled = filled || s < 0;
      off += s * p.src_stride[a];
    }
    E* d = dst + base;
    if (filled) {
      std::fill(d + lo, d + hi, fill);
      continue;
    }
    for (const PadSegment& g : p.segs) {
      const int64_t a = std::max(lo, g.dst), b = std::min(hi, g.dst + g.len);
      if (a >= b) continue;
      if (g.fill) {
        std::fill(d + a, d + b, fill);
      } else if (g.repeat && p.inner == 1) {
        std::fill(d + a, d + b, src[off + g.src]);
      } else if (g.repeat) {
        for (int64_t q = a; q < b;) {  // one source block per step, partial at the ends
          const int64_t j = (q - g.dst) % p.inner, n = std::min(b - q, p.inner - j);
          std::memcpy(d + q, src + off + g.src + j, static_cast<size_t>(n) * sizeof(E));
          q += n;
        }
      } else {
        std::memcpy(d + a, src + off + g.src + (a - g.dst), static_cast<size_t>(b - a) * sizeof(E));
      }
    }
  }
}

Status pad_kernel(KernelContext& ctx) {
  const auto* p = static_cast<const PadPlan*>(ctx.state);
  if (p == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  Tensor& out = ctx.output(0);
  if (out.numel() != p->rows * p->row) {
    return ctx.node->error("output has {} elements, prepared for {}", out.numel(),
                           p->rows * p->row);
  }
  if (out.numel() == 0) return Status();
  // constant_value (input 2): read once as raw bytes of the element size; default 0.
  const bool has_value =
      ctx.inputs.size() > 2 && ctx.node->has_input(2) && ctx.input(2).numel() > 0;
  const void* value = has_value ? ctx.input(2).raw_data() : nullptr;
  const int nt = threads_for_bytes(out.numel() * static_cast<int64_t>(p->elem), ctx.num_threads);
  by_element_size(p->elem, [&]<typename E>() {
    E fill{};
    if (value != nullptr) std::memcpy(&fill, value, sizeof(E));
    const E* src = static_cast<const E*>(ctx.input(0).raw_data());
    E* dst = static_cast<E*>(out.raw_data());
    parallel_ranges(out.numel(), nt,
                    [&](int64_t a, int64_t b) { pad_range<E>(*p, src, dst, fill, a, b); });
  });
  return Status();
}

// ---- resize (ONNX Resize, opset 19): nearest and linear over H, W of NCHW ----

using ops::dm::CoordMode;
using ops::dm::NearestMode;
using ops::dm::ResizeMode;
using ops::dm::ResizeParams;

// Per output index of one spatial axis: nearest source index (i0), or the two linear taps i0, i1
// with weights w0 = 1 - r, w1 = r.
struct ResizeAxis {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};

ResizeAxis resize_axis(const ResizeParams& p, size_t a, int64_t in, int64_t out) {
  ResizeAxis t;
  for (int64_t o = 0; o < out; ++o) {
    double x = ops::dm::resize_source_coord(p, a, o, in, out);
    if (p.mode == ResizeMode::kNearest) {
      t.i0.push_back(std::clamp<int64_t>(ops::dm::resize_nearest_index(p.nearest, x), 0, in - 1));
      continue;
    }
    x = std::clamp(x, 0.0, static_cast<double>(in - 1));
    const double x0 = std::floor(x), r = x - x0;
    const auto i0 = static_cast<int64_t>(x0);
    t.i0.push_back(i0);
    t.i1.push_back(std::min(i0 + 1, in - 1));
    t.w0.push_back(static_cast<float>(1.0 - r));
    t.w1.push_back(static_cast<float>(r));
  }
  return t;
}

// X [N, C, ih, iw] -> Y [N, C, oh, ow]; items are (plane, output row).
struct ResizePlan {
  size_t elem = 1;
  bool linear = false;
  int64_t planes = 0, ih = 0, iw = 0, oh = 0, ow = 0;
  bool identity_w = false;  // nearest with every column mapped to itself: row memcpy
  ResizeAxis y, x;
};

Status resize_accepts(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  if (in.size() != 4) return unimplemented("resize of rank {} (only 4-D NCHW)", in.size());
  Result<ResizeParams> r = ops::dm::resize_params(ctx, in);
  if (!r.is_ok()) return unimplemented("resize parameters are not constants at prepare");
  const ResizeParams& p = *r;
  if (p.mode == ResizeMode::kCubic) return unimplemented("mode cubic");
  if (in[2] == 0 || in[3] == 0) return unimplemented("resize of an empty spatial axis");
  if (p.coord == CoordMode::kTfCropAndResize) {
    return unimplemented("coordinate_transformation_mode tf_crop_and_resize");
  }
  if (p.scale[0] != 1.0 || p.scale[1] != 1.0 || p.out_shape[0] != in[0] ||
      p.out_shape[1] != in[1]) {
    return unimplemented("resize of the N or C axis");
  }
  constexpr DTypeSet kLinearDTypes{DTypeCode::kFloat32};  // the linear loop is f32
  if (p.mode == ResizeMode::kLinear && !kLinearDTypes.contains(ctx.input_types[0].dtype)) {
    return unimplemented("mode linear on {}", dtype_name(ctx.input_types[0].dtype));
  }
  // The index (and weight) tables hold one entry per output row and column: keep them within
  // the output's own size (or 1 MiB), so a thin output cannot make them the larger part
  // (docs/security.md, "Memory outside the plan"); the cpu kernel needs no such tables.
  const uint64_t per_index = p.mode == ResizeMode::kLinear ? 24 : 8;
  const auto oh = static_cast<uint64_t>(p.out_shape[2]), ow = static_cast<uint64_t>(p.out_shape[3]);
  const uint64_t table = (oh + ow) * per_index;
  const uint64_t out = static_cast<uint64_t>(in[0] * in[1]) * oh * ow *
                       static_cast<uint64_t>(dtype_size(ctx.input_types[0].dtype));
  if (table > std::max<uint64_t>(out, uint64_t{1} << 20)) {
    return unimplemented("resize tables of {} bytes for an output of {} bytes", table, out);
  }
  return Status();
}

Result<std::shared_ptr<void>> resize_prepare(const NodeContext& ctx) {
  const Shape& in = ctx.input_types[0].shape;
  FRAME_RETURN_IF_ERROR(resize_accepts(ctx));
  FRAME_ASSIGN_OR_RETURN(ResizeParams p, ops::dm::resize_params(ctx, in));
  auto plan = std::make_shared<ResizePlan>();
  plan->elem = dtype_size(ctx.input_types[0].dtype);
  plan->linear = p.mode == ResizeMode::kLinear;
  plan->planes = in[0] * in[1];
  plan->ih = in[2];
  plan->iw = in[3];
  plan->oh = p.out_shape[2];
  plan->ow = p.out_shape[3];
  if (plan->planes * plan->oh * plan->ow > 0 && plan->ih * plan->iw > 0) {
    plan->y = resize_axis(p, 2, plan->ih, plan->oh);
    plan->x = resize_axis(p, 3, plan->iw, plan->ow);
  }
  // An empty output builds no tables (and runs nothing).
  plan->identity_w =
      !plan->linear && plan->ow == plan->iw && plan->x.i0.size() == static_cast<size_t>(plan->ow);
  for (int64_t i = 0; plan->identity_w && i < plan->ow; ++i) {
    plan->identity_w = plan->x.i0[static_cast<size_t>(i)] == i;
  }
  return std::shared_ptr<void>(std::move(plan));
}

template <typename E>
void resize_nearest_rows(const ResizePlan& p, const E* src, E* dst, int64_t r0, int64_t r1) {
  const int64_t* ix = p.x.i0.data();
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t plane = r / p.oh, oy = r - plane * p.oh;
    const int64_t sy = p.y.i0[static_cast<size_t>(oy)];
    E* d = dst + r * p.ow;
    // Upsampling repeats source rows: copy the row this thread just wrote.
    if (r > r0 && oy > 0 && p.y.i0[static_cast<size_t>(oy - 1)] == sy) {
      std::memcpy(d, d - p.ow, static_cast<size_t>(p.ow) * sizeof(E));
      continue;
    }
    const E* s = src + (plane * p.ih + sy) * p.iw;
    if (p.identity_w) {
      std::memcpy(d, s, static_cast<size_t>(p.ow) * sizeof(E));
      continue;
    }
    for (int64_t ox = 0; ox < p.ow; ++ox) d[ox] = s[ix[ox]];
  }
}

// One source row interpolated along W: h[ox] = wx0[ox] * s[x0[ox]] + wx1[ox] * s[x1[ox]].
void resize_linear_row_w(const ResizePlan& p, const float* s, float* h) {
  const int64_t *x0 = p.x.i0.data(), *x1 = p.x.i1.data();
  const float *wx0 = p.x.w0.data(), *wx1 = p.x.w1.data();
  for (int64_t ox = 0; ox < p.ow; ++ox) h[ox] = wx0[ox] * s[x0[ox]] + wx1[ox] * s[x1[ox]];
}

// Separable: each output row is wy0 * A + wy1 * B, A and B its two source rows interpolated
// along W (the same products and sums, in the same order, as interpolating every output element
// from its four taps). A thread keeps the last two W-interpolated rows, so an upsampling resize
// interpolates each source row along W about once instead of once per output row that reads
// it, and the per-row blend is a contiguous loop (LR-ASPP's x8 upsampling of f32[1,21,32,32]:
// 1.43 -> 0.44 ms at 1 thread, docs/backends/onednn.md).
void resize_linear_rows(const ResizePlan& p, const float* src, float* dst, int64_t r0, int64_t r1) {
  thread_local std::vector<float> rows;
  if (rows.size() < static_cast<size_t>(2 * p.ow)) rows.resize(static_cast<size_t>(2 * p.ow));
  float* slot[2] = {rows.data(), rows.data() + p.ow};
  int64_t held[2] = {-1, -1};  // source row (plane * ih + y) each slot holds
  int next = 0;                // the slot to fill next (the older one)
  auto row_w = [&](int64_t key, int64_t keep) -> const float* {
    for (int k = 0; k < 2; ++k) {
      if (held[k] == key) return slot[k];
    }
    int k = next;
    if (held[k] == keep) k ^= 1;  // never overwrite the other row this output row reads
    resize_linear_row_w(p, src + key * p.iw, slot[k]);
    held[k] = key;
    next = k ^ 1;
    return slot[k];
  };
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t plane = r / p.oh, oy = r - plane * p.oh;
    const auto uy = static_cast<size_t>(oy);
    const int64_t ka = plane * p.ih + p.y.i0[uy], kb = plane * p.ih + p.y.i1[uy];
    const float* a = row_w(ka, kb);
    const float* b = row_w(kb, ka);
    const float wy0 = p.y.w0[uy], wy1 = p.y.w1[uy];
    float* d = dst + r * p.ow;
    for (int64_t ox = 0; ox < p.ow; ++ox) d[ox] = wy0 * a[ox] + wy1 * b[ox];
  }
}

Status resize_kernel(KernelContext& ctx) {
  const auto* p = static_cast<const ResizePlan*>(ctx.state);
  if (p == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  Tensor& out = ctx.output(0);
  const int64_t rows = p->planes * p->oh;
  if (out.numel() != rows * p->ow) {
    return ctx.node->error("output has {} elements, prepared for {}", out.numel(), rows * p->ow);
  }
  if (out.numel() == 0) return Status();
  const int nt = threads_for_bytes(out.numel() * static_cast<int64_t>(p->elem), ctx.num_threads);
  if (p->linear) {  // f32 only (resize_accepts)
    const auto* src = static_cast<const float*>(ctx.input(0).raw_data());
    auto* dst = static_cast<float*>(out.raw_data());
    parallel_ranges(rows, nt,
                    [&](int64_t a, int64_t b) { resize_linear_rows(*p, src, dst, a, b); });
    return Status();
  }
  by_element_size(p->elem, [&]<typename E>() {
    const E* src = static_cast<const E*>(ctx.input(0).raw_data());
    E* dst = static_cast<E*>(out.raw_data());
    parallel_ranges(rows, nt,
                    [&](int64_t a, int64_t b) { resize_nearest_rows<E>(*p, src, dst, a, b); });
  });
  return Status();
}

}  // namespace

FRAME_REGISTER_KERNEL(gather, "onednn", gather_kernel).dtypes(kAllDTypes).prepare(gather_prepare);
FRAME_REGISTER_KERNEL(pad, "onednn", pad_kernel)
    .dtypes(kAllDTypes)
    .prepare(pad_prepare)
    .accepts(pad_accepts);
FRAME_REGISTER_KERNEL(resize, "onednn", resize_kernel)
    .dtypes(kAllDTypes)
    .prepare(resize_prepare)
    .accepts(resize_accepts);

}  // namespace frame::backends::onednn
