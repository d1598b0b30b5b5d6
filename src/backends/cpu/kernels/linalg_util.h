#pragma once
/// \file
/// Matrix-product building blocks of the cpu kernels (matmul, gemm, conv, conv_transpose):
/// B packed row-major in the accumulation type, rows computed in i-k-j order (contiguous
/// inner loop), rows split across OpenMP threads with one accumulator row per thread.

#include <algorithm>
#include <cstdint>
#include <span>
#include <type_traits>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ops/parallel.h"

namespace frame::cpu {

/// Accumulation type of a matrix product on T: float/double for floats (float for the 16-bit
/// ones), int64 for integers (converted back with wrap-around, like numpy's int matmul).
template <typename T>
using mm_acc_t = std::conditional_t<kIsFloating<T>, compute_t<T>, int64_t>;

/// Element strides of a tensor of shape `in` read at the positions of `out` (right-aligned
/// numpy broadcasting; 0 for broadcast or missing dims). Result has out.size() entries.
inline std::vector<int64_t> batch_strides(std::span<const int64_t> in,
                                          std::span<const int64_t> out) {
  std::vector<int64_t> s(out.size(), 0);
  int64_t st = 1;
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t di = in.size() - 1 - i, dout = out.size() - 1 - i;
    s[dout] = in[di] == 1 ? 0 : st;
    st *= in[di];
  }
  return s;
}

/// Geometry of a numpy-style (batched, broadcast) matrix product of shapes `as` x `bs`: 1-D
/// operands promoted (A a row, B a column), M, K, N, and per output batch t the index of the
/// A matrix (`a_block[t]`) and B matrix (`b_block[t]`) it reads; `b_blocks` distinct B
/// matrices. Source: ONNX MatMul / MatMulInteger (numpy matmul semantics).
struct MatmulBatches {
  int64_t m = 0, k = 0, n = 0;
  int64_t b_blocks = 0;
  std::vector<int64_t> a_block, b_block;
};

/// Errors: batch dims that do not broadcast (broadcast_shapes).
inline Result<MatmulBatches> matmul_batches(Shape as, Shape bs) {
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  MatmulBatches r;
  r.m = as[as.size() - 2];
  r.k = as.back();
  r.n = bs.back();
  const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  FRAME_ASSIGN_OR_RETURN(Shape batch, broadcast_shapes(ab, bb));
  const int64_t nbatch = numel_of(batch);
  r.b_blocks = numel_of(bb);
  r.a_block.resize(static_cast<size_t>(nbatch));
  r.b_block.resize(static_cast<size_t>(nbatch));
  const std::vector<int64_t> sa = batch_strides(ab, batch), sb = batch_strides(bb, batch);
  for (int64_t t = 0; t < nbatch; ++t) {
    int64_t rem = t, oa = 0, ob = 0;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      oa += i * sa[d];
      ob += i * sb[d];
    }
    r.a_block[static_cast<size_t>(t)] = oa;
    r.b_block[static_cast<size_t>(t)] = ob;
  }
  return r;
}

/// dst[r * cols + c] = src(r, c) where src is [rows, cols] row-major, or [cols, rows] when
/// `transposed` (then dst holds its transpose).
template <typename T, typename Acc>
void pack_matrix(const T* src, int64_t rows, int64_t cols, bool transposed, Acc* dst) {
  if (!transposed) {
    for (int64_t i = 0; i < rows * cols; ++i) dst[i] = static_cast<Acc>(to_compute(src[i]));
    return;
  }
  // src is [rows, cols] and dst its transpose [cols, rows].
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      dst[c * rows + r] = static_cast<Acc>(to_compute(src[r * cols + c]));
    }
  }
}

/// row[j] = sum_k a[k * a_step] * bp[k * n + j] for j < n (i-k-j order).
template <typename T, typename Acc>
void row_times_packed(const T* a, int64_t a_step, const Acc* bp, int64_t k, int64_t n, Acc* row) {
  for (int64_t j = 0; j < n; ++j) row[j] = Acc(0);
  for (int64_t kk = 0; kk < k; ++kk) {
    const Acc av = static_cast<Acc>(to_compute(a[kk * a_step]));
    const Acc* brow = bp + kk * n;
    for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
  }
}

/// Bytes of im2col/col2im scratch a cpu convolution kernel holds at once (security.md,
/// "Memory outside the plan"): the kernels tile over positions so that rows x tile stays under
/// it, with at least one position per tile (then the scratch is one column of `rows` values,
/// proportional to the weight tensor).
inline constexpr int64_t kConvScratchBytes = int64_t{4} << 20;

/// Positions per tile for a scratch of `rows` values of `elem` bytes per position, at most `npos`.
inline int64_t conv_tile_positions(int64_t rows, int64_t elem, int64_t npos) {
  const int64_t per_pos = std::max<int64_t>(1, rows * elem);
  return std::clamp<int64_t>(kConvScratchBytes / per_pos, 1, std::max<int64_t>(1, npos));
}

/// Calls fn(r, row) for r in [0, rows) with a per-thread scratch row of `n` Acc values,
/// splitting rows across up to `num_threads` OpenMP threads.
template <typename Acc, typename Fn>
void for_rows(int64_t rows, int64_t n, int num_threads, Fn&& fn) {
  ops::parallel_ranges(rows, num_threads, [&](int64_t r0, int64_t r1) {
    std::vector<Acc> row(static_cast<size_t>(n));
    for (int64_t r = r0; r < r1; ++r) fn(r, row.data());
  });
}

}  // namespace frame::cpu
