#pragma once
/// \file
/// Graph-editing helpers shared by the passes. Private to the passes layer.

#include <algorithm>
#include <vector>

#include "frame/ir/graph.h"

namespace frame::passes {

/// Use lists of a graph kept current while a pass rewires values, so replacing all uses of a
/// value costs its use count instead of a scan of every node (Graph::replace_all_uses).
class UseIndex {
 public:
  explicit UseIndex(const ir::Graph& g) : uses_(g.use_lists()) {}

  /// Replaces every use of `from` by `to` in live nodes and in the graph output list.
  void replace(ir::Graph& g, ir::ValueId from, ir::ValueId to) {
    grow(std::max(from, to));
    std::vector<ir::NodeId>& src = uses_[static_cast<size_t>(from)];
    for (ir::NodeId user : src) {
      ir::Node& n = g.node(user);
      if (!n.dead) std::replace(n.inputs.begin(), n.inputs.end(), from, to);
    }
    std::vector<ir::NodeId>& dst = uses_[static_cast<size_t>(to)];
    dst.insert(dst.end(), src.begin(), src.end());
    src.clear();
    if (g.is_output(from)) {
      std::vector<ir::ValueId> outs = g.outputs();
      std::replace(outs.begin(), outs.end(), from, to);
      g.set_outputs(std::move(outs));
    }
  }

  /// Records that live node `n` reads its current inputs (call after creating it).
  void add_node(const ir::Graph& g, ir::NodeId n) {
    for (ir::ValueId v : g.node(n).inputs) {
      if (v == ir::kNoValue) continue;
      grow(v);
      uses_[static_cast<size_t>(v)].push_back(n);
    }
  }

 private:
  void grow(ir::ValueId v) {
    if (static_cast<size_t>(v) >= uses_.size()) uses_.resize(static_cast<size_t>(v) + 1);
  }
  std::vector<std::vector<ir::NodeId>> uses_;
};

}  // namespace frame::passes
