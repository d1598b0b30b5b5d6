// Execution plans: compiling each placed node (or whole-graph run) through its backend,
// decomposition fallbacks as nested plans (M10), binding arena views once per run slot, and
// running the parts in topological order.

#include "runtime/plan.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "frame/ops/op_registry.h"
#include "ops/schemas/laid_out_internal.h"
#include "ops/schemas/nn_fused_internal.h"
#include "passes/operator_fusion.h"
#include "runtime/node_threads.h"
#include "runtime/thread_count_scope.h"

namespace frame::runtime::detail {

std::vector<std::string> fused_node_ops(const ir::Node& n) {
  std::vector<std::string> out;
  if (n.op == passes::kFusedElementwiseOp) {
    auto it = n.attrs.find("body");
    const auto* body =
        it == n.attrs.end() ? nullptr : std::get_if<std::shared_ptr<const ir::Graph>>(&it->second);
    if (body == nullptr || *body == nullptr) return out;
    Result<std::vector<ir::NodeId>> inner = (*body)->topological_order();
    if (inner.is_ok()) {
      for (ir::NodeId b : *inner) out.push_back((*body)->node(b).op);
    }
  } else if (n.op == frame::ops::fused::kFusedPostOpsOp) {
    auto base = n.attrs.find("base_op");
    auto post = n.attrs.find("post_ops");
    const auto* base_op = base == n.attrs.end() ? nullptr : std::get_if<std::string>(&base->second);
    const auto* post_ops =
        post == n.attrs.end() ? nullptr : std::get_if<std::vector<std::string>>(&post->second);
    // No post-ops: the node only carries activation layouts (keep_blocked_activations).
    if (base_op == nullptr || post_ops == nullptr || post_ops->empty()) return out;
    out.push_back(*base_op);
    out.insert(out.end(), post_ops->begin(), post_ops->end());
  }
  return out;
}

namespace {

size_t align_up(size_t n) {
  return (n + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

// The fallback chain's middle link: the op's micro-graph, lowered and planned like a graph of
// its own, runs inside the node's workspace.
class DecompositionPart final : public CompiledPart {
 public:
  static Result<std::unique_ptr<CompiledPart>> create(const ir::Graph& g, const ir::Node& n,
                                                      const passes::PassContext& ctx,
                                                      int num_threads);
  Status run(const PartIO& io) const override;
  size_t workspace_bytes() const override { return plan_.total_bytes(); }
  std::shared_ptr<void> make_run_state() const override { return std::make_shared<State>(); }

 private:
  struct State {
    RunState inner;
    std::vector<Tensor> inputs;
  };
  Plan plan_;
  std::vector<size_t> present_;  // node input positions that are micro-graph inputs
  bool all_present_ = true;
};

Result<std::unique_ptr<CompiledPart>> DecompositionPart::create(const ir::Graph& g,
                                                                const ir::Node& n,
                                                                const passes::PassContext& ctx,
                                                                int num_threads) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  if (schema == nullptr || schema->decompose_fn() == nullptr) {
    return internal_error("node '{}' ({}): placed on a decomposition the op does not have", n.name,
                          n.op);
  }
  const ops::NodeContext nctx = ops::make_node_context(g, n, schema);
  FRAME_ASSIGN_OR_RETURN(ir::Graph micro, schema->decompose_fn()(nctx));
  auto part = std::make_unique<DecompositionPart>();
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] != ir::kNoValue) part->present_.push_back(i);
  }
  part->all_present_ = part->present_.size() == n.inputs.size();
  if (micro.inputs().size() != part->present_.size() ||
      micro.outputs().size() != n.outputs.size()) {
    return internal_error(
        "node '{}' ({}): decomposition has {} inputs / {} outputs, node has {} "
        "/ {}",
        n.name, n.op, micro.inputs().size(), micro.outputs().size(), part->present_.size(),
        n.outputs.size());
  }
  auto mg = std::make_shared<ir::Graph>(std::move(micro));
  passes::PassContext sub;
  sub.backends = ctx.backends;
  sub.allow_inplace = ctx.allow_inplace;
  sub.reuse_buffers = ctx.reuse_buffers;
  for (const char* name : {"backend-lowering", "memory-planning"}) {
    FRAME_ASSIGN_OR_RETURN(std::unique_ptr<passes::Pass> pass, passes::make_pass(name));
    Status s = pass->run(*mg, sub);
    if (!s.is_ok()) {
      return s.with_prefix(fmt::format("node '{}' ({}): decomposition: ", n.name, n.op));
    }
  }
  FRAME_ASSIGN_OR_RETURN(part->plan_, build_plan(mg, sub, num_threads));
  return std::unique_ptr<CompiledPart>(std::move(part));
}

Status DecompositionPart::run(const PartIO& io) const {
  auto* st = static_cast<State*>(io.run_state);
  if (st->inner.base != io.workspace.data()) bind(plan_, st->inner, io.workspace.data());
  std::span<const Tensor> ins = io.inputs;
  if (!all_present_) {
    st->inputs.resize(present_.size());
    for (size_t k = 0; k < present_.size(); ++k) st->inputs[k] = io.inputs[present_[k]];
    ins = st->inputs;
  }
  return run_plan(plan_, st->inner, ins, io.outputs);
}

// A control-flow body as a nested plan (ADR 0006 decision 5): compiled once, with the ordinary
// pipeline and the enclosing compilation's settings; each run slot owns one runner whose
// arena and bound views serve every iteration.
class BodyPlan final : public CompiledSubgraph, public std::enable_shared_from_this<BodyPlan> {
 public:
  Plan plan;
  std::vector<ir::TensorType> in_types;
  std::vector<ir::TensorType> out_types;
  Result<std::unique_ptr<ops::SubgraphRunner>> make_runner() const override;
};

class BodyRunner final : public ops::SubgraphRunner {
 public:
  BodyRunner(std::shared_ptr<const BodyPlan> body, std::unique_ptr<RunState> state)
      : body_(std::move(body)), state_(std::move(state)) {}
  std::span<const ir::TensorType> input_types() const override { return body_->in_types; }
  std::span<const ir::TensorType> output_types() const override { return body_->out_types; }
  Status run(std::span<const Tensor> in, std::span<Tensor> out) override {
    if (in.size() != body_->in_types.size() || out.size() != body_->out_types.size()) {
      return internal_error("body '{}': run with {} inputs / {} outputs, expected {} / {}",
                            body_->plan.graph->name(), in.size(), out.size(),
                            body_->in_types.size(), body_->out_types.size());
    }
    return run_plan(body_->plan, *state_, in, out);
  }

 private:
  std::shared_ptr<const BodyPlan> body_;
  std::unique_ptr<RunState> state_;
};

Result<std::unique_ptr<ops::SubgraphRunner>> BodyPlan::make_runner() const {
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<RunState> st, make_run_state(plan));
  return std::unique_ptr<ops::SubgraphRunner>(
      std::make_unique<BodyRunner>(shared_from_this(), std::move(st)));
}

class BodyCompiler final : public SubgraphCompiler {
 public:
  BodyCompiler(const passes::PassContext& ctx, int num_threads)
      : ctx_(ctx), num_threads_(num_threads) {}
  Result<std::shared_ptr<const CompiledSubgraph>> compile(const ir::Graph& body) const override {
    auto g = std::make_shared<ir::Graph>(body);
    passes::PassContext sub;
    sub.backends = ctx_.backends;
    sub.strict = ctx_.strict;
    sub.fold_size_limit = ctx_.fold_size_limit;
    sub.max_tensor_bytes = ctx_.max_tensor_bytes;
    sub.allow_inplace = ctx_.allow_inplace;
    sub.reuse_buffers = ctx_.reuse_buffers;
    // The caller (backend_registry.cpp) names the node and body.
    FRAME_RETURN_IF_ERROR(passes::run_pipeline(*g, passes::kStandardPipeline, sub, {}));
    auto plan = std::make_shared<BodyPlan>();
    for (ir::ValueId v : g->inputs()) plan->in_types.push_back(*g->value(v).type);
    for (ir::ValueId v : g->outputs()) {
      if (!g->value(v).type) {
        return internal_error("body '{}': output '{}' has no type", body.name(), g->value(v).name);
      }
      plan->out_types.push_back(*g->value(v).type);
    }
    FRAME_ASSIGN_OR_RETURN(plan->plan, build_plan(g, sub, num_threads_));
    return std::shared_ptr<const CompiledSubgraph>(std::move(plan));
  }

 private:
  const passes::PassContext& ctx_;
  int num_threads_;
};

// Inputs/outputs of a run of nodes handed to a whole-graph backend.
void part_boundary(const ir::Graph& g, PartSpec& spec,
                   const std::vector<std::vector<ir::NodeId>>& uses) {
  std::unordered_set<ir::NodeId> inside(spec.nodes.begin(), spec.nodes.end());
  std::unordered_set<ir::ValueId> seen;
  for (ir::NodeId id : spec.nodes) {
    for (ir::ValueId v : g.node(id).inputs) {
      if (v == ir::kNoValue) continue;
      const ir::NodeId p = g.value(v).producer;
      if ((p < 0 || inside.count(p) == 0) && seen.insert(v).second) spec.inputs.push_back(v);
    }
  }
  for (ir::NodeId id : spec.nodes) {
    for (ir::ValueId v : g.node(id).outputs) {
      const auto& u = uses[static_cast<size_t>(v)];
      const bool outside =
          std::any_of(u.begin(), u.end(), [&](ir::NodeId c) { return inside.count(c) == 0; });
      if (outside || g.is_output(v)) spec.outputs.push_back(v);
    }
  }
}

std::string type_text(const ir::Graph& g, ir::ValueId v) {
  if (v == ir::kNoValue || !g.value(v).type) return std::string();
  return g.value(v).type->to_string();
}

// The profile's description of a step: its nodes' names and ops, placement, value types and
// a fused node's body ops. Made once at compile time.
NodeProfile step_info(const ir::Graph& g, const passes::PassContext& ctx,
                      const std::vector<ir::NodeId>& nodes, const Step& step) {
  NodeProfile info;
  for (ir::NodeId id : nodes) {
    const ir::Node& n = g.node(id);
    info.node += (info.node.empty() ? "" : "+") + n.name;
    info.op += (info.op.empty() ? "" : "+") + n.op;
    std::vector<std::string> fused = fused_node_ops(n);
    info.fused_ops.insert(info.fused_ops.end(), fused.begin(), fused.end());
  }
  if (auto it = ctx.placements.find(nodes.front()); it != ctx.placements.end()) {
    info.backend = it->second.backend;
    info.path = it->second.path;
  }
  for (ir::ValueId v : step.inputs) info.input_types.push_back(type_text(g, v));
  for (ir::ValueId v : step.outputs) info.output_types.push_back(type_text(g, v));
  return info;
}

// What one part of a device backend copies across its boundary per run (inputs it reads on
// the device, constants uploaded once, outputs read back).
DeviceGroupReport device_group_report(const ir::Graph& g, const Backend& be, const PartSpec& spec,
                                      const CompiledPart& part) {
  DeviceGroupReport r;
  r.backend = std::string(be.name());
  for (ir::NodeId id : spec.nodes) r.nodes.push_back(g.node(id).name);
  auto bytes = [&](ir::ValueId v) -> size_t {
    const ir::Value& val = g.value(v);
    return val.type ? static_cast<size_t>(numel_of(val.type->shape)) * dtype_size(val.type->dtype)
                    : 0;
  };
  for (size_t k = 0; k < spec.inputs.size(); ++k) {
    const ir::ValueId v = spec.inputs[k];
    if (v == ir::kNoValue || !part.input_on_device(k)) continue;
    if (g.value(v).is_constant()) {
      ++r.constants;
      r.constant_bytes += bytes(v);
    } else {
      r.copies_in.push_back(g.value(v).name);
      r.bytes_in += bytes(v);
    }
  }
  for (ir::ValueId v : spec.outputs) {
    r.copies_out.push_back(g.value(v).name);
    r.bytes_out += bytes(v);
  }
  r.device_bytes = part.device_bytes();
  return r;
}

// The memory order value `v` is stored in by its producer (ops::fused::ActivationLayout): a
// conv's `dst_layout` (fused_post_ops_internal), a laid_out_internal node's `layout`; 0 (plain)
// otherwise.
int64_t stored_layout(const ir::Graph& g, ir::ValueId v) {
  const ir::Value& val = g.value(v);
  if (val.producer < 0 || val.producer_output != 0) return 0;
  const ir::Node& n = g.node(val.producer);
  std::string attr;
  if (n.op == ops::fused::kFusedPostOpsOp) attr = ops::fused::kDstLayoutAttr;
  if (n.op == ops::laid_out::kLaidOutOp) attr = "layout";
  if (attr.empty()) return 0;
  auto it = n.attrs.find(attr);
  const int64_t* l = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
  return l == nullptr ? 0 : *l;
}

}  // namespace

Result<Plan> build_plan(std::shared_ptr<const ir::Graph> graph, const passes::PassContext& ctx,
                        int num_threads) {
  Plan plan;
  plan.graph = std::move(graph);
  plan.num_threads = std::max(1, num_threads);
  const ir::Graph& g = *plan.graph;
  const size_t nv = g.num_values();
  plan.home.assign(nv, ValueHome::kNone);
  plan.offset.assign(nv, 0);
  for (size_t i = 0; i < nv; ++i) {
    const auto v = static_cast<ir::ValueId>(i);
    const ir::Value& val = g.value(v);
    if (val.is_constant()) {
      plan.home[i] = ValueHome::kConstant;
    } else if (val.is_graph_input || (val.producer >= 0 && g.is_output(v))) {
      plan.home[i] = ValueHome::kExternal;
    } else if (auto it = ctx.buffers.find(v); it != ctx.buffers.end()) {
      plan.home[i] = ValueHome::kArena;
      plan.offset[i] = it->second.offset;
    }
  }
  plan.arena_bytes = align_up(ctx.peak_arena_bytes);

  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  const std::vector<std::vector<ir::NodeId>> uses = g.use_lists();
  const BodyCompiler bodies(ctx, plan.num_threads);
  auto placement_of = [&](ir::NodeId id) -> const passes::NodePlacement* {
    auto it = ctx.placements.find(id);
    return it == ctx.placements.end() ? nullptr : &it->second;
  };
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g.node(order[i]);
    const passes::NodePlacement* p = placement_of(order[i]);
    if (p == nullptr) {
      return internal_error("node '{}' ({}) has no placement (backend-lowering did not run)",
                            n.name, n.op);
    }
    Step step;
    step.threads = plan.num_threads;
    std::vector<ir::NodeId> step_nodes = {order[i]};
    if (p->path == "decomposition") {
      FRAME_ASSIGN_OR_RETURN(step.part, DecompositionPart::create(g, n, ctx, plan.num_threads));
      step.inputs = n.inputs;
      step.outputs = n.outputs;
    } else {
      const Backend* be = find_backend(p->backend);
      if (be == nullptr) {
        return unimplemented("node '{}' ({}): backend '{}' is not available", n.name, n.op,
                             p->backend);
      }
      PartSpec spec;
      spec.graph = &g;
      spec.subgraphs = &bodies;
      spec.shape_agnostic = ctx.shape_agnostic_kernels;
      if (be->granularity() == Backend::Granularity::kWholeGraph) {
        size_t j = i;
        for (; j < order.size(); ++j) {
          const passes::NodePlacement* q = placement_of(order[j]);
          if (q == nullptr || q->backend != p->backend || q->path == "decomposition") break;
          spec.nodes.push_back(order[j]);
        }
        part_boundary(g, spec, uses);
        step_nodes = spec.nodes;
        i = j - 1;
      } else {
        spec.nodes = {order[i]};
        spec.inputs = n.inputs;
        spec.outputs = n.outputs;
        if (!be->device_memory()) {
          step.threads = kernel_thread_cap(g, n, p->backend, node_threads(g, n, plan.num_threads));
        }
      }
      // The kernel prepares with the thread count it runs with (oneDNN fixes a primitive's
      // partition when it is created).
      ThreadCountScope scope(step.threads);
      FRAME_ASSIGN_OR_RETURN(step.part, be->compile(spec));
      if (be->device_memory()) {
        plan.device_groups.push_back(device_group_report(g, *be, spec, *step.part));
      }
      step.inputs = spec.inputs;
      step.outputs = spec.outputs;
    }
    for (const auto* list : {&step.inputs, &step.outputs}) {
      for (ir::ValueId v : *list) {
        if (v != ir::kNoValue && plan.home[static_cast<size_t>(v)] == ValueHome::kNone) {
          return internal_error(
              "node '{}' ({}): value '{}' has no buffer (memory-planning did "
              "not run)",
              n.name, n.op, g.value(v).name);
        }
      }
    }
    step.info = step_info(g, ctx, step_nodes, step);
    for (ir::ValueId v : step.outputs) {
      step.output_names.push_back(v == ir::kNoValue ? std::string() : g.value(v).name);
      step.output_layouts.push_back(v == ir::kNoValue ? 0 : stored_layout(g, v));
    }
    step.workspace_bytes = align_up(step.part->workspace_bytes());
    plan.workspace_bytes = std::max(plan.workspace_bytes, step.workspace_bytes);
    plan.steps.push_back(std::move(step));
  }
  for (const Step& step : plan.steps) plan.profile_layout.push_back(step.info);
  plan.refs.assign(nv, {});
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      const ir::ValueId v = step.inputs[k];
      if (v != ir::kNoValue && plan.home[static_cast<size_t>(v)] == ValueHome::kExternal) {
        plan.refs[static_cast<size_t>(v)].emplace_back(s, static_cast<int64_t>(k));
      }
    }
    for (size_t k = 0; k < step.outputs.size(); ++k) {
      const ir::ValueId v = step.outputs[k];
      if (plan.home[static_cast<size_t>(v)] == ValueHome::kExternal) {
        plan.refs[static_cast<size_t>(v)].emplace_back(s, -static_cast<int64_t>(k) - 1);
      }
    }
  }
  return plan;
}

void bind(const Plan& plan, RunState& st, std::byte* base) {
  const ir::Graph& g = *plan.graph;
  st.base = base;
  st.values.assign(g.num_values(), Tensor());
  for (size_t i = 0; i < st.values.size(); ++i) {
    const ir::Value& val = g.value(static_cast<ir::ValueId>(i));
    if (plan.home[i] == ValueHome::kArena) {
      st.values[i] = Tensor::view(val.type->dtype, val.type->shape, base + plan.offset[i]).value();
    } else if (plan.home[i] == ValueHome::kConstant) {
      st.values[i] = *val.constant;
    }
  }
  st.step_inputs.resize(plan.steps.size());
  st.step_outputs.resize(plan.steps.size());
  if (st.part_state.size() != plan.steps.size()) {
    st.part_state.clear();
    for (const Step& s : plan.steps) st.part_state.push_back(s.part->make_run_state());
  }
  auto fill = [&](const std::vector<ir::ValueId>& ids, std::vector<Tensor>& out) {
    out.assign(ids.size(), Tensor());
    for (size_t k = 0; k < ids.size(); ++k) {
      if (ids[k] != ir::kNoValue) out[k] = st.values[static_cast<size_t>(ids[k])];
    }
  };
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    fill(plan.steps[s].inputs, st.step_inputs[s]);
    fill(plan.steps[s].outputs, st.step_outputs[s]);
  }
}

Result<std::unique_ptr<RunState>> make_run_state(const Plan& plan) {
  auto st = std::make_unique<RunState>();
  FRAME_ASSIGN_OR_RETURN(
      st->owned, Tensor::empty(DTypeCode::kUInt8, {static_cast<int64_t>(plan.total_bytes())}));
  bind(plan, *st, static_cast<std::byte*>(st->owned.raw_data()));
  return st;
}

namespace {

// Hands a step's outputs to a RunOptions::observer, a plain copy of each one stored in another
// layout (rank-4 floats: the onednn patterns lay out only those).
Status observe(const Step& step, std::span<const Tensor> outputs, const NodeObserver& observer) {
  bool plain = true;
  for (int64_t l : step.output_layouts) plain = plain && l == 0;
  if (plain) {
    observer(step.info, step.output_names, outputs);
    return Status();
  }
  std::vector<Tensor> copies(outputs.begin(), outputs.end());
  for (size_t k = 0; k < copies.size(); ++k) {
    const auto layout = static_cast<ops::fused::ActivationLayout>(step.output_layouts[k]);
    const Tensor& t = outputs[k];
    if (layout == ops::fused::ActivationLayout::kPlain || !t.defined() || t.rank() != 4) continue;
    FRAME_ASSIGN_OR_RETURN(copies[k], Tensor::empty(t.dtype(), t.shape()));
    const int64_t n = t.shape()[0], c = t.shape()[1], hw = t.shape()[2] * t.shape()[3];
    const size_t width = dtype_size(t.dtype());
    const auto* from = static_cast<const std::byte*>(t.raw_data());
    auto* to = static_cast<std::byte*>(copies[k].raw_data());
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t ch = 0; ch < c; ++ch) {
        for (int64_t p = 0; p < hw; ++p) {
          const int64_t src = ops::fused::layout_offset(layout, c, hw, i, ch, p);
          const int64_t dst = (i * c + ch) * hw + p;
          std::memcpy(to + static_cast<size_t>(dst) * width,
                      from + static_cast<size_t>(src) * width, width);
        }
      }
    }
  }
  observer(step.info, step.output_names, copies);
  return Status();
}

// Points every step slot reading or writing `v` at `t` (copy-assignment reuses the slots'
// shape storage, so this does not allocate in the steady state).
void set_value(const Plan& plan, RunState& st, ir::ValueId v, const Tensor& t) {
  st.values[static_cast<size_t>(v)] = t;
  for (const auto& [s, k] : plan.refs[static_cast<size_t>(v)]) {
    if (k >= 0) {
      st.step_inputs[s][static_cast<size_t>(k)] = t;
    } else {
      st.step_outputs[s][static_cast<size_t>(-k - 1)] = t;
    }
  }
}

}  // namespace

Status run_plan(const Plan& plan, RunState& st, std::span<const Tensor> inputs,
                std::span<Tensor> outputs, bool timed, const std::atomic<bool>* terminate,
                const NodeObserver* observer) {
  const ir::Graph& g = *plan.graph;
  for (size_t i = 0; i < g.inputs().size() && i < inputs.size(); ++i) {
    set_value(plan, st, g.inputs()[i], inputs[i]);
  }
  for (size_t j = 0; j < g.outputs().size() && j < outputs.size(); ++j) {
    const ir::ValueId v = g.outputs()[j];
    const ir::Value& val = g.value(v);
    bool repeated = false;
    for (size_t k = 0; k < j; ++k) repeated = repeated || g.outputs()[k] == v;
    if (val.producer >= 0 && !val.is_constant() && !val.is_graph_input && !repeated) {
      set_value(plan, st, v, outputs[j]);
    }
  }
  std::byte* workspace = st.base + plan.arena_bytes;
  if (timed) {
    st.start_ns.resize(plan.steps.size());
    st.dur_ns.resize(plan.steps.size());
  }
  using Clock = std::chrono::steady_clock;
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const Step& step = plan.steps[s];
    if (terminate != nullptr && terminate->load(std::memory_order_relaxed)) {
      return run_terminated(s < plan.profile_layout.size() ? plan.profile_layout[s].node
                                                           : std::string("#" + std::to_string(s)));
    }
    PartIO io;
    io.inputs = st.step_inputs[s];
    io.outputs = st.step_outputs[s];
    io.workspace = std::span<std::byte>(workspace, step.workspace_bytes);
    io.run_state = st.part_state[s].get();
    io.num_threads = step.threads;
    // Serial nodes (node_threads.h) run with the calling thread's OpenMP count at 1, as they
    // were prepared; two thread-local accesses, only for them.
    std::optional<ThreadCountScope> serial;
    if (step.threads != plan.num_threads) serial.emplace(step.threads);
    if (!timed) {
      FRAME_RETURN_IF_ERROR(step.part->run(io));
      if (observer != nullptr) FRAME_RETURN_IF_ERROR(observe(step, io.outputs, *observer));
      continue;
    }
    const Clock::time_point t0 = Clock::now();
    Status status = step.part->run(io);
    const Clock::time_point t1 = Clock::now();
    st.start_ns[s] =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t0.time_since_epoch()).count();
    st.dur_ns[s] = std::chrono::duration_cast<std::chrono::nanoseconds>(t1 - t0).count();
    FRAME_RETURN_IF_ERROR(status);
    if (observer != nullptr) FRAME_RETURN_IF_ERROR(observe(step, io.outputs, *observer));
  }
  // Outputs that are graph inputs, constants or repeated are copied out.
  for (size_t j = 0; j < g.outputs().size() && j < outputs.size(); ++j) {
    const Tensor& src = st.values[static_cast<size_t>(g.outputs()[j])];
    if (src.raw_data() != outputs[j].raw_data() && src.nbytes() == outputs[j].nbytes()) {
      std::memcpy(outputs[j].raw_data(), src.raw_data(), src.nbytes());
    }
  }
  return Status();
}

}  // namespace frame::runtime::detail
