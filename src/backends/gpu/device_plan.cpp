// The memory plan of a device group, shared by the GPU backends (device_plan.h).

#include "backends/gpu/device_plan.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace frame::backends::gpu {
namespace {

// Blocks and offsets for `slots` (see plan_device_group). Returns each block's bytes.
Result<std::vector<size_t>> plan_offsets(std::vector<DeviceSlot>& slots, size_t align,
                                         size_t max_block, std::string_view backend) {
  std::vector<size_t> order(slots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return slots[a].bytes > slots[b].bytes; });
  std::vector<size_t> placed;
  std::vector<size_t> blocks;
  std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of live placed slots
  for (size_t i : order) {
    DeviceSlot& s = slots[i];
    if (s.bytes == 0) continue;
    if (s.bytes > max_block) {
      return internal_error(
          "{}: value '{}' has {} bytes, more than the device's largest buffer ({} bytes)", backend,
          s.name, s.bytes, max_block);
    }
    for (size_t b = 0;; ++b) {
      busy.clear();
      for (size_t j : placed) {
        const DeviceSlot& o = slots[j];
        if (o.block == b && o.first <= s.last && s.first <= o.last) {
          busy.emplace_back(o.offset, o.offset + o.bytes);
        }
      }
      std::sort(busy.begin(), busy.end());
      size_t at = 0;
      for (const auto& [begin, end] : busy) {
        if (at + s.bytes <= begin) break;
        at = std::max(at, (end + align - 1) / align * align);
      }
      if (at + s.bytes > max_block) continue;  // a later (or new) block
      if (b == blocks.size()) blocks.push_back(0);
      s.block = b;
      s.offset = at;
      blocks[b] = std::max(blocks[b], at + s.bytes);
      break;
    }
    placed.push_back(i);
  }
  return blocks;
}

}  // namespace

size_t DevicePlan::copies_in() const {
  size_t n = 0;
  for (int s : input_slot) {
    if (s != kNoSlot && !slots[static_cast<size_t>(s)].constant) ++n;
  }
  return n;
}

Result<DevicePlan> plan_device_group(const ops::DeviceGroupSpec& spec, std::span<const NodeIO> io,
                                     size_t align, size_t max_block, std::string_view backend) {
  const ir::Graph& g = *spec.graph;
  const int n = static_cast<int>(spec.nodes.size());
  if (io.size() != spec.nodes.size()) {
    return internal_error("{}: {} node plans for a group of {} nodes", backend, io.size(),
                          spec.nodes.size());
  }
  DevicePlan plan;
  std::unordered_map<ir::ValueId, int> slot_of;
  auto slot_for = [&](ir::ValueId v, int first) -> int {
    auto [it, fresh] = slot_of.emplace(v, static_cast<int>(plan.slots.size()));
    if (fresh) {
      DeviceSlot s;
      s.value = v;
      const ir::Value& val = g.value(v);
      s.bytes = static_cast<size_t>(numel_of(val.type->shape)) * dtype_size(val.type->dtype);
      s.first = first;
      s.last = first;
      s.constant = val.is_constant();
      if (s.constant) s.host = &*val.constant;
      s.name = val.name;
      plan.slots.push_back(std::move(s));
    }
    return it->second;
  };
  std::unordered_set<ir::ValueId> inside;
  for (ir::NodeId id : spec.nodes) {
    for (ir::ValueId v : g.node(id).outputs) inside.insert(v);
  }
  for (int i = 0; i < n; ++i) {
    const ir::Node& node = g.node(spec.nodes[static_cast<size_t>(i)]);
    const NodeIO& nio = io[static_cast<size_t>(i)];
    if (node.outputs.size() != 1) {
      return internal_error("node '{}' ({}): {} outputs, a {} device group node has one", node.name,
                            node.op, node.outputs.size(), backend);
    }
    std::vector<int> ins;
    for (size_t k = 0; k < nio.in_bytes.size(); ++k) {
      const ir::ValueId v = k < node.inputs.size() ? node.inputs[k] : ir::kNoValue;
      if (v == ir::kNoValue || nio.in_bytes[k] == 0) {
        ins.push_back(kNoSlot);
        continue;
      }
      const int s = slot_for(v, inside.count(v) != 0 ? i : 0);
      DeviceSlot& slot = plan.slots[static_cast<size_t>(s)];
      slot.last = i;
      if (slot.bytes != nio.in_bytes[k]) {
        return internal_error("node '{}' ({}): input {} has {} bytes, the kernel reads {}",
                              node.name, node.op, k, slot.bytes, nio.in_bytes[k]);
      }
      ins.push_back(s);
    }
    const int out = slot_for(node.outputs[0], i);
    if (plan.slots[static_cast<size_t>(out)].bytes != nio.out_bytes) {
      return internal_error("node '{}' ({}): output has {} bytes, the kernel writes {}", node.name,
                            node.op, plan.slots[static_cast<size_t>(out)].bytes, nio.out_bytes);
    }
    plan.node_inputs.push_back(std::move(ins));
    plan.node_output.push_back(out);
  }
  for (ir::ValueId v : spec.inputs) {
    auto it = v == ir::kNoValue ? slot_of.end() : slot_of.find(v);
    plan.input_slot.push_back(it == slot_of.end() ? kNoSlot : it->second);
  }
  for (ir::ValueId v : spec.outputs) {
    auto it = slot_of.find(v);
    if (it == slot_of.end()) {
      return internal_error("device group output '{}' has no slot", g.value(v).name);
    }
    plan.slots[static_cast<size_t>(it->second)].last = n;
    plan.output_slot.push_back(it->second);
  }
  // Inputs read back after the run stay alive to the group's end.
  for (int i = 0; i < n; ++i) {
    const int keep = io[static_cast<size_t>(i)].keep_input;
    if (keep < 0) continue;
    const std::vector<int>& ins = plan.node_inputs[static_cast<size_t>(i)];
    if (static_cast<size_t>(keep) < ins.size() && ins[static_cast<size_t>(keep)] != kNoSlot) {
      plan.slots[static_cast<size_t>(ins[static_cast<size_t>(keep)])].last = n;
    }
  }
  // Constants are uploaded once per run slot: alive for the whole run.
  for (DeviceSlot& s : plan.slots) {
    if (s.constant) {
      s.first = 0;
      s.last = n;
    }
  }
  FRAME_ASSIGN_OR_RETURN(plan.blocks, plan_offsets(plan.slots, align, max_block, backend));
  for (size_t b : plan.blocks) plan.device_bytes += b;
  return plan;
}

}  // namespace frame::backends::gpu
