#include "frame/ops/op_registry.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>

#include "frame/ops/kernel_registry.h"

namespace frame::ops {

void registration_fatal(std::string_view what, std::string_view name, std::string_view violation,
                        std::string_view file, int line) {
  std::string msg =
      fmt::format("frame: fatal registration error: {} '{}': {} (registered at {}:{})\n", what,
                  name, violation, file, line);
  std::fputs(msg.c_str(), stderr);
  std::fflush(stderr);
  std::abort();
}

OpRegistry& OpRegistry::global() {
  // Leaked on purpose: registrations in other static objects may run before or after us.
  static OpRegistry* r = new OpRegistry();
  return *r;
}

std::string op_schema_violation(const OpSchema& schema) {
  const std::string& name = schema.name();
  if (!ir::matches_op_name_charset(name)) {
    return "illegal name (ARCH-040: must match ^[a-z][a-z0-9_]*$)";
  }
  if (name == ir::kGraphInputOp || name == ir::kGraphOutputMarker) {
    return "reserved name (ARCH-040: used by the IR for graph inputs/outputs)";
  }
  if (schema.shape_fn() == nullptr)
    return "no shape function (ARCH-041: every op needs shape_infer)";
  return "";
}

void OpRegistry::register_op(OpSchema schema) {
  const std::string& name = schema.name();
  if (std::string v = op_schema_violation(schema); !v.empty()) {
    registration_fatal("op", name, v, schema.file(), schema.line());
  }
  std::unique_lock lock(mu_);
  auto it = ops_.find(name);
  if (it != ops_.end()) {
    registration_fatal("op", name,
                       fmt::format("duplicate name (ARCH-040: first registered at {}:{})",
                                   it->second->file(), it->second->line()),
                       schema.file(), schema.line());
  }
  std::string key = name;
  ops_.emplace(std::move(key), std::make_unique<OpSchema>(std::move(schema)));
}

const OpSchema* OpRegistry::find(std::string_view name) const {
  // The key in a buffer of this thread's: no allocation per lookup (a node is looked up a few
  // times per run by the interpreted tier).
  thread_local std::string key;
  key.assign(name);
  std::shared_lock lock(mu_);
  auto it = ops_.find(key);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpSchema*> OpRegistry::list() const {
  std::vector<const OpSchema*> out;
  {
    std::shared_lock lock(mu_);
    out.reserve(ops_.size());
    for (const auto& [k, v] : ops_) out.push_back(v.get());
  }
  std::sort(out.begin(), out.end(),
            [](const OpSchema* a, const OpSchema* b) { return a->name() < b->name(); });
  return out;
}

size_t OpRegistry::size() const {
  std::shared_lock lock(mu_);
  return ops_.size();
}

namespace {

nlohmann::json attr_json(const ir::AttrValue& v) {
  return std::visit(
      [](const auto& x) -> nlohmann::json {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, Tensor>) {
          return fmt::format("tensor<{}{}>", dtype_name(x.dtype()), shape_to_string(x.shape()));
        } else if constexpr (std::is_same_v<X, std::shared_ptr<const ir::Graph>>) {
          return "graph";
        } else if constexpr (std::is_same_v<X, double>) {
          if (!std::isfinite(x)) return fmt::format("{}", x);
          return x;
        } else {
          return x;
        }
      },
      v);
}

nlohmann::json arg_json(const ArgSpec& a) {
  return {{"name", a.name},
          {"doc", a.doc},
          {"dtypes", dtype_set_to_string(a.dtypes)},
          {"type_var", a.type_var},
          {"optional", a.optional}};
}

}  // namespace

std::string OpRegistry::to_json() const {
  nlohmann::json ops = nlohmann::json::array();
  for (const OpSchema* s : list()) {
    nlohmann::json j;
    j["name"] = s->name();
    j["doc"] = s->doc();
    j["inputs"] = nlohmann::json::array();
    for (const ArgSpec& a : s->inputs()) {
      nlohmann::json aj = arg_json(a);
      // ADR 0006: positions whose value decides an output shape (run-time specialization).
      aj["shape_determining"] = a.shape_determining;
      j["inputs"].push_back(std::move(aj));
    }
    if (s->variadic()) {
      j["variadic"] = arg_json(*s->variadic());
      j["variadic"]["min_count"] = s->variadic_min_count();
    } else {
      j["variadic"] = nullptr;
    }
    j["min_input_count"] = s->min_input_count();
    j["outputs"] = nlohmann::json::array();
    for (const ArgSpec& a : s->outputs()) j["outputs"].push_back(arg_json(a));
    j["attrs"] = nlohmann::json::array();
    for (const AttrSpec& a : s->attrs()) {
      j["attrs"].push_back({{"name", a.name},
                            {"type", ir::attr_type_name(a.type)},
                            {"required", a.required},
                            {"default", a.default_value ? attr_json(*a.default_value) : nullptr},
                            {"doc", a.doc}});
    }
    j["traits"] = nlohmann::json::array();
    for (OpTrait t : s->traits()) j["traits"].push_back(op_trait_name(t));
    j["has_decomposition"] = s->decompose_fn() != nullptr;
    j["kernels"] = KernelRegistry::global().backends_of(s->name());
    j["registered_at"] = fmt::format("{}:{}", s->file(), s->line());
    ops.push_back(std::move(j));
  }
  return ops.dump(2);
}

ir::OpQuery make_op_query() {
  ir::OpQuery q;
  q.op_registered = [](std::string_view op) { return OpRegistry::global().find(op) != nullptr; };
  q.check_schema = [](const ir::Node& node) -> Status {
    const OpSchema* s = OpRegistry::global().find(node.op);
    if (s == nullptr) return not_found("node '{}': op '{}' is not registered", node.name, node.op);
    return s->check_node(node);
  };
  return q;
}

}  // namespace frame::ops
