#pragma once
/// \file
/// The reductions of the `onednn` backend (reduce.cpp, docs/backends/onednn.md "Reductions"):
/// their kinds, and the row reduction the shape-agnostic global pools share with them.

#include <cstdint>

namespace frame::backends::onednn {

/// The reductions with a vector kernel.
enum class ReduceKind : uint8_t {
  kSum,
  kMean,
  kProd,
  kMax,
  kMin,
  kL1,
  kL2,
  kSumSquare,
  kLogSum,
  kLogSumExp
};

/// Width of a column block in the B > 1 case (doubles of accumulators on the stack).
inline constexpr int64_t kReduceBlock = 512;

/// out[i] = the `kind` reduction of x[i * r .. (i + 1) * r) for i < rows (f32 in and out,
/// accumulated in double like the cpu reference kernels), split over up to `threads` OpenMP
/// threads by rows (one per 32 Ki input elements). Nothing in it depends on the sizes beyond
/// loop bounds: ONNX GlobalAveragePool / GlobalMaxPool of a plain [N, C, spatial...] tensor
/// are the kMean / kMax of N*C rows of prod(spatial) (pool.cpp, for the interpreted tier).
void reduce_rows(ReduceKind kind, const float* x, float* out, int64_t rows, int64_t r, int threads);

}  // namespace frame::backends::onednn
