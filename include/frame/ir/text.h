#pragma once
/// \file
/// Stable text form of the IR for golden tests and `frame inspect`. `parse_text(print_text(g))`
/// reproduces g (names, types, attrs, constants). Grammar: docs/architecture/ir-design.md §3.

#include <functional>
#include <string>
#include <string_view>

#include "frame/core/status.h"
#include "frame/ir/graph.h"

namespace frame::ir {

struct PrintOptions {
  /// Print constant contents; when false, constants print as `<N elements>` (not parseable).
  bool constant_data = true;
  /// When set, called for every tensor with data (constants and tensor attributes, nested
  /// graphs included): a non-empty result prints the tensor as `tensor<type> ref "ID"`
  /// instead of its elements (ParseOptions::resolve_tensor reads it back); an empty result
  /// prints the elements. The compile cache on disk uses this to keep tensor bytes out of the
  /// text (docs/architecture/execution-model.md, "Compile cache on disk").
  std::function<std::string(const Tensor&)> tensor_ref;
};

struct ParseOptions {
  /// Resolves `tensor<type> ref "ID"`: returns the tensor with that ID, or an error (reported
  /// at the tensor's position). The parser checks that its dtype and shape are `type`'s.
  /// Without a resolver, a ref is a kInvalidArgument error.
  std::function<Result<Tensor>(std::string_view id, const TensorType& type)> resolve_tensor;
};

/// Prints `g` in topological order (insertion order if it has a cycle).
std::string print_text(const Graph& g, const PrintOptions& options = {});
/// Parses the text form. Errors: kInvalidArgument with line and column.
Result<Graph> parse_text(std::string_view text);
/// Parses the text form, resolving tensor refs through `options`. Errors: as parse_text, plus
/// the resolver's errors and a dtype or shape that differs from the ref's declared type.
Result<Graph> parse_text(std::string_view text, const ParseOptions& options);

}  // namespace frame::ir
