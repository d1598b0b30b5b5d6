// cpu reference kernels for Conv (im2col + the i-k-j row product) and ConvTranspose
// (the transposed product + col2im scatter). N-d, grouped, dilated, padded. Everything is
// computed in compute_t<T> (float for f32/f16/bf16, double for f64) and rounded once.

#include <algorithm>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "backends/cpu/kernels/linalg_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;
using ops::nn::WindowGeometry;
using ops::nn::WindowKind;

// Per-tap spatial offsets (kernel index * dilation), tap-major: taps x rank.
std::vector<int64_t> tap_offsets(const WindowGeometry& g, int64_t* num_taps) {
  const size_t r = static_cast<size_t>(g.rank);
  int64_t taps = 1;
  for (int64_t k : g.kernel) taps *= k;
  std::vector<int64_t> off(static_cast<size_t>(taps) * r);
  std::vector<int64_t> idx(r, 0);
  for (int64_t t = 0; t < taps; ++t) {
    for (size_t d = 0; d < r; ++d) off[static_cast<size_t>(t) * r + d] = idx[d] * g.dilations[d];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < g.kernel[d]) break;
      idx[d] = 0;
    }
  }
  *num_taps = taps;
  return off;
}

// Window start coordinates (o * stride - pad_begin) of positions [p0, p0 + count) of `grid`
// (row-major), written to st (count x rank): one tile at a time, so the table stays as small
// as the tile.
void window_starts(const WindowGeometry& g, const std::vector<int64_t>& grid, int64_t p0,
                   int64_t count, std::vector<int64_t>& st) {
  const size_t r = static_cast<size_t>(g.rank);
  st.resize(static_cast<size_t>(count) * r);
  std::vector<int64_t> idx(r, 0);
  for (size_t d = r, rem = static_cast<size_t>(p0); d-- > 0;) {
    idx[d] = static_cast<int64_t>(rem % static_cast<size_t>(grid[d]));
    rem /= static_cast<size_t>(grid[d]);
  }
  for (int64_t p = 0; p < count; ++p) {
    for (size_t d = 0; d < r; ++d)
      st[static_cast<size_t>(p) * r + d] = idx[d] * g.strides[d] - g.pad_begin[d];
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < grid[d]) break;
      idx[d] = 0;
    }
  }
}

Result<WindowGeometry> geometry(KernelContext& ctx, WindowKind kind) {
  const Shape& x = ctx.input(0).shape();
  const Shape& w = ctx.input(1).shape();
  return ops::nn::resolve_window(*ctx.node, std::span(x.data() + 2, x.size() - 2),
                                 std::span(w.data() + 2, w.size() - 2), kind);
}

Status conv_kernel(KernelContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(WindowGeometry g, geometry(ctx, WindowKind::kConv));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const bool has_b = ctx.node->has_input(2);
  Tensor& y = ctx.output(0);
  const int64_t group = ctx.node->attr_or<int64_t>("group", 1);
  const int64_t n_batch = x.dim(0), c_in = x.dim(1), m_out = w.dim(0);
  const int64_t cg = c_in / group, mg = m_out / group;
  const size_t r = static_cast<size_t>(g.rank);
  int64_t taps = 0;
  const std::vector<int64_t> toff = tap_offsets(g, &taps);
  const std::vector<int64_t> in_strides = contiguous_strides(g.in);
  const int64_t in_plane = numel_of(g.in), npos = numel_of(g.out), rows = cg * taps;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    std::vector<C> wc(static_cast<size_t>(w.numel()));
    pack_matrix(w.data<T>(), 1, w.numel(), false, wc.data());
    // The im2col matrix is built one tile of output positions at a time: rows x tile values,
    // bounded by kConvScratchBytes (or one column), never rows x npos.
    const int64_t tile = conv_tile_positions(rows, static_cast<int64_t>(sizeof(C)), npos);
    std::vector<C> col(static_cast<size_t>(rows * tile));
    std::vector<int64_t> starts;
    const T* xp = x.data<T>();
    T* yp = y.data<T>();
    for (int64_t p0 = 0; p0 < npos; p0 += tile) {
      const int64_t np = std::min(tile, npos - p0);
      window_starts(g, g.out, p0, np, starts);
      for (int64_t n = 0; n < n_batch; ++n) {
        for (int64_t gi = 0; gi < group; ++gi) {
          const T* xg = xp + (n * c_in + gi * cg) * in_plane;
          // im2col: col[(c, tap)][p] = x[c][start(p0 + p) + offset(tap)] or 0 in the padding.
          const int nt =
              backends::cpu::threads_for_cost(rows, 8.0 * np, 2.0 * r * np, ctx.num_threads);
          ops::parallel_for(rows, nt, [&](int64_t row) {
            const T* xc = xg + (row / taps) * in_plane;
            const int64_t* to = toff.data() + static_cast<size_t>(row % taps) * r;
            C* dst = col.data() + row * np;
            for (int64_t p = 0; p < np; ++p) {
              const int64_t* st = starts.data() + static_cast<size_t>(p) * r;
              int64_t off = 0;
              bool inside = true;
              for (size_t d = 0; d < r; ++d) {
                const int64_t c = st[d] + to[d];
                inside = inside && c >= 0 && c < g.in[d];
                off += c * in_strides[d];
              }
              dst[p] = inside ? to_compute(xc[off]) : C(0);
            }
          });
          for_rows<C>(mg, np, ctx.num_threads, [&](int64_t m, C* row) {
            const int64_t mo = gi * mg + m;
            row_times_packed(wc.data() + mo * rows, 1, col.data(), rows, np, row);
            const C bias = has_b ? to_compute(ctx.input(2).data<T>()[mo]) : C(0);
            T* out = yp + (n * m_out + mo) * npos + p0;
            for (int64_t p = 0; p < np; ++p) out[p] = from_compute<T>(row[p] + bias);
          });
        }
      }
    }
  });
}

FRAME_REGISTER_KERNEL(conv, "cpu", conv_kernel).dtypes(kFloatDTypes);

Status conv_transpose_kernel(KernelContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(WindowGeometry g, geometry(ctx, WindowKind::kConvTranspose));
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const bool has_b = ctx.node->has_input(2);
  Tensor& y = ctx.output(0);
  const int64_t group = ctx.node->attr_or<int64_t>("group", 1);
  const int64_t n_batch = x.dim(0), c_in = x.dim(1), m_out = y.dim(1);
  const int64_t cg = c_in / group, mg = m_out / group;
  const size_t r = static_cast<size_t>(g.rank);
  int64_t taps = 0;
  const std::vector<int64_t> toff = tap_offsets(g, &taps);
  const std::vector<int64_t> out_strides = contiguous_strides(g.out);
  const int64_t out_plane = numel_of(g.out), npos = numel_of(g.in), rows = mg * taps;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    std::vector<C> wc(static_cast<size_t>(w.numel()));
    pack_matrix(w.data<T>(), 1, w.numel(), false, wc.data());
    // The col matrix covers one tile of input positions at a time (rows x tile values, bounded
    // by kConvScratchBytes or one column); acc holds one group's output planes in C.
    const int64_t tile =
        conv_tile_positions(std::max(rows, cg), static_cast<int64_t>(sizeof(C)), npos);
    std::vector<C> xg(static_cast<size_t>(cg * tile)), col(static_cast<size_t>(rows * tile));
    std::vector<C> acc(static_cast<size_t>(mg * out_plane));
    std::vector<int64_t> starts;
    T* yp = y.data<T>();
    for (int64_t n = 0; n < n_batch; ++n) {
      for (int64_t gi = 0; gi < group; ++gi) {
        for (int64_t m = 0; m < mg; ++m) {
          const C bias = has_b ? to_compute(ctx.input(2).data<T>()[gi * mg + m]) : C(0);
          std::fill(acc.begin() + m * out_plane, acc.begin() + (m + 1) * out_plane, bias);
        }
        const C* wg = wc.data() + gi * cg * rows;
        for (int64_t i0 = 0; i0 < npos; i0 += tile) {
          const int64_t np = std::min(tile, npos - i0);
          // Input position i lands at output i * stride - pad_begin + tap offset.
          window_starts(g, g.in, i0, np, starts);
          const T* xs = x.data<T>() + (n * c_in + gi * cg) * npos + i0;
          for (int64_t c = 0; c < cg; ++c) pack_matrix(xs + c * npos, 1, np, false, &xg[c * np]);
          // col[(m, tap)][i] = sum_c W[gi*cg + c][m][tap] * x[c][i0 + i].
          for_rows<C>(rows, np, ctx.num_threads, [&](int64_t row, C* tmp) {
            row_times_packed(wg + row, rows, xg.data(), cg, np, tmp);
            std::copy(tmp, tmp + np, col.data() + row * np);
          });
          // col2im: each output channel is written by one thread only.
          ops::parallel_for(mg, ctx.num_threads, [&](int64_t m) {
            C* a = acc.data() + m * out_plane;
            for (int64_t t = 0; t < taps; ++t) {
              const int64_t* to = toff.data() + static_cast<size_t>(t) * r;
              const C* src = col.data() + (m * taps + t) * np;
              for (int64_t i = 0; i < np; ++i) {
                const int64_t* st = starts.data() + static_cast<size_t>(i) * r;
                int64_t off = 0;
                bool inside = true;
                for (size_t d = 0; d < r; ++d) {
                  const int64_t c = st[d] + to[d];
                  inside = inside && c >= 0 && c < g.out[d];
                  off += c * out_strides[d];
                }
                if (inside) a[off] += src[i];
              }
            }
          });
        }
        for (int64_t m = 0; m < mg; ++m) {
          const C* a = acc.data() + m * out_plane;
          T* out = yp + (n * m_out + gi * mg + m) * out_plane;
          for (int64_t p = 0; p < out_plane; ++p) out[p] = from_compute<T>(a[p]);
        }
      }
    }
  });
}

FRAME_REGISTER_KERNEL(conv_transpose, "cpu", conv_transpose_kernel).dtypes(kFloatDTypes);

}  // namespace
}  // namespace frame::cpu
