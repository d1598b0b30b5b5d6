// Shape inference through a graph-valued attribute (control-flow bodies): each body node's own
// schema runs in topological order with the types the enclosing node supplies (ARCH-044: the
// body's shapes are as static as the node's).

#include "frame/ops/subgraph.h"

#include <fmt/format.h>

#include <memory>
#include <unordered_map>
#include <variant>

#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {

bool node_has_side_effect(const ir::Node& n) {
  const OpSchema* schema = OpRegistry::global().find(n.op);
  if (schema == nullptr || schema->has_trait(OpTrait::kHasSideEffect)) return true;
  for (const auto& [name, value] : n.attrs) {
    const auto* body = std::get_if<std::shared_ptr<const ir::Graph>>(&value);
    if (body == nullptr || *body == nullptr) continue;
    for (ir::NodeId id : (*body)->node_ids()) {
      if (node_has_side_effect((*body)->node(id))) return true;
    }
  }
  return false;
}

Result<std::vector<ir::TensorType>> infer_subgraph(const NodeContext& ctx, std::string_view attr,
                                                   const ir::Graph& g,
                                                   std::span<const ir::TensorType> input_types) {
  if (g.inputs().size() != input_types.size()) {
    return ctx.error("body '{}' ({}) has {} inputs, the node supplies {}", attr, g.name(),
                     g.inputs().size(), input_types.size());
  }
  std::unordered_map<ir::ValueId, ir::TensorType> types;
  for (size_t i = 0; i < input_types.size(); ++i) types[g.inputs()[i]] = input_types[i];
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const OpSchema* schema = OpRegistry::global().find(n.op);
    if (schema == nullptr) {
      return ctx.error("body '{}' node '{}' has unknown op '{}'", attr, n.name, n.op);
    }
    // Arity and attribute kinds first, as for a top-level node: shape functions rely on them.
    if (Status s = schema->check_node(n); !s.is_ok()) {
      return s.with_prefix(ctx.error("in body '{}' ({}): ", attr, g.name()).message());
    }
    NodeContext inner = make_node_context(g, n, schema);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      auto it = types.find(n.inputs[i]);
      if (it != types.end()) inner.input_types[i] = it->second;
    }
    Result<std::vector<ir::TensorType>> out = schema->infer(inner);
    if (!out.is_ok()) {
      return out.status().with_prefix(ctx.error("in body '{}' ({}): ", attr, g.name()).message());
    }
    for (size_t k = 0; k < n.outputs.size(); ++k) types[n.outputs[k]] = (*out)[k];
  }
  std::vector<ir::TensorType> result;
  for (ir::ValueId v : g.outputs()) {
    const ir::Value& ov = g.value(v);
    auto it = types.find(v);
    if (it != types.end()) {
      result.push_back(it->second);
    } else if (ov.constant) {
      result.push_back(ir::TensorType{ov.constant->dtype(), ov.constant->shape()});
    } else {
      return ctx.error("body '{}' output '{}' is not computed", attr, ov.name);
    }
  }
  return result;
}

}  // namespace frame::ops
