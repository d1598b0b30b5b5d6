#pragma once
/// \file
/// Ops whose output shape depends on input values (non_zero, unique). Their shape functions
/// accept only constant inputs (ARCH-044) and share the computation below with the cpu
/// kernels, so the inferred shape and the computed values cannot disagree.

#include <cstdint>
#include <optional>

#include "frame/core/status.h"
#include "frame/core/tensor.h"

namespace frame::ops {

/// ONNX NonZero: int64 [max(rank, 1), nnz] coordinates of the non-zero elements in row-major
/// order (a scalar counts as shape [1]).
Result<Tensor> compute_non_zero(const Tensor& x);

/// ONNX Unique outputs.
struct UniqueResult {
  Tensor y;        ///< unique elements (or slices along axis)
  Tensor indices;  ///< int64 [u]: first occurrence of each in x
  Tensor inverse;  ///< int64 [n]: position in y of each element (slice) of x
  Tensor counts;   ///< int64 [u]: occurrences
};
/// ONNX Unique (opset 11). `axis` (already normalised) selects slices; absent flattens x.
/// `sorted`: ascending (NaN last, NaNs equal) versus first-occurrence order.
Result<UniqueResult> compute_unique(const Tensor& x, std::optional<int64_t> axis, bool sorted);

}  // namespace frame::ops
