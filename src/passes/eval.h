#pragma once
/// \file
/// Compile-time evaluation of one node with its "cpu" reference kernel — the same kernel the
/// runtime uses, so a folded value equals the value the node would produce at run time.
/// Shared by shape-inference (value propagation) and constant-folding. Private to the passes
/// layer.

#include <span>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::passes {

/// Known input values of a node, per input position: the value, or nullptr when the input is
/// absent or its value is unknown.
using KnownInputs = std::vector<const Tensor*>;

/// The cpu kernel of `n` when the node can be evaluated at compile time: its op is registered
/// without kHasSideEffect, it has a cpu kernel, and every present input either has a value in
/// `known` or is one the kernel reads only for its type (KernelDef::type_only_inputs) and has
/// a type. Otherwise nullptr.
const ops::KernelDef* evaluable_kernel(const ir::Graph& g, const ir::Node& n,
                                       const KnownInputs& known);

/// NodeContext of `n` whose constant inputs are exactly `known` (not the graph's constants).
ops::NodeContext context_with_inputs(const ir::Graph& g, const ir::Node& n,
                                     const ops::OpSchema* schema, const KnownInputs& known);

/// Output types of `n` given the known inputs (OpSchema::infer). Errors: those of infer.
Result<std::vector<ir::TensorType>> infer_with_inputs(const ir::Graph& g, const ir::Node& n,
                                                      const KnownInputs& known);

/// Total bytes of `types`, or SIZE_MAX on overflow.
size_t total_bytes(std::span<const ir::TensorType> types);

/// Runs `kernel` (from evaluable_kernel) on `n`: outputs allocated with `out_types`, the
/// kernel's prepare step run first when it has one. Inputs not in `known` are type-only and get
/// a placeholder tensor of their type whose contents the kernel never reads. Errors: the
/// kernel's (dtype unsupported, rejected input values), prefixed by nothing extra.
Result<std::vector<Tensor>> evaluate_node(const ir::Graph& g, const ir::Node& n,
                                          const ops::KernelDef& kernel, const KnownInputs& known,
                                          const std::vector<ir::TensorType>& out_types);

}  // namespace frame::passes
