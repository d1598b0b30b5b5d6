// Device groups of the cuda backend (include/frame/ops/device_group.h, docs/backends/cuda.md
// "Device memory and streams"): a run of consecutive cuda nodes keeps its values in device
// memory planned once at compile time by the planner intel_gpu shares (src/backends/gpu/
// device_plan.h): one allocation per block, each value at its offset. A run copies its
// boundary inputs into pinned staging memory and from there to the device, launches every
// node on its run slot's own stream without synchronizing, copies the boundary outputs back
// into staging, and synchronizes once at the end.

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/launch.h"
#include "backends/gpu/device_plan.h"
#include "frame/ops/device_group.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::cuda {
namespace {

using gpu::DeviceSlot;
using gpu::kNoSlot;

// Device allocations are 256-byte aligned (cuMemAlloc), and so is every value in a block:
// the generated kernels' 16-byte vector loads need it.
constexpr size_t kAlign = 256;

struct NodeRun {
  ops::NodeContext ctx;
  std::shared_ptr<void> state;  // the kernel's CudaLaunch, kept alive
  const CudaLaunch* launch = nullptr;
};

// Per run slot: device memory, pinned staging, stream; made at the first run.
struct RunSlot {
  const CudaDevice* dev = nullptr;
  bool ready = false;
  std::vector<CUdeviceptr> blocks;
  CUdeviceptr workspace = 0;  // library calls' scratch (cuBLASLt), the nodes' largest need
  CUdeviceptr errors = 0;     // one int32 error flag per node (CudaLaunch::device_error)
  size_t errors_at = 0;       // where the run copies the flags back in `staging`
  CUstream stream = nullptr;
  void* staging = nullptr;         // pinned host memory for the boundary copies
  std::vector<size_t> staging_at;  // per slot: offset in `staging` (boundary slots)
  std::vector<CUdeviceptr> ins;    // scratch: one node's input pointers
  ~RunSlot() {
    if (dev == nullptr) return;
    if (stream != nullptr) dev->api->cuStreamDestroy(stream);
    for (CUdeviceptr b : blocks) dev->api->cuMemFree(b);
    if (workspace != 0) dev->api->cuMemFree(workspace);
    if (errors != 0) dev->api->cuMemFree(errors);
    if (staging != nullptr) dev->api->cuMemFreeHost(staging);
  }
};

class Group final : public gpu::PlannedGroup {
 public:
  static Result<std::unique_ptr<ops::DeviceGroup>> compile(const ops::DeviceGroupSpec& spec);

  Status run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
             void* run_state) const override;
  std::shared_ptr<void> make_run_state() const override { return std::make_shared<RunSlot>(); }

 private:
  Status setup(RunSlot& rs) const;
  CUdeviceptr address(const RunSlot& rs, int slot) const {
    const DeviceSlot& s = plan_.slots[static_cast<size_t>(slot)];
    return rs.blocks[s.block] + s.offset;
  }

  const CudaDevice* dev_ = nullptr;
  std::vector<NodeRun> nodes_;
  size_t workspace_bytes_ = 0;
  bool reports_errors_ = false;  // some node's kernel has a device error flag
};

Result<std::unique_ptr<ops::DeviceGroup>> Group::compile(const ops::DeviceGroupSpec& spec) {
  const CudaDevice* dev = selected_device();
  if (dev == nullptr) return unimplemented("cuda: {}", unavailable_reason());
  const ir::Graph& g = *spec.graph;
  auto group = std::make_unique<Group>();
  group->dev_ = dev;
  std::vector<gpu::NodeIO> io;
  for (ir::NodeId id : spec.nodes) {
    const ir::Node& node = g.node(id);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op);
    const ops::KernelDef* k = ops::KernelRegistry::global().find(node.op, kBackendName);
    if (k == nullptr) {
      return unimplemented("node '{}' ({}): backend 'cuda' has no kernel for the op", node.name,
                           node.op);
    }
    NodeRun r;
    r.ctx = ops::make_node_context(g, node, schema);
    FRAME_RETURN_IF_ERROR(k->supports(r.ctx));
    if (k->fn != run_standalone || k->prepare == nullptr || node.outputs.size() != 1) {
      // A kernel registered under cuda (a plugin's, say) must build a CudaLaunch in its
      // prepare step and run through run_standalone, with one output, to join a device group
      // (docs/backends/cuda.md, "Adding a kernel").
      return unimplemented(
          "node '{}' ({}): kernel {}@cuda (registered at {}:{}) does not follow the launch "
          "convention of cuda kernels (a prepare step building a CudaLaunch, run_standalone, "
          "one output), so it cannot run in a device group",
          node.name, node.op, node.op, k->file, k->line);
    }
    FRAME_ASSIGN_OR_RETURN(r.state, k->prepare(r.ctx));
    r.launch = static_cast<const CudaLaunch*>(r.state.get());
    io.push_back({r.launch->in_bytes, r.launch->out_bytes,
                  r.launch->device_error ? static_cast<int>(r.launch->error_input) : -1});
    group->workspace_bytes_ = std::max(group->workspace_bytes_, r.launch->workspace_bytes);
    group->reports_errors_ = group->reports_errors_ || static_cast<bool>(r.launch->device_error);
    group->nodes_.push_back(std::move(r));
  }
  FRAME_ASSIGN_OR_RETURN(group->plan_,
                         gpu::plan_device_group(spec, io, kAlign, dev->total_memory, kBackendName));
  return std::unique_ptr<ops::DeviceGroup>(std::move(group));
}

Status Group::setup(RunSlot& rs) const {
  const DriverApi& api = *dev_->api;
  rs.dev = dev_;
  FRAME_RETURN_IF_ERROR(
      cu_check(*dev_, api.cuStreamCreate(&rs.stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
  for (size_t b = 0; b < plan_.blocks.size(); ++b) {
    CUdeviceptr p = 0;
    FRAME_RETURN_IF_ERROR(cu_check(
        *dev_, api.cuMemAlloc(&p, plan_.blocks[b]),
        fmt::format("device group memory (block {} of {}, {} bytes, first node '{}')", b + 1,
                    plan_.blocks.size(), plan_.blocks[b], nodes_[0].ctx.node_name)));
    rs.blocks.push_back(p);
  }
  if (workspace_bytes_ > 0) {
    FRAME_RETURN_IF_ERROR(
        cu_check(*dev_, api.cuMemAlloc(&rs.workspace, workspace_bytes_), "device group workspace"));
  }
  // Pinned staging: one region per boundary input and output slot.
  rs.staging_at.assign(plan_.slots.size(), 0);
  size_t staging_bytes = 0;
  auto reserve = [&](int s) {
    if (s == kNoSlot || plan_.slots[static_cast<size_t>(s)].constant) return;
    rs.staging_at[static_cast<size_t>(s)] = staging_bytes;
    staging_bytes += (plan_.slots[static_cast<size_t>(s)].bytes + kAlign - 1) / kAlign * kAlign;
  };
  for (int s : plan_.input_slot) reserve(s);
  for (int s : plan_.output_slot) reserve(s);
  const size_t flag_bytes = nodes_.size() * sizeof(int32_t);
  if (reports_errors_) {
    rs.errors_at = staging_bytes;
    staging_bytes += (flag_bytes + kAlign - 1) / kAlign * kAlign;
    FRAME_RETURN_IF_ERROR(cu_check(*dev_, api.cuMemAlloc(&rs.errors, flag_bytes), "error flags"));
  }
  if (staging_bytes > 0) {
    FRAME_RETURN_IF_ERROR(
        cu_check(*dev_, api.cuMemAllocHost(&rs.staging, staging_bytes), "cuMemAllocHost"));
  }
  // Constants once per run slot, straight from the graph's host data (which outlives the
  // executable's runs); the synchronize below waits for them.
  for (size_t i = 0; i < plan_.slots.size(); ++i) {
    const DeviceSlot& s = plan_.slots[i];
    if (!s.constant || s.bytes == 0) continue;
    if (s.host == nullptr || s.host->nbytes() != s.bytes) {
      return internal_error("cuda: constant '{}' of {} bytes has no host data", s.name, s.bytes);
    }
    FRAME_RETURN_IF_ERROR(cu_check(*dev_,
                                   api.cuMemcpyHtoDAsync(address(rs, static_cast<int>(i)),
                                                         s.host->raw_data(), s.bytes, rs.stream),
                                   fmt::format("uploading constant '{}'", s.name)));
  }
  FRAME_RETURN_IF_ERROR(cu_check(*dev_, api.cuStreamSynchronize(rs.stream), "uploading constants"));
  rs.ready = true;
  return Status();
}

Status Group::run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                  void* run_state) const {
  auto& rs = *static_cast<RunSlot*>(run_state);
  FRAME_RETURN_IF_ERROR(make_current(*dev_));
  if (!rs.ready) FRAME_RETURN_IF_ERROR(setup(rs));
  const DriverApi& api = *dev_->api;
  auto* staging = static_cast<unsigned char*>(rs.staging);
  for (size_t k = 0; k < plan_.input_slot.size() && k < inputs.size(); ++k) {
    const int s = plan_.input_slot[k];
    if (s == kNoSlot || plan_.slots[static_cast<size_t>(s)].constant) continue;
    const DeviceSlot& slot = plan_.slots[static_cast<size_t>(s)];
    if (slot.bytes == 0) continue;
    if (!inputs[k].defined() || inputs[k].nbytes() != slot.bytes) {
      api.cuStreamSynchronize(rs.stream);  // earlier copies may still read the staging memory
      return internal_error("cuda: device group input {} has {} bytes, compiled for {}", k,
                            inputs[k].defined() ? inputs[k].nbytes() : 0, slot.bytes);
    }
    unsigned char* stage = staging + rs.staging_at[static_cast<size_t>(s)];
    std::memcpy(stage, inputs[k].raw_data(), slot.bytes);
    if (Status st =
            cu_check(*dev_, api.cuMemcpyHtoDAsync(address(rs, s), stage, slot.bytes, rs.stream),
                     fmt::format("copying input {} to the device", k));
        !st.is_ok()) {
      api.cuStreamSynchronize(rs.stream);
      return st;
    }
  }
  // Error flags start every run at zero, whatever an earlier run (which may have stopped
  // early) left in them.
  if (rs.errors != 0) {
    if (Status st = cu_check(
            *dev_, api.cuMemsetD8Async(rs.errors, 0, nodes_.size() * sizeof(int32_t), rs.stream),
            "clearing the error flags");
        !st.is_ok()) {
      api.cuStreamSynchronize(rs.stream);
      return st;
    }
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const std::vector<int>& node_in = plan_.node_inputs[i];
    rs.ins.assign(node_in.size(), 0);
    for (size_t k = 0; k < node_in.size(); ++k) {
      if (node_in[k] != kNoSlot) rs.ins[k] = address(rs, node_in[k]);
    }
    const CUdeviceptr flag =
        rs.errors == 0 ? 0 : rs.errors + static_cast<CUdeviceptr>(i * sizeof(int32_t));
    Status st = nodes_[i].launch->launch(rs.stream, rs.ins, address(rs, plan_.node_output[i]),
                                         rs.workspace, flag);
    if (!st.is_ok()) {
      api.cuStreamSynchronize(rs.stream);
      return st.with_prefix(
          fmt::format("node '{}' ({}): ", nodes_[i].ctx.node_name, nodes_[i].ctx.op));
    }
  }
  for (size_t j = 0; j < plan_.output_slot.size() && j < outputs.size(); ++j) {
    const int s = plan_.output_slot[j];
    const DeviceSlot& slot = plan_.slots[static_cast<size_t>(s)];
    if (slot.bytes == 0) continue;
    if (outputs[j].nbytes() != slot.bytes) {
      api.cuStreamSynchronize(rs.stream);
      return internal_error("cuda: device group output {} has {} bytes, compiled for {}", j,
                            outputs[j].nbytes(), slot.bytes);
    }
    if (Status st = cu_check(*dev_,
                             api.cuMemcpyDtoHAsync(staging + rs.staging_at[static_cast<size_t>(s)],
                                                   address(rs, s), slot.bytes, rs.stream),
                             fmt::format("copying output {} to the host", j));
        !st.is_ok()) {
      api.cuStreamSynchronize(rs.stream);
      return st;
    }
  }
  if (rs.errors != 0) {
    FRAME_RETURN_IF_ERROR(
        cu_check(*dev_,
                 api.cuMemcpyDtoHAsync(staging + rs.errors_at, rs.errors,
                                       nodes_.size() * sizeof(int32_t), rs.stream),
                 "copying the error flags to the host"));
  }
  // One synchronization per run: the stream has run the copies and kernels when it returns.
  FRAME_RETURN_IF_ERROR(cu_check(*dev_, api.cuStreamSynchronize(rs.stream), "device group run"));
  if (rs.errors != 0) {
    const auto* flags = reinterpret_cast<const int32_t*>(staging + rs.errors_at);
    for (size_t i = 0; i < nodes_.size(); ++i) {
      if (flags[i] == 0) continue;
      const CudaLaunch& l = *nodes_[i].launch;
      const int in_slot = plan_.node_inputs[i].at(l.error_input);
      // The input stayed alive to the group's end (NodeIO::keep_input): its bad element is
      // still there.
      return device_error_status(l, flags[i], address(rs, in_slot));
    }
  }
  for (size_t j = 0; j < plan_.output_slot.size() && j < outputs.size(); ++j) {
    const int s = plan_.output_slot[j];
    const DeviceSlot& slot = plan_.slots[static_cast<size_t>(s)];
    if (slot.bytes == 0) continue;
    std::memcpy(outputs[j].raw_data(), staging + rs.staging_at[static_cast<size_t>(s)], slot.bytes);
  }
  return Status();
}

[[maybe_unused]] const bool kRegistered = [] {
  ops::register_device_group_compiler(std::string(kBackendName), Group::compile);
  return true;
}();

}  // namespace
}  // namespace frame::backends::cuda
