// Forward value-dependence walk from graph inputs to shape-determining positions (ADR 0006).

#include "frame/passes/shape_determining.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <variant>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::passes {

namespace {

// True when the node reads input `i` only for its dtype and shape, so its outputs do not
// depend on that input's values (the cpu reference kernel declares it, or a stand-in node's
// kTypeOnlyInputsAttr).
bool reads_only_type(const ir::Node& n, size_t i) {
  if (auto it = n.attrs.find(kTypeOnlyInputsAttr); it != n.attrs.end()) {
    if (const auto* list = std::get_if<std::vector<int64_t>>(&it->second)) {
      return std::find(list->begin(), list->end(), static_cast<int64_t>(i)) != list->end();
    }
  }
  const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, "cpu");
  if (k == nullptr) return false;
  return std::find(k->type_only_inputs.begin(), k->type_only_inputs.end(), static_cast<int>(i)) !=
         k->type_only_inputs.end();
}

// One classification: each body is classified once and its shape-determining inputs are
// remembered, so nested bodies cost time linear in their total size, not a product of the
// captured values per level.
class Classifier {
 public:
  explicit Classifier(const ShapeDeterminingOptions& opts) : opts_(opts) {}

  std::vector<ShapeDeterminingInput> classify(const ir::Graph& g);

 private:
  // Per body input of `b`: true when it is shape-determining inside `b` (memoized).
  const std::vector<bool>& body_inputs(const ir::Graph& b) {
    auto it = bodies_.find(&b);
    if (it != bodies_.end()) return it->second;
    std::vector<bool> sd(b.inputs().size(), false);
    for (const ShapeDeterminingInput& s : classify(b)) {
      for (size_t k = 0; k < b.inputs().size(); ++k) {
        if (b.inputs()[k] == s.value) sd[k] = true;
      }
    }
    return bodies_.emplace(&b, std::move(sd)).first->second;
  }

  // True when input `i` of `n` feeds a body input that is itself shape-determining inside
  // one of the node's bodies (control flow, ADR 0006 decision 5). Body inputs line up with
  // the node's last inputs (captured values last in both; an If's branches lack only `cond`).
  bool feeds_shape_determining_body_input(const ir::Node& n, size_t i) {
    for (const auto& [name, value] : n.attrs) {
      const auto* body = std::get_if<std::shared_ptr<const ir::Graph>>(&value);
      if (body == nullptr || *body == nullptr) continue;
      const ir::Graph& b = **body;
      if (b.inputs().size() > n.inputs.size()) continue;
      const size_t offset = n.inputs.size() - b.inputs().size();
      if (i < offset) continue;
      if (body_inputs(b)[i - offset]) return true;
    }
    return false;
  }

  // The marked inputs of a control-flow node act together: when one of them feeds a
  // shape-determining body input (a Loop trip count reaching the iteration number a Slice
  // reads), each of them counts, since the body sees known iteration numbers only when the
  // trip count and the condition are both known (the ONNX importer unrolls such a loop).
  bool marked_input_feeds_body(const ir::Node& n, const ops::OpSchema& schema) {
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      if (schema.is_shape_determining(j) && feeds_shape_determining_body_input(n, j)) return true;
    }
    return false;
  }

  const ShapeDeterminingOptions& opts_;
  std::unordered_map<const ir::Graph*, std::vector<bool>> bodies_;
};

std::vector<ShapeDeterminingInput> Classifier::classify(const ir::Graph& g) {
  const std::vector<std::vector<ir::NodeId>> uses = g.use_lists();
  std::vector<ShapeDeterminingInput> out;
  std::vector<bool> reached(g.num_values(), false);
  for (ir::ValueId in : g.inputs()) {
    if (g.value(in).is_constant()) continue;
    ShapeDeterminingInput sdi{in, g.value(in).name, {}};
    std::fill(reached.begin(), reached.end(), false);
    std::vector<ir::ValueId> stack{in};
    reached[static_cast<size_t>(in)] = true;
    while (!stack.empty()) {
      const ir::ValueId v = stack.back();
      stack.pop_back();
      for (ir::NodeId nid : uses[static_cast<size_t>(v)]) {
        const ir::Node& n = g.node(nid);
        const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
        bool propagates = false;
        for (size_t i = 0; i < n.inputs.size(); ++i) {
          if (n.inputs[i] != v) continue;
          const bool flagged = schema != nullptr && schema->is_shape_determining(i);
          // Narrowing (OpSchemaBuilder::shape_determining_when) may look at types; it is
          // skipped where the types are placeholders (ShapeDeterminingOptions::narrow).
          const bool marked =
              flagged &&
              (!opts_.narrow || schema->decides_shape(ops::make_node_context(g, n, schema), i));
          if (marked || feeds_shape_determining_body_input(n, i) ||
              (flagged && marked_input_feeds_body(n, *schema))) {
            const ops::ArgSpec* spec = schema != nullptr ? schema->input_spec(i) : nullptr;
            sdi.uses.push_back({nid, n.name, n.op, i, spec != nullptr ? spec->name : ""});
          }
          if (!reads_only_type(n, i)) propagates = true;
        }
        if (!propagates) continue;
        for (ir::ValueId o : n.outputs) {
          if (o == ir::kNoValue || reached[static_cast<size_t>(o)]) continue;
          reached[static_cast<size_t>(o)] = true;
          stack.push_back(o);
        }
      }
    }
    if (sdi.uses.empty()) continue;
    // A node reading the value twice is listed once per use list entry: sort and dedupe.
    std::sort(sdi.uses.begin(), sdi.uses.end(), [](const auto& a, const auto& b) {
      return std::tie(a.node, a.input) < std::tie(b.node, b.input);
    });
    sdi.uses.erase(std::unique(sdi.uses.begin(), sdi.uses.end(),
                               [](const auto& a, const auto& b) {
                                 return a.node == b.node && a.input == b.input;
                               }),
                   sdi.uses.end());
    out.push_back(std::move(sdi));
  }
  return out;
}

}  // namespace

std::vector<ShapeDeterminingInput> shape_determining_inputs(const ir::Graph& g,
                                                            const ShapeDeterminingOptions& opts) {
  Classifier c(opts);
  return c.classify(g);
}

std::vector<std::string> describe_shape_determining_inputs(
    const std::vector<ShapeDeterminingInput>& inputs) {
  std::vector<std::string> lines;
  for (const ShapeDeterminingInput& in : inputs) {
    std::string line = fmt::format("graph input '{}' decides output shapes:", in.name);
    for (size_t k = 0; k < in.uses.size(); ++k) {
      const ShapeDeterminingUse& u = in.uses[k];
      line += fmt::format("{} node '{}' ({}) input {} ({})", k == 0 ? "" : ",", u.node_name, u.op,
                          u.input, u.input_name);
    }
    lines.push_back(std::move(line));
  }
  return lines;
}

Status with_shape_determining_hint(const ir::Graph& g, const Status& s) {
  if (s.is_ok() || s.message().find("must be a constant") == std::string::npos) return s;
  const std::vector<std::string> lines =
      describe_shape_determining_inputs(shape_determining_inputs(g));
  if (lines.empty()) return s;
  std::string msg = s.message();
  for (const std::string& l : lines) msg += "\n  hint: " + l;
  msg +=
      "\n  hint: frame compiles static shapes only (ARCH-044); a session (runtime::Session, "
      "onnx::open_session, `frame run --input NAME=FILE.npy`) compiles one specialization per "
      "value it is given (ADR 0006); a single load can bind them with "
      "onnx::LoadOptions::constant_inputs";
  return Status(s.code(), std::move(msg));
}

}  // namespace frame::passes
