#pragma once
/// \file
/// Loop helpers shared by the cpu kernels: broadcast plans (numpy broadcasting, ONNX
/// "Broadcasting in ONNX") with dims collapsed so equal shapes and scalar operands become one
/// contiguous run, row iteration with precomputed strides (no per-element index division and
/// no per-element allocation), and OpenMP splitting by a cost model (small work runs inline).

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/tensor.h"
#include "frame/ops/parallel.h"

namespace frame::backends::cpu {

/// Cost model of threads_for_cost (docs/backends/onednn.md, "Threads and the wait policy"):
/// single-thread throughput of a plain (not hand-vectorized) cpu kernel loop...
inline constexpr double kBytesPerNs = 4.0;  ///< ... streaming bytes per ns (~4 GB/s)
inline constexpr double kFlopsPerNs = 2.0;  ///< ... arithmetic operations per ns
/// Work (ns on one thread) each thread must get before waking it pays: waking a sleeping
/// OpenMP worker and joining it cost 8-17 us per region on the 2-core reference machine, so a
/// thread is added only per 25 us of work, and smaller loops run inline on the caller.
inline constexpr double kMinNsPerThread = 25000.0;

/// Threads for a loop of `items` independent items costing `bytes_per_item` bytes moved and
/// `flops_per_item` operations each, within the kernel's budget `num_threads`: 1 (run inline
/// on the caller, no parallel region) for small work, more threads as the work grows, never
/// more than `items`. Always in [1, max(1, num_threads)].
inline int threads_for_cost(int64_t items, double bytes_per_item, double flops_per_item,
                            int num_threads) {
  if (num_threads <= 1 || items <= 1) return 1;
  const double ns =
      static_cast<double>(items) * (bytes_per_item / kBytesPerNs + flops_per_item / kFlopsPerNs);
  const double fit = ns / kMinNsPerThread;
  if (fit < 2.0) return 1;
  return static_cast<int>(
      std::min<double>({fit, static_cast<double>(num_threads), static_cast<double>(items)}));
}

/// Elements from which threads_for uses two threads (2 * kMinNsPerThread of 8-byte elements).
inline constexpr int64_t kParallelThreshold = 25000;

/// Threads to use for `n` elements given the kernel's budget `num_threads`: threads_for_cost
/// with 8 bytes per element (a 4-byte read and a 4-byte write).
inline int threads_for(int64_t n, int num_threads) {
  return threads_for_cost(n, 8.0, 0.0, num_threads);
}

/// Calls fn(begin, end) over [0, items) split into contiguous ranges, one per thread, with
/// the thread count from threads_for_cost; a single range runs inline on the caller.
template <typename Fn>
void parallel_ranges(int64_t items, double bytes_per_item, double flops_per_item, int num_threads,
                     Fn&& fn) {
  if (items <= 0) return;
  const int nt = threads_for_cost(items, bytes_per_item, flops_per_item, num_threads);
  if (nt <= 1) {
    fn(int64_t{0}, items);
    return;
  }
  const int64_t per = (items + nt - 1) / nt;
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int t = 0; t < nt; ++t) {
    const int64_t b = t * per;
    const int64_t e = std::min(items, b + per);
    if (b < e) fn(b, e);
  }
}

/// Element strides of an input of shape `in` read at the positions of `out` (right-aligned,
/// numpy broadcasting): 0 for broadcast dims. `in` must broadcast to `out`.
inline std::vector<int64_t> broadcast_strides(std::span<const int64_t> in,
                                              std::span<const int64_t> out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t stride = 1;
  for (size_t k = 0; k < in.size(); ++k) {
    const size_t i = in.size() - 1 - k;
    const size_t o = out.size() - 1 - k;
    s[o] = in[i] == 1 ? 0 : stride;
    stride *= in[i];
  }
  return s;
}

/// How N broadcast inputs map onto an output. Size-1 output dims are dropped and adjacent dims
/// merged wherever every input is contiguous across them, so same-shape and scalar operands
/// collapse to a single run. `dims` is never empty (a scalar output is {1}).
template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::array<std::vector<int64_t>, N> strides;
  int64_t numel = 0;

  static BroadcastPlan make(std::span<const int64_t> out,
                            const std::array<std::span<const int64_t>, N>& ins) {
    BroadcastPlan p;
    p.numel = numel_of(out);
    std::array<std::vector<int64_t>, N> full;
    for (size_t k = 0; k < N; ++k) full[k] = broadcast_strides(ins[k], out);
    for (size_t d = 0; d < out.size(); ++d) {
      if (out[d] == 1) continue;
      if (!p.dims.empty()) {
        bool mergeable = true;
        for (size_t k = 0; k < N; ++k) {
          mergeable = mergeable && p.strides[k].back() == full[k][d] * out[d];
        }
        if (mergeable) {
          p.dims.back() *= out[d];
          for (size_t k = 0; k < N; ++k) p.strides[k].back() = full[k][d];
          continue;
        }
      }
      p.dims.push_back(out[d]);
      for (size_t k = 0; k < N; ++k) p.strides[k].push_back(full[k][d]);
    }
    if (p.dims.empty()) {
      p.dims.push_back(1);
      for (size_t k = 0; k < N; ++k) p.strides[k].push_back(0);
    }
    return p;
  }
};

/// Visits the output as rows of the innermost collapsed dim:
/// `row(out_offset, n, in_offset, in_step)` where in_offset/in_step are std::array<int64_t, N>
/// (step is 0 for a broadcast operand, 1 otherwise). Rows are split across up to `num_threads`
/// OpenMP threads by threads_for (inline on the caller below it); a single long row is split
/// into chunks.
template <size_t N, typename RowFn>
void for_each_row(const BroadcastPlan<N>& p, int num_threads, RowFn&& row) {
  if (p.numel == 0) return;
  const size_t r = p.dims.size();
  const int64_t inner = p.dims[r - 1];
  std::array<int64_t, N> step;
  for (size_t k = 0; k < N; ++k) step[k] = p.strides[k][r - 1];
  const int nt = threads_for(p.numel, num_threads);
  const int64_t outer = p.numel / inner;

  // One thread: no parallel region at all (even an `if(false)` region costs ~0.3-2 us, more
  // than a small node's work).
  if (nt == 1 && outer == 1) {
    row(0, inner, std::array<int64_t, N>{}, step);
    return;
  }
  if (outer == 1) {
    const int64_t chunks = nt;
    const int64_t per = (inner + chunks - 1) / chunks;
    ops::parallel_for(chunks, nt, [&](int64_t c) {
      const int64_t b = c * per;
      const int64_t e = std::min(inner, b + per);
      if (b >= e) return;
      std::array<int64_t, N> off;
      for (size_t k = 0; k < N; ++k) off[k] = b * step[k];
      row(b, e - b, off, step);
    });
    return;
  }

  const int64_t chunks = nt == 1 ? 1 : std::min<int64_t>(outer, int64_t{nt} * 4);
  const int64_t per = (outer + chunks - 1) / chunks;
  auto chunk = [&](int64_t c) {
    const int64_t r0 = c * per;
    const int64_t r1 = std::min(outer, r0 + per);
    if (r0 >= r1) return;
    // Odometer over the outer dims; one division per chunk, none per element.
    std::vector<int64_t> idx(r - 1, 0);
    std::array<int64_t, N> off{};
    int64_t rem = r0;
    for (size_t d = r - 1; d-- > 0;) {
      idx[d] = rem % p.dims[d];
      rem /= p.dims[d];
      for (size_t k = 0; k < N; ++k) off[k] += idx[d] * p.strides[k][d];
    }
    for (int64_t rr = r0; rr < r1; ++rr) {
      row(rr * inner, inner, off, step);
      for (size_t d = r - 1; d-- > 0;) {
        ++idx[d];
        for (size_t k = 0; k < N; ++k) off[k] += p.strides[k][d];
        if (idx[d] < p.dims[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= p.strides[k][d] * p.dims[d];
        idx[d] = 0;
      }
    }
  };
  if (nt == 1) {
    chunk(0);
    return;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t c = 0; c < chunks; ++c) chunk(c);
}

/// out[i] = f(in[i]) over `n` contiguous elements, OpenMP-split by threads_for (inline on the
/// caller below it).
template <typename In, typename Out, typename F>
void map_contiguous(const In* in, Out* out, int64_t n, int num_threads, const F& f) {
  const int nt = threads_for(n, num_threads);
  if (nt == 1) {  // inline: no parallel region
    for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
    return;
  }
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t i = 0; i < n; ++i) out[i] = f(in[i]);
}

/// out = f(a, b) with numpy broadcasting of a (shape `as`) and b (shape `bs`) to `out_shape`.
/// Fast paths: both contiguous, either operand a scalar run.
template <typename A, typename B, typename Out, typename F>
void map_broadcast2(const A* a, std::span<const int64_t> as, const B* b,
                    std::span<const int64_t> bs, Out* out, std::span<const int64_t> out_shape,
                    int num_threads, const F& f) {
  const auto plan = BroadcastPlan<2>::make(out_shape, {as, bs});
  for_each_row(plan, num_threads,
               [&](int64_t o, int64_t n, const std::array<int64_t, 2>& off,
                   const std::array<int64_t, 2>& step) {
                 const A* pa = a + off[0];
                 const B* pb = b + off[1];
                 Out* po = out + o;
                 if (step[0] == 1 && step[1] == 1) {
                   for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
                 } else if (step[0] == 0 && step[1] == 1) {
                   const A av = pa[0];
                   for (int64_t i = 0; i < n; ++i) po[i] = f(av, pb[i]);
                 } else if (step[0] == 1 && step[1] == 0) {
                   const B bv = pb[0];
                   for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], bv);
                 } else {
                   const A av = pa[0];
                   const B bv = pb[0];
                   for (int64_t i = 0; i < n; ++i) po[i] = f(av, bv);
                 }
               });
}

/// out = f(a, b, c) with numpy broadcasting of three operands (e.g. where).
template <typename A, typename B, typename C, typename Out, typename F>
void map_broadcast3(const A* a, std::span<const int64_t> as, const B* b,
                    std::span<const int64_t> bs, const C* c, std::span<const int64_t> cs, Out* out,
                    std::span<const int64_t> out_shape, int num_threads, const F& f) {
  const auto plan = BroadcastPlan<3>::make(out_shape, {as, bs, cs});
  for_each_row(plan, num_threads,
               [&](int64_t o, int64_t n, const std::array<int64_t, 3>& off,
                   const std::array<int64_t, 3>& step) {
                 const A* pa = a + off[0];
                 const B* pb = b + off[1];
                 const C* pc = c + off[2];
                 Out* po = out + o;
                 if (step[0] == 1 && step[1] == 1 && step[2] == 1) {
                   for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i], pc[i]);
                 } else {
                   for (int64_t i = 0; i < n; ++i) {
                     po[i] = f(pa[i * step[0]], pb[i * step[1]], pc[i * step[2]]);
                   }
                 }
               });
}

}  // namespace frame::backends::cpu
