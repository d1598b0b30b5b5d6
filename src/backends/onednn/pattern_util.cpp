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
  return schema->infer(ctx).is_ok() && k->supports(ctx).is_ok();
}

}  // namespace frame::backends::onednn
