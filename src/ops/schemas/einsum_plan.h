#pragma once
/// \file
/// Parsed ONNX Einsum equation (opset 12) resolved against input shapes; shared by the
/// einsum schema (shape inference) and the cpu kernel.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {

/// Every subscript letter and every broadcast ellipsis dim becomes a label id.
struct EinsumPlan {
  /// Extent of each label (ellipsis dims broadcast numpy-style).
  std::vector<int64_t> label_size;
  /// Per input: element stride of each label in that input (0 when the label is absent or a
  /// broadcast size-1 dim; repeated letters add their strides, which walks the diagonal).
  std::vector<std::vector<int64_t>> label_strides;
  /// Labels of the output dims in order, and the labels summed over.
  std::vector<int> out_labels, sum_labels;
  Shape out_shape;
  /// Per input: the label of each of its dims, in order (ellipsis dims included).
  std::vector<std::vector<int>> input_labels;
};

/// Parses `equation` ("ij,jk->ik", implicit "ij,jk", "...ii->...i"; spaces ignored) for
/// inputs of the given shapes. Implicit output: ellipsis dims, then the letters used exactly
/// once, in ASCII order (numpy). Errors name the node: bad characters, wrong term count, term
/// rank vs input rank, letter extent mismatches, unknown or repeated output letters.
Result<EinsumPlan> plan_einsum(const NodeContext& ctx, std::string_view equation,
                               std::span<const Shape> shapes);

}  // namespace frame::ops
