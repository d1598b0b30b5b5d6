// cpu reference kernels for MaxPool (with Indices), AveragePool, GlobalAveragePool and
// GlobalMaxPool: direct N-d window loops, one (N, C) plane per OpenMP iteration.

#include <cmath>
#include <limits>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;
using ops::nn::WindowGeometry;

constexpr DTypeSet kMaxPoolDTypes = kFloatDTypes | DTypeSet{DTypeCode::kInt8, DTypeCode::kUInt8};

template <typename C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

Result<WindowGeometry> pool_geometry(KernelContext& ctx) {
  const Shape& x = ctx.input(0).shape();
  const auto* ks = ctx.node->attr<std::vector<int64_t>>("kernel_shape");
  if (ks == nullptr) return ctx.node->error("missing required attribute 'kernel_shape'");
  return ops::nn::resolve_window(*ctx.node, std::span(x.data() + 2, x.size() - 2), *ks,
                                 ops::nn::WindowKind::kPool);
}

// Visits every window: fn(out_pos, starts) with the window start coordinate per dim.
template <typename Fn>
void for_each_window(const WindowGeometry& g, Fn&& fn) {
  const size_t r = static_cast<size_t>(g.rank);
  std::vector<int64_t> idx(r, 0), start(r);
  const int64_t n = numel_of(g.out);
  for (int64_t p = 0; p < n; ++p) {
    for (size_t d = 0; d < r; ++d) start[d] = idx[d] * g.strides[d] - g.pad_begin[d];
    fn(p, start);
    for (size_t d = r; d-- > 0;) {
      if (++idx[d] < g.out[d]) break;
      idx[d] = 0;
    }
  }
}

// Visits the taps of one window: fn(coords) with coords per dim (may lie in the padding).
template <typename Fn>
void for_each_tap(const WindowGeometry& g, const std::vector<int64_t>& start,
                  std::vector<int64_t>& k, std::vector<int64_t>& coords, Fn&& fn) {
  const size_t r = static_cast<size_t>(g.rank);
  std::fill(k.begin(), k.end(), 0);
  for (;;) {
    for (size_t d = 0; d < r; ++d) coords[d] = start[d] + k[d] * g.dilations[d];
    fn(coords);
    size_t d = r;
    while (d-- > 0) {
      if (++k[d] < g.kernel[d]) break;
      k[d] = 0;
    }
    if (d == static_cast<size_t>(-1)) return;
  }
}

// Visits every window of `planes` (N, C) planes, one plane per OpenMP iteration:
// fn(plane, out_pos, taps), where taps(tap_fn) runs for_each_tap over that window.
template <typename Fn>
void for_each_plane_window(const WindowGeometry& g, int64_t planes, int num_threads, Fn&& fn) {
  const size_t r = static_cast<size_t>(g.rank);
  ops::parallel_for(planes, num_threads, [&](int64_t pl) {
    std::vector<int64_t> k(r), coords(r);
    for_each_window(g, [&](int64_t p, const std::vector<int64_t>& start) {
      fn(pl, p, [&](auto&& tap_fn) { for_each_tap(g, start, k, coords, tap_fn); });
    });
  });
}

Status max_pool_kernel(KernelContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(WindowGeometry g, pool_geometry(ctx));
  const Tensor& x = ctx.input(0);
  const bool want_idx = ctx.outputs.size() > 1;
  const bool col_major = ctx.node->attr_or<int64_t>("storage_order", 0) != 0;
  const size_t r = static_cast<size_t>(g.rank);
  const int64_t planes = x.dim(0) * x.dim(1), in_plane = numel_of(g.in),
                out_plane = numel_of(g.out);
  const std::vector<int64_t> row_strides = contiguous_strides(g.in);
  std::vector<int64_t> idx_strides = row_strides;
  if (col_major) {
    int64_t s = 1;
    for (size_t d = 0; d < r; ++d) {
      idx_strides[d] = s;
      s *= g.in[d];
    }
  }
  int64_t* ip = want_idx ? ctx.output(1).data<int64_t>() : nullptr;
  // The locals the window lambdas read are captured by name: clang 14 cannot reach an
  // enclosing function's locals from lambdas inside an OpenMP loop of a generic lambda.
  return dispatch_dtype<kMaxPoolDTypes>(
      x.dtype(), [&, &g = g, r = r, &row_strides = row_strides, &idx_strides = idx_strides,
                  in_plane = in_plane, out_plane = out_plane, ip = ip]<typename T>() {
        using C = compute_t<T>;
        const T* xp = x.data<T>();
        T* yp = ctx.output(0).data<T>();
        for_each_plane_window(g, planes, ctx.num_threads, [&](int64_t pl, int64_t p, auto&& taps) {
          const T* xc = xp + pl * in_plane;
          C best = std::numeric_limits<C>::has_infinity ? -std::numeric_limits<C>::infinity()
                                                        : std::numeric_limits<C>::lowest();
          int64_t best_idx = -1;
          taps([&](const std::vector<int64_t>& c) {
            int64_t off = 0, flat = 0;
            for (size_t d = 0; d < r; ++d) {
              if (c[d] < 0 || c[d] >= g.in[d]) return;
              off += c[d] * row_strides[d];
              flat += c[d] * idx_strides[d];
            }
            const C v = to_compute(xc[off]);
            if (best_idx < 0 || v > best || (is_nan(v) && !is_nan(best))) {
              best = v;
              best_idx = flat;
            }
          });
          yp[pl * out_plane + p] = from_compute<T>(best);
          if (ip != nullptr) ip[pl * out_plane + p] = best_idx < 0 ? -1 : pl * in_plane + best_idx;
        });
      });
}

FRAME_REGISTER_KERNEL(max_pool, "cpu", max_pool_kernel).dtypes(kMaxPoolDTypes);

Status average_pool_kernel(KernelContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(WindowGeometry g, pool_geometry(ctx));
  const Tensor& x = ctx.input(0);
  const bool include_pad = ctx.node->attr_or<int64_t>("count_include_pad", 0) != 0;
  const size_t r = static_cast<size_t>(g.rank);
  const int64_t planes = x.dim(0) * x.dim(1), in_plane = numel_of(g.in),
                out_plane = numel_of(g.out);
  const std::vector<int64_t> strides = contiguous_strides(g.in);
  // Captured by name for clang 14, as in max_pool_kernel.
  return dispatch_dtype<kFloatDTypes>(
      x.dtype(), [&, &g = g, r = r, include_pad = include_pad, &strides = strides,
                  in_plane = in_plane, out_plane = out_plane]<typename T>() {
        const T* xp = x.data<T>();
        T* yp = ctx.output(0).data<T>();
        for_each_plane_window(g, planes, ctx.num_threads, [&](int64_t pl, int64_t p, auto&& taps) {
          const T* xc = xp + pl * in_plane;
          double sum = 0;
          int64_t count = 0;
          taps([&](const std::vector<int64_t>& c) {
            bool inside = true, in_padded = true;
            int64_t off = 0;
            for (size_t d = 0; d < r; ++d) {
              inside = inside && c[d] >= 0 && c[d] < g.in[d];
              in_padded = in_padded && c[d] >= -g.pad_begin[d] && c[d] < g.in[d] + g.pad_end[d];
              off += c[d] * strides[d];
            }
            if (inside) sum += static_cast<double>(to_compute(xc[off]));
            if (include_pad ? in_padded : inside) ++count;
          });
          const double v = count > 0 ? sum / static_cast<double>(count)
                                     : std::numeric_limits<double>::quiet_NaN();
          yp[pl * out_plane + p] = from_compute<T>(static_cast<compute_t<T>>(v));
        });
      });
}

FRAME_REGISTER_KERNEL(average_pool, "cpu", average_pool_kernel).dtypes(kFloatDTypes);

template <bool kMax>
Status global_pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t planes = x.dim(0) * x.dim(1);
  const int64_t plane = planes == 0 ? 0 : x.numel() / planes;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    ops::parallel_for(planes, ctx.num_threads, [&](int64_t pl) {
      const T* xc = xp + pl * plane;
      double acc = kMax ? -std::numeric_limits<double>::infinity() : 0.0;
      for (int64_t i = 0; i < plane; ++i) {
        const double v = static_cast<double>(to_compute(xc[i]));
        if constexpr (kMax) {
          if (v > acc || std::isnan(v)) acc = std::isnan(acc) ? acc : v;
        } else {
          acc += v;
        }
      }
      if constexpr (!kMax) acc /= static_cast<double>(plane);
      yp[pl] = from_compute<T>(static_cast<compute_t<T>>(acc));
    });
  });
}

FRAME_REGISTER_KERNEL(global_average_pool, "cpu", global_pool_kernel<false>).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(global_max_pool, "cpu", global_pool_kernel<true>).dtypes(kFloatDTypes);

}  // namespace
}  // namespace frame::cpu
