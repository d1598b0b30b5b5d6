// Device groups of the intel_gpu backend (include/frame/ops/device_group.h,
// docs/backends/intel-gpu.md "Device memory"): a run of consecutive intel_gpu nodes keeps its
// values in one device buffer per run slot, a sub-buffer per value, planned once at compile
// time; the run copies its boundary inputs in, enqueues every node on the run slot's in-order
// queue without waiting, and reads its boundary outputs back once at the end.

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/intel_gpu/kernels/launch.h"
#include "backends/intel_gpu/opencl.h"
#include "frame/ops/device_group.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::intel_gpu {
namespace {

using ClQueue = ClHandle<cl_command_queue, clReleaseCommandQueue>;

constexpr int kNone = -1;

// One value the group's kernels read or write on the device.
struct Slot {
  ir::ValueId value = ir::kNoValue;
  size_t bytes = 0;
  size_t block = 0;   // which of the run slot's device buffers holds it
  size_t offset = 0;  // in that buffer
  int first = 0;      // node index of its producer (0 for boundary inputs and constants)
  int last = 0;       // last node index reading it; the node count for boundary outputs
  bool constant = false;
  const Tensor* host = nullptr;  // a constant's data (owned by the graph)
  std::string name;
};

struct NodeRun {
  ops::NodeContext ctx;
  std::shared_ptr<void> state;  // the kernel's Launch, kept alive
  Launch* launch = nullptr;
  std::vector<int> inputs;  // per device input of the kernel: slot index, kNone when absent
  int output = kNone;
};

// Per run slot: device memory, sub-buffers, queue; made at the first run.
struct RunSlot {
  bool ready = false;
  std::vector<ClMem> buffers;  // one per block of the plan
  std::vector<ClMem> sub;      // per slot; empty handle for a zero-byte slot
  ClQueue queue;
  std::vector<cl_mem> ins;  // scratch: one node's input buffers
};

// Blocks and offsets for `slots`: largest first, each at the lowest aligned offset that
// overlaps no placed slot alive at the same time (the host memory planner's rule, docs/
// architecture/compiler-passes.md), in the first block where it then ends within `max_block`
// bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE: one buffer cannot be larger). Returns each block's
// bytes; a slot larger than `max_block` is an error naming it.
Result<std::vector<size_t>> plan_offsets(std::vector<Slot>& slots, size_t align, size_t max_block) {
  std::vector<size_t> order(slots.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return slots[a].bytes > slots[b].bytes; });
  std::vector<size_t> placed;
  std::vector<size_t> blocks;
  for (size_t i : order) {
    Slot& s = slots[i];
    if (s.bytes == 0) continue;
    if (s.bytes > max_block) {
      return internal_error(
          "intel_gpu: value '{}' has {} bytes, more than the device's largest buffer "
          "(CL_DEVICE_MAX_MEM_ALLOC_SIZE {})",
          s.name, s.bytes, max_block);
    }
    for (size_t b = 0;; ++b) {
      std::vector<std::pair<size_t, size_t>> busy;  // [begin, end) of live placed slots
      for (size_t j : placed) {
        const Slot& o = slots[j];
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

class Group final : public ops::DeviceGroup {
 public:
  static Result<std::unique_ptr<ops::DeviceGroup>> compile(const ops::DeviceGroupSpec& spec);

  Status run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
             void* run_state) const override;
  std::shared_ptr<void> make_run_state() const override { return std::make_shared<RunSlot>(); }
  size_t device_bytes() const override { return device_bytes_; }
  bool input_on_device(size_t k) const override {
    return k < input_slot_.size() && input_slot_[k] != kNone;
  }

 private:
  Status setup(RunSlot& rs) const;
  std::string where_node(size_t i) const { return where(nodes_[i].ctx); }

  const Device* dev_ = nullptr;
  std::vector<Slot> slots_;
  std::vector<NodeRun> nodes_;
  std::vector<int> input_slot_;   // per group input: slot, kNone when not read on the device
  std::vector<int> output_slot_;  // per group output
  std::vector<size_t> blocks_;    // bytes of each device buffer of a run slot
  size_t device_bytes_ = 0;
};

Result<std::unique_ptr<ops::DeviceGroup>> Group::compile(const ops::DeviceGroupSpec& spec) {
  const Device* dev = selected_device();
  if (dev == nullptr) return unimplemented("intel_gpu: {}", unavailable_reason());
  const ir::Graph& g = *spec.graph;
  auto group = std::make_unique<Group>();
  group->dev_ = dev;
  const int n = static_cast<int>(spec.nodes.size());
  std::unordered_map<ir::ValueId, int> slot_of;
  auto slot_for = [&](ir::ValueId v, int first) -> int {
    auto [it, fresh] = slot_of.emplace(v, static_cast<int>(group->slots_.size()));
    if (fresh) {
      Slot s;
      s.value = v;
      const ir::Value& val = g.value(v);
      s.bytes = static_cast<size_t>(numel_of(val.type->shape)) * dtype_size(val.type->dtype);
      s.first = first;
      s.last = first;
      s.constant = val.is_constant();
      if (s.constant) s.host = &*val.constant;
      s.name = val.name;
      group->slots_.push_back(std::move(s));
    }
    return it->second;
  };
  std::unordered_map<ir::ValueId, bool> inside;
  for (ir::NodeId id : spec.nodes) {
    for (ir::ValueId v : g.node(id).outputs) inside[v] = true;
  }
  for (int i = 0; i < n; ++i) {
    const ir::Node& node = g.node(spec.nodes[static_cast<size_t>(i)]);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op);
    const ops::KernelDef* k = ops::KernelRegistry::global().find(node.op, kBackendName);
    if (k == nullptr) {
      return unimplemented("node '{}' ({}): backend 'intel_gpu' has no kernel for the op",
                           node.name, node.op);
    }
    NodeRun r;
    r.ctx = ops::make_node_context(g, node, schema);
    FRAME_RETURN_IF_ERROR(k->supports(r.ctx));
    if (k->fn != run_launch || k->prepare == nullptr || node.outputs.size() != 1) {
      // A kernel registered under intel_gpu (a plugin's, say) must build a Launch in its
      // prepare step and run through run_launch, with one output, to join a device group
      // (docs/backends/intel-gpu.md, "Host and device memory").
      return unimplemented(
          "node '{}' ({}): kernel {}@intel_gpu (registered at {}:{}) does not follow the launch "
          "convention of intel_gpu kernels (a prepare step building a Launch, run_launch, one "
          "output), so it cannot run in a device group",
          node.name, node.op, node.op, k->file, k->line);
    }
    FRAME_ASSIGN_OR_RETURN(r.state, k->prepare(r.ctx));
    r.launch = static_cast<Launch*>(r.state.get());
    for (size_t k_in = 0; k_in < r.launch->in_bytes.size(); ++k_in) {
      const ir::ValueId v = k_in < node.inputs.size() ? node.inputs[k_in] : ir::kNoValue;
      if (v == ir::kNoValue || r.launch->in_bytes[k_in] == 0) {
        r.inputs.push_back(kNone);
        continue;
      }
      const int s = slot_for(v, inside.count(v) != 0 ? i : 0);
      group->slots_[static_cast<size_t>(s)].last = i;
      if (group->slots_[static_cast<size_t>(s)].bytes != r.launch->in_bytes[k_in]) {
        return internal_error("node '{}' ({}): input {} has {} bytes, the kernel reads {}",
                              node.name, node.op, k_in, group->slots_[static_cast<size_t>(s)].bytes,
                              r.launch->in_bytes[k_in]);
      }
      r.inputs.push_back(s);
    }
    r.output = slot_for(node.outputs[0], i);
    if (group->slots_[static_cast<size_t>(r.output)].bytes != r.launch->out_bytes) {
      return internal_error("node '{}' ({}): output has {} bytes, the kernel writes {}", node.name,
                            node.op, group->slots_[static_cast<size_t>(r.output)].bytes,
                            r.launch->out_bytes);
    }
    group->nodes_.push_back(std::move(r));
  }
  for (ir::ValueId v : spec.inputs) {
    auto it = v == ir::kNoValue ? slot_of.end() : slot_of.find(v);
    group->input_slot_.push_back(it == slot_of.end() ? kNone : it->second);
  }
  for (ir::ValueId v : spec.outputs) {
    auto it = slot_of.find(v);
    if (it == slot_of.end())
      return internal_error("device group output '{}' has no slot", g.value(v).name);
    group->slots_[static_cast<size_t>(it->second)].last = n;
    group->output_slot_.push_back(it->second);
  }
  // Constants are uploaded once per run slot: alive for the whole run.
  for (Slot& s : group->slots_) {
    if (s.constant) {
      s.first = 0;
      s.last = n;
    }
  }
  FRAME_ASSIGN_OR_RETURN(group->blocks_,
                         plan_offsets(group->slots_, dev->base_align, dev->max_alloc));
  for (size_t b : group->blocks_) group->device_bytes_ += b;
  return std::unique_ptr<ops::DeviceGroup>(std::move(group));
}

Status Group::setup(RunSlot& rs) const {
  cl_int e = CL_SUCCESS;
  rs.queue = ClQueue(clCreateCommandQueue(dev_->context, dev_->id, 0, &e));
  if (e != CL_SUCCESS)
    return internal_error("intel_gpu: clCreateCommandQueue: {}", cl_error_name(e));
  rs.buffers.clear();
  for (size_t b = 0; b < blocks_.size(); ++b) {
    FRAME_ASSIGN_OR_RETURN(
        ClMem m, make_buffer(*dev_, blocks_[b], CL_MEM_READ_WRITE,
                             fmt::format("device group memory (buffer {} of {}, "
                                         "first node '{}')",
                                         b + 1, blocks_.size(), nodes_[0].ctx.node_name)));
    rs.buffers.push_back(std::move(m));
  }
  rs.sub.clear();
  for (const Slot& s : slots_) {
    if (s.bytes == 0) {
      rs.sub.emplace_back();
      continue;
    }
    cl_buffer_region region{s.offset, s.bytes};
    cl_mem m = clCreateSubBuffer(rs.buffers[s.block].get(), CL_MEM_READ_WRITE,
                                 CL_BUFFER_CREATE_TYPE_REGION, &region, &e);
    if (e != CL_SUCCESS) {
      return internal_error("intel_gpu: sub-buffer of value '{}' ({} bytes at {}): {}", s.name,
                            s.bytes, s.offset, cl_error_name(e));
    }
    rs.sub.emplace_back(m);
  }
  // Constants once per run slot; the graph owns their host data for the executable's life.
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    if (!s.constant || s.bytes == 0) continue;
    const Tensor* t = s.host;
    if (t == nullptr || t->nbytes() != s.bytes) {
      return internal_error("intel_gpu: constant '{}' of {} bytes has no host data", s.name,
                            s.bytes);
    }
    e = clEnqueueWriteBuffer(rs.queue.get(), rs.sub[i].get(), CL_FALSE, 0, s.bytes, t->raw_data(),
                             0, nullptr, nullptr);
    if (e != CL_SUCCESS) {
      clFinish(rs.queue.get());
      return internal_error("intel_gpu: uploading a constant: {}", cl_error_name(e));
    }
  }
  e = clFinish(rs.queue.get());
  if (e != CL_SUCCESS)
    return internal_error("intel_gpu: uploading constants: {}", cl_error_name(e));
  rs.ready = true;
  return Status();
}

Status Group::run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                  void* run_state) const {
  auto& rs = *static_cast<RunSlot*>(run_state);
  if (!rs.ready) FRAME_RETURN_IF_ERROR(setup(rs));
  const cl_command_queue q = rs.queue.get();
  for (size_t k = 0; k < input_slot_.size() && k < inputs.size(); ++k) {
    const int s = input_slot_[k];
    if (s == kNone || slots_[static_cast<size_t>(s)].constant) continue;
    const Slot& slot = slots_[static_cast<size_t>(s)];
    if (slot.bytes == 0) continue;
    if (!inputs[k].defined() || inputs[k].nbytes() != slot.bytes) {
      clFinish(q);  // earlier copies may still read the caller's memory
      return internal_error("intel_gpu: device group input {} has {} bytes, compiled for {}", k,
                            inputs[k].defined() ? inputs[k].nbytes() : 0, slot.bytes);
    }
    const cl_int e = clEnqueueWriteBuffer(q, rs.sub[static_cast<size_t>(s)].get(), CL_FALSE, 0,
                                          slot.bytes, inputs[k].raw_data(), 0, nullptr, nullptr);
    if (e != CL_SUCCESS) {
      clFinish(q);
      return internal_error("intel_gpu: copying input {} to the device: {}", k, cl_error_name(e));
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeRun& r = nodes_[i];
    rs.ins.assign(r.inputs.size(), nullptr);
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      if (r.inputs[k] != kNone) rs.ins[k] = rs.sub[static_cast<size_t>(r.inputs[k])].get();
    }
    // The launch's kernel object is shared by the executable's run slots: its arguments are
    // bound and enqueued under its lock (OpenCL copies them at enqueue).
    std::lock_guard lock(r.launch->mu);
    Status st = enqueue_node(*r.launch, q, rs.ins, rs.sub[static_cast<size_t>(r.output)].get());
    if (!st.is_ok()) {
      clFinish(q);
      return st.with_prefix(where_node(i));
    }
  }
  for (size_t j = 0; j < output_slot_.size() && j < outputs.size(); ++j) {
    const Slot& slot = slots_[static_cast<size_t>(output_slot_[j])];
    if (slot.bytes == 0) continue;
    if (outputs[j].nbytes() != slot.bytes) {
      clFinish(q);
      return internal_error("intel_gpu: device group output {} has {} bytes, compiled for {}", j,
                            outputs[j].nbytes(), slot.bytes);
    }
    const cl_int e =
        clEnqueueReadBuffer(q, rs.sub[static_cast<size_t>(output_slot_[j])].get(), CL_FALSE, 0,
                            slot.bytes, outputs[j].raw_data(), 0, nullptr, nullptr);
    if (e != CL_SUCCESS) {
      clFinish(q);
      return internal_error("intel_gpu: copying output {} to the host: {}", j, cl_error_name(e));
    }
  }
  // One wait per run: the in-order queue has run the copies and kernels when it returns.
  const cl_int e = clFinish(q);
  if (e != CL_SUCCESS) return internal_error("intel_gpu: device group run: {}", cl_error_name(e));
  return Status();
}

[[maybe_unused]] const bool kRegistered = [] {
  ops::register_device_group_compiler(std::string(kBackendName), Group::compile);
  return true;
}();

}  // namespace
}  // namespace frame::backends::intel_gpu
