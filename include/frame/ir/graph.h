#pragma once
/// \file
/// The IR: a `Graph` of `Node`s connected by SSA `Value`s, with graph inputs, constants
/// (initializers) and outputs; topological order; and `Graph::verify` (checks V1–V4,
/// defined in docs/architecture/ir-design.md).

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/types.h"

namespace frame::ir {

/// Reserved op names (ARCH-040): used by the text form for graph inputs and the output list;
/// no op may be registered under them.
inline constexpr std::string_view kGraphInputOp = "graph_input";
inline constexpr std::string_view kGraphOutputMarker = "graph_output";

/// The one op-name charset check, `^[a-z][a-z0-9_]*$` (ARCH-040), shared by the op registry
/// and `Graph::create_node`.
bool matches_op_name_charset(std::string_view name);

using ValueId = int32_t;
using NodeId = int32_t;
/// An absent optional input (ONNX empty input name).
inline constexpr ValueId kNoValue = -1;

/// An SSA value: produced by exactly one node output, or a graph input, or a constant.
struct Value {
  std::string name;
  std::optional<TensorType> type;  ///< set by import, construction or shape inference
  NodeId producer = -1;            ///< -1 for graph inputs and constants
  int32_t producer_output = -1;
  bool is_graph_input = false;
  std::optional<Tensor> constant;  ///< initializer / folded value
  bool is_constant() const { return constant.has_value(); }
};

/// Attributes of a node, by name.
using AttrMap = std::unordered_map<std::string, AttrValue>;

/// An operation. Inputs may hold kNoValue for absent optional inputs.
struct Node {
  NodeId id = -1;
  std::string name;
  std::string op;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  AttrMap attrs;
  bool dead = false;  ///< removed; skipped by every iteration, dropped by compact()
};

/// What Graph::verify needs from the op registry (V3/V4), supplied by
/// `ops::make_op_query()` so ir never depends on ops (ARCH-001).
struct OpQuery {
  /// True if `op` is registered (V3).
  std::function<bool(std::string_view op)> op_registered;
  /// Schema check of one node (V4): arity (incl. variadic min_input_count), required attrs,
  /// attr types, undeclared attrs. Messages carry no "V4: " prefix; verify adds it.
  std::function<Status(const Node& node)> check_schema;
};

/// A dataflow graph. Ids index into vectors and stay valid until compact().
/// Not thread-safe for mutation; const methods may be called concurrently.
class Graph {
 public:
  Graph() = default;
  explicit Graph(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  /// Adds a graph input with a known type. Returns its id.
  ValueId add_input(std::string name, TensorType type);
  /// Adds a constant (initializer); its type is taken from the tensor.
  ValueId add_constant(std::string name, Tensor value);
  /// Turns graph input `v` into a constant holding `value` (it leaves the input list; name and
  /// uses are kept), e.g. a shape-determining input bound per run (ADR 0006). Errors:
  /// kInvalidArgument when `v` is not a graph input or `value` differs from its dtype or
  /// shape, naming the input and expected vs actual.
  Status bind_input(ValueId v, Tensor value);
  /// Adds a node. `op` must match the op-name charset and not be a reserved name; the node
  /// gets `num_outputs` fresh values named `<node name>:<i>` unless `output_names` is given.
  /// An empty `name` gets a generated unique one. Errors: kInvalidArgument on a bad op
  /// name, a reserved name, an out-of-range input id, or an output-name clash.
  Result<NodeId> create_node(std::string_view op, std::string name, std::vector<ValueId> inputs,
                             int num_outputs, AttrMap attrs = {},
                             std::vector<std::string> output_names = {});
  /// Marks `v` as a graph output (in order). Aborts on an invalid id.
  void add_output(ValueId v);
  void set_outputs(std::vector<ValueId> outputs) { outputs_ = std::move(outputs); }

  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  Value& value(ValueId v) { return values_[static_cast<size_t>(v)]; }
  const Value& value(ValueId v) const { return values_[static_cast<size_t>(v)]; }
  Node& node(NodeId n) { return nodes_[static_cast<size_t>(n)]; }
  const Node& node(NodeId n) const { return nodes_[static_cast<size_t>(n)]; }
  /// Number of value / node slots (including dead nodes).
  size_t num_values() const { return values_.size(); }
  size_t num_node_slots() const { return nodes_.size(); }
  /// Number of live nodes.
  size_t num_nodes() const;
  /// Ids of live nodes in insertion order.
  std::vector<NodeId> node_ids() const;
  /// Value id by name, or kNoValue.
  ValueId find_value(std::string_view name) const;
  /// Live node by name, or -1.
  NodeId find_node(std::string_view name) const;
  /// A value name not used yet, derived from `base`.
  std::string unique_value_name(std::string_view base);
  /// A node name not used yet, derived from `base`.
  std::string unique_node_name(std::string_view base);

  /// Removes a node (its outputs keep existing as dangling values until compact()).
  void remove_node(NodeId n);
  /// Renames value `v` to `name` (made unique if taken): `v`'s old name is released, so a new
  /// value may take it over (the ONNX importer's re-typing replaces a value that way). A value
  /// whose producing node was removed has no name in the index: find_value does not find it
  /// by its new name either, until compact() makes it a producer-less value.
  void rename_value(ValueId v, std::string_view name);
  /// Replaces every use of `from` (node inputs and graph outputs) by `to`.
  void replace_all_uses(ValueId from, ValueId to);
  /// For each value, the live nodes that read it (a node reading twice appears twice).
  std::vector<std::vector<NodeId>> use_lists() const;
  /// True if `v` is a graph output.
  bool is_output(ValueId v) const;
  /// Drops dead nodes and values nothing refers to; renumbers ids (old ids become invalid).
  void compact();

  /// Live nodes in a topological order (stable: ties keep insertion order).
  /// Errors: kInvalidArgument naming a node on a cycle.
  Result<std::vector<NodeId>> topological_order() const;

  /// Checks V1 (structure) and V2 (types present and consistent) and, with `query`, V3 (op
  /// registered) and V4 (schema). The message starts with "V1: ".."V4: " and names the node,
  /// op and value concerned. `query` may be null to check only V1/V2.
  Status verify(const OpQuery* query) const;
  Status verify(const OpQuery& query) const { return verify(&query); }

 private:
  std::string name_ = "main";
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  /// Ids by name, keyed by the name's hash (names are compared against the value or node
  /// itself): copying a graph then copies integers, not every name again (the interpreted tier
  /// copies a model's graph per first-seen shape). At most one entry per live name; the entries
  /// of removed nodes' names and of names changed through value() stay until compact(), and
  /// match nothing (the name compared is the value's or node's own). One flat open-addressing
  /// table (linear probing, at most half full counting erased slots), so a copy is one memcpy;
  /// a node-based hash multimap cost an allocation per name in every copy (a sixth of the
  /// interpreted tier's re-typing on a BERT-style encoder).
  class NameIndex {
   public:
    /// The id whose name (`name_of(id)`) is `name`, or -1.
    template <typename NameOf>
    int32_t find(std::string_view name, const NameOf& name_of) const {
      if (slots_.empty()) return -1;
      const uint64_t h = hash(name);
      const size_t mask = slots_.size() - 1;
      for (size_t i = h & mask;; i = (i + 1) & mask) {
        const Slot& s = slots_[i];
        if (s.id == kEmpty) return -1;
        if (s.id >= 0 && s.hash == h && name_of(s.id) == name) return s.id;
      }
    }
    /// Indexes `id` under `name` unless another id holds the name (the first one stays).
    template <typename NameOf>
    void emplace(std::string_view name, int32_t id, const NameOf& name_of) {
      if (find(name, name_of) < 0) insert(hash(name), id);
    }
    /// Indexes `id` under `name`, replacing the id that held it.
    template <typename NameOf>
    void assign(std::string_view name, int32_t id, const NameOf& name_of) {
      erase(name, find(name, name_of));
      insert(hash(name), id);
    }
    /// Drops `id`'s entry under `name`, if it has one.
    void erase(std::string_view name, int32_t id);
    void clear();

   private:
    static constexpr int32_t kEmpty = -1;
    static constexpr int32_t kErased = -2;
    struct Slot {
      uint64_t hash = 0;
      int32_t id = kEmpty;
    };
    static uint64_t hash(std::string_view name) { return std::hash<std::string_view>{}(name); }
    void insert(uint64_t h, int32_t id);
    std::vector<Slot> slots_;  // size 0 or a power of two
    size_t used_ = 0;          // slots holding an id or erased
  };
  // Names of value / node `id` for the indexes: "" when out of range, for a dead node, and for
  // a value a dead node produced (remove_node releases their names this way).
  std::string_view value_name(ValueId v) const;
  std::string_view live_node_name(NodeId n) const;

  NameIndex value_by_name_;
  NameIndex node_by_name_;
  int64_t name_counter_ = 0;
};

}  // namespace frame::ir
