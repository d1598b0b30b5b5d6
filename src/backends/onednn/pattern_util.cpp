// Graph queries shared by the onednn lowering patterns; see pattern_util.h.
#include "backends/onednn/pattern_util.h"

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::onednn {

std::optional<ir::NodeId> sole_user(const ir::Graph& g, ir::ValueId v) {
  if (g.is_output(v)) return std::nullopt;
  std::optional<ir::NodeId> user;
  for (ir::NodeId id : g.node_ids()) {
    for (ir::ValueId in : g.node(id).inputs) {
      if (in != v) continue;
      if (user) return std::nullopt;
      user = id;
    }
  }
  return user;
}

std::optional<std::pair<ir::NodeId, ir::NodeId>> swish_pair(const ir::Graph& g, ir::ValueId v) {
  if (g.is_output(v)) return std::nullopt;
  std::vector<ir::NodeId> users;
  for (ir::NodeId id : g.node_ids()) {
    for (ir::ValueId in : g.node(id).inputs) {
      if (in == v) users.push_back(id);
    }
  }
  if (users.size() != 2) return std::nullopt;
  for (int k = 0; k < 2; ++k) {
    const ir::Node& s = g.node(users[static_cast<size_t>(k)]);
    const ir::Node& m = g.node(users[static_cast<size_t>(1 - k)]);
    if (s.op != "sigmoid" || s.inputs.size() != 1 || s.outputs.size() != 1) continue;
    if (m.op != "mul" || m.inputs.size() != 2 || m.outputs.size() != 1) continue;
    const ir::ValueId sv = s.outputs[0];
    const bool reads =
        (m.inputs[0] == v && m.inputs[1] == sv) || (m.inputs[1] == v && m.inputs[0] == sv);
    if (!reads || g.value(m.outputs[0]).type != g.value(v).type) continue;
    const std::optional<ir::NodeId> su = sole_user(g, sv);
    if (su && *su == m.id) return std::pair{s.id, m.id};
  }
  return std::nullopt;
}

const Tensor* constant_of(const ir::Graph& g, ir::ValueId v) {
  if (v == ir::kNoValue || !g.value(v).is_constant()) return nullptr;
  return &*g.value(v).constant;
}

bool onednn_runs(const ir::Graph& g, std::string_view op, std::string_view name,
                 const std::vector<ir::ValueId>& inputs, const ir::AttrMap& attrs,
                 const std::vector<std::pair<size_t, const Tensor*>>& overrides) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(op);
  const ops::KernelDef* k = ops::KernelRegistry::global().find(op, "onednn");
  if (schema == nullptr || k == nullptr) return false;
  ops::NodeContext ctx;
  ctx.op = op;
  ctx.node_name = name;
  ctx.attrs = &attrs;
  ctx.schema = schema;
  // Asked with the shape-agnostic hint (ADR 0007): where the kernel has prepared state valid
  // for any row count (matmul's runtime M), the check's descriptor is built once and serves
  // every later shape, instead of one JIT per new sequence length in the first-seen tier; the
  // static form is asked when that one is declined.
  ctx.prefer_shape_agnostic = true;
  for (ir::ValueId v : inputs) {
    const bool present = v != ir::kNoValue && g.value(v).type.has_value();
    ctx.input_types.push_back(present ? *g.value(v).type : ir::TensorType{});
    ctx.input_present.push_back(present);
    ctx.input_constants.push_back(constant_of(g, v));
  }
  for (const auto& [i, t] : overrides) {
    ctx.input_types[i] = ir::TensorType{t->dtype(), t->shape()};
    ctx.input_present[i] = true;
    ctx.input_constants[i] = t;
  }
  if (!schema->infer(ctx).is_ok()) return false;
  if (k->supports(ctx).is_ok()) return true;
  // A kernel that declines the shape-agnostic form may still take the node with static dims.
  ctx.prefer_shape_agnostic = false;
  return k->supports(ctx).is_ok();
}

}  // namespace frame::backends::onednn
