// constant-folding: replaces every side-effect-free node whose present inputs are constants
// (or inputs its cpu kernel reads only for their type) by constants holding the outputs of
// that same cpu kernel (docs/architecture/compiler-passes.md "constant-folding").

#include <fmt/format.h>

#include <memory>
#include <string>

#include "passes/eval.h"
#include "passes/pass_factories.h"
#include "passes/pass_util.h"

namespace frame::passes {

namespace {

class ConstantFoldingPass final : public Pass {
 public:
  std::string_view name() const override { return "constant-folding"; }

  Status run(ir::Graph& g, PassContext& ctx) override {
    // One topological sweep reaches the fixpoint: a folded node's users come later in the
    // order and already see its outputs as constants.
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    UseIndex uses(g);
    bool changed = false;
    for (ir::NodeId id : order) {
      FRAME_ASSIGN_OR_RETURN(bool folded, fold(g, id, ctx, uses));
      changed |= folded;
    }
    // Drops the folded nodes and the constants only they read.
    if (changed) g.compact();
    return Status();
  }

 private:
  static Result<bool> fold(ir::Graph& g, ir::NodeId id, const PassContext& ctx, UseIndex& uses) {
    const ir::Node& n = g.node(id);
    KnownInputs known(n.inputs.size(), nullptr);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::ValueId v = n.inputs[i];
      if (v != ir::kNoValue && g.value(v).constant) known[i] = &*g.value(v).constant;
    }
    const ops::KernelDef* kernel = evaluable_kernel(g, n, known);
    if (kernel == nullptr) return false;
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, infer_with_inputs(g, n, known));
    if (total_bytes(types) > ctx.fold_size_limit) return false;
    Result<std::vector<Tensor>> values = evaluate_node(g, n, *kernel, known, types);
    // A node the kernel rejects (a dtype it lacks, an integer division by zero) stays: the
    // runtime reports the error if the node is still needed after dce, with the same message.
    if (!values.is_ok()) return false;
    // The constants take over the output names: graph outputs are identified by name.
    const std::vector<ir::ValueId> old_outputs = n.outputs;
    g.remove_node(id);
    for (size_t i = 0; i < old_outputs.size(); ++i) {
      const ir::ValueId old = old_outputs[i];
      const ir::ValueId fresh = g.add_constant(g.value(old).name, std::move((*values)[i]));
      uses.replace(g, old, fresh);
    }
    return true;
  }
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding_pass() {
  return std::make_unique<ConstantFoldingPass>();
}

}  // namespace frame::passes
