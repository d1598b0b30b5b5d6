// Device groups of the intel_gpu backend (include/frame/ops/device_group.h,
// docs/backends/intel-gpu.md "Device memory"): a run of consecutive intel_gpu nodes keeps its
// values in one device buffer per run slot, a sub-buffer per value, planned once at compile
// time (the shared planner, src/backends/gpu/device_plan.h); the run copies its boundary
// inputs in, enqueues every node on the run slot's in-order queue without waiting, and reads
// its boundary outputs back once at the end.

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/gpu/device_plan.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "backends/intel_gpu/opencl.h"
#include "frame/ops/device_group.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::intel_gpu {
namespace {

using ClQueue = ClHandle<cl_command_queue, clReleaseCommandQueue>;
using gpu::DeviceSlot;
using gpu::kNoSlot;

struct NodeRun {
  ops::NodeContext ctx;
  std::shared_ptr<void> state;  // the kernel's Launch, kept alive
  Launch* launch = nullptr;
};

// Per run slot: device memory, sub-buffers, queue; made at the first run.
struct RunSlot {
  bool ready = false;
  std::vector<ClMem> buffers;  // one per block of the plan
  std::vector<ClMem> sub;      // per slot; empty handle for a zero-byte slot
  ClQueue queue;
  std::vector<cl_mem> ins;  // scratch: one node's input buffers
  // Per node: its device error buffer (Launch::device_error; empty for nodes without) and
  // where the run reads it back.
  std::vector<ClMem> errors;
  std::vector<std::array<int32_t, kErrorInts>> error_host;
};

class Group final : public gpu::PlannedGroup {
 public:
  static Result<std::unique_ptr<ops::DeviceGroup>> compile(const ops::DeviceGroupSpec& spec);

  Status run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
             void* run_state) const override;
  std::shared_ptr<void> make_run_state() const override { return std::make_shared<RunSlot>(); }

 private:
  Status setup(RunSlot& rs) const;
  std::string where_node(size_t i) const { return where(nodes_[i].ctx); }

  const Device* dev_ = nullptr;
  std::vector<NodeRun> nodes_;
};

Result<std::unique_ptr<ops::DeviceGroup>> Group::compile(const ops::DeviceGroupSpec& spec) {
  const Device* dev = selected_device();
  if (dev == nullptr) return unimplemented("intel_gpu: {}", unavailable_reason());
  const ir::Graph& g = *spec.graph;
  auto group = std::make_unique<Group>();
  group->dev_ = dev;
  std::vector<gpu::NodeIO> io;
  for (ir::NodeId id : spec.nodes) {
    const ir::Node& node = g.node(id);
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
    io.push_back({r.launch->in_bytes, r.launch->out_bytes});
    group->nodes_.push_back(std::move(r));
  }
  FRAME_ASSIGN_OR_RETURN(group->plan_, gpu::plan_device_group(spec, io, dev->base_align,
                                                              dev->max_alloc, kBackendName));
  return std::unique_ptr<ops::DeviceGroup>(std::move(group));
}

Status Group::setup(RunSlot& rs) const {
  cl_int e = CL_SUCCESS;
  rs.queue = ClQueue(clCreateCommandQueue(dev_->context, dev_->id, 0, &e));
  if (e != CL_SUCCESS)
    return internal_error("intel_gpu: clCreateCommandQueue: {}", cl_error_name(e));
  rs.buffers.clear();
  const std::vector<size_t>& blocks = plan_.blocks;
  for (size_t b = 0; b < blocks.size(); ++b) {
    FRAME_ASSIGN_OR_RETURN(ClMem m,
                           make_buffer(*dev_, blocks[b], CL_MEM_READ_WRITE,
                                       fmt::format("device group memory (buffer {} of {}, "
                                                   "first node '{}')",
                                                   b + 1, blocks.size(), nodes_[0].ctx.node_name)));
    rs.buffers.push_back(std::move(m));
  }
  rs.sub.clear();
  for (const DeviceSlot& s : plan_.slots) {
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
  for (size_t i = 0; i < plan_.slots.size(); ++i) {
    const DeviceSlot& s = plan_.slots[i];
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
  rs.errors.clear();
  for (const NodeRun& r : nodes_) {
    ClMem m;
    if (r.launch->device_error) {
      FRAME_ASSIGN_OR_RETURN(m, make_error_buffer(*dev_));
    }
    rs.errors.push_back(std::move(m));
  }
  rs.error_host.assign(nodes_.size(), {});
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
  for (size_t k = 0; k < plan_.input_slot.size() && k < inputs.size(); ++k) {
    const int s = plan_.input_slot[k];
    if (s == kNoSlot || plan_.slots[static_cast<size_t>(s)].constant) continue;
    const DeviceSlot& slot = plan_.slots[static_cast<size_t>(s)];
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
  // Error flags start every run at zero, whatever an earlier run (which may have stopped
  // early) left in them.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!rs.errors[i].get()) continue;
    const cl_int e = clear_error_buffer(q, rs.errors[i].get());
    if (e != CL_SUCCESS) {
      clFinish(q);
      return internal_error("intel_gpu: clearing an error flag: {}", cl_error_name(e));
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const NodeRun& r = nodes_[i];
    const std::vector<int>& node_in = plan_.node_inputs[i];
    rs.ins.assign(node_in.size(), nullptr);
    for (size_t k = 0; k < node_in.size(); ++k) {
      if (node_in[k] != kNoSlot) rs.ins[k] = rs.sub[static_cast<size_t>(node_in[k])].get();
    }
    // The launch's kernel object is shared by the executable's run slots: its arguments are
    // bound and enqueued under its lock (OpenCL copies them at enqueue).
    std::lock_guard lock(r.launch->mu);
    r.launch->error_buffer = rs.errors[i].get();
    Status st =
        enqueue_node(*r.launch, q, rs.ins, rs.sub[static_cast<size_t>(plan_.node_output[i])].get());
    if (!st.is_ok()) {
      clFinish(q);
      return st.with_prefix(where_node(i));
    }
  }
  for (size_t j = 0; j < plan_.output_slot.size() && j < outputs.size(); ++j) {
    const DeviceSlot& slot = plan_.slots[static_cast<size_t>(plan_.output_slot[j])];
    if (slot.bytes == 0) continue;
    if (outputs[j].nbytes() != slot.bytes) {
      clFinish(q);
      return internal_error("intel_gpu: device group output {} has {} bytes, compiled for {}", j,
                            outputs[j].nbytes(), slot.bytes);
    }
    const cl_int e =
        clEnqueueReadBuffer(q, rs.sub[static_cast<size_t>(plan_.output_slot[j])].get(), CL_FALSE, 0,
                            slot.bytes, outputs[j].raw_data(), 0, nullptr, nullptr);
    if (e != CL_SUCCESS) {
      clFinish(q);
      return internal_error("intel_gpu: copying output {} to the host: {}", j, cl_error_name(e));
    }
  }
  // Error flags of the nodes that report device-side errors, read with the outputs.
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!rs.errors[i].get()) continue;
    const cl_int e =
        clEnqueueReadBuffer(q, rs.errors[i].get(), CL_FALSE, 0, sizeof(rs.error_host[i]),
                            rs.error_host[i].data(), 0, nullptr, nullptr);
    if (e != CL_SUCCESS) {
      clFinish(q);
      return internal_error("intel_gpu: reading an error flag: {}", cl_error_name(e));
    }
  }
  // One wait per run: the in-order queue has run the copies and kernels when it returns.
  const cl_int e = clFinish(q);
  if (e != CL_SUCCESS) return internal_error("intel_gpu: device group run: {}", cl_error_name(e));
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (!rs.errors[i].get()) continue;
    FRAME_RETURN_IF_ERROR(take_device_error(*nodes_[i].launch, rs.error_host[i]));
  }
  return Status();
}

[[maybe_unused]] const bool kRegistered = [] {
  ops::register_device_group_compiler(std::string(kBackendName), Group::compile);
  return true;
}();

}  // namespace
}  // namespace frame::backends::intel_gpu
