#include "frame/ops/kernel_registry.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "frame/ops/op_registry.h"
#include "frame/ops/registration_batch.h"

namespace frame::ops {

namespace {
// The kernels_ key of (op, backend), "op@backend", written into `k`.
void key_into(std::string& k, std::string_view op, std::string_view backend) {
  k.assign(op);
  k += '@';
  k += backend;
}
std::string key_of(std::string_view op, std::string_view backend) {
  std::string k;
  key_into(k, op, backend);
  return k;
}
}  // namespace

Status KernelDef::supports(const NodeContext& ctx) const {
  if (ctx.num_inputs() > 0 && dtype_input >= 0) {
    const auto i = static_cast<size_t>(dtype_input);
    if (ctx.has_input(i) && !dtypes.contains(ctx.input_types[i].dtype)) {
      return unimplemented("kernel {}@{} does not support dtype {} on input {} (supports {})", op,
                           backend, dtype_name(ctx.input_types[i].dtype), i,
                           dtype_set_to_string(dtypes));
    }
  }
  // Generators (no inputs) get their dtype from attributes, checked by shape inference.
  if (accepts != nullptr) {
    if (Status s = accepts(ctx); !s.is_ok()) {
      return s.with_prefix(fmt::format("kernel {}@{} declines the node: ", op, backend));
    }
  }
  return Status();
}

Result<std::vector<Tensor>> KernelDef::run_once(const NodeContext& ctx,
                                                std::span<const Tensor> inputs,
                                                std::span<const ir::TensorType> out_types) const {
  std::vector<Tensor> outputs;
  outputs.reserve(out_types.size());
  for (const ir::TensorType& t : out_types) {
    FRAME_ASSIGN_OR_RETURN(Tensor out, Tensor::zeros(t.dtype, t.shape));
    outputs.push_back(std::move(out));
  }
  std::shared_ptr<void> state;
  if (prepare != nullptr) {
    FRAME_ASSIGN_OR_RETURN(state, prepare(ctx));
  }
  KernelContext kctx;
  kctx.node = &ctx;
  kctx.inputs = inputs;
  kctx.outputs = outputs;
  kctx.state = state.get();
  kctx.num_threads = 1;
  FRAME_RETURN_IF_ERROR(fn(kctx));
  return outputs;
}

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry* r = new KernelRegistry();
  return *r;
}

namespace {
// The violation of a new kernel on its own, or "" (duplicates are checked by the registry).
std::string kernel_violation(const KernelDef& def) {
  if (def.backend.empty()) return "empty backend name";
  if (def.fn == nullptr) return "null kernel function";
  if (!ir::matches_op_name_charset(def.op)) return "illegal op name (ARCH-040)";
  return "";
}
}  // namespace

void KernelRegistry::register_kernel(KernelDef def) {
  if (std::string v = kernel_violation(def); !v.empty()) {
    // The null-function message names the (op, backend) pair, the others the op.
    const bool pair = !def.backend.empty() && def.fn == nullptr;
    registration_fatal("kernel", pair ? key_of(def.op, def.backend) : def.op, v, def.file,
                       def.line);
  }
  std::unique_lock lock(mu_);
  std::string key = key_of(def.op, def.backend);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) {
    registration_fatal("kernel", key,
                       fmt::format("duplicate (op, backend) pair (first registered at {}:{})",
                                   it->second->file, it->second->line),
                       def.file, def.line);
  }
  kernels_.emplace(std::move(key), std::make_unique<KernelDef>(std::move(def)));
}

Status register_op_with_kernels(OpSchema schema, std::vector<KernelDef> kernels) {
  const std::string name = schema.name();
  std::set<std::string> backends;
  for (const KernelDef& k : kernels) {
    if (k.op != name) {
      return invalid_argument("op '{}': kernel for backend '{}' names op '{}'", name, k.backend,
                              k.op);
    }
    if (!backends.insert(k.backend).second) {
      return invalid_argument("op '{}': backend '{}' listed twice", name, k.backend);
    }
  }
  RegistrationBatch batch;
  batch.ops.push_back(std::move(schema));
  batch.kernels = std::move(kernels);
  return commit_registrations(std::move(batch));
}

namespace {
thread_local RegistrationBatch* t_batch = nullptr;

std::string site(std::string_view file, int line) { return fmt::format("{}:{}", file, line); }
}  // namespace

void collect_registrations(RegistrationBatch* batch) { t_batch = batch; }

RegistrationBatch* collecting_batch() { return t_batch; }

Status commit_registrations(RegistrationBatch batch) {
  if (!batch.fault.empty()) return invalid_argument("{}", batch.fault);
  // Checks that need no registry first, then duplicates under the locks.
  std::set<std::string> names;
  for (const OpSchema& op : batch.ops) {
    if (std::string v = op_schema_violation(op); !v.empty()) {
      return invalid_argument("op '{}': {} (registered at {})", op.name(), v,
                              site(op.file(), op.line()));
    }
    if (!names.insert(op.name()).second) {
      return make_error(StatusCode::kAlreadyExists,
                        "op '{}': duplicate name (ARCH-040: registered twice, again at {})",
                        op.name(), site(op.file(), op.line()));
    }
  }
  std::set<std::string> keys;
  for (const KernelDef& k : batch.kernels) {
    if (std::string v = kernel_violation(k); !v.empty()) {
      return invalid_argument("kernel '{}': {} (registered at {})", key_of(k.op, k.backend), v,
                              site(k.file, k.line));
    }
    if (!keys.insert(key_of(k.op, k.backend)).second) {
      return make_error(StatusCode::kAlreadyExists,
                        "kernel '{}': duplicate (op, backend) pair (registered twice, again at "
                        "{})",
                        key_of(k.op, k.backend), site(k.file, k.line));
    }
  }
  std::map<std::string, const LoweringPattern*> pattern_keys;  // backend, name, anchor
  for (const LoweringPattern& p : batch.patterns) {
    if (p.backend.empty() || p.fn == nullptr) {
      return invalid_argument("lowering pattern '{}': {} (registered at {})", p.name,
                              p.backend.empty() ? "empty backend" : "null function",
                              site(p.file, p.line));
    }
    auto [it, fresh] = pattern_keys.emplace(p.backend + '\n' + p.name + '\n' + p.anchor_op, &p);
    if (!fresh) {
      return make_error(StatusCode::kAlreadyExists,
                        "lowering pattern '{}': duplicate for backend '{}' at op '{}' (registered "
                        "at {}, again at {})",
                        p.name, p.backend, p.anchor_op, site(it->second->file, it->second->line),
                        site(p.file, p.line));
    }
  }
  // Deferred checks see the batch's op names; they run before any lock is taken because they
  // may look up the registries themselves.
  if (!batch.after.empty()) FRAME_RETURN_IF_ERROR(check_deferred(batch.after, names));
  OpRegistry& ops = OpRegistry::global();
  KernelRegistry& kr = KernelRegistry::global();
  LoweringPatternRegistry& pr = LoweringPatternRegistry::global();
  {
    // Lock order: op table, kernel table, pattern table; no other path holds two of them.
    std::unique_lock op_lock(ops.mu_);
    std::unique_lock kernel_lock(kr.mu_);
    std::unique_lock pattern_lock(pr.mu_);
    for (const OpSchema& op : batch.ops) {
      if (auto it = ops.ops_.find(op.name()); it != ops.ops_.end()) {
        return make_error(StatusCode::kAlreadyExists,
                          "op '{}': duplicate name (ARCH-040: first registered at {}:{}), "
                          "registered again at {}",
                          op.name(), it->second->file(), it->second->line(),
                          site(op.file(), op.line()));
      }
    }
    for (const KernelDef& k : batch.kernels) {
      const std::string key = key_of(k.op, k.backend);
      if (auto it = kr.kernels_.find(key); it != kr.kernels_.end()) {
        return make_error(StatusCode::kAlreadyExists,
                          "kernel '{}': duplicate (op, backend) pair (first registered at {}:{}), "
                          "registered again at {}",
                          key, it->second->file, it->second->line, site(k.file, k.line));
      }
      if (names.count(k.op) == 0 && ops.ops_.count(k.op) == 0) {
        return invalid_argument("kernel '{}': no op '{}' is registered (registered at {})", key,
                                k.op, site(k.file, k.line));
      }
    }
    for (const LoweringPattern& p : batch.patterns) {
      if (names.count(p.anchor_op) == 0 && ops.ops_.count(p.anchor_op) == 0) {
        return invalid_argument(
            "lowering pattern '{}': anchor op '{}' is not registered (registered at {})", p.name,
            p.anchor_op, site(p.file, p.line));
      }
      for (const auto& q : pr.patterns_) {
        if (q->backend == p.backend && q->name == p.name && q->anchor_op == p.anchor_op) {
          return make_error(StatusCode::kAlreadyExists,
                            "lowering pattern '{}': duplicate for backend '{}' (first registered "
                            "at {}:{}), registered again at {}",
                            p.name, p.backend, q->file, q->line, site(p.file, p.line));
        }
      }
    }
    if (batch.require_cpu_kernels) {
      // ARCH-041: cpu is the fallback backend, every op must run there.
      for (const OpSchema& op : batch.ops) {
        if (keys.count(key_of(op.name(), "cpu")) == 0) {
          return invalid_argument(
              "op '{}': no cpu kernel (ARCH-041: every op needs a cpu kernel; registered at {})",
              op.name(), site(op.file(), op.line()));
        }
      }
    }
    for (OpSchema& op : batch.ops) {
      std::string name = op.name();
      ops.ops_.emplace(std::move(name), std::make_unique<OpSchema>(std::move(op)));
    }
    for (KernelDef& k : batch.kernels) {
      std::string key = key_of(k.op, k.backend);
      kr.kernels_.emplace(std::move(key), std::make_unique<KernelDef>(std::move(k)));
    }
    for (LoweringPattern& p : batch.patterns) {
      pr.patterns_.push_back(std::make_unique<LoweringPattern>(std::move(p)));
    }
  }
  for (DeferredRegistration& action : batch.after) {
    if (Status s = action.apply(); !s.is_ok()) return s.with_prefix(action.what + ": ");
  }
  return Status();
}

Status check_deferred(const std::vector<DeferredRegistration>& actions,
                      const std::set<std::string>& ops) {
  std::set<std::string> claimed;
  const BatchView view{&ops, &claimed};
  for (const DeferredRegistration& action : actions) {
    if (Status s = action.check(view); !s.is_ok()) return s.with_prefix(action.what + ": ");
  }
  return Status();
}

void run_after_registration(std::string what, std::function<Status(const BatchView&)> check,
                            std::function<Status()> apply) {
  if (RegistrationBatch* batch = collecting_batch()) {
    batch->after.push_back(
        DeferredRegistration{std::move(what), std::move(check), std::move(apply)});
    return;
  }
  const std::set<std::string> none;
  std::set<std::string> claimed;
  Status s = check(BatchView{&none, &claimed});
  if (s.is_ok()) s = apply();
  if (!s.is_ok()) registration_fatal(what, "", s.message(), "", 0);
}

const KernelDef* KernelRegistry::find(std::string_view op, std::string_view backend) const {
  // In a buffer of this thread's: no allocation per lookup.
  thread_local std::string key;
  key_into(key, op, backend);
  std::shared_lock lock(mu_);
  auto it = kernels_.find(key);
  return it == kernels_.end() ? nullptr : it->second.get();
}

std::vector<const KernelDef*> KernelRegistry::list() const {
  std::vector<const KernelDef*> out;
  {
    std::shared_lock lock(mu_);
    for (const auto& [k, v] : kernels_) out.push_back(v.get());
  }
  std::sort(out.begin(), out.end(), [](const KernelDef* a, const KernelDef* b) {
    return std::tie(a->op, a->backend) < std::tie(b->op, b->backend);
  });
  return out;
}

std::vector<const KernelDef*> KernelRegistry::list_backend(std::string_view backend) const {
  std::vector<const KernelDef*> out;
  for (const KernelDef* k : list()) {
    if (k->backend == backend) out.push_back(k);
  }
  return out;
}

std::vector<std::string> KernelRegistry::backends() const {
  std::set<std::string> s;
  for (const KernelDef* k : list()) s.insert(k->backend);
  return {s.begin(), s.end()};
}

std::vector<std::string> KernelRegistry::backends_of(std::string_view op) const {
  std::vector<std::string> out;
  for (const KernelDef* k : list()) {
    if (k->op == op) out.push_back(k->backend);
  }
  return out;
}

std::string KernelRegistry::to_json() const {
  nlohmann::json arr = nlohmann::json::array();
  for (const KernelDef* k : list()) {
    arr.push_back({{"op", k->op},
                   {"backend", k->backend},
                   {"dtypes", dtype_set_to_string(k->dtypes)},
                   {"dtype_input", k->dtype_input},
                   {"has_prepare", k->prepare != nullptr},
                   {"type_only_inputs", k->type_only_inputs},
                   {"registered_at", fmt::format("{}:{}", k->file, k->line)}});
  }
  return arr.dump(2);
}

KernelBuilder::KernelBuilder(std::string op, std::string backend, KernelFn fn, const char* file,
                             int line) {
  def.op = std::move(op);
  def.backend = std::move(backend);
  def.fn = fn;
  def.file = file;
  def.line = line;
}
KernelBuilder& KernelBuilder::dtypes(DTypeSet s) {
  def.dtypes = s;
  return *this;
}
KernelBuilder& KernelBuilder::dtype_input(int i) {
  def.dtype_input = i;
  return *this;
}
KernelBuilder& KernelBuilder::accepts(AcceptsFn fn) {
  def.accepts = fn;
  return *this;
}

KernelBuilder& KernelBuilder::prepare(PrepareFn fn) {
  def.prepare = fn;
  return *this;
}

const KernelDef* KernelRegistry::first_supporting(const NodeContext& ctx,
                                                  std::span<const std::string> backends) const {
  for (const std::string& b : backends) {
    const KernelDef* k = find(ctx.op, b);
    if (k != nullptr && k->supports(ctx).is_ok()) return k;
  }
  return nullptr;
}

KernelBuilder& KernelBuilder::reorders(ReordersFn fn) {
  def.reorders = fn;
  return *this;
}

KernelBuilder& KernelBuilder::in_place_input(InPlaceFn fn) {
  def.in_place_input = fn;
  return *this;
}

KernelBuilder& KernelBuilder::max_threads(MaxThreadsFn fn) {
  def.max_threads = fn;
  return *this;
}

KernelBuilder& KernelBuilder::reuse_state(ReuseStateFn fn) {
  def.reuse_state = fn;
  return *this;
}

KernelBuilder& KernelBuilder::type_only_inputs(std::vector<int> inputs) {
  def.type_only_inputs = std::move(inputs);
  return *this;
}

KernelBuilder& KernelBuilder::subgraphs(std::vector<std::string> attrs) {
  def.subgraph_attrs = std::move(attrs);
  return *this;
}

KernelRegistration::KernelRegistration(KernelBuilder& b) {
  if (RegistrationBatch* batch = collecting_batch()) {
    batch->kernels.push_back(std::move(b.def));
  } else {
    KernelRegistry::global().register_kernel(std::move(b.def));
  }
}
KernelRegistration::KernelRegistration(KernelBuilder&& b) : KernelRegistration(b) {}

std::vector<std::string> registry_self_check() {
  std::vector<std::string> problems;
  const auto& kr = KernelRegistry::global();
  for (const OpSchema* s : OpRegistry::global().list()) {
    if (s->shape_fn() == nullptr) {
      problems.push_back(fmt::format("op '{}' ({}:{}) has no shape function (ARCH-041)", s->name(),
                                     s->file(), s->line()));
    }
    if (kr.find(s->name(), "cpu") == nullptr) {
      problems.push_back(fmt::format("op '{}' ({}:{}) has no \"cpu\" kernel (ARCH-041)", s->name(),
                                     s->file(), s->line()));
    }
  }
  for (const KernelDef* k : kr.list()) {
    if (OpRegistry::global().find(k->op) == nullptr) {
      problems.push_back(fmt::format("kernel {}@{} ({}:{}) names an unregistered op", k->op,
                                     k->backend, k->file, k->line));
    }
  }
  return problems;
}

}  // namespace frame::ops
