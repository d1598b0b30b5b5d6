#pragma once
/// \file
/// Splitting a kernel's loop over OpenMP threads without paying for a parallel region where
/// the loop runs on one thread.
///
/// An OpenMP `parallel` construct whose `if` clause is false, or whose team is one thread, still
/// enters libgomp: it builds a team, may wake the pool's idle threads and costs about 1.2 us
/// on this project's reference machine (a 3-element loop under `if (false)`: 1.2 us against 1
/// ns inline). A run of small nodes (shape arithmetic, a first-seen shape's interpreted run)
/// pays that per node. These helpers run the loop inline on the caller when it gets one thread,
/// and open a region only when it gets more. Kernels call them instead of writing
/// `#pragma omp parallel ... if (...)` (docs/architecture/op-registration.md, "Threads").

#include <cstdint>
#include <utility>

namespace frame::ops {

/// Calls `f(i)` for every i in [0, n), split into contiguous static chunks over `threads`
/// OpenMP threads. Runs inline on the caller (no parallel region) when `threads <= 1` or
/// `n <= 1`; n <= 0 calls nothing. `f` must be safe to call concurrently for distinct i and
/// must not throw (an exception cannot leave an OpenMP region).
template <typename F>
void parallel_for(int64_t n, int threads, F&& f) {
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) f(i);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < n; ++i) f(i);
}

/// Calls `f(begin, end)` once per thread of a team of up to `threads` OpenMP threads, the
/// ranges splitting [0, n) into contiguous pieces of near-equal length (a thread whose piece
/// is empty is not called). Inline as `f(0, n)` when `threads <= 1` or `n <= 1`; n <= 0 calls
/// nothing. Same requirements on `f` as parallel_for.
template <typename F>
void parallel_ranges(int64_t n, int threads, F&& f) {
  if (n <= 0) return;
  if (threads <= 1 || n <= 1) {
    f(int64_t{0}, n);
    return;
  }
#pragma omp parallel for num_threads(threads) schedule(static, 1)
  for (int t = 0; t < threads; ++t) {
    const int64_t b = n * t / threads, e = n * (t + 1) / threads;
    if (b < e) f(b, e);
  }
}

}  // namespace frame::ops
