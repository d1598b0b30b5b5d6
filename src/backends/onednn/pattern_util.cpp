// Graph queries shared by the onednn lowering patterns; see pattern_util.h.
#include "backends/onednn/pattern_util.h"

#include <algorithm>
#include <memory>

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

Result<bool> replace_with(ir::Graph& g, const std::vector<ir::NodeId>& removed, ir::ValueId out,
                          std::string_view op, const std::string& name,
                          std::vector<ir::ValueId> inputs, ir::AttrMap attrs) {
  const std::string out_name = g.value(out).name;
  const std::optional<ir::TensorType> type = g.value(out).type;
  for (ir::NodeId r : removed) g.remove_node(r);  // releases the node and value names
  FRAME_ASSIGN_OR_RETURN(
      ir::NodeId n, g.create_node(op, name, std::move(inputs), 1, std::move(attrs), {out_name}));
  const ir::ValueId nv = g.node(n).outputs[0];
  g.value(nv).type = type;
  g.replace_all_uses(out, nv);
  return true;
}

std::optional<std::vector<ir::Node>> body_chain(const ir::Node& f, ir::ValueId cur) {
  auto it = f.attrs.find("body");
  if (it == f.attrs.end() || f.outputs.size() != 1) return std::nullopt;
  const auto* body = std::get_if<std::shared_ptr<const ir::Graph>>(&it->second);
  if (body == nullptr || *body == nullptr || (*body)->outputs().size() != 1) return std::nullopt;
  const ir::Graph& b = **body;
  if (b.inputs().size() != f.inputs.size()) return std::nullopt;
  ir::ValueId chain = ir::kNoValue;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    if (f.inputs[i] != cur) continue;
    if (chain != ir::kNoValue) return std::nullopt;
    chain = b.inputs()[i];
  }
  Result<std::vector<ir::NodeId>> order = b.topological_order();
  if (chain == ir::kNoValue || !order.is_ok()) return std::nullopt;
  std::vector<ir::Node> out;
  for (ir::NodeId id : *order) {
    ir::Node n = b.node(id);
    bool reads_chain = false;
    for (ir::ValueId& v : n.inputs) {
      if (v == ir::kNoValue) continue;
      if (v == chain) {
        v = cur;
        reads_chain = true;
        continue;
      }
      const auto pos = std::find(b.inputs().begin(), b.inputs().end(), v);
      if (pos == b.inputs().end()) return std::nullopt;  // another body value: not a chain
      v = f.inputs[static_cast<size_t>(pos - b.inputs().begin())];
    }
    if (!reads_chain || b.node(id).outputs.size() != 1) return std::nullopt;
    chain = b.node(id).outputs[0];
    out.push_back(std::move(n));
  }
  if (chain != b.outputs()[0]) return std::nullopt;
  return out;
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
