#pragma once
/// \file
/// Classification of shape-determining graph inputs (docs/adr/0006-run-time-specialization.md,
/// ARCH-044): graph inputs whose VALUES reach an input position that an op schema marks
/// shape-determining (ops::ArgSpec::shape_determining), directly or through value arithmetic.

#include <cstddef>
#include <string>
#include <vector>

#include "frame/ir/graph.h"

namespace frame::passes {

/// Attribute (a list of input positions, int64s) by which a node without a schema or cpu
/// kernel says which inputs it reads only for their dtype and shape, so the walk of
/// shape_determining_inputs stops there as it does at `shape` and `size`. The ONNX importer
/// sets it on the stand-in a structure-only load leaves for an unconverted Shape or Size node
/// (one whose input has no type at placeholder shapes): without it the stand-in would carry a
/// data input's value into the shape arithmetic behind a Reshape and mark that input.
inline constexpr const char* kTypeOnlyInputsAttr = "type_only_inputs";

/// One shape-determining position a graph input's value reaches.
struct ShapeDeterminingUse {
  ir::NodeId node = -1;
  std::string node_name;
  std::string op;
  size_t input = 0;        ///< input position of `node`
  std::string input_name;  ///< the schema's name for that position ("shape", "K", ...)
};

/// A graph input whose value decides output shapes, with every position it reaches.
struct ShapeDeterminingInput {
  ir::ValueId value = ir::kNoValue;
  std::string name;
  std::vector<ShapeDeterminingUse> uses;  ///< ordered by node id, then input position
};

/// How shape_determining_inputs treats narrowed positions.
struct ShapeDeterminingOptions {
  /// Consult each schema's narrowing (OpSchemaBuilder::shape_determining_when, e.g. an If's
  /// `cond` only when its branches yield different types). False when `g`'s input shapes
  /// are placeholders (a model with symbolic dims classified before any run): narrowing by
  /// types would then judge shapes the runs never have, so every marked position counts
  /// (ADR 0006, decision 5 notes).
  bool narrow = true;
};

/// The non-constant graph inputs of `g` whose values reach a shape-determining input position
/// (ADR 0006), in graph-input order; inputs that reach none are left out.
///
/// Rule: walking forward from a graph input, a value reached by the walk makes every output of
/// each node reading it value-dependent too, except where the node reads that position only
/// for its dtype and shape (the cpu kernel's KernelDef::type_only_inputs, e.g. `shape`,
/// `size`, or a node's kTypeOnlyInputsAttr): the value path stops there, because a tensor's
/// shape is not its value. Other ops without a schema or cpu kernel propagate (conservative).
/// Arithmetic such as Cast, Gather, Concat, Add, Mul, Slice, Unsqueeze therefore carries the
/// dependence. Dead nodes are skipped. A control-flow node's input also counts as a
/// shape-determining position when the body input it feeds is shape-determining inside the body
/// (recursively), e.g. an outer value captured into a Loop body and used there as a Reshape shape,
/// or a Loop trip count whose iteration number decides a Slice inside the body. When one marked
/// input of a control-flow node counts that way, its other marked inputs count too (a Loop's `cond`
/// with its trip count: the iteration numbers are known only when both are). Each body is
/// classified once per call, so the cost is linear in the total size of the graph and its bodies.
std::vector<ShapeDeterminingInput> shape_determining_inputs(
    const ir::Graph& g, const ShapeDeterminingOptions& opts = {});

/// One line per input for error hints and reports, e.g. "graph input 'shape' decides output
/// shapes: node 'r' (reshape) input 1 (shape)". Empty when `inputs` is empty.
std::vector<std::string> describe_shape_determining_inputs(
    const std::vector<ShapeDeterminingInput>& inputs);

/// `s` with hint lines naming the shape-determining graph inputs of `g` when `s` is a shape
/// function's "must be a constant" rejection (ARCH-044) and `g` has such inputs; else `s`
/// unchanged. `g` may be partial (an import stopped at the failing node). Used by
/// runtime::compile and the ONNX importer (ADR 0006).
Status with_shape_determining_hint(const ir::Graph& g, const Status& s);

}  // namespace frame::passes
