// memory-planning (docs/architecture/compiler-passes.md#memory-planning): gives every value a
// node produces a slot in one arena. Lifetimes run over the topological order from the
// producing step to the last reading step. Slots are 64-byte aligned and assigned best-fit
// (the smallest free block that fits; adjacent free blocks merge).
//
// Not planned: graph inputs and constants (the caller's / the graph's memory) and graph
// outputs (the runtime allocates them per run, so results never alias the arena).
// In place: a node's output takes an input's slot when the op is kElementwise (its kernels read
// position i before writing position i), the input's last use is this node, dtype and byte size
// match (so both index identically) and the input is planned. Variadic ops fold into the
// output, so only their input 0 may be overwritten. A kernel may also declare, per node, one
// input its output 0 may be written over (KernelDef::in_place_input: the onednn conv whose
// residual a sum post-op adds onto its output); that input must then be read at no other
// position of the node, since the kernel reads the others while it writes.
// An output nobody reads still gets its own slot, released after its step, so a kernel's
// write never lands in a live buffer.

#include <algorithm>
#include <map>
#include <memory>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "passes/pass_factories.h"

namespace frame::passes {
namespace {

size_t align_up(size_t n) {
  return (n + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

// Free blocks of the arena, by offset; the arena grows at its end when nothing fits.
class Arena {
 public:
  size_t allocate(size_t bytes) {
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second >= bytes && (best == free_.end() || it->second < best->second)) best = it;
    }
    if (best != free_.end()) {
      const size_t off = best->first;
      const size_t rest = best->second - bytes;
      free_.erase(best);
      if (rest > 0) free_[off + bytes] = rest;
      return off;
    }
    // Grow, reusing a free block that ends at the arena's end.
    size_t off = end_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == end_) {
        off = last->first;
        free_.erase(last);
      }
    }
    end_ = off + bytes;
    peak_ = std::max(peak_, end_);
    return off;
  }
  void release(size_t off, size_t bytes) {
    if (bytes == 0) return;
    auto it = free_.emplace(off, bytes).first;
    if (auto next = std::next(it); next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  size_t peak() const { return peak_; }

 private:
  std::map<size_t, size_t> free_;
  size_t end_ = 0;
  size_t peak_ = 0;
};

class MemoryPlanningPass final : public Pass {
 public:
  std::string_view name() const override { return "memory-planning"; }
  Status run(ir::Graph& g, PassContext& ctx) override;
};

Status MemoryPlanningPass::run(ir::Graph& g, PassContext& ctx) {
  ctx.buffers.clear();
  ctx.peak_arena_bytes = 0;
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  const size_t nv = g.num_values();
  auto planned = [&](ir::ValueId v) {
    const ir::Value& val = g.value(v);
    return val.producer >= 0 && !val.is_graph_input && !val.is_constant() && !g.is_output(v);
  };
  // last[v] = step of the last read (the producing step when never read).
  std::vector<int> last(nv, -1);
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g.node(order[i]);
    for (ir::ValueId v : n.outputs) last[static_cast<size_t>(v)] = static_cast<int>(i);
  }
  for (size_t i = 0; i < order.size(); ++i) {
    for (ir::ValueId v : g.node(order[i]).inputs) {
      if (v != ir::kNoValue) last[static_cast<size_t>(v)] = static_cast<int>(i);
    }
  }

  Arena arena;
  size_t bump = 0;  // reuse_buffers == false: every value gets a fresh slot
  std::vector<std::vector<ir::ValueId>> release_at(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const ir::Node& n = g.node(order[i]);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    const bool elementwise = schema != nullptr && schema->has_trait(ops::OpTrait::kElementwise);
    // A view op (reshape, flatten, ...) may take its input's buffer as elementwise ops do, but
    // only from that input (OpSchema::view_of_input): the kernel then copies nothing.
    const int view = schema != nullptr ? schema->view_of_input() : -1;
    // The placed kernel's own in-place input (KernelDef::in_place_input), for output 0.
    int kernel_in_place = -1;
    if (ctx.allow_inplace && ctx.reuse_buffers && schema != nullptr && !elementwise && view < 0 &&
        !n.outputs.empty() && planned(n.outputs[0])) {
      const auto pl = ctx.placements.find(order[i]);
      const ops::KernelDef* k = pl == ctx.placements.end()
                                    ? nullptr
                                    : ops::KernelRegistry::global().find(n.op, pl->second.backend);
      if (k != nullptr && k->in_place_input != nullptr) {
        kernel_in_place = k->in_place_input(ops::make_node_context(g, n, schema));
        const auto k_in = static_cast<size_t>(kernel_in_place);
        if (kernel_in_place >= 0 && k_in < n.inputs.size()) {
          for (size_t j = 0; j < n.inputs.size(); ++j) {
            if (j != k_in && n.inputs[j] == n.inputs[k_in]) kernel_in_place = -1;
          }
        } else {
          kernel_in_place = -1;
        }
      }
    }
    std::vector<bool> donated(n.inputs.size(), false);
    for (ir::ValueId out : n.outputs) {
      if (!planned(out)) continue;
      const ir::Value& ov = g.value(out);
      if (!ov.type) {
        return invalid_argument("node '{}' ({}): output '{}' has no type (run shape-inference)",
                                n.name, n.op, ov.name);
      }
      FRAME_ASSIGN_OR_RETURN(size_t bytes, checked_nbytes(ov.type->dtype, ov.type->shape));
      BufferSlot slot;
      slot.bytes = bytes;
      bool placed = false;
      const int only_input = out == n.outputs[0] && kernel_in_place >= 0 ? kernel_in_place : view;
      if (ctx.allow_inplace && ctx.reuse_buffers && (elementwise || only_input >= 0)) {
        const size_t candidates = schema->has_variadic_inputs() ? 1 : n.inputs.size();
        for (size_t k = 0; k < candidates && k < n.inputs.size() && !placed; ++k) {
          if (!elementwise && static_cast<int>(k) != only_input) continue;
          const ir::ValueId in = n.inputs[k];
          if (in == ir::kNoValue || donated[k] || !planned(in)) continue;
          const ir::Value& iv = g.value(in);
          if (last[static_cast<size_t>(in)] != static_cast<int>(i) || !iv.type ||
              iv.type->dtype != ov.type->dtype || ctx.buffers.at(in).bytes != bytes) {
            continue;
          }
          // The same value read at another position of this node is fine for fixed-arity
          // elementwise kernels (they read every operand at position i before writing it), but
          // a variadic kernel folds operands left to right through its output, so operand
          // k >= 2 would be read after the output overwrote it.
          bool reread_later = false;
          if (schema->has_variadic_inputs()) {
            for (size_t j = 2; j < n.inputs.size(); ++j) reread_later |= n.inputs[j] == in;
          }
          if (reread_later) continue;
          for (size_t j = 0; j < n.inputs.size(); ++j) donated[j] = donated[j] || n.inputs[j] == in;
          slot.offset = ctx.buffers.at(in).offset;
          slot.in_place = true;
          placed = true;
          // The output inherits the input's slot, and with it the duty to release it.
          auto& rel = release_at[static_cast<size_t>(last[static_cast<size_t>(in)])];
          rel.erase(std::remove(rel.begin(), rel.end(), in), rel.end());
        }
      }
      if (!placed) {
        if (ctx.reuse_buffers) {
          slot.offset = arena.allocate(align_up(bytes));
        } else {
          slot.offset = bump;
          bump += align_up(bytes);
        }
      }
      ctx.buffers[out] = slot;
      release_at[static_cast<size_t>(last[static_cast<size_t>(out)])].push_back(out);
    }
    // Released only after the step's outputs are placed: no output shares a buffer its node
    // still reads (except the in-place case above).
    if (ctx.reuse_buffers) {
      for (ir::ValueId v : release_at[i]) {
        arena.release(ctx.buffers.at(v).offset, align_up(ctx.buffers.at(v).bytes));
      }
    }
  }
  ctx.peak_arena_bytes = ctx.reuse_buffers ? arena.peak() : bump;
  return Status();
}

}  // namespace

std::unique_ptr<Pass> make_memory_planning_pass() { return std::make_unique<MemoryPlanningPass>(); }

}  // namespace frame::passes
