// operator-fusion (docs/architecture/compiler-passes.md#operator-fusion): merges maximal
// connected groups of elementwise, fusable nodes into one `fused_elementwise_internal` node
// whose `body` attribute holds the group. Decisions come from op traits, never op names.
//
// Rules (each keeps the result correct without further analysis):
//  * every member's output has the group output's shape (inputs may broadcast), so the fused
//    kernel can evaluate every member block by block over the output's positions;
//  * only the group's sink (its last node) may be read outside the group or be a graph
//    output: every other member's output is consumed inside the group only. This also makes
//    cycles impossible: the only edges leaving the group start at the sink, and every member
//    is an ancestor of the sink, so a path sink -> X -> member would already be a cycle;
//  * no member has kHasSideEffect; groups of one node are left alone;
//  * the preferred backend (ctx.backends[0]) has a fused kernel supporting every dtype in
//    the group, and every member op has a cpu kernel for its dtype (the cpu fused kernel
//    interprets the body with them);
//  * when the preferred backend is not cpu and is available, its fused kernel accepts a group
//    of the member alone: one member it cannot generate (e.g. intel_gpu's clip, prelu, cast)
//    would send the whole group to the cpu fused kernel, and fail --strict, although every
//    node has a kernel on the preferred backend.

#include "passes/operator_fusion.h"

#include <algorithm>
#include <memory>
#include <queue>
#include <unordered_map>
#include <utility>

#include "frame/ops/backend_availability.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "passes/pass_factories.h"

namespace frame::passes {

std::vector<std::vector<std::string>> fused_groups(const ir::Graph& g) {
  std::vector<std::vector<std::string>> groups;
  Result<std::vector<ir::NodeId>> order = g.topological_order();
  if (!order.is_ok()) return groups;
  for (ir::NodeId id : *order) {
    const ir::Node& n = g.node(id);
    if (n.op != kFusedElementwiseOp) continue;
    auto it = n.attrs.find("body");
    if (it == n.attrs.end()) continue;
    const auto* body = std::get_if<std::shared_ptr<const ir::Graph>>(&it->second);
    if (body == nullptr || *body == nullptr) continue;
    std::vector<std::string> ops;
    Result<std::vector<ir::NodeId>> inner = (*body)->topological_order();
    if (inner.is_ok()) {
      for (ir::NodeId b : *inner) ops.push_back((*body)->node(b).op);
    }
    groups.push_back(std::move(ops));
  }
  return groups;
}

namespace {

class OperatorFusionPass final : public Pass {
 public:
  std::string_view name() const override { return "operator-fusion"; }
  Status run(ir::Graph& g, PassContext& ctx) override;

 private:
  bool candidate(const ir::Graph& g, const ir::Node& n) const;
  bool preferred_accepts_alone(const ir::Graph& g, const ir::Node& n) const;
  Status fuse_group(ir::Graph& g, const std::vector<ir::NodeId>& members);

  const ops::KernelDef* fused_kernel_ = nullptr;
  bool probe_preferred_ = false;  // ask fused_kernel_ about each member alone
  mutable std::unordered_map<const ir::Node*, bool> accepted_alone_;  // per run
};

bool OperatorFusionPass::candidate(const ir::Graph& g, const ir::Node& n) const {
  const ops::OpSchema* s = ops::OpRegistry::global().find(n.op);
  if (s == nullptr || !s->has_trait(ops::OpTrait::kElementwise) ||
      !s->has_trait(ops::OpTrait::kFusable) || s->has_trait(ops::OpTrait::kHasSideEffect)) {
    return false;
  }
  if (n.outputs.size() != 1 || !g.value(n.outputs[0]).type) return false;
  if (!fused_kernel_->dtypes.contains(g.value(n.outputs[0]).type->dtype)) return false;
  for (ir::ValueId v : n.inputs) {
    if (v == ir::kNoValue) continue;
    if (!g.value(v).type || !fused_kernel_->dtypes.contains(g.value(v).type->dtype)) return false;
  }
  const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, "cpu");
  if (k == nullptr || !k->supports(ops::make_node_context(g, n, s)).is_ok()) return false;
  return !probe_preferred_ || preferred_accepts_alone(g, n);
}

// The preferred backend's fused kernel asked about a body of `n` alone (memoized per node).
bool OperatorFusionPass::preferred_accepts_alone(const ir::Graph& g, const ir::Node& n) const {
  if (auto it = accepted_alone_.find(&n); it != accepted_alone_.end()) return it->second;
  auto body = std::make_shared<ir::Graph>(n.name + "_probe");
  ops::NodeContext ctx;
  ctx.op = kFusedElementwiseOp;
  ctx.node_name = n.name;
  ctx.schema = ops::OpRegistry::global().find(kFusedElementwiseOp);
  std::vector<ir::ValueId> ins;
  for (ir::ValueId v : n.inputs) {
    if (v == ir::kNoValue) {
      ins.push_back(v);
      continue;
    }
    const ir::TensorType& t = *g.value(v).type;
    ins.push_back(body->add_input(fmt::format("in{}", ctx.input_types.size()), t));
    ctx.input_types.push_back(t);
    ctx.input_present.push_back(true);
    ctx.input_constants.push_back(nullptr);
  }
  bool ok = false;
  Result<ir::NodeId> b = body->create_node(n.op, n.name, ins, 1, n.attrs, {"out"});
  if (b.is_ok()) {
    const ir::ValueId out = body->node(*b).outputs[0];
    body->value(out).type = g.value(n.outputs[0]).type;
    body->add_output(out);
    const ir::AttrMap attrs{{"body", std::shared_ptr<const ir::Graph>(std::move(body))}};
    ctx.attrs = &attrs;
    ok = fused_kernel_->supports(ctx).is_ok();
  }
  accepted_alone_[&n] = ok;
  return ok;
}

Status OperatorFusionPass::fuse_group(ir::Graph& g, const std::vector<ir::NodeId>& members) {
  const ir::Node& sink = g.node(members.back());
  std::unordered_map<ir::ValueId, ir::ValueId> inner;  // outer value -> body value
  for (ir::NodeId m : members) inner[g.node(m).outputs[0]] = ir::kNoValue;
  auto body = std::make_shared<ir::Graph>(sink.name + "_body");
  std::vector<ir::ValueId> ext;
  for (ir::NodeId m : members) {
    for (ir::ValueId v : g.node(m).inputs) {
      if (v == ir::kNoValue || inner.count(v) != 0) continue;
      inner[v] = body->add_input(fmt::format("in{}", ext.size()), *g.value(v).type);
      ext.push_back(v);
    }
  }
  for (ir::NodeId m : members) {
    const ir::Node& n = g.node(m);
    std::vector<ir::ValueId> ins;
    for (ir::ValueId v : n.inputs) ins.push_back(v == ir::kNoValue ? v : inner.at(v));
    FRAME_ASSIGN_OR_RETURN(ir::NodeId b, body->create_node(n.op, n.name, ins, 1, n.attrs,
                                                           {g.value(n.outputs[0]).name}));
    const ir::ValueId bo = body->node(b).outputs[0];
    body->value(bo).type = g.value(n.outputs[0]).type;
    inner[n.outputs[0]] = bo;
  }
  const ir::ValueId old_out = sink.outputs[0];
  body->add_output(inner.at(old_out));

  std::string node_name = "fused_" + sink.name;
  if (g.find_node(node_name) >= 0) node_name = g.unique_node_name(node_name);
  const std::string out_name = g.value(old_out).name;
  const std::string tmp_name = g.unique_value_name(out_name + "_fused");
  ir::AttrMap attrs{{"body", std::shared_ptr<const ir::Graph>(std::move(body))}};
  FRAME_ASSIGN_OR_RETURN(ir::NodeId f, g.create_node(kFusedElementwiseOp, node_name, ext, 1,
                                                     std::move(attrs), {tmp_name}));
  const ir::ValueId new_out = g.node(f).outputs[0];
  g.value(new_out).type = g.value(old_out).type;
  // The fused output keeps the sink's value name (graph outputs are named by it); compact()
  // re-indexes the swapped names.
  g.value(old_out).name = g.unique_value_name(out_name + "_unfused");
  g.value(new_out).name = out_name;
  g.replace_all_uses(old_out, new_out);
  for (ir::NodeId m : members) g.remove_node(m);
  return Status();
}

Status OperatorFusionPass::run(ir::Graph& g, PassContext& ctx) {
  if (ctx.backends.empty()) return Status();
  fused_kernel_ = ops::KernelRegistry::global().find(kFusedElementwiseOp, ctx.backends[0]);
  if (fused_kernel_ == nullptr) return Status();  // the backend cannot run fused groups
  // An unavailable backend declines everything: its nodes go to cpu, fused as before.
  probe_preferred_ =
      ctx.backends[0] != "cpu" && ops::backend_unavailable_reason(ctx.backends[0]).empty();
  accepted_alone_.clear();
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  const std::vector<std::vector<ir::NodeId>> uses = g.use_lists();
  std::vector<int> pos(g.num_node_slots(), -1);
  for (size_t i = 0; i < order.size(); ++i)
    pos[static_cast<size_t>(order[i])] = static_cast<int>(i);
  std::vector<int> group_of(g.num_node_slots(), -1);
  std::vector<std::vector<ir::NodeId>> groups;

  // Sinks are taken in reverse topological order; producers join in decreasing position
  // (a max-heap), so when a producer is examined all its consumers have been decided.
  for (size_t i = order.size(); i-- > 0;) {
    const ir::NodeId sink = order[i];
    if (group_of[static_cast<size_t>(sink)] >= 0 || !candidate(g, g.node(sink))) continue;
    const int gid = static_cast<int>(groups.size());
    const Shape& shape = g.value(g.node(sink).outputs[0]).type->shape;
    std::vector<ir::NodeId> members{sink};
    group_of[static_cast<size_t>(sink)] = gid;
    std::priority_queue<std::pair<int, ir::NodeId>> heap;
    std::vector<bool> queued(g.num_node_slots(), false);
    auto push_producers = [&](ir::NodeId m) {
      for (ir::ValueId v : g.node(m).inputs) {
        if (v == ir::kNoValue) continue;
        const ir::NodeId p = g.value(v).producer;
        if (p < 0 || queued[static_cast<size_t>(p)]) continue;
        queued[static_cast<size_t>(p)] = true;
        heap.emplace(pos[static_cast<size_t>(p)], p);
      }
    };
    push_producers(sink);
    while (!heap.empty()) {
      const ir::NodeId p = heap.top().second;
      heap.pop();
      const ir::Node& pn = g.node(p);
      if (group_of[static_cast<size_t>(p)] >= 0 || !candidate(g, pn)) continue;
      const ir::ValueId v = pn.outputs[0];
      if (g.is_output(v) || g.value(v).type->shape != shape) continue;
      const auto& u = uses[static_cast<size_t>(v)];
      const bool internal = !u.empty() && std::all_of(u.begin(), u.end(), [&](ir::NodeId c) {
        return group_of[static_cast<size_t>(c)] == gid;
      });
      if (!internal) continue;
      group_of[static_cast<size_t>(p)] = gid;
      members.push_back(p);
      push_producers(p);
    }
    std::sort(members.begin(), members.end(), [&](ir::NodeId a, ir::NodeId b) {
      return pos[static_cast<size_t>(a)] < pos[static_cast<size_t>(b)];
    });
    groups.push_back(std::move(members));
  }
  bool changed = false;
  for (const auto& members : groups) {
    if (members.size() < 2) continue;
    FRAME_RETURN_IF_ERROR(fuse_group(g, members));
    changed = true;
  }
  if (changed) g.compact();
  return Status();
}

}  // namespace

std::unique_ptr<Pass> make_operator_fusion_pass() { return std::make_unique<OperatorFusionPass>(); }

}  // namespace frame::passes
