#pragma once
/// \file
/// Graph-valued attributes as executable bodies (control flow: ONNX If, Loop, Scan;
/// docs/adr/0006-run-time-specialization.md decision 5). `SubgraphRunner` is what a kernel
/// sees of one body: the runtime compiles each body named in KernelDef::subgraph_attrs into a
/// nested static plan once at compile time and hands one runner per body to the kernel, so
/// backends run bodies without including passes or runtime (layering, ARCH-001).
/// `infer_subgraph` runs a body's own shape inference for a schema's shape function.

#include <span>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ir/types.h"

namespace frame::ops {

struct NodeContext;

/// One compiled body of a node, bound to one run slot (its arena and per-step state are
/// reused by every call, so an iteration allocates nothing). Not shared between concurrent
/// runs: each run slot of the executable owns its own runners.
class SubgraphRunner {
 public:
  virtual ~SubgraphRunner() = default;
  /// The body's graph-input types, in order (formal inputs, then captured values).
  virtual std::span<const ir::TensorType> input_types() const = 0;
  /// The body's graph-output types, in order (static: ARCH-044).
  virtual std::span<const ir::TensorType> output_types() const = 0;
  /// Runs the body once. `in`: one tensor per body input with input_types(); `out`: one
  /// preallocated tensor per body output with output_types(), written in place (they may be
  /// views into a larger tensor, e.g. one slice of a stacked scan output). `out` must not alias
  /// `in`. Errors from the body's kernels pass through, naming node and op.
  virtual Status run(std::span<const Tensor> in, std::span<Tensor> out) = 0;
};

/// True if node `n` has side effects: its op has OpTrait::kHasSideEffect (or is unknown), or
/// one of its graph attributes holds such a node at any depth. CSE, DCE and constant folding
/// ask this instead of the op's trait alone, so nothing with effects is merged, removed or
/// folded because it sits in a body (ADR 0006 decision 5).
bool node_has_side_effect(const ir::Node& n);

/// Output types of `body` given the types of its graph inputs (`input_types`, one per body
/// input), by running each body node's own schema in topological order (nested bodies
/// recurse through their schemas). Constants of the body keep their values, so body shape
/// functions see them. Errors: prefixed with ctx.error("in body '<attr>': ") and naming the
/// body node; an input count mismatch; a body output that nothing computes and that is not
/// a body input or constant.
Result<std::vector<ir::TensorType>> infer_subgraph(const NodeContext& ctx, std::string_view attr,
                                                   const ir::Graph& body,
                                                   std::span<const ir::TensorType> input_types);

}  // namespace frame::ops
