#pragma once
/// \file
/// Running the backends' lowering patterns (include/frame/ops/lowering_pattern.h) over a graph:
/// the first step of the backend-lowering pass (docs/architecture/compiler-passes.md), and the
/// interpreted tier's fusions (docs/adr/0007-first-seen-shapes.md, "fusions decided once").

#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/ir/graph.h"

namespace frame::passes {

/// Which lowering patterns apply_lowering_patterns() tries, where, and how it asks the kernels.
struct LoweringPatternSweep {
  /// The backend chain: a pattern runs only at a node of its anchor op that its own backend's
  /// kernel would run (the first backend of the chain whose kernel supports the node).
  std::vector<std::string> backends;
  /// NodeContext::prefer_shape_agnostic for those kernel checks (ADR 0007).
  bool shape_agnostic = false;
  /// Only the patterns marked LoweringPattern::interpreted, and every kernel check (the
  /// placement above and the patterns' own) asks as for one run (NodeContext::run_once,
  /// ops::OneRunLoweringScope): the interpreted tier's fusions.
  bool interpreted_only = false;
  /// Null: every live node is tried, in topological order, sweep after sweep until none fires
  /// (at most 16 sweeps: each rewrite removes nodes, the bound guards against a faulty
  /// pattern). Else only these nodes, once each, in this order (ids that are out of range or
  /// dead are skipped).
  const std::vector<ir::NodeId>* sites = nullptr;
  /// Whether LoweringRewrite::label is written (backend-lowering reports the labels; the
  /// interpreted tier reads only the anchors, and formats nothing per pattern it tries).
  bool labels = true;
};

/// One rewrite apply_lowering_patterns() made: the anchor node's id (it may be gone since) and
/// "<backend>/<pattern> at node '<name>' (<op>)" (empty where LoweringPatternSweep::labels is
/// false).
struct LoweringRewrite {
  ir::NodeId node = -1;
  std::string label;
};

/// Runs the lowering patterns `sweep` selects over `g`; at a node, the first pattern of its
/// backend that fires ends that node's turn (the node may be gone). Returns the rewrites in the
/// order they were made. Errors: the first pattern error, prefixed
/// "lowering pattern <backend>/<name>: " (a pattern leaves the graph valid when it fails).
Result<std::vector<LoweringRewrite>> apply_lowering_patterns(ir::Graph& g,
                                                             const LoweringPatternSweep& sweep);

}  // namespace frame::passes
