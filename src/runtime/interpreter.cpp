// The interpreted tier: a specialized graph run node by node (interpreter.h; ADR 0007 stage C).

#include "runtime/interpreter.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/aligned_memory.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/lowering_patterns.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/threads.h"
#include "runtime/kernel_call.h"
#include "runtime/node_threads.h"
#include "runtime/thread_count_scope.h"

namespace frame::runtime::detail {

namespace {

// `bytes` rounded up to its class: four classes per power of two (at most 25% over), 64 at
// least, a multiple of 64 (the alignment).
size_t class_size(size_t bytes) {
  if (bytes <= 64) return 64;
  const int top = 63 - __builtin_clzll(static_cast<unsigned long long>(bytes - 1));
  const size_t step = std::max<size_t>(size_t{1} << std::max(top - 2, 0), 64);
  return (bytes + step - 1) / step * step;
}

}  // namespace

BufferPool::~BufferPool() {
  for (const auto& [bytes, f] : free_) frame::detail::free_aligned(f.p, bytes);
}

void BufferPool::trim(size_t keep) {
  std::vector<std::pair<void*, size_t>> drop;
  {
    std::lock_guard lock(mu_);
    while (free_bytes_ > keep && !free_.empty()) {
      auto last = std::prev(free_.end());
      free_bytes_ -= last->first;
      drop.emplace_back(last->second.p, last->first);
      free_.erase(last);
    }
  }
  for (const auto& [p, bytes] : drop) frame::detail::free_aligned(p, bytes);
}

void BufferPool::end_run() {
  std::vector<std::pair<void*, size_t>> drop;
  {
    std::lock_guard lock(mu_);
    ++run_;
    for (auto it = free_.begin(); it != free_.end();) {
      if (it->second.run + kIdleRuns >= run_) {
        ++it;
        continue;
      }
      free_bytes_ -= it->first;
      drop.emplace_back(it->second.p, it->first);
      it = free_.erase(it);
    }
  }
  for (const auto& [p, bytes] : drop) frame::detail::free_aligned(p, bytes);
}

size_t BufferPool::free_bytes() const {
  std::lock_guard lock(mu_);
  return free_bytes_;
}

void BufferPool::release(void* p, size_t bytes) {
  {
    std::lock_guard lock(mu_);
    if (free_bytes_ + bytes <= max_free_bytes_) {
      free_.emplace(bytes, Free{p, run_});
      free_bytes_ += bytes;
      return;
    }
  }
  frame::detail::free_aligned(p, bytes);
}

Result<Tensor> BufferPool::empty(DTypeCode dtype, const Shape& shape) {
  FRAME_ASSIGN_OR_RETURN(size_t nbytes, checked_nbytes(dtype, shape));
  size_t bytes = class_size(nbytes);
  void* p = nullptr;
  {
    // Best fit within 2x: in a stream of new shapes hardly any size recurs exactly, and a
    // buffer taken fresh from malloc faults its pages in on first write (in a small
    // BERT-style encoder's interpreted run, a tenth of the time with exact-size reuse).
    std::lock_guard lock(mu_);
    if (auto it = free_.lower_bound(bytes); it != free_.end() && it->first <= 2 * bytes) {
      bytes = it->first;
      p = it->second.p;
      free_.erase(it);
      free_bytes_ -= bytes;
    }
  }
  if (p == nullptr) p = frame::detail::allocate_aligned(bytes, 64);
  if (p == nullptr) {
    return make_error(StatusCode::kOutOfRange, "could not allocate {} bytes", bytes);
  }
  std::shared_ptr<BufferPool> self = shared_from_this();
  std::shared_ptr<void> keep(p, [self, bytes](void* q) { self->release(q, bytes); });
  return Tensor::wrap(dtype, shape, p, std::move(keep));
}

namespace {

Interpreted fallback(Status s) {
  Interpreted r;
  r.status = std::move(s);
  r.failure = InterpretFailure::kFallback;
  return r;
}

// The kernel that runs `n`: step 1 of backend-lowering's placement (the first backend whose
// kernel supports the node), else the cpu kernel (ARCH-041), else null.
const ops::KernelDef* choose_kernel(const ops::NodeContext& ctx,
                                    const std::vector<std::string>& backends) {
  const ops::KernelRegistry& kernels = ops::KernelRegistry::global();
  if (const ops::KernelDef* k = kernels.first_supporting(ctx, backends)) return k;
  const ops::KernelDef* cpu = kernels.find(ctx.op, "cpu");
  return cpu != nullptr && cpu->supports(ctx).is_ok() ? cpu : nullptr;
}

// Runs the kernel's prepare and run for one node (exceptions become errors, as in compiled
// plans: detail::guard_kernel_call).
Status run_kernel(const ops::KernelDef& k, const ops::NodeContext& ctx,
                  std::span<const Tensor> inputs, std::span<Tensor> outputs, int threads,
                  std::shared_ptr<void>& state, bool prepared = false) {
  if (k.prepare != nullptr && !prepared) {
    FRAME_RETURN_IF_ERROR(guard_kernel_call(k, ctx, "prepare", [&] {
      FRAME_ASSIGN_OR_RETURN(state, k.prepare(ctx));
      return Status();
    }));
  }
  ops::KernelContext kc;
  kc.node = &ctx;
  kc.inputs = inputs;
  kc.outputs = outputs;
  kc.state = state.get();
  kc.num_threads = threads;
  return guard_kernel_call(k, ctx, "run", [&] { return k.fn(kc); });
}

// Drops the values whose last reader `n` was.
void release_inputs(const ir::Node& n, std::vector<int32_t>& readers, std::vector<Tensor>& values) {
  for (ir::ValueId v : n.inputs) {
    if (v == ir::kNoValue) continue;
    const auto idx = static_cast<size_t>(v);
    if (readers[idx] > 0 && --readers[idx] == 0) values[idx] = Tensor();
  }
}

// A view op (OpSchema::view_of_input: reshape, flatten, squeeze, unsqueeze) whose output is
// not a graph output: its output shares the input's storage, as memory-planning makes it in a
// compiled plan, and no kernel runs (kernels never write their inputs). False where it does
// not apply (a graph output gets storage of its own from the kernel).
bool run_as_view(const ir::Graph& g, const ir::Node& n, const ops::OpSchema& schema,
                 std::vector<int32_t>& readers, std::vector<Tensor>& values) {
  const int view = schema.view_of_input();
  if (view < 0 || static_cast<size_t>(view) >= n.inputs.size() || n.outputs.size() != 1) {
    return false;
  }
  const ir::ValueId src = n.inputs[static_cast<size_t>(view)], dst = n.outputs[0];
  if (src == ir::kNoValue || dst == ir::kNoValue || readers[static_cast<size_t>(dst)] < 0) {
    return false;
  }
  const Tensor& in = values[static_cast<size_t>(src)];
  const std::optional<ir::TensorType>& type = g.value(dst).type;
  if (!in.defined() || !type || type->dtype != in.dtype()) return false;
  Result<Tensor> out = in.reshaped(type->shape);
  if (!out.is_ok()) return false;
  if (readers[static_cast<size_t>(dst)] > 0) values[static_cast<size_t>(dst)] = std::move(*out);
  release_inputs(n, readers, values);
  return true;
}

// The interpreted tier's fusions: the patterns marked interpreted, kernels asked as for one run
// (passes::apply_lowering_patterns); with `sites`, only there. The anchors where one fired.
Result<std::vector<ir::NodeId>> fuse_at(ir::Graph& g, const std::vector<std::string>& backends,
                                        const std::vector<ir::NodeId>* sites) {
  passes::LoweringPatternSweep sweep;
  sweep.backends = backends;
  sweep.shape_agnostic = true;
  sweep.interpreted_only = true;
  sweep.sites = sites;
  sweep.labels = false;
  FRAME_ASSIGN_OR_RETURN(std::vector<passes::LoweringRewrite> done,
                         passes::apply_lowering_patterns(g, sweep));
  std::vector<ir::NodeId> fired;
  fired.reserve(done.size());
  for (const passes::LoweringRewrite& r : done) fired.push_back(r.node);
  return fired;
}

// Constants of at most this many bytes are compared by value when a rewrite is replayed
// (shape-derived ones are rewritten per key); larger ones by storage (weights are shared).
constexpr size_t kCheckedBytes = 256;

// The graph before the patterns ran, as record_rewrite needs it.
struct Before {
  size_t node_slots = 0, value_slots = 0;
  std::vector<char> live;
  std::vector<std::vector<ir::ValueId>> inputs;
  std::vector<ir::ValueId> outputs;
};

Before snapshot(const ir::Graph& g) {
  Before b;
  b.node_slots = g.num_node_slots();
  b.value_slots = g.num_values();
  b.live.resize(b.node_slots);
  b.inputs.resize(b.node_slots);
  for (size_t i = 0; i < b.node_slots; ++i) {
    const ir::Node& n = g.node(static_cast<ir::NodeId>(i));
    b.live[i] = n.dead ? 0 : 1;
    if (!n.dead) b.inputs[i] = n.inputs;
  }
  b.outputs = g.outputs();
  return b;
}

// The net change from `b` to `g`, or nullopt where it could not be replayed safely: the
// patterns added a constant, changed a kept node's arity or the graph's outputs' count, or made
// a node read (or a use read) an earlier value no removed node read (replay checks only the
// removed nodes' values, so another value's id could name something else at another key).
std::optional<PatternRewrite> record_rewrite(const Before& b, const ir::Graph& g) {
  PatternRewrite r;
  r.value_slots = b.value_slots;
  for (size_t v = b.value_slots; v < g.num_values(); ++v) {
    if (g.value(static_cast<ir::ValueId>(v)).is_constant()) return std::nullopt;
  }
  if (g.outputs().size() != b.outputs.size()) return std::nullopt;
  std::vector<char> checked(b.value_slots, 0);  // values the removed nodes read or wrote
  for (size_t i = 0; i < b.node_slots; ++i) {
    const ir::Node& n = g.node(static_cast<ir::NodeId>(i));
    if (b.live[i] == 0) continue;
    if (!n.dead && n.inputs.size() != b.inputs[i].size()) return std::nullopt;
    if (!n.dead) continue;
    for (const auto* list : {&b.inputs[i], &n.outputs}) {
      for (ir::ValueId v : *list) {
        if (v != ir::kNoValue && static_cast<size_t>(v) < checked.size()) checked[v] = 1;
      }
    }
  }
  const auto known = [&](ir::ValueId v) {
    return v == ir::kNoValue || static_cast<size_t>(v) >= b.value_slots || checked[v] != 0;
  };
  for (size_t i = b.node_slots; i < g.num_node_slots(); ++i) {
    const ir::Node& n = g.node(static_cast<ir::NodeId>(i));
    if (!n.dead && !std::all_of(n.inputs.begin(), n.inputs.end(), known)) return std::nullopt;
  }
  for (size_t i = 0; i < b.node_slots; ++i) {
    const ir::Node& n = g.node(static_cast<ir::NodeId>(i));
    if (b.live[i] == 0) continue;
    if (n.dead) {
      r.removed.push_back({n.id, n.op, b.inputs[i], n.outputs});
      for (ir::ValueId v : b.inputs[i]) {
        if (v == ir::kNoValue || !g.value(v).is_constant()) continue;
        const Tensor& t = *g.value(v).constant;
        PatternRewrite::Checked c{v, t, {}};
        if (t.nbytes() <= kCheckedBytes) {
          const auto* p = static_cast<const std::byte*>(t.raw_data());
          c.bytes.assign(p, p + t.nbytes());
        }
        r.constants.push_back(std::move(c));
      }
      continue;
    }
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] != b.inputs[i][k]) {
        r.uses.push_back({n.id, k, b.inputs[i][k], n.inputs[k]});
      }
    }
  }
  for (size_t k = 0; k < g.outputs().size(); ++k) {
    if (g.outputs()[k] != b.outputs[k]) r.uses.push_back({-1, k, b.outputs[k], g.outputs()[k]});
  }
  for (const PatternRewrite::Use& u : r.uses) {
    if (!known(u.to)) return std::nullopt;
  }
  for (size_t i = b.node_slots; i < g.num_node_slots(); ++i) {
    const ir::Node& n = g.node(static_cast<ir::NodeId>(i));
    if (n.dead) continue;  // made and removed again by a later rewrite
    PatternRewrite::Added a{n.op, n.name, n.attrs, n.inputs, n.outputs, {}};
    for (ir::ValueId v : n.outputs) a.output_names.push_back(g.value(v).name);
    r.added.push_back(std::move(a));
  }
  return r;
}

// Whether `g` has the structure `r` was recorded on.
bool rewrite_fits(const ir::Graph& g, const PatternRewrite& r) {
  const auto slots = g.num_node_slots();
  for (const PatternRewrite::Removed& m : r.removed) {
    if (static_cast<size_t>(m.id) >= slots) return false;
    const ir::Node& n = g.node(m.id);
    if (n.dead || n.op != m.op || n.inputs != m.inputs || n.outputs != m.outputs) return false;
  }
  for (const PatternRewrite::Use& u : r.uses) {
    if (u.node < 0) {
      if (u.k >= g.outputs().size() || g.outputs()[u.k] != u.from) return false;
      continue;
    }
    if (static_cast<size_t>(u.node) >= slots) return false;
    const ir::Node& n = g.node(u.node);
    if (n.dead || u.k >= n.inputs.size() || n.inputs[u.k] != u.from) return false;
  }
  return rewrite_constants_fit(g, r);
}

// Applies `r` to `g` (rewrite_fits said yes): removes, adds with types inferred at this key's
// shapes, rewires.
Status replay_rewrite(ir::Graph& g, const PatternRewrite& r) {
  for (const PatternRewrite::Removed& m : r.removed) g.remove_node(m.id);
  // The rewrite's own values (recorded ids at or past value_slots) -> this graph's.
  std::vector<ir::ValueId> own;
  const auto map = [&](ir::ValueId v) {
    if (v == ir::kNoValue || static_cast<size_t>(v) < r.value_slots) return v;
    const size_t i = static_cast<size_t>(v) - r.value_slots;
    return i < own.size() ? own[i] : ir::kNoValue;
  };
  const ops::OpRegistry& schemas = ops::OpRegistry::global();
  ops::NodeContext ctx;  // refilled per node
  for (const PatternRewrite::Added& a : r.added) {
    std::vector<ir::ValueId> inputs;
    inputs.reserve(a.inputs.size());
    for (ir::ValueId v : a.inputs) {
      const ir::ValueId m = map(v);
      if (v != ir::kNoValue && m == ir::kNoValue) {
        return internal_error("replayed node '{}' ({}) reads a value made after it", a.name, a.op);
      }
      inputs.push_back(m);
    }
    FRAME_ASSIGN_OR_RETURN(
        ir::NodeId id, g.create_node(a.op, a.name, std::move(inputs),
                                     static_cast<int>(a.outputs.size()), a.attrs, a.output_names));
    const ir::Node& n = g.node(id);
    const ops::OpSchema* schema = schemas.find(n.op);
    if (schema == nullptr) return not_found("replayed node '{}': op '{}'", n.name, n.op);
    ops::fill_node_context(g, n, schema, ctx);
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, schema->infer(ctx));
    for (size_t j = 0; j < a.outputs.size(); ++j) {
      const ir::ValueId v = g.node(id).outputs[j];
      if (j < types.size()) g.value(v).type = types[j];
      const size_t i = static_cast<size_t>(a.outputs[j]) - r.value_slots;
      if (a.outputs[j] != ir::kNoValue && static_cast<size_t>(a.outputs[j]) >= r.value_slots) {
        if (own.size() <= i) own.resize(i + 1, ir::kNoValue);
        own[i] = v;
      }
    }
  }
  std::vector<ir::ValueId> outputs = g.outputs();
  for (const PatternRewrite::Use& u : r.uses) {
    const ir::ValueId to = map(u.to);
    if (u.to != ir::kNoValue && to == ir::kNoValue) {
      return internal_error("replayed rewrite: value #{} was not made", u.to);
    }
    if (u.node < 0) {
      outputs[u.k] = to;
    } else {
      g.node(u.node).inputs[u.k] = to;
    }
  }
  g.set_outputs(std::move(outputs));
  return Status();
}

}  // namespace

bool rewrite_constants_fit(const ir::Graph& g, const PatternRewrite& r) {
  for (const PatternRewrite::Checked& c : r.constants) {
    if (static_cast<size_t>(c.v) >= g.num_values() || !g.value(c.v).is_constant()) return false;
    const Tensor& t = *g.value(c.v).constant;
    if (t.raw_data() == c.tensor.raw_data()) continue;  // the same storage, held: unchanged
    if (c.bytes.empty() || t.nbytes() != c.bytes.size() ||
        std::memcmp(t.raw_data(), c.bytes.data(), c.bytes.size()) != 0) {
      return false;
    }
  }
  return true;
}

Result<std::optional<InterpretedFusions>> fuse_interpreted(ir::Graph& g,
                                                           const std::vector<std::string>& backends,
                                                           const InterpretedFusions* known,
                                                           bool* replayed) {
  if (replayed != nullptr) *replayed = false;
  if (known == nullptr) {
    const Before before = snapshot(g);
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> sites, fuse_at(g, backends, nullptr));
    InterpretedFusions learned;
    learned.rewrite = record_rewrite(before, g);
    learned.sites = std::move(sites);
    if (replayed != nullptr) *replayed = learned.rewrite.has_value();
    return std::optional<InterpretedFusions>(std::move(learned));
  }
  if (known->rewrite && rewrite_fits(g, *known->rewrite)) {
    FRAME_RETURN_IF_ERROR(replay_rewrite(g, *known->rewrite));
    if (replayed != nullptr) *replayed = true;
  } else {
    FRAME_RETURN_IF_ERROR(fuse_at(g, backends, &known->sites).status());
  }
  return std::optional<InterpretedFusions>();
}

namespace {

// interpret()'s per-run arrays; `values`, `in` and `out` are emptied (their tensors released)
// when the run ends, whichever way it ends (ScratchLease).
struct RunScratch {
  std::vector<int32_t> readers;
  std::vector<char> needed;
  std::vector<ir::NodeId> live;
  std::vector<Tensor> values, in, out;
  ops::NodeContext ctx;
  bool busy = false;
};

struct ScratchLease {
  explicit ScratchLease(RunScratch& s) : s(s) { s.busy = true; }
  ~ScratchLease() {
    s.values.clear();
    s.in.clear();
    s.out.clear();
    s.busy = false;
  }
  ScratchLease(const ScratchLease&) = delete;
  ScratchLease& operator=(const ScratchLease&) = delete;
  RunScratch& s;
};

}  // namespace

Interpreted interpret(const ir::Graph& g, const TensorMap& inputs, const CompileOptions& options,
                      const std::atomic<bool>* terminate, BufferPool* pool,
                      const std::vector<NodeState>* prior) {
  if (options.strict || !options.pipeline.empty() || !options.print_ir_after.empty()) {
    return fallback(unimplemented("strict mode, a custom pipeline or IR printing compile"));
  }
  for (const std::string& name : options.backends) {
    const Backend* b = find_backend(name);
    if (b == nullptr || b->granularity() != Backend::Granularity::kPerKernel ||
        b->device_memory()) {
      return fallback(unimplemented("backend '{}' is not a host per-kernel backend", name));
    }
  }
  Result<std::vector<ir::NodeId>> order = g.topological_order();
  if (!order.is_ok()) return fallback(order.status());
  const size_t num_values = g.num_values();
  // compile()'s limits (docs/security.md) with a margin (interpret() says why): each value
  // twice over within max_tensor_bytes, all of them (64-byte slots) four times over within
  // max_memory_bytes. Nearer the limits the compile decides, with its own message.
  const size_t tensor_limit = options.max_tensor_bytes / 2;
  const size_t memory_limit = options.max_memory_bytes / 4;
  size_t total_bytes = 0;
  for (size_t v = 0; v < num_values; ++v) {
    const ir::Value& val = g.value(static_cast<ir::ValueId>(v));
    if (!val.type) continue;  // checked where a live node produces it
    // A removed (fused or folded) node's outputs are never computed; a graph re-typed in place
    // may hold them at an earlier key's types (ADR 0007, "Revisited (2026-12-07)").
    if (val.producer >= 0 && g.node(val.producer).dead) continue;
    Result<size_t> nbytes = checked_nbytes(val.type->dtype, val.type->shape);
    const size_t slot = nbytes.is_ok() ? (*nbytes + 63) / 64 * 64 : 0;
    if (!nbytes.is_ok() || *nbytes > tensor_limit || slot < *nbytes ||
        slot > memory_limit - std::min(total_bytes, memory_limit)) {
      Interpreted r =
          fallback(make_error(StatusCode::kOutOfRange, "value '{}' is over the limits", val.name));
      r.failure = InterpretFailure::kOverLimits;
      return r;
    }
    total_bytes += slot;
  }

  // This thread's per-run arrays, kept between runs (a run per first-seen shape should not
  // allocate them again); a nested interpret (a kernel that runs a session) takes its own.
  thread_local RunScratch t_scratch;
  RunScratch nested;
  RunScratch& sc = t_scratch.busy ? nested : t_scratch;
  const ScratchLease lease(sc);
  // Readers left per value; graph outputs are never released. Only nodes an output needs run.
  std::vector<int32_t>& readers = sc.readers;
  std::vector<char>& needed = sc.needed;
  std::vector<ir::NodeId>& live = sc.live;
  readers.assign(num_values, 0);
  needed.assign(num_values, 0);
  live.clear();
  for (ir::ValueId v : g.outputs()) needed[static_cast<size_t>(v)] = 1;
  for (auto it = order->rbegin(); it != order->rend(); ++it) {
    const ir::Node& n = g.node(*it);
    const bool used = std::any_of(n.outputs.begin(), n.outputs.end(), [&](ir::ValueId v) {
      return v != ir::kNoValue && needed[static_cast<size_t>(v)];
    });
    if (!used) continue;
    if (has_body(n)) return fallback(unimplemented("node '{}' ({}) has a body", n.name, n.op));
    live.push_back(*it);
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue) continue;
      needed[static_cast<size_t>(v)] = 1;
      ++readers[static_cast<size_t>(v)];
    }
  }
  std::reverse(live.begin(), live.end());

  std::vector<Tensor>& values = sc.values;
  values.resize(num_values);
  for (size_t v = 0; v < num_values; ++v) {
    const ir::Value& val = g.value(static_cast<ir::ValueId>(v));
    if (val.constant) values[v] = *val.constant;
  }
  for (ir::ValueId v : g.inputs()) {
    const ir::Value& val = g.value(v);
    auto it = inputs.find(val.name);
    if (it == inputs.end()) return fallback(invalid_argument("missing input '{}'", val.name));
    values[static_cast<size_t>(v)] = it->second;
  }
  for (ir::ValueId v : g.outputs()) readers[static_cast<size_t>(v)] = -1;  // kept

  const int threads = usable_threads(options.num_threads);
  ThreadCountScope scope(threads);
  const ops::OpRegistry& schemas = ops::OpRegistry::global();
  Interpreted r;
  std::vector<Tensor>& in = sc.in;
  std::vector<Tensor>& out = sc.out;
  ops::NodeContext& ctx = sc.ctx;  // refilled per node (fill_node_context): no allocation once warm
  for (ir::NodeId id : live) {
    const ir::Node& n = g.node(id);
    if (terminate != nullptr && terminate->load(std::memory_order_relaxed)) {
      Interpreted r;
      r.status = run_terminated(n.name);
      r.failure = InterpretFailure::kTerminated;
      return r;
    }
    const ops::OpSchema* schema = schemas.find(n.op);
    if (schema == nullptr) {
      return fallback(not_found("node '{}' ({}): op is not registered", n.name, n.op));
    }
    if (run_as_view(g, n, *schema, readers, values)) continue;
    ops::fill_node_context(g, n, schema, ctx);
    ctx.prefer_shape_agnostic = true;
    ctx.run_once = true;
    std::shared_ptr<void> state;  // what the chosen kernel's accepts built, if anything
    ctx.accepted_state = &state;
    // Small nodes are chosen, prepared and run on the calling thread (node_threads.h), as in
    // compiled plans (a kernel's accepts may build what its prepare takes).
    const double cost_ns = node_cost_ns(g, n);  // no body here: the graph has none
    r.estimated_ns += cost_ns;
    int node_t = threads_for_cost(cost_ns, threads);
    std::optional<ThreadCountScope> serial;
    if (node_t != threads) serial.emplace(node_t);
    // The state an earlier run of this graph prepared, where its kernel says it still serves.
    const ops::KernelDef* k = nullptr;
    bool prepared = false;
    if (prior != nullptr && static_cast<size_t>(id) < prior->size()) {
      const NodeState& p = (*prior)[static_cast<size_t>(id)];
      if (p.kernel != nullptr && p.state != nullptr && p.kernel->reuse_state != nullptr &&
          p.kernel->reuse_state(ctx, p.state.get())) {
        k = p.kernel;
        state = p.state;
        prepared = true;
      }
    }
    if (k == nullptr) k = choose_kernel(ctx, options.backends);
    if (k == nullptr) return fallback(unimplemented("node '{}' ({}): no kernel", n.name, n.op));
    // The kernel's own limit (KernelDef::max_threads), applied before it prepares.
    if (const int cap = kernel_thread_cap(*k, ctx, node_t); cap != node_t) {
      node_t = cap;
      serial.emplace(node_t);
    }
    in.assign(n.inputs.size(), Tensor());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] != ir::kNoValue) in[i] = values[static_cast<size_t>(n.inputs[i])];
    }
    out.assign(n.outputs.size(), Tensor());
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      const ir::ValueId v = n.outputs[j];
      if (v == ir::kNoValue) continue;
      const ir::Value& val = g.value(v);
      if (!val.type) return fallback(invalid_argument("value '{}' has no type", val.name));
      Result<Tensor> t = pool != nullptr ? pool->empty(val.type->dtype, val.type->shape)
                                         : Tensor::empty(val.type->dtype, val.type->shape);
      if (!t.is_ok()) return fallback(t.status());
      out[j] = std::move(t).value();
    }
    Status s = run_kernel(*k, ctx, in, out, node_t, state, prepared);
    serial.reset();
    if (state != nullptr && k->reuse_state != nullptr) {
      if (r.node_states.empty()) r.node_states.resize(g.num_node_slots());
      r.node_states[static_cast<size_t>(id)] = {k, state};
    }
    if (state != nullptr) r.states.push_back(std::move(state));
    if (!s.is_ok()) {
      Interpreted r = fallback(std::move(s));
      r.failure = InterpretFailure::kKernelError;
      return r;
    }
    for (size_t j = 0; j < n.outputs.size(); ++j) {
      const ir::ValueId v = n.outputs[j];
      if (v == ir::kNoValue) continue;
      if (readers[static_cast<size_t>(v)] == 0) continue;  // read by nothing: released now
      values[static_cast<size_t>(v)] = std::move(out[j]);
    }
    release_inputs(n, readers, values);
  }

  if (pool != nullptr) pool->end_run();
  for (ir::ValueId v : g.outputs()) {
    const ir::Value& val = g.value(v);
    Tensor t = values[static_cast<size_t>(v)];
    if (val.producer < 0 && t.defined()) {
      // A constant or a graph input: the caller gets a tensor of its own.
      t = t.clone();
    }
    r.outputs.emplace(val.name, std::move(t));
  }
  return r;
}

}  // namespace frame::runtime::detail
