// decomposition: inlines the micro-graph of a composite op (OpSchema::decompose_fn) when the
// first preferred backend has no kernel that can run the node, or when every composite is to
// be expanded (PassContext::force_decompose). Expansion is recursive up to kMaxDepth
// (docs/architecture/compiler-passes.md "decomposition").

#include <fmt/format.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "passes/pass_factories.h"
#include "passes/pass_util.h"

namespace frame::passes {

namespace {

// Nesting limit of composites inside decompositions; a deeper composite stays a node and is
// left to lowering (cpu fallback), so a self-referential decomposition cannot loop.
constexpr int kMaxDepth = 8;

struct WorkItem {
  ir::NodeId node;
  int depth;
};

class DecompositionPass final : public Pass {
 public:
  std::string_view name() const override { return "decomposition"; }

  Status run(ir::Graph& g, PassContext& ctx) override {
    const std::string backend = ctx.backends.empty() ? "cpu" : ctx.backends.front();
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    std::vector<WorkItem> work;
    for (ir::NodeId id : order) work.push_back({id, 0});
    const ir::OpQuery query = ops::make_op_query();
    UseIndex uses(g);
    bool changed = false;
    // `work` grows while it is walked: inlined nodes are checked for expansion in turn.
    for (size_t k = 0; k < work.size(); ++k) {
      const WorkItem item = work[k];
      const ir::Node& n = g.node(item.node);
      const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
      if (schema == nullptr || schema->decompose_fn() == nullptr || item.depth >= kMaxDepth) {
        continue;
      }
      if (!ctx.force_decompose && !backend_lacks(g, n, *schema, backend)) continue;
      FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> added,
                             expand(g, item.node, *schema, query, uses));
      for (ir::NodeId a : added) work.push_back({a, item.depth + 1});
      changed |= !added.empty();
    }
    if (changed) {
      FRAME_RETURN_IF_ERROR(g.verify(query).with_prefix("graph after decomposition: "));
      // A decomposition computes every output of its node; those nothing reads (an optional
      // output such as an inference-mode Dropout's mask) go here, not at run time.
      FRAME_RETURN_IF_ERROR(make_dce_pass()->run(g, ctx));
    }
    return Status();
  }

 private:
  // True when `backend` has no kernel for the node, or one that rejects its dtypes.
  static bool backend_lacks(const ir::Graph& g, const ir::Node& n, const ops::OpSchema& schema,
                            const std::string& backend) {
    const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, backend);
    return k == nullptr || !k->supports(ops::make_node_context(g, n, &schema)).is_ok();
  }

  // Inlines node `id`; returns the ids of the nodes added (empty when it was left alone).
  static Result<std::vector<ir::NodeId>> expand(ir::Graph& g, ir::NodeId id,
                                                const ops::OpSchema& schema,
                                                const ir::OpQuery& query, UseIndex& uses) {
    // Copies: creating nodes may move the node storage.
    const ir::Node n = g.node(id);
    Result<ir::Graph> decomposed = schema.decompose_fn()(ops::make_node_context(g, n, &schema));
    // A decomposition may decline a configuration (kUnimplemented); the node then stays and
    // lowering falls back to the cpu kernel.
    if (!decomposed.is_ok() && decomposed.status().code() == StatusCode::kUnimplemented) {
      return std::vector<ir::NodeId>{};
    }
    FRAME_ASSIGN_OR_RETURN(ir::Graph m, std::move(decomposed));
    FRAME_RETURN_IF_ERROR(check_micro_graph(g, n, m, query));

    // An output that is a micro-graph input, or a second copy of another output, has no value
    // of its own to carry the node's output name; a graph output needs that name.
    std::vector<std::string> takes_name(m.num_values());
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const ir::ValueId mo = m.outputs()[i];
      const bool own = !m.value(mo).is_graph_input && takes_name[static_cast<size_t>(mo)].empty();
      if (own) {
        takes_name[static_cast<size_t>(mo)] = g.value(n.outputs[i]).name;
      } else if (g.is_output(n.outputs[i])) {
        return std::vector<ir::NodeId>{};
      }
    }

    std::vector<ir::ValueId> vmap(m.num_values(), ir::kNoValue);
    for (size_t k = 0, i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] != ir::kNoValue) vmap[static_cast<size_t>(m.inputs()[k++])] = n.inputs[i];
    }
    g.remove_node(id);  // releases the output names for the inlined values

    for (size_t v = 0; v < m.num_values(); ++v) {
      const ir::Value& val = m.value(static_cast<ir::ValueId>(v));
      if (!val.is_constant() || val.is_graph_input || val.producer >= 0) continue;
      std::string name = !takes_name[v].empty()
                             ? takes_name[v]
                             : g.unique_value_name(fmt::format("{}/{}", n.name, val.name));
      vmap[v] = g.add_constant(std::move(name), *val.constant);
    }

    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> morder, m.topological_order());
    std::vector<ir::NodeId> added;
    for (ir::NodeId mid : morder) {
      const ir::Node& mn = m.node(mid);
      std::vector<ir::ValueId> inputs;
      for (ir::ValueId v : mn.inputs) {
        inputs.push_back(v == ir::kNoValue ? v : vmap[static_cast<size_t>(v)]);
      }
      std::vector<std::string> out_names;
      for (ir::ValueId v : mn.outputs) out_names.push_back(takes_name[static_cast<size_t>(v)]);
      std::string base = fmt::format("{}/{}", n.name, mn.name);
      std::string name = g.find_node(base) < 0 ? base : g.unique_node_name(base);
      FRAME_ASSIGN_OR_RETURN(
          ir::NodeId nid,
          g.create_node(mn.op, std::move(name), std::move(inputs),
                        static_cast<int>(mn.outputs.size()), mn.attrs, std::move(out_names)));
      for (size_t i = 0; i < mn.outputs.size(); ++i) {
        vmap[static_cast<size_t>(mn.outputs[i])] = g.node(nid).outputs[i];
      }
      FRAME_RETURN_IF_ERROR(infer_node(g, nid).with_prefix(
          fmt::format("node '{}' ({}) decomposition: ", n.name, n.op)));
      uses.add_node(g, nid);
      added.push_back(nid);
    }
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      uses.replace(g, n.outputs[i], vmap[static_cast<size_t>(m.outputs()[i])]);
    }
    return added;
  }

  // The micro-graph must verify and match the node's interface (op spec §3: "equivalent").
  static Status check_micro_graph(const ir::Graph& g, const ir::Node& n, const ir::Graph& m,
                                  const ir::OpQuery& query) {
    size_t present = 0;
    for (ir::ValueId v : n.inputs) present += v != ir::kNoValue ? 1 : 0;
    if (m.inputs().size() != present || m.outputs().size() != n.outputs.size()) {
      return internal_error(
          "node '{}' ({}): decomposition has {} inputs and {} outputs, the node has {} present "
          "inputs and {} outputs",
          n.name, n.op, m.inputs().size(), m.outputs().size(), present, n.outputs.size());
    }
    FRAME_RETURN_IF_ERROR(
        m.verify(query).with_prefix(fmt::format("node '{}' ({}) decomposition: ", n.name, n.op)));
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const auto& want = g.value(n.outputs[i]).type;
      const auto& got = m.value(m.outputs()[i]).type;
      if (want && got && *want != *got) {
        return internal_error("node '{}' ({}): decomposition output {} has type {}, expected {}",
                              n.name, n.op, i, got->to_string(), want->to_string());
      }
    }
    return Status();
  }

  // Shape inference of one inlined node (the micro-graph's types are recomputed, not trusted).
  static Status infer_node(ir::Graph& g, ir::NodeId id) {
    const ir::Node& n = g.node(id);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    if (schema == nullptr) {
      return not_found("node '{}' ({}): op '{}' is not registered", n.name, n.op, n.op);
    }
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types,
                           schema->infer(ops::make_node_context(g, n, schema)));
    for (size_t i = 0; i < n.outputs.size(); ++i) g.value(n.outputs[i]).type = types[i];
    return Status();
  }
};

}  // namespace

std::unique_ptr<Pass> make_decomposition_pass() { return std::make_unique<DecompositionPass>(); }

}  // namespace frame::passes
