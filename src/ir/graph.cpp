// Graph construction, mutation, compaction and topological order.

#include "frame/ir/graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <queue>
#include <unordered_set>
#include <utility>

#include "frame/core/assert.h"
#include "ir/ir_internal.h"

namespace frame::ir {

namespace detail {

std::string node_label(const Node& n) { return fmt::format("node '{}' ({})", n.name, n.op); }

bool is_defined(const Graph& g, ValueId v) {
  if (!valid_value(g, v)) return false;
  const Value& val = g.value(v);
  if (val.is_graph_input || val.is_constant()) return true;
  if (val.producer < 0 || static_cast<size_t>(val.producer) >= g.num_node_slots()) return false;
  const Node& p = g.node(val.producer);
  return !p.dead && val.producer_output >= 0 &&
         static_cast<size_t>(val.producer_output) < p.outputs.size() &&
         p.outputs[static_cast<size_t>(val.producer_output)] == v;
}

}  // namespace detail

bool matches_op_name_charset(std::string_view name) {
  if (name.empty() || name[0] < 'a' || name[0] > 'z') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

void Graph::NameIndex::insert(uint64_t h, int32_t id) {
  if (2 * (used_ + 1) > slots_.size()) {
    // Grow (or only drop the erased slots): at most half the slots in use after.
    size_t live = 0;
    for (const Slot& sl : slots_) live += sl.id >= 0 ? 1 : 0;
    size_t cap = 16;
    while (cap < 4 * (live + 1)) cap *= 2;
    std::vector<Slot> old = std::exchange(slots_, std::vector<Slot>(cap));
    used_ = 0;
    for (const Slot& sl : old) {
      if (sl.id >= 0) insert(sl.hash, sl.id);
    }
  }
  const size_t mask = slots_.size() - 1;
  size_t i = h & mask;
  while (slots_[i].id != kEmpty) i = (i + 1) & mask;
  slots_[i] = Slot{h, id};
  ++used_;
}

void Graph::NameIndex::erase(std::string_view name, int32_t id) {
  if (id < 0 || slots_.empty()) return;
  const uint64_t h = hash(name);
  const size_t mask = slots_.size() - 1;
  for (size_t i = h & mask; slots_[i].id != kEmpty; i = (i + 1) & mask) {
    if (slots_[i].id == id && slots_[i].hash == h) {
      slots_[i].id = kErased;  // the probe sequences through it stay whole
      return;
    }
  }
}

void Graph::NameIndex::clear() {
  slots_ = {};  // compact() indexes the live names again: the table regrows to their count
  used_ = 0;
}

ValueId Graph::add_input(std::string name, TensorType type) {
  if (name.empty()) name = unique_value_name("input");
  const auto id = static_cast<ValueId>(values_.size());
  Value v;
  v.name = name;
  v.type = std::move(type);
  v.is_graph_input = true;
  values_.push_back(std::move(v));
  inputs_.push_back(id);
  // A clashing name keeps pointing at the first value; verify reports the duplicate (V1).
  value_by_name_.emplace(name, id, [this](ValueId x) { return value_name(x); });
  return id;
}

Status Graph::bind_input(ValueId v, Tensor value) {
  auto it = std::find(inputs_.begin(), inputs_.end(), v);
  if (it == inputs_.end()) {
    return invalid_argument("bind_input: value {} is not a graph input", static_cast<int64_t>(v));
  }
  Value& val = values_[static_cast<size_t>(v)];
  if (val.type && (val.type->dtype != value.dtype() || val.type->shape != value.shape())) {
    return invalid_argument("graph input '{}': the bound value is {}{}, the input is {}{}",
                            val.name, dtype_name(value.dtype()), shape_to_string(value.shape()),
                            dtype_name(val.type->dtype), shape_to_string(val.type->shape));
  }
  inputs_.erase(it);
  val.is_graph_input = false;
  val.type = TensorType{value.dtype(), value.shape()};
  val.constant = std::move(value);
  return Status();
}

ValueId Graph::add_constant(std::string name, Tensor value) {
  if (name.empty()) name = unique_value_name("const");
  const auto id = static_cast<ValueId>(values_.size());
  Value v;
  v.name = name;
  v.type = TensorType{value.dtype(), value.shape()};
  v.constant = std::move(value);
  values_.push_back(std::move(v));
  value_by_name_.emplace(name, id, [this](ValueId x) { return value_name(x); });
  return id;
}

Result<NodeId> Graph::create_node(std::string_view op, std::string name,
                                  std::vector<ValueId> inputs, int num_outputs, AttrMap attrs,
                                  std::vector<std::string> output_names) {
  const std::string shown = name.empty() ? std::string("<unnamed>") : name;
  if (op == kGraphInputOp || op == kGraphOutputMarker) {
    return invalid_argument("node '{}': op name '{}' is reserved for the IR text form", shown, op);
  }
  if (!matches_op_name_charset(op)) {
    return invalid_argument(
        "node '{}': invalid op name '{}' (op names must match ^[a-z][a-z0-9_]*$)", shown, op);
  }
  if (num_outputs < 0) {
    return invalid_argument("node '{}' ({}): negative output count {}", shown, op, num_outputs);
  }
  if (!output_names.empty() && output_names.size() != static_cast<size_t>(num_outputs)) {
    return invalid_argument("node '{}' ({}): {} output names given for {} outputs", shown, op,
                            output_names.size(), num_outputs);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] != kNoValue && !detail::valid_value(*this, inputs[i])) {
      return invalid_argument(
          "node '{}' ({}): input {} has invalid value id {} (graph has {} values)", shown, op, i,
          inputs[i], values_.size());
    }
  }
  if (name.empty()) {
    name = unique_node_name(op);
  } else if (find_node(name) >= 0) {
    return invalid_argument("node '{}' ({}): duplicate node name", name, op);
  }
  // Resolve every output name before mutating, so a failed call leaves the graph unchanged.
  std::vector<std::string> names(static_cast<size_t>(num_outputs));
  std::unordered_set<std::string> taken;
  for (size_t i = 0; i < names.size(); ++i) {
    const bool given = !output_names.empty() && !output_names[i].empty();
    if (given) {
      names[i] = output_names[i];
      if (find_value(names[i]) != kNoValue || taken.count(names[i]) != 0) {
        return invalid_argument(
            "node '{}' ({}): output {} name '{}' is already used by another value", name, op, i,
            names[i]);
      }
    } else {
      std::string base = fmt::format("{}:{}", name, i);
      names[i] = base;
      for (int64_t k = 1; find_value(names[i]) != kNoValue || taken.count(names[i]) != 0; ++k) {
        names[i] = fmt::format("{}_{}", base, k);
      }
    }
    if (names.size() > 1) taken.insert(names[i]);  // one output: nothing to clash with
  }

  const auto id = static_cast<NodeId>(nodes_.size());
  Node n;
  n.id = id;
  n.name = name;
  n.op = std::string(op);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  for (size_t i = 0; i < names.size(); ++i) {
    const auto v = static_cast<ValueId>(values_.size());
    Value val;
    val.name = names[i];
    val.producer = id;
    val.producer_output = static_cast<int32_t>(i);
    values_.push_back(std::move(val));
    value_by_name_.assign(names[i], v, [this](ValueId x) { return value_name(x); });
    n.outputs.push_back(v);
  }
  nodes_.push_back(std::move(n));
  node_by_name_.assign(name, id, [this](NodeId x) { return live_node_name(x); });
  return id;
}

void Graph::add_output(ValueId v) {
  FRAME_ASSERT(detail::valid_value(*this, v), "Graph::add_output: invalid value id");
  outputs_.push_back(v);
}

size_t Graph::num_nodes() const {
  return static_cast<size_t>(
      std::count_if(nodes_.begin(), nodes_.end(), [](const Node& n) { return !n.dead; }));
}

std::vector<NodeId> Graph::node_ids() const {
  std::vector<NodeId> ids;
  ids.reserve(nodes_.size());
  for (const Node& n : nodes_) {
    if (!n.dead) ids.push_back(n.id);
  }
  return ids;
}

std::string_view Graph::value_name(ValueId v) const {
  if (v < 0 || static_cast<size_t>(v) >= values_.size()) return {};
  const Value& val = values_[static_cast<size_t>(v)];
  if (val.producer >= 0 && static_cast<size_t>(val.producer) < nodes_.size() &&
      nodes_[static_cast<size_t>(val.producer)].dead) {
    return {};  // released by remove_node
  }
  return val.name;
}

std::string_view Graph::live_node_name(NodeId n) const {
  if (n < 0 || static_cast<size_t>(n) >= nodes_.size()) return {};
  const Node& node = nodes_[static_cast<size_t>(n)];
  return node.dead ? std::string_view() : std::string_view(node.name);
}

ValueId Graph::find_value(std::string_view name) const {
  // The index is authoritative; a name edited through value() is re-indexed by compact().
  const ValueId v = value_by_name_.find(name, [this](ValueId x) { return value_name(x); });
  return v >= 0 ? v : kNoValue;
}

NodeId Graph::find_node(std::string_view name) const {
  return node_by_name_.find(name, [this](NodeId x) { return live_node_name(x); });
}

std::string Graph::unique_value_name(std::string_view base) {
  std::string b = base.empty() ? std::string("v") : std::string(base);
  if (find_value(b) == kNoValue) return b;
  for (;;) {
    std::string candidate = fmt::format("{}_{}", b, name_counter_++);
    if (find_value(candidate) == kNoValue) return candidate;
  }
}

std::string Graph::unique_node_name(std::string_view base) {
  std::string b = base.empty() ? std::string("node") : std::string(base);
  for (;;) {
    std::string candidate = fmt::format("{}_{}", b, name_counter_++);
    if (find_node(candidate) < 0) return candidate;
  }
}

void Graph::remove_node(NodeId n) {
  FRAME_ASSERT(n >= 0 && static_cast<size_t>(n) < nodes_.size(), "Graph::remove_node: bad id");
  Node& node = nodes_[static_cast<size_t>(n)];
  if (node.dead) return;
  node.dead = true;
  // Its name and its outputs' names are released (a replacement node may take them over)
  // without touching the indexes: a dead node, and a value a dead node produced, have no name
  // there (live_node_name, value_name), so their entries match nothing until compact() drops
  // them.
}

void Graph::rename_value(ValueId v, std::string_view name) {
  FRAME_ASSERT(detail::valid_value(*this, v), "Graph::rename_value: bad id");
  Value& val = values_[static_cast<size_t>(v)];
  value_by_name_.erase(val.name, v);
  val.name = unique_value_name(name);
  value_by_name_.emplace(val.name, v, [this](ValueId x) { return value_name(x); });
}

void Graph::replace_all_uses(ValueId from, ValueId to) {
  for (Node& n : nodes_) {
    if (n.dead) continue;
    std::replace(n.inputs.begin(), n.inputs.end(), from, to);
  }
  std::replace(outputs_.begin(), outputs_.end(), from, to);
}

std::vector<std::vector<NodeId>> Graph::use_lists() const {
  std::vector<std::vector<NodeId>> uses(values_.size());
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    for (ValueId v : n.inputs) {
      if (detail::valid_value(*this, v)) uses[static_cast<size_t>(v)].push_back(n.id);
    }
  }
  return uses;
}

bool Graph::is_output(ValueId v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

void Graph::compact() {
  // Out-of-range ids stay out of range after renumbering instead of aliasing a real value.
  constexpr ValueId kStale = std::numeric_limits<ValueId>::max();
  std::vector<bool> keep(values_.size(), false);
  auto mark = [&](ValueId v) {
    if (detail::valid_value(*this, v)) keep[static_cast<size_t>(v)] = true;
  };
  for (ValueId v : inputs_) mark(v);
  for (ValueId v : outputs_) mark(v);
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    for (ValueId v : n.inputs) mark(v);
    for (ValueId v : n.outputs) mark(v);
  }
  for (size_t i = 0; i < values_.size(); ++i) {
    if (values_[i].is_graph_input) keep[i] = true;
  }

  std::vector<ValueId> value_map(values_.size(), kStale);
  std::vector<Value> values;
  for (size_t i = 0; i < values_.size(); ++i) {
    if (!keep[i]) continue;
    value_map[i] = static_cast<ValueId>(values.size());
    values.push_back(std::move(values_[i]));
  }
  std::vector<NodeId> node_map(nodes_.size(), -1);
  std::vector<Node> nodes;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].dead) continue;
    node_map[i] = static_cast<NodeId>(nodes.size());
    nodes.push_back(std::move(nodes_[i]));
  }
  auto remap = [&](ValueId v) {
    if (v == kNoValue) return kNoValue;
    if (v < 0 || static_cast<size_t>(v) >= value_map.size()) return kStale;
    return value_map[static_cast<size_t>(v)];
  };
  for (Node& n : nodes) {
    n.id = node_map[static_cast<size_t>(n.id)];
    for (ValueId& v : n.inputs) v = remap(v);
    for (ValueId& v : n.outputs) v = remap(v);
  }
  for (Value& v : values) {
    const bool live_producer = v.producer >= 0 &&
                               static_cast<size_t>(v.producer) < node_map.size() &&
                               node_map[static_cast<size_t>(v.producer)] >= 0;
    if (live_producer) {
      v.producer = node_map[static_cast<size_t>(v.producer)];
    } else {
      v.producer = -1;
      v.producer_output = -1;
    }
  }
  for (ValueId& v : inputs_) v = remap(v);
  for (ValueId& v : outputs_) v = remap(v);
  values_ = std::move(values);
  nodes_ = std::move(nodes);

  value_by_name_.clear();
  node_by_name_.clear();
  for (size_t i = 0; i < values_.size(); ++i) {
    value_by_name_.emplace(values_[i].name, static_cast<ValueId>(i),
                           [this](ValueId x) { return value_name(x); });
  }
  for (const Node& n : nodes_) {
    node_by_name_.emplace(n.name, n.id, [this](NodeId x) { return live_node_name(x); });
  }
}

Result<std::vector<NodeId>> Graph::topological_order() const {
  // Producer node of each input edge, or -1 when the input is not produced by a live node.
  auto live_producer = [&](ValueId v) -> NodeId {
    if (!detail::valid_value(*this, v)) return -1;
    const Value& val = values_[static_cast<size_t>(v)];
    if (val.is_graph_input || val.is_constant() || !detail::is_defined(*this, v)) return -1;
    return val.producer;
  };
  // Consumers of each node in one flat array (CSR: node p's are consumers[first[p]..first[p+1])):
  // the interpreted tier orders a graph per first-seen shape, so no allocation per node.
  std::vector<int64_t> indegree(nodes_.size(), 0);
  std::vector<size_t> first(nodes_.size() + 1, 0);
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    for (ValueId v : n.inputs) {
      const NodeId p = live_producer(v);
      if (p < 0) continue;
      ++indegree[static_cast<size_t>(n.id)];
      ++first[static_cast<size_t>(p) + 1];
    }
  }
  for (size_t i = 1; i < first.size(); ++i) first[i] += first[i - 1];
  std::vector<NodeId> consumers(first.back());
  {
    std::vector<size_t> fill(first.begin(), first.end() - 1);
    for (const Node& n : nodes_) {
      if (n.dead) continue;
      for (ValueId v : n.inputs) {
        const NodeId p = live_producer(v);
        if (p >= 0) consumers[fill[static_cast<size_t>(p)]++] = n.id;
      }
    }
  }
  // Min-heap on node id: among ready nodes the earliest inserted goes first (stable order).
  std::priority_queue<NodeId, std::vector<NodeId>, std::greater<>> ready;
  for (const Node& n : nodes_) {
    if (!n.dead && indegree[static_cast<size_t>(n.id)] == 0) ready.push(n.id);
  }
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  while (!ready.empty()) {
    NodeId n = ready.top();
    ready.pop();
    order.push_back(n);
    for (size_t i = first[static_cast<size_t>(n)]; i < first[static_cast<size_t>(n) + 1]; ++i) {
      const NodeId c = consumers[i];
      if (--indegree[static_cast<size_t>(c)] == 0) ready.push(c);
    }
  }
  if (order.size() == num_nodes()) return order;

  // Every node left has an input produced by another node left, so walking producers from
  // any of them must revisit a node; the revisited stretch is a cycle.
  NodeId start = -1;
  for (const Node& n : nodes_) {
    if (!n.dead && indegree[static_cast<size_t>(n.id)] > 0) {
      start = n.id;
      break;
    }
  }
  std::vector<NodeId> path;
  std::vector<int64_t> pos(nodes_.size(), -1);
  NodeId cur = start;
  while (pos[static_cast<size_t>(cur)] < 0) {
    pos[static_cast<size_t>(cur)] = static_cast<int64_t>(path.size());
    path.push_back(cur);
    NodeId next = -1;
    for (ValueId v : nodes_[static_cast<size_t>(cur)].inputs) {
      NodeId p = live_producer(v);
      if (p >= 0 && indegree[static_cast<size_t>(p)] > 0) {
        next = p;
        break;
      }
    }
    FRAME_ASSERT(next >= 0, "topological_order: cycle walk lost its way");
    cur = next;
  }
  std::vector<NodeId> cycle(path.begin() + pos[static_cast<size_t>(cur)], path.end());
  std::reverse(cycle.begin(), cycle.end());  // producer -> consumer order
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  std::string chain;
  for (NodeId n : cycle) chain += nodes_[static_cast<size_t>(n)].name + " -> ";
  chain += nodes_[static_cast<size_t>(cycle.front())].name;
  return invalid_argument("graph '{}' is cyclic: {} is on the cycle {}", name_,
                          detail::node_label(nodes_[static_cast<size_t>(cycle.front())]), chain);
}

}  // namespace frame::ir
