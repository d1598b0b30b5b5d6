// compile(): verification, the pass pipeline, the execution plan, the report and the
// process-wide compile cache (docs/architecture/execution-model.md).

#include "frame/runtime/compile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <unordered_map>

#include "frame/core/digest.h"
#include "frame/ir/text.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"
#include "frame/passes/shape_determining.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/threads.h"
#include "ops/schemas/nn_fused_internal.h"
#include "passes/operator_fusion.h"
#include "runtime/compile_internal.h"
#include "runtime/executable_impl.h"
#include "runtime/thread_count_scope.h"

namespace frame::runtime {

std::string CompileReport::to_json() const {
  nlohmann::ordered_json j;
  j["op_counts_before"] = op_counts_before;
  j["op_counts_after"] = op_counts_after;
  nlohmann::ordered_json times = nlohmann::ordered_json::array();
  for (const auto& [pass, ms] : pass_times_ms) times.push_back({{"pass", pass}, {"ms", ms}});
  j["pass_times_ms"] = times;
  nlohmann::ordered_json stages = nlohmann::ordered_json::array();
  for (const auto& [stage, ms] : stage_times_ms) stages.push_back({{"stage", stage}, {"ms", ms}});
  j["stage_times_ms"] = stages;
  j["backends"] = backends;
  j["num_threads"] = num_threads;
  nlohmann::ordered_json pl = nlohmann::ordered_json::array();
  for (const Placement& p : placements) {
    pl.push_back({{"node", p.node},
                  {"op", p.op},
                  {"backend", p.backend},
                  {"path", p.path},
                  {"rejected", p.rejected},
                  {"reorders_per_run", p.reorders_per_run}});
  }
  j["placements"] = pl;
  int reorders = 0;
  for (const Placement& p : placements) reorders += p.reorders_per_run;
  j["reorders_per_run"] = reorders;
  j["fused_groups"] = fused_groups;
  nlohmann::ordered_json lf = nlohmann::ordered_json::array();
  for (const auto& [node, ops] : lowering_fused) lf.push_back({{"node", node}, {"ops", ops}});
  j["lowering_fused"] = lf;
  j["lowering_rewrites"] = lowering_rewrites;
  j["peak_arena_bytes"] = peak_arena_bytes;
  nlohmann::ordered_json dg = nlohmann::ordered_json::array();
  for (const DeviceGroupReport& d : device_groups) {
    dg.push_back({{"backend", d.backend},
                  {"nodes", d.nodes},
                  {"copies_in", d.copies_in},
                  {"copies_out", d.copies_out},
                  {"bytes_in", d.bytes_in},
                  {"bytes_out", d.bytes_out},
                  {"constants", d.constants},
                  {"constant_bytes", d.constant_bytes},
                  {"device_bytes", d.device_bytes}});
  }
  j["device_groups"] = dg;
  j["cache_hit"] = cache_hit;
  j["disk_cache_hit"] = disk_cache_hit;
  j["shape_agnostic_kernels"] = shape_agnostic_kernels;
  return j.dump(2);
}

size_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<size_t>(pages) * static_cast<size_t>(page);
}

size_t default_max_memory_bytes() {
  const size_t phys = physical_memory_bytes();
  return phys == 0 ? SIZE_MAX : phys / 4 * 3;
}

size_t default_max_tensor_bytes() {
  const size_t phys = physical_memory_bytes();
  return phys == 0 ? SIZE_MAX : phys / 2;
}

namespace {

// The resource limits (CompileOptions::max_tensor_bytes, max_memory_bytes; docs/security.md),
// checked on the compiled graph before any kernel prepares or any buffer is allocated: a
// prepare step may build tables sized by its output (index maps, oneDNN descriptors), so an
// absurd shape (a fuzzed Pad, a shape-determining input; ADR 0006) must fail here, fast and
// with a message naming the node, the value and the bytes, not after minutes of filling memory
// or an out-of-memory kill.
// "node 'pad' (pad): output", "constant" or "graph input": where a value comes from.
std::string describe_value(const ir::Graph& g, const ir::Value& val) {
  if (val.producer >= 0) {
    const ir::Node& n = g.node(val.producer);
    return fmt::format("node '{}' ({}): output", n.name, n.op);
  }
  return val.constant ? "constant" : "graph input";
}

// A value over CompileOptions::max_tensor_bytes (or whose byte count overflows): the error.
Status check_tensor(const ir::Graph& g, const ir::Value& val, const CompileOptions& o) {
  Result<size_t> nbytes = checked_nbytes(val.type->dtype, val.type->shape);
  if (nbytes.is_ok() && *nbytes <= o.max_tensor_bytes) return Status();
  const std::string asked =
      nbytes.is_ok() ? fmt::format("{}", *nbytes) : std::string("more than 2^64");
  return make_error(StatusCode::kOutOfRange,
                    "{} '{}' is {}: {} bytes, over the limit of {} bytes per tensor "
                    "(max_tensor_bytes); refusing to compile it",
                    describe_value(g, val), val.name, val.type->to_string(), asked,
                    o.max_tensor_bytes);
}

// The graph inputs and constants of the caller's graph, before any pass: the input buffers a
// run is handed and the weights it holds are known before shape inference.
Status check_sources(const ir::Graph& g, const CompileOptions& o) {
  for (ir::ValueId v = 0; v < static_cast<ir::ValueId>(g.num_values()); ++v) {
    const ir::Value& val = g.value(v);
    if (val.producer >= 0 || !val.type) continue;
    FRAME_RETURN_IF_ERROR(check_tensor(g, val, o));
  }
  return Status();
}

Status check_limits(const ir::Graph& g, size_t peak_arena_bytes, const CompileOptions& o) {
  std::vector<std::pair<const void*, size_t>> storages;
  ir::ValueId largest = ir::kNoValue;  // the largest computed value, named by the memory error
  size_t largest_bytes = 0;
  for (ir::ValueId v = 0; v < static_cast<ir::ValueId>(g.num_values()); ++v) {
    const ir::Value& val = g.value(v);
    if (!val.type || (val.producer >= 0 && g.node(val.producer).dead)) continue;
    FRAME_RETURN_IF_ERROR(check_tensor(g, val, o));
    const size_t nbytes = *checked_nbytes(val.type->dtype, val.type->shape);
    if (val.constant) {
      if (val.constant->nbytes() > 0) {
        storages.emplace_back(val.constant->raw_data(), val.constant->nbytes());
      }
    } else if (nbytes > largest_bytes) {
      largest = v;
      largest_bytes = nbytes;
    }
  }
  // Constants sharing one storage (copies of one initializer) are held once.
  std::sort(storages.begin(), storages.end());
  size_t constant_bytes = 0;
  for (size_t i = 0; i < storages.size(); ++i) {
    if (i == 0 || storages[i].first != storages[i - 1].first) constant_bytes += storages[i].second;
  }
  if (constant_bytes > o.max_memory_bytes) {
    return make_error(StatusCode::kOutOfRange,
                      "the graph's constants hold {} bytes, over the memory limit of {} bytes "
                      "(max_memory_bytes); refusing to compile it",
                      constant_bytes, o.max_memory_bytes);
  }
  // Graph inputs and outputs live outside the arena (the caller's and the run's own tensors).
  // Each term is at most max_tensor_bytes, so the sums below cannot overflow in practice;
  // they saturate anyway.
  size_t io_bytes = 0;
  std::vector<ir::ValueId> io(g.inputs().begin(), g.inputs().end());
  io.insert(io.end(), g.outputs().begin(), g.outputs().end());
  std::sort(io.begin(), io.end());
  io.erase(std::unique(io.begin(), io.end()), io.end());
  for (ir::ValueId v : io) {
    const ir::Value& val = g.value(v);
    if (val.constant || !val.type) continue;
    io_bytes = std::min(SIZE_MAX / 2, io_bytes + *checked_nbytes(val.type->dtype, val.type->shape));
  }
  const size_t need = std::min(SIZE_MAX / 2, peak_arena_bytes) + io_bytes + constant_bytes;
  if (need > o.max_memory_bytes) {
    std::string biggest;
    if (largest != ir::kNoValue) {
      const ir::Value& val = g.value(largest);
      biggest = fmt::format("; the largest value is {} '{}', {}: {} bytes", describe_value(g, val),
                            val.name, val.type->to_string(), largest_bytes);
    }
    return make_error(StatusCode::kOutOfRange,
                      "a run needs {} bytes (arena peak {} + graph inputs and outputs {} + "
                      "constants {}), over the memory limit of {} bytes (max_memory_bytes){}; "
                      "refusing to compile it",
                      need, peak_arena_bytes, io_bytes, constant_bytes, o.max_memory_bytes,
                      biggest);
  }
  return Status();
}

// Process-wide cache of compiled cores. Bounded: the oldest entry goes first.
class CompileCache {
 public:
  static CompileCache& global() {
    static CompileCache* c = new CompileCache();
    return *c;
  }
  std::shared_ptr<const detail::CompiledCore> find(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    return it == entries_.end() ? nullptr : it->second;
  }
  void insert(const std::string& key, std::shared_ptr<const detail::CompiledCore> core) {
    std::lock_guard lock(mu_);
    if (!entries_.emplace(key, std::move(core)).second) return;
    order_.push_back(key);
    if (order_.size() > kCapacity) {
      entries_.erase(order_.front());
      order_.pop_front();
    }
  }

 private:
  static constexpr size_t kCapacity = 64;
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const detail::CompiledCore>> entries_;
  std::deque<std::string> order_;
};

// Digests of every tensor the text form elides (constant values and tensor attributes), in
// `g` and, recursively, in its graph attributes (control-flow bodies, fused groups): two graphs
// that differ only in such data must not share a cache entry.
void append_data_digests(const ir::Graph& g, const std::string& scope, std::string& out) {
  for (size_t v = 0; v < g.num_values(); ++v) {
    const ir::Value& val = g.value(static_cast<ir::ValueId>(v));
    if (val.constant) out += scope + val.name + "=" + tensor_digest(*val.constant) + "\n";
  }
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    // Sorted: AttrMap is unordered, the key must not depend on its iteration order.
    std::map<std::string, const ir::AttrValue*> sorted;
    for (const auto& [name, value] : n.attrs) sorted.emplace(name, &value);
    for (const auto& [name, value] : sorted) {
      if (const auto* t = std::get_if<Tensor>(value)) {
        out += scope + n.name + "." + name + "=" + tensor_digest(*t) + "\n";
      } else if (const auto* body = std::get_if<std::shared_ptr<const ir::Graph>>(value)) {
        if (*body) append_data_digests(**body, scope + n.name + "." + name + "/", out);
      }
    }
  }
}

// The process-wide cache's key: the graph's fingerprint and every option. The hash map only
// indexes; the full key is compared.
std::string cache_key(const ir::Graph& g, const CompileOptions& o) {
  return detail::graph_fingerprint(g) + "--options--\n" + detail::options_fingerprint(o);
}

std::map<std::string, int> op_counts(const ir::Graph& g) {
  std::map<std::string, int> counts;
  for (ir::NodeId id : g.node_ids()) ++counts[g.node(id).op];
  return counts;
}

// Milliseconds since `t0`, and `t0` moved to now: consecutive stages of one compile.
double lap_ms(std::chrono::steady_clock::time_point& t0) {
  const auto now = std::chrono::steady_clock::now();
  const std::chrono::duration<double, std::milli> dt = now - t0;
  t0 = now;
  return dt.count();
}

Status run_named(ir::Graph& g, passes::PassContext& ctx, std::string_view name) {
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<passes::Pass> pass, passes::make_pass(name));
  auto t0 = std::chrono::steady_clock::now();
  FRAME_RETURN_IF_ERROR(pass->run(g, ctx));
  ctx.pass_times_ms.emplace_back(std::string(name), lap_ms(t0));
  return Status();
}

// `stages`: the stages compile() timed before this one (CompileReport::stage_times_ms).
Result<std::shared_ptr<const detail::CompiledCore>> compile_core(
    const ir::Graph& graph, const CompileOptions& options,
    std::vector<std::pair<std::string, double>> stages) {
  auto t0 = std::chrono::steady_clock::now();
  FRAME_RETURN_IF_ERROR(check_sources(graph, options));
  // The passes run with the thread count the kernels will: lowering's accepts() then builds
  // the same oneDNN descriptors prepare() does (shared, not built twice), and folding uses the
  // threads the caller asked for.
  detail::ThreadCountScope threads(usable_threads(options.num_threads));
  detail::LoweredGraph lowered;
  lowered.graph = std::make_shared<ir::Graph>(graph);
  lowered.op_counts_before = op_counts(graph);
  ir::Graph& g = *lowered.graph;

  lowered.ctx = detail::pass_context(options);
  passes::PassContext& ctx = lowered.ctx;
  const std::string_view pipeline =
      options.pipeline.empty() ? passes::kStandardPipeline : std::string_view(options.pipeline);
  FRAME_RETURN_IF_ERROR(passes::run_pipeline(g, pipeline, ctx, options.disabled_passes));

  // Execution needs placements and buffers of the final graph: when the pipeline did not end
  // with lowering and planning (custom or skipped), run them now.
  std::vector<std::string> ran;
  for (const std::string& p : split_list(pipeline)) {
    if (std::find(options.disabled_passes.begin(), options.disabled_passes.end(), p) ==
        options.disabled_passes.end()) {
      ran.push_back(p);
    }
  }
  const bool planned = ran.size() >= 2 && ran[ran.size() - 2] == "backend-lowering" &&
                       ran.back() == "memory-planning";
  if (!planned) {
    FRAME_RETURN_IF_ERROR(run_named(g, ctx, "backend-lowering"));
    FRAME_RETURN_IF_ERROR(run_named(g, ctx, "memory-planning"));
  }
  stages.emplace_back("passes", lap_ms(t0));
  return detail::build_core(std::move(lowered), options, std::move(stages), t0);
}

// V1–V4 on the caller's graph. Node outputs may still lack types (shape-inference sets them
// and the compiled graph is verified in full), so they get a placeholder for this check only.
Status verify_input(const ir::Graph& graph) {
  const ir::OpQuery query = ops::make_op_query();
  bool untyped = false;
  for (ir::NodeId id : graph.node_ids()) {
    for (ir::ValueId v : graph.node(id).outputs) untyped = untyped || !graph.value(v).type;
  }
  if (!untyped) return graph.verify(query);
  ir::Graph probe = graph;
  for (ir::NodeId id : probe.node_ids()) {
    for (ir::ValueId v : probe.node(id).outputs) {
      if (!probe.value(v).type) probe.value(v).type = ir::TensorType{};
    }
  }
  return probe.verify(query);
}

}  // namespace

namespace detail {

std::string graph_fingerprint(const ir::Graph& g) {
  ir::PrintOptions po;
  po.constant_data = false;
  std::string consts;
  append_data_digests(g, "", consts);
  return ir::print_text(g, po) + "--constants--\n" + consts;
}

std::string options_fingerprint(const CompileOptions& o) {
  return fmt::format(
      "backends={}\npipeline={}\ndisabled={}\nstrict={}\nthreads={}\nfold={}\nmax_memory={}\n"
      "max_tensor={}\ninplace={}\nreuse={}\nprint={}\nshape_agnostic={}\n",
      fmt::join(o.backends, ","), o.pipeline, fmt::join(o.disabled_passes, ","), o.strict,
      o.num_threads, o.fold_size_limit, o.max_memory_bytes, o.max_tensor_bytes, o.allow_inplace,
      o.reuse_buffers, fmt::join(o.print_ir_after, ","), o.shape_agnostic_kernels);
}

passes::PassContext pass_context(const CompileOptions& options) {
  passes::PassContext ctx;
  ctx.backends = options.backends;
  ctx.strict = options.strict;
  // Folding never builds a tensor the limit refuses.
  ctx.fold_size_limit = std::min(options.fold_size_limit, options.max_tensor_bytes);
  ctx.max_tensor_bytes = options.max_tensor_bytes;
  ctx.allow_inplace = options.allow_inplace;
  ctx.reuse_buffers = options.reuse_buffers;
  ctx.print_ir_after = options.print_ir_after;
  ctx.shape_agnostic_kernels = options.shape_agnostic_kernels;
  return ctx;
}

Result<CompileOptions> resolve_options(const CompileOptions& options) {
  CompileOptions resolved = options;
  FRAME_ASSIGN_OR_RETURN(resolved.backends, resolve_backends(options.backends));
  resolved.num_threads = usable_threads(options.num_threads);
  return resolved;
}

Result<std::shared_ptr<const CompiledCore>> build_core(
    LoweredGraph lowered, const CompileOptions& options,
    std::vector<std::pair<std::string, double>> stages, std::chrono::steady_clock::time_point t0) {
  std::shared_ptr<ir::Graph> g = std::move(lowered.graph);
  passes::PassContext& ctx = lowered.ctx;
  auto core = std::make_shared<CompiledCore>();
  core->report.op_counts_before = std::move(lowered.op_counts_before);
  const ir::OpQuery query = ops::make_op_query();
  if (Status s = g->verify(query); !s.is_ok()) {
    return s.with_prefix("compiled graph fails verification: ");
  }

  FRAME_RETURN_IF_ERROR(check_limits(*g, ctx.peak_arena_bytes, options));
  stages.emplace_back("check", lap_ms(t0));
  const int threads = usable_threads(options.num_threads);
  core->graph = g;
  {
    // Kernels prepare (oneDNN primitives are created) for the thread count they will run with.
    ThreadCountScope scope(threads);
    FRAME_ASSIGN_OR_RETURN(core->plan, build_plan(g, ctx, threads));
  }
  stages.emplace_back("prepare", lap_ms(t0));
  for (ir::ValueId v : g->inputs()) core->inputs.emplace_back(g->value(v).name, *g->value(v).type);
  for (ir::ValueId v : g->outputs()) {
    if (!g->value(v).type) {
      return invalid_argument("graph output '{}' has no type", g->value(v).name);
    }
    core->outputs.emplace_back(g->value(v).name, *g->value(v).type);
  }

  CompileReport& r = core->report;
  r.backends = options.backends;
  r.num_threads = core->plan.num_threads;
  r.op_counts_after = op_counts(*g);
  r.pass_times_ms = ctx.pass_times_ms;
  r.stage_times_ms = std::move(stages);
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g->topological_order());
  std::unordered_map<std::string_view, int> reorders;  // by node name, from the prepared parts
  for (const Step& s : core->plan.steps) {
    if (s.part != nullptr) reorders[s.info.node] = s.part->reorders_per_run();
  }
  for (ir::NodeId id : order) {
    const ir::Node& n = g->node(id);
    const passes::NodePlacement& p = ctx.placements.at(id);
    const auto it = reorders.find(n.name);
    r.placements.push_back(Placement{n.name, n.op, p.backend, p.path, p.rejected,
                                     it == reorders.end() ? 0 : it->second});
    if (n.op == ops::fused::kFusedPostOpsOp) {
      std::vector<std::string> fused = fused_node_ops(n);
      if (!fused.empty()) r.lowering_fused.emplace_back(n.name, std::move(fused));
    }
  }
  r.fused_groups = passes::fused_groups(*g);
  r.lowering_rewrites = ctx.lowering_rewrites;
  r.shape_agnostic_kernels = options.shape_agnostic_kernels;
  r.peak_arena_bytes = ctx.peak_arena_bytes;
  r.device_groups = core->plan.device_groups;
  core->placements = std::move(ctx.placements);
  core->buffers = std::move(ctx.buffers);
  return std::shared_ptr<const CompiledCore>(std::move(core));
}

}  // namespace detail

Result<Executable> compile(const ir::Graph& graph, const CompileOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::pair<std::string, double>> stages;
  FRAME_RETURN_IF_ERROR(verify_input(graph));
  for (ir::ValueId v : graph.inputs()) {
    if (!graph.value(v).type) {
      return invalid_argument(
          "graph input '{}' has no type (ARCH-044: inputs need concrete "
          "shapes)",
          graph.value(v).name);
    }
  }
  // "auto" is expanded before the cache key is made: the same graph compiled in a process
  // where another backend became available must not hit the old entry.
  // Likewise the thread count: 0 means the OpenMP default of the compiling thread.
  FRAME_ASSIGN_OR_RETURN(CompileOptions resolved, detail::resolve_options(options));
  stages.emplace_back("verify", lap_ms(t0));
  std::string key;
  if (options.use_cache) {
    key = cache_key(graph, resolved);
    stages.emplace_back("cache_key", lap_ms(t0));
    if (auto core = CompileCache::global().find(key)) {
      auto impl = std::make_shared<ExecutableImpl>();
      impl->core = core;
      impl->report = core->report;
      impl->report.cache_hit = true;
      impl->report.stage_times_ms = std::move(stages);  // a hit runs no pass
      return Executable(std::move(impl));
    }
  }
  Result<std::shared_ptr<const detail::CompiledCore>> compiled =
      compile_core(graph, resolved, std::move(stages));
  if (!compiled.is_ok()) return passes::with_shape_determining_hint(graph, compiled.status());
  std::shared_ptr<const detail::CompiledCore> core = std::move(compiled).value();
  if (options.use_cache) CompileCache::global().insert(key, core);
  auto impl = std::make_shared<ExecutableImpl>();
  impl->core = core;
  impl->report = core->report;
  return Executable(std::move(impl));
}

}  // namespace frame::runtime
