#include "frame/ops/kernel_registry.h"

#include <algorithm>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "frame/ops/op_registry.h"

namespace frame::ops {

namespace {
std::string key_of(std::string_view op, std::string_view backend) {
  std::string k(op);
  k += '@';
  k += backend;
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
  if (std::string v = op_schema_violation(schema); !v.empty()) {
    return invalid_argument("op '{}': {}", name, v);
  }
  std::set<std::string> keys;
  for (const KernelDef& k : kernels) {
    if (k.op != name) {
      return invalid_argument("op '{}': kernel for backend '{}' names op '{}'", name, k.backend,
                              k.op);
    }
    if (std::string v = kernel_violation(k); !v.empty()) {
      return invalid_argument("kernel '{}': {}", key_of(k.op, k.backend), v);
    }
    if (!keys.insert(key_of(k.op, k.backend)).second) {
      return invalid_argument("op '{}': backend '{}' listed twice", name, k.backend);
    }
  }
  OpRegistry& ops = OpRegistry::global();
  KernelRegistry& kr = KernelRegistry::global();
  // Lock order op table, then kernel table; no other path holds both.
  std::unique_lock op_lock(ops.mu_);
  std::unique_lock kernel_lock(kr.mu_);
  if (auto it = ops.ops_.find(name); it != ops.ops_.end()) {
    return make_error(StatusCode::kAlreadyExists,
                      "op '{}': duplicate name (ARCH-040: first registered at {}:{})", name,
                      it->second->file(), it->second->line());
  }
  for (const std::string& key : keys) {
    if (auto it = kr.kernels_.find(key); it != kr.kernels_.end()) {
      return make_error(StatusCode::kAlreadyExists,
                        "kernel '{}': duplicate (op, backend) pair (first registered at {}:{})",
                        key, it->second->file, it->second->line);
    }
  }
  ops.ops_.emplace(name, std::make_unique<OpSchema>(std::move(schema)));
  for (KernelDef& k : kernels) {
    std::string key = key_of(k.op, k.backend);
    kr.kernels_.emplace(std::move(key), std::make_unique<KernelDef>(std::move(k)));
  }
  return Status();
}

const KernelDef* KernelRegistry::find(std::string_view op, std::string_view backend) const {
  std::shared_lock lock(mu_);
  auto it = kernels_.find(key_of(op, backend));
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

KernelBuilder& KernelBuilder::type_only_inputs(std::vector<int> inputs) {
  def.type_only_inputs = std::move(inputs);
  return *this;
}

KernelBuilder& KernelBuilder::subgraphs(std::vector<std::string> attrs) {
  def.subgraph_attrs = std::move(attrs);
  return *this;
}

KernelRegistration::KernelRegistration(KernelBuilder& b) {
  KernelRegistry::global().register_kernel(std::move(b.def));
}
KernelRegistration::KernelRegistration(KernelBuilder&& b) {
  KernelRegistry::global().register_kernel(std::move(b.def));
}

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
