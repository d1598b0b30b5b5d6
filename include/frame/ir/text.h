#pragma once
/// \file
/// Stable text form of the IR for golden tests and `frame inspect`. `parse_text(print_text(g))`
/// reproduces g (names, types, attrs, constants). Grammar: docs/architecture/ir-design.md §3.

#include <string>
#include <string_view>

#include "frame/core/status.h"
#include "frame/ir/graph.h"

namespace frame::ir {

struct PrintOptions {
  /// Print constant contents; when false, constants print as `<N elements>` (not parseable).
  bool constant_data = true;
};

/// Prints `g` in topological order (insertion order if it has a cycle).
std::string print_text(const Graph& g, const PrintOptions& options = {});
/// Parses the text form. Errors: kInvalidArgument with line and column.
Result<Graph> parse_text(std::string_view text);

}  // namespace frame::ir
