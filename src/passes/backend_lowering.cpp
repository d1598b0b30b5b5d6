// backend-lowering (docs/architecture/compiler-passes.md#backend-lowering): places every node
// with the fallback chain of M10. For each node, in order:
//   1. the first backend of ctx.backends with a kernel for the op that supports the node
//      (KernelDef::supports: dtype) -> path "kernel";
//   2. the op's decomposition, when every micro-graph node can itself be placed by step 1 or
//      2 (so the decomposition keeps the work on the preferred backends) -> "decomposition";
//      the runtime compiles and runs the micro-graph;
//   3. the "cpu" reference kernel -> "cpu-fallback".
// Every alternative passed over is recorded with the reason. With ctx.strict any path other
// than "kernel" is an error naming the node, the op and the reasons.
// Before placement, the lowering patterns of the backends in ctx.backends (op-specific
// rewrites each backend owns, include/frame/ops/lowering_pattern.h) run to a fixed point, each
// only at nodes of its anchor op that its backend would run; rewrites go to
// ctx.lowering_rewrites.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/lowering_patterns.h"
#include "passes/pass_factories.h"

namespace frame::passes {
namespace {

// Decompositions may nest (a micro-graph op with its own decomposition); bounded so a
// decomposition that mentions its own op cannot recurse forever.
constexpr int kMaxDecompositionDepth = 4;

bool contains(const std::vector<std::string>& v, std::string_view s) {
  for (const std::string& x : v) {
    if (x == s) return true;
  }
  return false;
}

Result<NodePlacement> place(const ir::Graph& g, const ir::Node& n,
                            const std::vector<std::string>& backends, int depth,
                            bool shape_agnostic);

// Step 2: returns the backends the micro-graph would use, or why it is not taken.
Result<std::set<std::string>> try_decomposition(const ops::OpSchema& schema,
                                                const ops::NodeContext& nctx,
                                                const std::vector<std::string>& backends, int depth,
                                                bool shape_agnostic) {
  if (schema.decompose_fn() == nullptr) {
    return not_found("op '{}' has no decomposition", schema.name());
  }
  if (depth >= kMaxDecompositionDepth) {
    return unimplemented("decompositions nested deeper than {}", kMaxDecompositionDepth);
  }
  Result<ir::Graph> micro = schema.decompose_fn()(nctx);
  if (!micro.is_ok()) return micro.status();
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, micro->topological_order());
  std::set<std::string> used;
  for (ir::NodeId id : order) {
    const ir::Node& m = micro->node(id);
    FRAME_ASSIGN_OR_RETURN(NodePlacement p, place(*micro, m, backends, depth + 1, shape_agnostic));
    if (p.path == "cpu-fallback") {
      return unimplemented("micro-graph node '{}' ({}) would need the cpu fallback", m.name, m.op);
    }
    used.insert(p.backend);
  }
  return used;
}

Result<NodePlacement> place(const ir::Graph& g, const ir::Node& n,
                            const std::vector<std::string>& backends, int depth,
                            bool shape_agnostic) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  if (schema == nullptr) return not_found("node '{}' ({}): op is not registered", n.name, n.op);
  ops::NodeContext nctx = ops::make_node_context(g, n, schema);
  nctx.prefer_shape_agnostic = shape_agnostic;  // accepts() sees what prepare() will build
  NodePlacement p;
  for (const std::string& b : backends) {
    const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, b);
    if (k == nullptr) {
      p.rejected.push_back(fmt::format("{}: no kernel for op '{}'", b, n.op));
      continue;
    }
    if (Status s = k->supports(nctx); !s.is_ok()) {
      p.rejected.push_back(fmt::format("{}: {}", b, s.message()));
      continue;
    }
    p.backend = b;
    p.path = "kernel";
    return p;
  }
  Result<std::set<std::string>> used =
      try_decomposition(*schema, nctx, backends, depth, shape_agnostic);
  if (used.is_ok()) {
    p.backend = fmt::format("{}", fmt::join(*used, "+"));
    p.path = "decomposition";
    return p;
  }
  p.rejected.push_back("decomposition: " + used.status().message());
  if (!contains(backends, "cpu")) {
    const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, "cpu");
    Status s = k == nullptr ? not_found("no kernel for op '{}'", n.op) : k->supports(nctx);
    if (s.is_ok()) {
      p.backend = "cpu";
      p.path = "cpu-fallback";
      return p;
    }
    p.rejected.push_back("cpu: " + s.message());
  }
  return unimplemented("node '{}' ({}): no backend can run it: {}", n.name, n.op,
                       fmt::join(p.rejected, "; "));
}

// Rewrites are finite (each removes nodes); the bound only guards against a faulty pattern.
constexpr int kMaxPatternSweeps = 16;

// The backend of `backends` whose kernel would run `n` (step 1 of place()), or "".
std::string kernel_backend(const ir::Graph& g, const ir::Node& n,
                           const std::vector<std::string>& backends, bool shape_agnostic,
                           bool run_once) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  if (schema == nullptr) return "";
  ops::NodeContext nctx = ops::make_node_context(g, n, schema);
  nctx.prefer_shape_agnostic = shape_agnostic;
  nctx.run_once = run_once;
  const ops::KernelDef* k = ops::KernelRegistry::global().first_supporting(nctx, backends);
  return k == nullptr ? "" : k->backend;
}

}  // namespace

Result<std::vector<LoweringRewrite>> apply_lowering_patterns(ir::Graph& g,
                                                             const LoweringPatternSweep& sweep) {
  const ops::LoweringPatternRegistry& reg = ops::LoweringPatternRegistry::global();
  std::vector<LoweringRewrite> done;
  // The anchors the selected patterns have (read per call: a plugin may add patterns).
  std::set<std::string, std::less<>> anchors;
  for (const ops::LoweringPattern* p : reg.list()) {
    if (!sweep.interpreted_only || p->interpreted) anchors.insert(p->anchor_op);
  }
  if (anchors.empty() || (sweep.sites != nullptr && sweep.sites->empty())) return done;
  std::optional<ops::OneRunLoweringScope> one_run;
  if (sweep.interpreted_only) one_run.emplace();
  // Tries the patterns at `id`; true where one fired.
  const auto try_at = [&](ir::NodeId id) -> Result<bool> {
    if (id < 0 || static_cast<size_t>(id) >= g.num_node_slots() || g.node(id).dead) return false;
    if (anchors.count(g.node(id).op) == 0) return false;
    const std::string backend =
        kernel_backend(g, g.node(id), sweep.backends, sweep.shape_agnostic, sweep.interpreted_only);
    if (backend.empty()) return false;
    for (const ops::LoweringPattern* p : reg.find(backend, g.node(id).op)) {
      if (sweep.interpreted_only && !p->interpreted) continue;
      // Formatted before the pattern runs: a rewrite may remove the node it names.
      std::string label = sweep.labels ? fmt::format("{}/{} at node '{}' ({})", p->backend, p->name,
                                                     g.node(id).name, g.node(id).op)
                                       : std::string();
      Result<bool> fired = p->fn(g, id);
      if (!fired.is_ok()) {
        return fired.status().with_prefix(
            fmt::format("lowering pattern {}/{}: ", p->backend, p->name));
      }
      if (*fired) {
        done.push_back({id, std::move(label)});
        return true;  // the node may be gone; a later sweep looks again
      }
    }
    return false;
  };
  if (sweep.sites != nullptr) {
    for (ir::NodeId id : *sweep.sites) FRAME_RETURN_IF_ERROR(try_at(id).status());
    return done;
  }
  for (int n = 0; n < kMaxPatternSweeps; ++n) {
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    bool changed = false;
    for (ir::NodeId id : order) {
      FRAME_ASSIGN_OR_RETURN(bool fired, try_at(id));
      changed = changed || fired;
    }
    if (!changed) break;
  }
  return done;
}

namespace {

class BackendLoweringPass final : public Pass {
 public:
  std::string_view name() const override { return "backend-lowering"; }
  Status run(ir::Graph& g, PassContext& ctx) override {
    ctx.placements.clear();
    ctx.lowering_rewrites.clear();
    LoweringPatternSweep sweep;
    sweep.backends = ctx.backends;
    sweep.shape_agnostic = ctx.shape_agnostic_kernels;
    FRAME_ASSIGN_OR_RETURN(std::vector<LoweringRewrite> rewrites,
                           apply_lowering_patterns(g, sweep));
    for (LoweringRewrite& r : rewrites) ctx.lowering_rewrites.push_back(std::move(r.label));
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    for (ir::NodeId id : order) {
      const ir::Node& n = g.node(id);
      FRAME_ASSIGN_OR_RETURN(NodePlacement p,
                             place(g, n, ctx.backends, 0, ctx.shape_agnostic_kernels));
      if (ctx.strict && p.path != "kernel") {
        return unimplemented(
            "node '{}' ({}): strict mode forbids fallback '{}' (backends: {}; rejected: {})",
            n.name, n.op, p.path, fmt::join(ctx.backends, ", "), fmt::join(p.rejected, "; "));
      }
      ctx.placements[id] = std::move(p);
    }
    return Status();
  }
};

}  // namespace

std::unique_ptr<Pass> make_backend_lowering_pass() {
  return std::make_unique<BackendLoweringPass>();
}

}  // namespace frame::passes
