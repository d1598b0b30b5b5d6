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

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
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
  for (const auto& [bytes, f] : free_) std::free(f.p);
}

void BufferPool::trim(size_t keep) {
  std::vector<void*> drop;
  {
    std::lock_guard lock(mu_);
    while (free_bytes_ > keep && !free_.empty()) {
      auto last = std::prev(free_.end());
      free_bytes_ -= last->first;
      drop.push_back(last->second.p);
      free_.erase(last);
    }
  }
  for (void* p : drop) std::free(p);
}

void BufferPool::end_run() {
  std::vector<void*> drop;
  {
    std::lock_guard lock(mu_);
    ++run_;
    for (auto it = free_.begin(); it != free_.end();) {
      if (it->second.run + kIdleRuns >= run_) {
        ++it;
        continue;
      }
      free_bytes_ -= it->first;
      drop.push_back(it->second.p);
      it = free_.erase(it);
    }
  }
  for (void* p : drop) std::free(p);
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
  std::free(p);
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
  if (p == nullptr) p = std::aligned_alloc(64, bytes);
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
                  std::shared_ptr<void>& state) {
  if (k.prepare != nullptr) {
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

}  // namespace

Interpreted interpret(const ir::Graph& g, const TensorMap& inputs, const CompileOptions& options,
                      const std::atomic<bool>* terminate, BufferPool* pool) {
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

  // Readers left per value; graph outputs are never released. Only nodes an output needs run.
  std::vector<int32_t> readers(num_values, 0);
  std::vector<char> needed(num_values, 0);
  for (ir::ValueId v : g.outputs()) needed[static_cast<size_t>(v)] = 1;
  std::vector<ir::NodeId> live;
  live.reserve(order->size());
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

  std::vector<Tensor> values(num_values);
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
  std::vector<Tensor> in;
  std::vector<Tensor> out;
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
    ops::NodeContext ctx = ops::make_node_context(g, n, schema);
    ctx.prefer_shape_agnostic = true;
    ctx.run_once = true;
    std::shared_ptr<void> state;  // what the chosen kernel's accepts built, if anything
    ctx.accepted_state = &state;
    // Small nodes are chosen, prepared and run on the calling thread (node_threads.h), as in
    // compiled plans (a kernel's accepts may build what its prepare takes).
    const int node_t = node_threads(g, n, threads);
    std::optional<ThreadCountScope> serial;
    if (node_t != threads) serial.emplace(node_t);
    const ops::KernelDef* k = choose_kernel(ctx, options.backends);
    if (k == nullptr) return fallback(unimplemented("node '{}' ({}): no kernel", n.name, n.op));
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
    Status s = run_kernel(*k, ctx, in, out, node_t, state);
    serial.reset();
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
