// Graph::verify: checks V1 (structure), V2 (types), V3 (op registered), V4 (schema), in that
// order, returning the first violation. Normative definition: docs/architecture/ir-design.md §4.

#include <fmt/format.h>

#include <string_view>
#include <unordered_map>

#include "frame/ir/graph.h"
#include "ir/ir_internal.h"

namespace frame::ir {

namespace {

using detail::is_defined;
using detail::node_label;
using detail::valid_value;

// How a message names where a value comes from.
std::string value_origin(const Graph& g, ValueId v) {
  const Value& val = g.value(v);
  if (val.is_graph_input) return "graph input";
  if (val.is_constant()) return "constant";
  if (val.producer >= 0 && static_cast<size_t>(val.producer) < g.num_node_slots()) {
    return fmt::format("{} output {}", node_label(g.node(val.producer)), val.producer_output);
  }
  return "no producer";
}

Status v1_inputs(const Graph& g) {
  for (NodeId id : g.node_ids()) {
    const Node& n = g.node(id);
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      ValueId v = n.inputs[i];
      if (v == kNoValue) continue;
      if (!valid_value(g, v)) {
        return invalid_argument("V1: {}: input {} has invalid value id {} (graph has {} values)",
                                node_label(n), i, v, g.num_values());
      }
      if (!is_defined(g, v)) {
        return invalid_argument("V1: {}: input {} refers to value '{}' which no node produces",
                                node_label(n), i, g.value(v).name);
      }
    }
  }
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    ValueId v = g.inputs()[i];
    if (!valid_value(g, v) || !g.value(v).is_graph_input) {
      return invalid_argument("V1: graph input {} (value id {}) is not marked as a graph input", i,
                              v);
    }
  }
  return Status();
}

Status v1_producers(const Graph& g) {
  // value id -> (node, output index) of the first live node output holding it
  std::unordered_map<ValueId, std::pair<NodeId, size_t>> seen;
  for (NodeId id : g.node_ids()) {
    const Node& n = g.node(id);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      ValueId v = n.outputs[i];
      if (!valid_value(g, v)) {
        return invalid_argument("V1: {}: output {} has invalid value id {} (graph has {} values)",
                                node_label(n), i, v, g.num_values());
      }
      const Value& val = g.value(v);
      auto [it, fresh] = seen.emplace(v, std::make_pair(id, i));
      if (!fresh) {
        return invalid_argument(
            "V1: value '{}' is produced twice: by {} output {} and by {} output {}", val.name,
            node_label(g.node(it->second.first)), it->second.second, node_label(n), i);
      }
      if (val.is_graph_input || val.is_constant()) {
        return invalid_argument("V1: {}: output {} value '{}' is also a {}", node_label(n), i,
                                val.name, val.is_graph_input ? "graph input" : "constant");
      }
      if (val.producer != id || val.producer_output != static_cast<int32_t>(i)) {
        return invalid_argument("V1: {}: output {} value '{}' records a different producer ({})",
                                node_label(n), i, val.name, value_origin(g, v));
      }
    }
  }
  return Status();
}

// Values that exist in the graph: graph inputs, constants and outputs of live nodes.
std::vector<ValueId> defined_values(const Graph& g) {
  std::vector<ValueId> out;
  for (size_t i = 0; i < g.num_values(); ++i) {
    auto v = static_cast<ValueId>(i);
    if (is_defined(g, v)) out.push_back(v);
  }
  return out;
}

Status v1_names(const Graph& g) {
  std::unordered_map<std::string_view, ValueId> values;
  for (ValueId v : defined_values(g)) {
    auto [it, fresh] = values.emplace(g.value(v).name, v);
    if (!fresh) {
      return invalid_argument("V1: duplicate value name '{}': {} and {}", g.value(v).name,
                              value_origin(g, it->second), value_origin(g, v));
    }
  }
  std::unordered_map<std::string_view, NodeId> nodes;
  for (NodeId id : g.node_ids()) {
    const Node& n = g.node(id);
    auto [it, fresh] = nodes.emplace(n.name, id);
    if (!fresh) {
      return invalid_argument("V1: duplicate node name '{}': ops {} and {}", n.name,
                              g.node(it->second).op, n.op);
    }
  }
  return Status();
}

Status v1_outputs(const Graph& g) {
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    ValueId v = g.outputs()[i];
    if (!valid_value(g, v)) {
      return invalid_argument("V1: graph output {} has invalid value id {} (graph has {} values)",
                              i, v, g.num_values());
    }
    if (!is_defined(g, v)) {
      return invalid_argument("V1: graph output {} refers to value '{}' which no node produces", i,
                              g.value(v).name);
    }
  }
  if (g.outputs().empty()) return invalid_argument("V1: graph '{}' has no outputs", g.name());
  return Status();
}

Status check_dims(const TensorType& t, std::string_view what) {
  for (int64_t d : t.shape) {
    if (d < 0) {
      return invalid_argument("V2: {} has negative dim {} in type {}", what, d, t.to_string());
    }
  }
  // Element count and byte size must fit (Tensor and the arena use int64/size_t offsets).
  Result<size_t> bytes = checked_nbytes(t.dtype, t.shape);
  if (!bytes.is_ok()) {
    return invalid_argument("V2: {} has type {} that is too large: {}", what, t.to_string(),
                            bytes.status().message());
  }
  return Status();
}

Status v2_types(const Graph& g) {
  for (ValueId v : g.inputs()) {
    const Value& val = g.value(v);
    std::string what = fmt::format("graph input '{}'", val.name);
    if (!val.type) return invalid_argument("V2: {} has no type", what);
    FRAME_RETURN_IF_ERROR(check_dims(*val.type, what));
  }
  for (size_t i = 0; i < g.num_values(); ++i) {
    const Value& val = g.value(static_cast<ValueId>(i));
    if (!val.is_constant() || val.is_graph_input) continue;
    std::string what = fmt::format("constant '{}'", val.name);
    if (!val.type) return invalid_argument("V2: {} has no type", what);
    TensorType actual{val.constant->dtype(), val.constant->shape()};
    if (*val.type != actual) {
      return invalid_argument("V2: {} has type {} but its tensor is {}", what,
                              val.type->to_string(), actual.to_string());
    }
    FRAME_RETURN_IF_ERROR(check_dims(*val.type, what));
  }
  for (NodeId id : g.node_ids()) {
    const Node& n = g.node(id);
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const Value& val = g.value(n.outputs[i]);
      std::string what = fmt::format("{}: output {} value '{}'", node_label(n), i, val.name);
      if (!val.type) return invalid_argument("V2: {} has no type", what);
      FRAME_RETURN_IF_ERROR(check_dims(*val.type, what));
    }
  }
  return Status();
}

}  // namespace

Status Graph::verify(const OpQuery* query) const {
  FRAME_RETURN_IF_ERROR(v1_inputs(*this));
  FRAME_RETURN_IF_ERROR(v1_producers(*this));
  FRAME_RETURN_IF_ERROR(v1_names(*this));
  if (Result<std::vector<NodeId>> order = topological_order(); !order.is_ok()) {
    return invalid_argument("V1: {}", order.status().message());
  }
  FRAME_RETURN_IF_ERROR(v1_outputs(*this));
  FRAME_RETURN_IF_ERROR(v2_types(*this));
  if (query == nullptr) return Status();

  if (query->op_registered) {
    for (NodeId id : node_ids()) {
      const Node& n = node(id);
      if (!query->op_registered(n.op)) {
        return invalid_argument("V3: {}: op '{}' is not registered", detail::node_label(n), n.op);
      }
    }
  }
  if (query->check_schema) {
    constexpr std::string_view kPrefix = "V4: ";
    for (NodeId id : node_ids()) {
      Status s = query->check_schema(node(id));
      if (s.is_ok()) continue;
      // The prefix is added here and only here; tolerate a query that already added it.
      std::string_view msg = s.message();
      if (msg.starts_with(kPrefix)) msg.remove_prefix(kPrefix.size());
      return invalid_argument("V4: {}", msg);
    }
  }
  return Status();
}

}  // namespace frame::ir
