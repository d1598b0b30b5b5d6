// cse: common-subexpression elimination by structural hashing of (op, attrs, inputs, output
// count). Inputs of kCommutative ops are normalised (sorted); kHasSideEffect nodes are never
// merged. Small bytewise-equal constants are merged first so their users can match
// (docs/architecture/compiler-passes.md "cse").

#include <algorithm>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frame/ops/op_registry.h"
#include "frame/ops/subgraph.h"
#include "passes/pass_factories.h"
#include "passes/pass_util.h"

namespace frame::passes {

namespace {

// Constants up to this size are compared bytewise; larger ones are rarely duplicated.
constexpr size_t kMergeConstantBytes = 4096;
// Rounds of node merging; a round only misses merges after a survivor swap (see merge()).
constexpr int kMaxRounds = 4;

size_t mix(size_t h, size_t v) { return h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)); }

std::vector<ir::ValueId> normalised_inputs(const ir::Node& n, const ops::OpSchema& schema) {
  std::vector<ir::ValueId> in = n.inputs;
  const bool all_present = std::find(in.begin(), in.end(), ir::kNoValue) == in.end();
  // Only operand order may change; an absent optional input keeps its position.
  if (schema.has_trait(ops::OpTrait::kCommutative) && all_present) {
    std::sort(in.begin(), in.end());
  }
  return in;
}

size_t node_hash(const ir::Node& n, const std::vector<ir::ValueId>& inputs) {
  size_t h = std::hash<std::string>{}(n.op);
  h = mix(h, n.outputs.size());
  for (ir::ValueId v : inputs) h = mix(h, std::hash<ir::ValueId>{}(v));
  // Order independent: the attribute map is unordered.
  size_t attrs = 0;
  for (const auto& [name, value] : n.attrs) {
    attrs += mix(std::hash<std::string>{}(name), ir::attr_hash(value));
  }
  return mix(h, attrs);
}

bool same_attrs(const ir::AttrMap& a, const ir::AttrMap& b) {
  if (a.size() != b.size()) return false;
  for (const auto& [name, value] : a) {
    auto it = b.find(name);
    if (it == b.end() || !ir::attr_equal(value, it->second)) return false;
  }
  return true;
}

size_t constant_hash(const Tensor& t) {
  size_t h = mix(std::hash<int>{}(static_cast<int>(t.dtype())), t.shape().size());
  for (int64_t d : t.shape()) h = mix(h, std::hash<int64_t>{}(d));
  const std::string_view bytes(static_cast<const char*>(t.raw_data()), t.nbytes());
  return mix(h, std::hash<std::string_view>{}(bytes));
}

class CsePass final : public Pass {
 public:
  std::string_view name() const override { return "cse"; }

  Status run(ir::Graph& g, PassContext&) override {
    UseIndex uses(g);
    bool changed = merge_constants(g, uses);
    for (int round = 0; round < kMaxRounds; ++round) {
      FRAME_ASSIGN_OR_RETURN(bool merged, merge_nodes(g, uses));
      if (!merged) break;
      changed = true;
    }
    // Drops merged nodes and the constants nothing reads any more.
    if (changed) g.compact();
    return Status();
  }

 private:
  static bool merge_constants(ir::Graph& g, UseIndex& uses) {
    std::unordered_multimap<size_t, ir::ValueId> seen;
    bool changed = false;
    for (size_t i = 0; i < g.num_values(); ++i) {
      const auto v = static_cast<ir::ValueId>(i);
      const ir::Value& val = g.value(v);
      if (!val.is_constant() || val.is_graph_input || val.producer >= 0) continue;
      if (val.constant->nbytes() > kMergeConstantBytes) continue;
      const size_t h = constant_hash(*val.constant);
      ir::ValueId same = ir::kNoValue;
      for (auto [it, end] = seen.equal_range(h); it != end; ++it) {
        if (g.value(it->second).constant->bitwise_equal(*val.constant) &&
            g.value(it->second).type == val.type) {
          same = it->second;
          break;
        }
      }
      // A graph output keeps its own constant: outputs are identified by name.
      if (same == ir::kNoValue || g.is_output(v)) {
        seen.emplace(h, v);
        continue;
      }
      uses.replace(g, v, same);
      changed = true;
    }
    return changed;
  }

  static Result<bool> merge_nodes(ir::Graph& g, UseIndex& uses) {
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    std::unordered_multimap<size_t, ir::NodeId> table;
    bool changed = false;
    for (ir::NodeId id : order) {
      const ir::Node& n = g.node(id);
      const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
      if (schema == nullptr || ops::node_has_side_effect(n)) continue;
      const std::vector<ir::ValueId> inputs = normalised_inputs(n, *schema);
      const size_t h = node_hash(n, inputs);
      auto match = table.end();
      for (auto [it, end] = table.equal_range(h); it != end; ++it) {
        const ir::Node& other = g.node(it->second);
        if (other.op == n.op && other.outputs.size() == n.outputs.size() &&
            normalised_inputs(other, *schema) == inputs && same_attrs(other.attrs, n.attrs)) {
          match = it;
          break;
        }
      }
      if (match == table.end()) {
        table.emplace(h, id);
        continue;
      }
      const ir::NodeId survivor = merge(g, match->second, id, uses);
      if (survivor < 0) continue;
      match->second = survivor;
      changed = true;
    }
    return changed;
  }

  // Merges two equivalent nodes and returns the one kept, or -1 when both must stay.
  // Normally the earlier node `a` is kept. When only `b` produces graph outputs, `b` is kept
  // so the output names survive; that is legal because both read the same values.
  static ir::NodeId merge(ir::Graph& g, ir::NodeId a, ir::NodeId b, UseIndex& uses) {
    bool a_outputs = false;
    bool b_outputs = false;
    for (size_t i = 0; i < g.node(a).outputs.size(); ++i) {
      const bool ao = g.is_output(g.node(a).outputs[i]);
      const bool bo = g.is_output(g.node(b).outputs[i]);
      if (ao && bo) return -1;  // two distinct output names need two values
      a_outputs |= ao;
      b_outputs |= bo;
    }
    if (a_outputs && b_outputs) return -1;
    const ir::NodeId keep = b_outputs ? b : a;
    const ir::NodeId drop = b_outputs ? a : b;
    const std::vector<ir::ValueId> keep_out = g.node(keep).outputs;
    const std::vector<ir::ValueId> drop_out = g.node(drop).outputs;
    g.remove_node(drop);
    for (size_t i = 0; i < drop_out.size(); ++i) uses.replace(g, drop_out[i], keep_out[i]);
    return keep;
  }
};

}  // namespace

std::unique_ptr<Pass> make_cse_pass() { return std::make_unique<CsePass>(); }

}  // namespace frame::passes
