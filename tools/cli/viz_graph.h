#pragma once
// `frame viz`: the graph after a chosen pass (docs/cli.md "frame viz"), as a drawing model of
// nodes, clusters and edges independent of Graphviz, and its rendering through the Graphviz
// libraries (cgraph + gvc). Each node of the IR graph becomes one drawn node, except fused
// nodes: a fused_elementwise_internal node becomes a cluster holding its body's nodes, a
// fused_post_ops_internal node with post-ops a cluster holding its base op and each post-op.

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/ir/graph.h"
#include "frame/passes/pass.h"

namespace frame::cli::viz {

/// Stages `--stage` accepts, in order: "import" (the graph as loaded), each pass of the
/// standard pipeline (passes::kStandardPipeline), then "final" (the compiled graph).
std::vector<std::string> stage_names();

/// A graph after some stage of the pipeline, with what the drawing needs to know about it.
struct StagedGraph {
  ir::Graph graph;      ///< the graph after `stage`
  std::string stage;    ///< a name of stage_names()
  bool placed = false;  ///< backend-lowering ran: `placements` holds every node
  /// Backend and path of each node (backend-lowering), keyed by node ids of `graph`.
  std::map<ir::NodeId, passes::NodePlacement> placements;
  /// Live node count after import and after each pass run, in order ("import" first).
  std::vector<std::pair<std::string, size_t>> node_counts;
  /// Names of the constants of the graph as loaded: any other constant was made by a pass
  /// (constant folding, a lowering pattern folding weights).
  std::set<std::string> import_constants;
};

/// Runs the standard pipeline on `imported` up to and including `stage` (no pass for
/// "import"; every pass for "final") with `backends` as the resolved backend chain, like
/// runtime::compile does before building its plan. Errors: kInvalidArgument for an unknown
/// stage, listing the stages; a pass's error prefixed with "stage '<pass>': ".
Result<StagedGraph> run_to_stage(ir::Graph imported, const std::string& stage,
                                 const std::vector<std::string>& backends);

/// One drawn node.
struct DrawnNode {
  /// An op (or one op of a fused group's body), a graph input, or a graph output.
  enum class Kind { kOp, kInput, kOutput };
  std::string id;                  ///< unique Graphviz node name
  std::vector<std::string> lines;  ///< label lines, first line first
  Kind kind = Kind::kOp;
  std::string fill;       ///< "#rrggbb"
  bool fallback = false;  ///< drawn with a red border
  std::string tooltip;
  int cluster = -1;  ///< index into DrawnGraph::clusters, or -1
};

/// One fused group, drawn as a Graphviz cluster around its nodes.
struct DrawnCluster {
  std::string id;  ///< "cluster_..." (Graphviz draws subgraphs so named as boxes)
  std::vector<std::string> lines;
  std::string fill;
  bool fallback = false;
  std::string tooltip;
};

/// One edge: a value from its producer (or a graph input) to a consumer, labelled with its
/// type ("f32[1,64,56,56]").
struct DrawnEdge {
  std::string from;
  std::string to;
  std::string label;
};

/// The drawing: nodes, clusters, edges, a title and the legend (backend -> colour).
struct DrawnGraph {
  std::vector<std::string> title;
  std::vector<DrawnNode> nodes;
  std::vector<DrawnCluster> clusters;
  std::vector<DrawnEdge> edges;
  /// Colour per backend present, in chain order; "not placed yet" before backend-lowering.
  std::vector<std::pair<std::string, std::string>> legend;
  size_t fallbacks = 0;  ///< nodes placed through decomposition or cpu-fallback
};

/// Builds the drawing of `s`: op nodes coloured by backend ("not placed yet" before
/// backend-lowering), fused groups as clusters with their body, fallbacks with their path and
/// the rejected alternatives, shapes and dtypes on edges, constants listed in their consumer's
/// label (made by a pass: marked "folded"), graph inputs and outputs as distinct shapes.
/// `model` names the file in the title; `backends` is the chain, in legend order.
DrawnGraph build_drawing(const StagedGraph& s, const std::string& model,
                         const std::vector<std::string>& backends);

/// Output formats, from the -o file's extension.
enum class Format { kSvg, kPng, kDot };
/// The format for `path` by its extension (case-insensitive .svg, .png, .dot/.gv).
/// Errors: kInvalidArgument naming the extension and the accepted ones.
Result<Format> format_for(const std::string& path);

/// True when this binary was built with the Graphviz libraries.
bool have_graphviz();
/// Lays out `d` with Graphviz `dot` and writes it to `path` in `format` (kDot: the graph
/// description without layout). Errors: kUnimplemented when built without Graphviz, or naming
/// the renderer when Graphviz cannot lay out or render (plugin missing; no file is left);
/// kIo naming the path when the file cannot be opened or written; kInternal for an edge
/// naming an undrawn node.
Status render(const DrawnGraph& d, Format format, const std::string& path);

}  // namespace frame::cli::viz
