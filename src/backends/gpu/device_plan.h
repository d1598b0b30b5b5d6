#pragma once
/// \file
/// The memory plan of a device group (include/frame/ops/device_group.h), shared by the GPU
/// backends (`intel_gpu`, `cuda`; docs/backends/gpu-codegen.md "Device groups"): which values
/// of a run of nodes live in device memory, where (block and byte offset), and which of them
/// cross the group's boundary. A run slot then allocates one device buffer per block and
/// places every value at its offset; boundary inputs are copied in before the first node and
/// boundary outputs out after the last, with nothing copied in between.
///
/// The plan is host-only arithmetic over the graph and the byte counts the backend's prepared
/// kernels declare, so it is tested without a device (tests/cpp/gpu/device_plan_test.cpp).

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ops/device_group.h"

namespace frame::backends::gpu {

/// DevicePlan's "no slot" (an absent input, or one only the host reads).
inline constexpr int kNoSlot = -1;

/// One value a group's kernels read or write on the device.
struct DeviceSlot {
  ir::ValueId value = ir::kNoValue;
  size_t bytes = 0;
  size_t block = 0;   ///< which of the run slot's device buffers holds it
  size_t offset = 0;  ///< in that buffer, a multiple of the plan's alignment
  int first = 0;      ///< index of its producer in the group (0 for boundary inputs and constants)
  int last = 0;       ///< last node index reading it; the node count for boundary outputs
  bool constant = false;         ///< uploaded once per run slot, alive for the whole run
  const Tensor* host = nullptr;  ///< a constant's data (owned by the graph)
  std::string name;
};

/// What one prepared kernel of the group reads and writes on the device.
struct NodeIO {
  /// Per leading input of the node the kernel reads on the device: its bytes, 0 when the
  /// optional input is absent or stays on the host. Inputs past the end stay on the host.
  std::vector<size_t> in_bytes;
  size_t out_bytes = 0;  ///< of the node's single output
  /// An input (index into in_bytes) whose device memory must stay unchanged until the group's
  /// end, -1 for none: a kernel that reports bad data found on the device (cuda's gather) has
  /// the bad element read back after the run.
  int keep_input = -1;
};

/// The plan of one group.
struct DevicePlan {
  std::vector<DeviceSlot> slots;
  /// Per node, per NodeIO::in_bytes entry: its slot, kNoSlot when not read on the device.
  std::vector<std::vector<int>> node_inputs;
  std::vector<int> node_output;  ///< per node, the slot of its output
  /// Per DeviceGroupSpec::inputs entry: its slot, kNoSlot when no kernel reads it on the device.
  std::vector<int> input_slot;
  std::vector<int> output_slot;  ///< per DeviceGroupSpec::outputs entry
  std::vector<size_t> blocks;    ///< bytes of each device buffer of a run slot
  size_t device_bytes = 0;       ///< sum of `blocks`

  /// Values copied host -> device per run (boundary inputs that are not constants).
  size_t copies_in() const;
  /// Values copied device -> host per run (boundary outputs).
  size_t copies_out() const { return output_slot.size(); }
};

/// Plans the group `spec` whose node i's kernel reads and writes `io[i]` (one output per
/// node). Slots are placed largest first, each at the lowest `align`-aligned offset that
/// overlaps no placed slot alive at the same time (the host memory planner's rule, docs/
/// architecture/compiler-passes.md), in the first block where it then ends within `max_block`
/// bytes (a device's largest single buffer). `backend` names the backend in errors.
/// Errors: kInternal when a node's declared bytes differ from its value's type ("node 'n'
/// (op): input 1 has 64 bytes, the kernel reads 32"), a node has not one output, a group
/// output is produced by no node, or a value is larger than `max_block`.
Result<DevicePlan> plan_device_group(const ops::DeviceGroupSpec& spec, std::span<const NodeIO> io,
                                     size_t align, size_t max_block, std::string_view backend);

/// The part of a device group both GPU backends' groups share: the plan, and the answers the
/// runtime asks of it (device bytes, which inputs are copied to the device).
class PlannedGroup : public ops::DeviceGroup {
 public:
  size_t device_bytes() const override { return plan_.device_bytes; }
  bool input_on_device(size_t k) const override {
    return k < plan_.input_slot.size() && plan_.input_slot[k] != kNoSlot;
  }

 protected:
  DevicePlan plan_;
};

}  // namespace frame::backends::gpu
