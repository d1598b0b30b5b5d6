// dce: dead-code elimination. Keeps the nodes graph outputs need, every kHasSideEffect node
// (and what it needs), never reorders nodes, then compacts the graph so ids are dense for the
// passes after it (docs/architecture/compiler-passes.md "dce").

#include <memory>
#include <vector>

#include "frame/ops/op_registry.h"
#include "frame/ops/subgraph.h"
#include "passes/pass_factories.h"

namespace frame::passes {

namespace {

// An op the registry does not know might have effects; keep it (verify reports it as V3).
bool must_keep(const ir::Node& n) { return ops::node_has_side_effect(n); }

class DcePass final : public Pass {
 public:
  std::string_view name() const override { return "dce"; }

  Status run(ir::Graph& g, PassContext&) override {
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    std::vector<bool> needed(g.num_values(), false);
    for (ir::ValueId v : g.outputs()) {
      if (v >= 0 && static_cast<size_t>(v) < needed.size()) needed[static_cast<size_t>(v)] = true;
    }
    // Reverse topological order sees every user before its producers.
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      const ir::Node& n = g.node(*it);
      bool live = must_keep(n);
      for (ir::ValueId v : n.outputs) live = live || needed[static_cast<size_t>(v)];
      if (!live) {
        g.remove_node(*it);
        continue;
      }
      for (ir::ValueId v : n.inputs) {
        if (v != ir::kNoValue) needed[static_cast<size_t>(v)] = true;
      }
    }
    g.compact();
    return Status();
  }
};

}  // namespace

std::unique_ptr<Pass> make_dce_pass() { return std::make_unique<DcePass>(); }

}  // namespace frame::passes
