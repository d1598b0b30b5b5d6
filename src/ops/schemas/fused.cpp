// Schema of `fused_elementwise_internal`, the node operator-fusion creates for a fused group
// (op spec §7). Its inputs are the group's external inputs (one variadic group, M9); its
// `body` attribute holds the group as a sub-graph whose inputs mirror the node's inputs and
// whose single output is the node's output. Shape inference re-runs the body's own schemas.

#include <memory>
#include <unordered_map>
#include <vector>

#include "frame/ir/graph.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {
namespace {

using Types = Result<std::vector<ir::TensorType>>;

Types fused_infer(const NodeContext& ctx) {
  const auto* body = ctx.attr<std::shared_ptr<const ir::Graph>>("body");
  if (body == nullptr || *body == nullptr) return ctx.error("attribute 'body' is missing");
  const ir::Graph& g = **body;
  if (g.inputs().size() != ctx.num_inputs()) {
    return ctx.error("body has {} inputs, node has {}", g.inputs().size(), ctx.num_inputs());
  }
  if (g.outputs().size() != ctx.num_outputs) {
    return ctx.error("body has {} outputs, node has {}", g.outputs().size(), ctx.num_outputs);
  }
  // The cpu kernel evaluates the body with its declared types, so they must equal what the
  // node's inputs imply; a mismatch is an error, never a silent reinterpretation.
  std::unordered_map<ir::ValueId, ir::TensorType> types;
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const ir::Value& in = g.value(g.inputs()[i]);
    if (in.type && *in.type != ctx.input_types[i]) {
      return ctx.error("body input {} ('{}') is declared {}, but node input {} is {}", i, in.name,
                       in.type->to_string(), i, ctx.input_types[i].to_string());
    }
    types[g.inputs()[i]] = ctx.input_types[i];
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const OpSchema* schema = OpRegistry::global().find(n.op);
    if (schema == nullptr) return ctx.error("body node '{}' has unknown op '{}'", n.name, n.op);
    NodeContext inner = make_node_context(g, n, schema);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto it = types.find(n.inputs[i]);
      if (it != types.end()) inner.input_types[i] = it->second;
    }
    Result<std::vector<ir::TensorType>> out = schema->infer(inner);
    if (!out.is_ok()) return out.status().with_prefix(ctx.error("in body: ").message());
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      const ir::Value& ov = g.value(n.outputs[k]);
      if (ov.type && *ov.type != (*out)[k]) {
        return ctx.error("body node '{}' output {} is declared {}, but infers {}", n.name, k,
                         ov.type->to_string(), (*out)[k].to_string());
      }
      types[n.outputs[k]] = (*out)[k];
    }
  }
  std::vector<ir::TensorType> result;
  for (ir::ValueId v : g.outputs()) {
    const ir::Value& ov = g.value(v);
    if (ov.producer < 0) {
      return ctx.error("body output '{}' is not computed by a body node", ov.name);
    }
    auto it = types.find(v);
    if (it == types.end()) return ctx.error("body output '{}' is not computed", ov.name);
    result.push_back(it->second);
  }
  return result;
}

}  // namespace

// kElementwise (inputs broadcast to the output) but not kFusable: a fused group is never fused
// again. Memory planning may run it in place; the cpu kernel tolerates aliasing.
FRAME_REGISTER_OP(fused_elementwise_internal)
    .doc(
        "A fused group of elementwise ops (created by operator-fusion, not by importers): "
        "inputs broadcast to the output shape; `body` computes the output from them.")
    .variadic_input("inputs", "external inputs of the group, in body-input order", 1)
    .output("output", "the group's result (shape = broadcast of the inputs)")
    .required_attr("body", ir::AttrType::kGraph,
                   "the fused sub-graph: inputs mirror the node's inputs, one output")
    .traits({OpTrait::kElementwise})
    .shape_infer(fused_infer);

}  // namespace frame::ops
