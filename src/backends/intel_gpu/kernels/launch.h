#pragma once
/// \file
/// One intel_gpu node ready to run (docs/backends/intel-gpu.md, "Host and device memory"):
/// its kernel object, device buffers for its inputs and output made once at prepare, and the
/// copy-in / launch / copy-out of a run. Kernels follow one argument convention:
/// `(inputs..., out, int rank, __global const int* meta, extra...)`, where `meta` holds the
/// output dims and, per input, the input stride of each output dim (0 where it broadcasts);
/// `rank` 0 means every input is indexed like the output. Absent optional inputs get a dummy
/// buffer and are not copied.

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/opencl.h"
#include "frame/core/tensor.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::intel_gpu {

/// Device buffers, kernel and launch geometry of one node.
struct Launch {
  const Device* dev = nullptr;
  ClKernel kernel;
  std::vector<ClMem> inputs;
  std::vector<size_t> in_bytes;
  ClMem output;
  size_t out_bytes = 0;
  size_t out_elems = 0;
  ClMem meta;
  size_t work_items = 0;  ///< global size: one work-item per output element unless set
  std::mutex mu;          ///< guards the buffers' contents during a run
};

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

/// Why the node cannot run on intel_gpu beyond its dtype set (no device, more than 2^31 - 1
/// elements), or OK.
Status device_ready(const ops::NodeContext& ctx);

/// The float spelling of the node (input 0's dtype, shared by every input), or why not:
/// device_ready, no fp64 on the device, mixed dtypes.
Result<const ClType*> runnable_type(const ops::NodeContext& ctx);

/// Builds the kernel (through the program cache), the buffers and `meta`, and sets the
/// first arguments. Errors name the node.
Result<std::shared_ptr<Launch>> make_launch(const ops::NodeContext& ctx, const LaunchSpec& spec);

/// The kernel function of every intel_gpu kernel: copies the inputs in, launches, copies the
/// output back (blocking). Errors name the node and the OpenCL error.
Status run_launch(ops::KernelContext& ctx);

}  // namespace frame::backends::intel_gpu
