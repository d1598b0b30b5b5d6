// Backend registry and the generic per-kernel backend: a part is one node, compiled by looking
// up its (op, backend) kernel and running the kernel's prepare step once.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <shared_mutex>
#include <stdexcept>

#include "frame/ops/backend_availability.h"
#include "frame/ops/device_group.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/runtime/backend.h"
#include "runtime/kernel_call.h"

namespace frame::runtime {
namespace {

// One node run by its registered kernel. The context borrows attributes and constants from
// the compiled graph, which the Executable keeps alive and never mutates.
class KernelPart final : public CompiledPart {
 public:
  KernelPart(const ops::KernelDef* kernel, ops::NodeContext ctx, std::shared_ptr<void> state,
             std::vector<std::shared_ptr<const CompiledSubgraph>> bodies)
      : kernel_(kernel),
        ctx_(std::move(ctx)),
        state_(std::move(state)),
        bodies_(std::move(bodies)) {}
  int reorders_per_run() const override {
    return kernel_->reorders != nullptr ? kernel_->reorders(state_.get()) : 0;
  }
  Status run(const PartIO& io) const override {
    ops::KernelContext kc;
    kc.node = &ctx_;
    kc.inputs = io.inputs;
    kc.outputs = io.outputs;
    kc.state = state_.get();
    kc.num_threads = io.num_threads;
    if (io.run_state != nullptr) kc.subgraphs = static_cast<Runners*>(io.run_state)->ptrs;
    // A kernel's scratch allocation that fails is an error of this node, not an abort
    // (docs/security.md: a model cannot crash the process). An exception thrown inside an
    // OpenMP region still terminates (docs/security.md).
    return detail::guard_kernel_call(*kernel_, ctx_, "run", [&] { return kernel_->fn(kc); });
  }
  // Bodies get one runner (arena + bound views) per run slot: re-entrant runs never share one.
  std::shared_ptr<void> make_run_state() const override {
    if (bodies_.empty()) return nullptr;
    auto r = std::make_shared<Runners>();
    for (const auto& b : bodies_) {
      std::unique_ptr<ops::SubgraphRunner> runner;
      if (b != nullptr) {
        Result<std::unique_ptr<ops::SubgraphRunner>> made = b->make_runner();
        // Without a runner the kernel reports that the body cannot run.
        if (made.is_ok()) runner = std::move(made).value();
      }
      r->ptrs.push_back(runner.get());
      r->owned.push_back(std::move(runner));
    }
    return r;
  }

 private:
  struct Runners {
    std::vector<std::unique_ptr<ops::SubgraphRunner>> owned;
    std::vector<ops::SubgraphRunner*> ptrs;
  };
  const ops::KernelDef* kernel_;
  ops::NodeContext ctx_;
  std::shared_ptr<void> state_;
  std::vector<std::shared_ptr<const CompiledSubgraph>> bodies_;
};

// A run of nodes a device backend keeps in device memory (include/frame/ops/device_group.h).
class DeviceGroupPart final : public CompiledPart {
 public:
  explicit DeviceGroupPart(std::unique_ptr<ops::DeviceGroup> group) : group_(std::move(group)) {}
  Status run(const PartIO& io) const override {
    try {
      return group_->run(io.inputs, io.outputs, io.run_state);
    } catch (const std::bad_alloc&) {
      return make_error(StatusCode::kOutOfRange, "device group: out of host memory");
    }
  }
  std::shared_ptr<void> make_run_state() const override { return group_->make_run_state(); }
  size_t device_bytes() const override { return group_->device_bytes(); }
  bool input_on_device(size_t k) const override { return group_->input_on_device(k); }

 private:
  std::unique_ptr<ops::DeviceGroup> group_;
};

class KernelBackend final : public Backend {
 public:
  explicit KernelBackend(std::string name) : name_(std::move(name)) {}
  std::string_view name() const override { return name_; }
  // A device backend with a group compiler gets runs of nodes, so values stay on the device.
  Granularity granularity() const override {
    return ops::find_device_group_compiler(name_) != nullptr ? Granularity::kWholeGraph
                                                             : Granularity::kPerKernel;
  }
  bool device_memory() const override { return ops::find_device_group_compiler(name_) != nullptr; }
  // A device backend's layer registers a probe (ops::register_availability_probe).
  std::string unavailable_reason() const override { return ops::backend_unavailable_reason(name_); }
  Result<std::unique_ptr<CompiledPart>> compile(const PartSpec& part) const override {
    if (ops::DeviceGroupCompiler group = ops::find_device_group_compiler(name_);
        group != nullptr && part.graph != nullptr && !part.nodes.empty()) {
      ops::DeviceGroupSpec spec{part.graph, part.nodes, part.inputs, part.outputs};
      FRAME_ASSIGN_OR_RETURN(std::unique_ptr<ops::DeviceGroup> g, group(spec));
      return std::unique_ptr<CompiledPart>(std::make_unique<DeviceGroupPart>(std::move(g)));
    }
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
    ctx.prefer_shape_agnostic = part.shape_agnostic;
    FRAME_RETURN_IF_ERROR(k->supports(ctx));
    std::shared_ptr<void> state;
    if (k->prepare != nullptr) {
      FRAME_RETURN_IF_ERROR(detail::guard_kernel_call(*k, ctx, "prepare", [&] {
        FRAME_ASSIGN_OR_RETURN(state, k->prepare(ctx));
        return Status();
      }));
    }
    std::vector<std::shared_ptr<const CompiledSubgraph>> bodies;
    for (const std::string& attr : k->subgraph_attrs) {
      const auto* g = ctx.attr<std::shared_ptr<const ir::Graph>>(attr);
      if (g == nullptr || *g == nullptr) {
        bodies.push_back(nullptr);
        continue;
      }
      if (part.subgraphs == nullptr) {
        return unimplemented("node '{}' ({}): body '{}' cannot be compiled here", n.name, n.op,
                             attr);
      }
      Result<std::shared_ptr<const CompiledSubgraph>> b = part.subgraphs->compile(**g);
      if (!b.is_ok()) {
        // The body compiler does not prefix its errors; the graph's own name only when it
        // differs from the attribute's ("body 'body': body 'body'" said nothing new).
        const std::string& graph_name = (*g)->name();
        return b.status().with_prefix(
            graph_name.empty() || graph_name == attr
                ? fmt::format("node '{}' ({}) body '{}': ", n.name, n.op, attr)
                : fmt::format("node '{}' ({}) body '{}' (graph '{}'): ", n.name, n.op, attr,
                              graph_name));
      }
      bodies.push_back(std::move(b).value());
    }
    return std::unique_ptr<CompiledPart>(
        std::make_unique<KernelPart>(k, std::move(ctx), std::move(state), std::move(bodies)));
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

std::vector<std::string> split_list(std::string_view list, EmptyItems empty) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i == list.size() || list[i] == ',') {
      if (!cur.empty() || empty == EmptyItems::kKeep) out.push_back(std::move(cur));
      cur.clear();
    } else if (list[i] != ' ') {
      cur += list[i];
    }
  }
  return out;
}

Result<std::vector<std::string>> parse_backend_list(std::string_view list) {
  std::vector<std::string> out = split_list(list, EmptyItems::kKeep);
  if (std::find(out.begin(), out.end(), std::string()) != out.end()) {
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
