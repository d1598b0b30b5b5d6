#pragma once
/// \file
/// One intel_gpu node ready to run (docs/backends/intel-gpu.md, "Host and device memory"):
/// its kernel object and launch geometry made once at prepare, the binding of its buffers,
/// and the copy-in / launch / copy-out of a node run on its own. Kernels follow one argument
/// convention:
/// `(inputs..., out, int rank, __global const int* meta, extra...)`, where `meta` holds the
/// output dims and, per input, the input stride of each output dim (0 where it broadcasts);
/// `rank` 0 means every input is indexed like the output. Absent optional inputs get a dummy
/// buffer and are not copied.

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/opencl.h"
#include "frame/core/tensor.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::intel_gpu {

/// Kernel, argument layout and launch geometry of one node, made once at prepare. The
/// buffers it reads and writes are bound per run: a device group (group.h) binds
/// sub-buffers of its run slot's device memory, run_launch (one node on its own) binds the
/// node's own buffers, made at its first run.
struct Launch {
  const Device* dev = nullptr;
  ClKernel kernel;
  /// Per device input (the node's leading inputs the kernel reads): its bytes, 0 when the
  /// optional input is absent (bound to `dummy`, never read).
  std::vector<size_t> in_bytes;
  /// Input pointer parameters of the kernel (>= in_bytes.size()); the extra ones are bound to
  /// the last input's buffer and never read.
  size_t input_slots = 0;
  size_t out_bytes = 0;
  size_t out_elems = 0;
  ClMem meta;
  ClMem dummy;  ///< bound to absent inputs
  /// NDRange: `work_dim` dims of `global` work-items, work-groups of `local` (all 0: the
  /// implementation chooses). Zero work-items: nothing is enqueued.
  cl_uint work_dim = 1;
  std::array<size_t, 3> global = {0, 1, 1};
  std::array<size_t, 3> local = {0, 0, 0};
  /// Set for a node whose device work is not one kernel of ours (e.g. oneDNN's GPU
  /// primitives on Intel GPUs): enqueues it on the queue, reading `inputs` (per device input,
  /// nullptr when absent) and writing `output`; replaces bind_buffers + enqueue_kernel.
  std::function<Status(cl_command_queue q, std::span<const cl_mem> inputs, cl_mem output)> custom;
  /// Set for a kernel that can find bad data on the device (gather's run-time indices): it
  /// writes kErrorInts ints {flag, position, value low 32 bits, value high 32 bits} to
  /// `error_buffer` for the first bad element it finds, and this turns them into the node's
  /// error (the cpu kernel's message). Whoever runs the launch (a device group, run_launch)
  /// zeroes a buffer of its own at the start of each run (clear_error_buffer), binds it before
  /// enqueue_node and reads it once at the run's end.
  std::function<Status(const std::array<int32_t, 4>& error)> device_error;
  cl_mem error_buffer = nullptr;  ///< bound under `mu` for one enqueue_node
  /// run_launch's own buffers (one node run on its own), made at its first run.
  std::vector<ClMem> own_inputs;
  ClMem own_output;
  ClMem own_error;
  /// Guards the kernel's pointer arguments from binding to enqueue, and run_launch's buffers.
  std::mutex mu;

  /// Total work-items (0: nothing to launch).
  size_t work_items() const { return global[0] * global[1] * global[2]; }
};

/// Ints of a launch's device error buffer (Launch::device_error).
inline constexpr size_t kErrorInts = 4;

/// A zeroed device error buffer (Launch::device_error). Errors name the OpenCL error.
Result<ClMem> make_error_buffer(const Device& d);

/// Enqueues (non-blocking) the zeroing of a device error buffer on `q`.
cl_int clear_error_buffer(cl_command_queue q, cl_mem buffer);

/// After a run: l.device_error(host) when `host` (read back from the error buffer) reports an
/// error, else OK.
Status take_device_error(const Launch& l, const std::array<int32_t, 4>& host);

/// What make_launch builds.
struct LaunchSpec {
  std::string source;
  std::string_view options;
  std::string name;  ///< kernel function in `source`
  Shape out_shape;
  size_t out_elem_bytes = 4;
  size_t in_elem_bytes = 4;
  /// Per input, its stride for each output dim; unset: numpy broadcasting of the inputs.
  std::optional<std::vector<std::vector<int64_t>>> strides;
  /// Work-items when not one per output element (e.g. one per softmax row).
  std::optional<size_t> work_items;
  /// A 2-D or 3-D NDRange with explicit work-group sizes (tiled kernels); replaces
  /// work_items. `global` must be a multiple of `local` in each dim.
  std::optional<std::array<size_t, 3>> global;
  std::optional<std::array<size_t, 3>> local;
  cl_uint work_dim = 1;
  /// The whole `meta` buffer and `rank` argument for kernels with their own layout (conv,
  /// pooling, gemm); replaces the strides above.
  std::optional<std::vector<int64_t>> raw_meta;
  /// Leading inputs the kernel reads (the rest, e.g. reshape's shape, stay on the host).
  std::optional<size_t> num_inputs;
  /// Input pointer parameters of the kernel when it declares more than it reads (an absent
  /// bias); the extra ones are bound to the last input's buffer and never read.
  std::optional<size_t> input_slots;
};

/// `const int i` (the work-item) and `int idx<k>` (input k's element) for `num_inputs`
/// inputs, from `rank` and `meta`.
std::string index_code(size_t num_inputs);

/// numpy broadcast of the node's input shapes. Errors name the node.
Result<Shape> broadcast_shapes(const ops::NodeContext& ctx);

/// "node '<name>' (<op>): intel_gpu: ", the prefix of prepare-time errors (the lowering
/// already prefixes accepts() reasons with the backend name).
std::string where(const ops::NodeContext& ctx);

/// Why the node cannot run on intel_gpu beyond its dtype set (no device, an input or output of
/// more than 2^31 - 1 elements or of more bytes than the device's largest buffer), or OK.
Status device_ready(const ops::NodeContext& ctx);

/// The float spelling of the node (input 0's dtype, shared by every input), or why not:
/// device_ready, no fp64 on the device, mixed dtypes.
Result<const ClType*> runnable_type(const ops::NodeContext& ctx);

/// A launch of a kernel over inputs of the float type `t`, one work-item per output element:
/// build options of `t`, element sizes of `t` (the output's 1 byte with `bool_out`).
LaunchSpec float_spec(const ClType& t, std::string source, std::string name, Shape out_shape,
                      bool bool_out = false);

/// `accepts` of the float kernels: runnable_type's answer (device, fp64, one dtype).
Status float_accepts(const ops::NodeContext& ctx);

/// Sets the kernel argument `index` of type T (`t.compute`: float or double) to `v`.
Status set_t_arg(const Launch& l, const ClType& t, cl_uint index, double v);

/// Builds the kernel (through the program cache), the buffers and `meta`, and sets the
/// first arguments. Errors name the node.
Result<std::shared_ptr<Launch>> make_launch(const ops::NodeContext& ctx, const LaunchSpec& spec);

/// Binds the kernel's pointer arguments: `inputs` per device input (nullptr: absent, bound to
/// the dummy buffer), then `output`. Call with `l.mu` held until the kernel is enqueued (OpenCL
/// copies the arguments at enqueue). Errors name the OpenCL error.
Status bind_buffers(Launch& l, std::span<const cl_mem> inputs, cl_mem output);

/// Enqueues the kernel with its NDRange on `q` (nothing for zero work-items). Call with
/// `l.mu` held, after bind_buffers. Errors name the OpenCL error.
Status enqueue_kernel(const Launch& l, cl_command_queue q);

/// Enqueues the node's work on `q` with `inputs` / `output` bound: `custom` when set, else
/// bind_buffers + enqueue_kernel. Call with `l.mu` held. Errors name the OpenCL error.
Status enqueue_node(Launch& l, cl_command_queue q, std::span<const cl_mem> inputs, cl_mem output);

/// The kernel function of every intel_gpu kernel when a node runs on its own (the op
/// database, a node outside any device group): copies the inputs in, launches, copies the
/// output back (blocking). Errors name the node and the OpenCL error.
Status run_launch(ops::KernelContext& ctx);

}  // namespace frame::backends::intel_gpu
