#pragma once
/// \file
/// Helpers shared by the builtin op schemas (src/ops/schemas/<family>.cpp): axis
/// normalisation, broadcast shape inference, reading constant operands (ARCH-044), and
/// `MicroGraph`, a small builder for decompositions (DecomposeFn, op spec §3).
/// Every error is prefixed by NodeContext::error ("node 'n' (op): ...").

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ir/types.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {

/// Maps `axis` in [-rank, rank) to [0, rank). Errors: kInvalidArgument naming `what` (e.g.
/// "attribute 'axis'") and the valid range.
Result<int64_t> normalize_axis(const NodeContext& ctx, int64_t axis, int64_t rank,
                               std::string_view what = "axis");
/// normalize_axis over a list; rejects duplicates after normalisation. Order is kept.
Result<std::vector<int64_t>> normalize_axes(const NodeContext& ctx, std::span<const int64_t> axes,
                                            int64_t rank, std::string_view what = "axes");

/// Multidirectional (numpy) broadcast of the shapes of every present input.
/// Errors: kInvalidArgument naming the input index and both shapes.
Result<Shape> broadcast_present_inputs(const NodeContext& ctx);
/// Broadcast of the shapes of the listed input positions (absent ones are skipped).
Result<Shape> broadcast_inputs(const NodeContext& ctx, std::span<const size_t> inputs);
/// True if `from` broadcasts to `to` without changing `to` (ONNX unidirectional
/// broadcasting, e.g. PRelu slope -> X, Expand).
bool unidirectional_broadcastable(std::span<const int64_t> from, std::span<const int64_t> to);

/// The values of constant integer input `i` (any integer dtype). Errors: the input is absent or
/// not a constant ("input 1 (shape) must be a constant (ARCH-044: output shape must be
/// static)"), or not an integer tensor.
Result<std::vector<int64_t>> constant_ints(const NodeContext& ctx, size_t i, std::string_view name);
/// As constant_ints, but an absent optional input gives std::nullopt.
Result<std::optional<std::vector<int64_t>>> optional_constant_ints(const NodeContext& ctx, size_t i,
                                                                   std::string_view name);

/// {TensorType{dtype, shape}}: the common one-output result of a shape function.
std::vector<ir::TensorType> one_output(DTypeCode dtype, Shape shape);
/// One output with the type of input `i`.
Result<std::vector<ir::TensorType>> same_as_input(const NodeContext& ctx, size_t i = 0);
/// Checks that input `i` has rank `rank`. Error: "input 1 (W) expects rank 4, got rank 3".
Status expect_rank(const NodeContext& ctx, size_t i, int64_t rank, std::string_view name);

/// A softmax-family input of `shape` viewed as [outer, n, inner], n spanning the normalised
/// dims: `axis` (attribute, default -1), or [axis, rank) with legacy_flatten=1.
struct SoftmaxView {
  int64_t outer = 1;  ///< product of the dims before the axis
  int64_t n = 1;      ///< product of the normalised dims
  int64_t inner = 1;  ///< product of the dims after them
};
/// The SoftmaxView of `shape` for softmax / log_softmax node `ctx` (shared by the kernels).
/// Errors: those of normalize_axis for "attribute 'axis'".
Result<SoftmaxView> softmax_view(const NodeContext& ctx, std::span<const int64_t> shape);

/// A tensor of `dtype` and `shape` filled with `value` (converted like a static_cast; 16-bit
/// floats rounded to nearest even). Used for decomposition constants.
Result<Tensor> filled_tensor(DTypeCode dtype, Shape shape, double value);

/// Builds the micro-graph of a decomposition. Graph inputs mirror the node's inputs (same
/// types, named "in<i>"); every node added gets its output types from its own schema's shape
/// inference, so the result passes Graph::verify. The first error sticks: later calls return
/// ir::kNoValue and finish() reports it.
class MicroGraph {
 public:
  explicit MicroGraph(const NodeContext& ctx);
  /// The graph input for node input `i` (kNoValue if the input is absent).
  ir::ValueId input(size_t i) const;
  /// A rank-0 constant of `dtype` holding `value`.
  ir::ValueId scalar(DTypeCode dtype, double value);
  /// A constant holding `t`.
  ir::ValueId constant(Tensor t);
  /// Adds node `op` and returns its first output.
  ir::ValueId add(std::string_view op, std::vector<ir::ValueId> inputs, ir::AttrMap attrs = {});
  /// Type of a value built so far (default TensorType after an error).
  ir::TensorType type_of(ir::ValueId v) const;
  /// Marks `outputs` as the graph outputs and returns the graph, or the first error.
  Result<ir::Graph> finish(std::vector<ir::ValueId> outputs);

 private:
  const NodeContext& ctx_;
  ir::Graph graph_;
  std::vector<ir::ValueId> inputs_;
  Status status_;
};

}  // namespace frame::ops
