// Backend registry and the generic per-kernel backend: a part is one node, compiled by looking
// up its (op, backend) kernel and running the kernel's prepare step once.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/runtime/backend.h"

namespace frame::runtime {
namespace {

// One node run by its registered kernel. The context borrows attributes and constants from
// the compiled graph, which the Executable keeps alive and never mutates.
class KernelPart final : public CompiledPart {
 public:
  KernelPart(const ops::KernelDef* kernel, ops::NodeContext ctx, std::shared_ptr<void> state)
      : kernel_(kernel), ctx_(std::move(ctx)), state_(std::move(state)) {}
  Status run(const PartIO& io) const override {
    ops::KernelContext kc;
    kc.node = &ctx_;
    kc.inputs = io.inputs;
    kc.outputs = io.outputs;
    kc.state = state_.get();
    kc.num_threads = io.num_threads;
    return kernel_->fn(kc);
  }

 private:
  const ops::KernelDef* kernel_;
  ops::NodeContext ctx_;
  std::shared_ptr<void> state_;
};

class KernelBackend final : public Backend {
 public:
  explicit KernelBackend(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  Granularity granularity() const override { return Granularity::kPerKernel; }
  Result<std::unique_ptr<CompiledPart>> compile(const PartSpec& part) const override {
    if (part.graph == nullptr || part.nodes.size() != 1) {
      return internal_error("backend '{}': a per-kernel part holds exactly one node", name_);
    }
    const ir::Node& n = part.graph->node(part.nodes[0]);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, name_);
    if (k == nullptr) {
      return unimplemented("node '{}' ({}): backend '{}' has no kernel for the op", n.name, n.op,
                           name_);
    }
    ops::NodeContext ctx = ops::make_node_context(*part.graph, n, schema);
    FRAME_RETURN_IF_ERROR(k->supports(ctx));
    std::shared_ptr<void> state;
    if (k->prepare != nullptr) {
      Result<std::shared_ptr<void>> s = k->prepare(ctx);
      if (!s.is_ok()) return s.status();
      state = std::move(s).value();
    }
    return std::unique_ptr<CompiledPart>(
        std::make_unique<KernelPart>(k, std::move(ctx), std::move(state)));
  }

 private:
  std::string name_;
};

struct Registry {
  std::shared_mutex mu;
  std::map<std::string, std::shared_ptr<const Backend>, std::less<>> backends;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: pointers outlive static teardown
  return *r;
}

}  // namespace

Status register_backend(std::shared_ptr<const Backend> backend) {
  if (backend == nullptr || backend->name().empty()) {
    return invalid_argument("register_backend: null backend or empty name");
  }
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  auto [it, inserted] = r.backends.emplace(std::string(backend->name()), backend);
  if (!inserted) {
    return make_error(StatusCode::kAlreadyExists, "backend '{}' is already registered",
                      backend->name());
  }
  return Status();
}

const Backend* find_backend(std::string_view name) {
  Registry& r = registry();
  {
    std::shared_lock lock(r.mu);
    if (auto it = r.backends.find(name); it != r.backends.end()) return it->second.get();
  }
  if (ops::KernelRegistry::global().list_backend(name).empty()) return nullptr;
  std::unique_lock lock(r.mu);
  auto it = r.backends.find(name);
  if (it == r.backends.end()) {
    it = r.backends.emplace(std::string(name), std::make_shared<KernelBackend>(std::string(name)))
             .first;
  }
  return it->second.get();
}

std::vector<std::string> backend_names() {
  std::set<std::string> names;
  for (const std::string& b : ops::KernelRegistry::global().backends()) names.insert(b);
  Registry& r = registry();
  std::shared_lock lock(r.mu);
  for (const auto& [name, b] : r.backends) names.insert(name);
  return {names.begin(), names.end()};
}

Result<std::vector<std::string>> parse_backend_list(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  bool empty_item = false;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || list[i] == ',') {
      if (cur.empty()) empty_item = true;
      out.push_back(std::move(cur));
      cur.clear();
    } else if (list[i] != ' ') {
      cur += list[i];
    }
  }
  if (empty_item) {
    return invalid_argument(
        "backend list '{}' has an empty item (expected comma-separated names, e.g. "
        "'onednn,cpu' or 'auto')",
        list);
  }
  return out;
}

Result<std::vector<std::string>> resolve_backends(const std::vector<std::string>& backends) {
  if (backends.empty()) return invalid_argument("the backend list is empty (use \"auto\")");
  std::vector<std::string> out;
  auto add = [&](std::string_view b) {
    if (std::find(out.begin(), out.end(), b) == out.end()) out.emplace_back(b);
  };
  for (const std::string& b : backends) {
    if (b == "auto") {
      for (std::string_view opt : kAutoBackends) {
        if (find_backend(opt) != nullptr) add(opt);
      }
      add("cpu");
    } else if (find_backend(b) != nullptr) {
      add(b);
    } else {
      return not_found("unknown backend '{}' (available: auto, {})", b,
                       fmt::join(backend_names(), ", "));
    }
  }
  return out;
}

}  // namespace frame::runtime
