#pragma once
/// \file
/// Ops whose output shape depends on input values (non_zero, unique, non_max_suppression). Their
/// shape functions accept only constant inputs (ARCH-044) and share the computation below with the
/// cpu kernels, so the inferred shape and the computed values cannot disagree.

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

/// ONNX NonMaxSuppression (opsets 10, 11): int64 [num_selected, 3] rows (batch, class, box).
/// `boxes` f32 [B, N, 4] (corners in any diagonal order when `center_point_box` is 0;
/// [x_center, y_center, width, height] when 1), `scores` f32 [B, C, N]. Per batch and class,
/// boxes scoring above `score_threshold` (strictly; none given: every box) are taken by
/// descending score, ties by ascending box index, and one is kept unless its IoU with a kept
/// box exceeds `iou_threshold`, until `max_per_class` are kept; rows are in batch, class, then
/// selection order (the ONNX reference). Errors: kInvalidArgument naming the input whose rank
/// or dims disagree.
Result<Tensor> compute_non_max_suppression(const Tensor& boxes, const Tensor& scores,
                                           int64_t max_per_class, float iou_threshold,
                                           std::optional<float> score_threshold,
                                           bool center_point_box);

/// compute_non_max_suppression over the node's inputs as given (nullptr: absent): the
/// optional scalars must hold one value each; `center_point_box` must be 0 or 1. Errors:
/// kInvalidArgument naming the input or attribute.
Result<Tensor> non_max_suppression_of(const Tensor* boxes, const Tensor* scores,
                                      const Tensor* max_per_class, const Tensor* iou,
                                      const Tensor* score_threshold, int64_t center_point_box);

}  // namespace frame::ops
