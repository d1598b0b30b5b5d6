#pragma once
/// \file
/// One cuda node ready to run (docs/backends/cuda.md, "Device memory and streams"): its
/// generated kernel compiled and loaded once at prepare, with its launch geometry and fixed
/// parameters. The device pointers it reads and writes are bound per launch: a device group
/// passes its run slot's memory, run_standalone (one node on its own: the op database) its
/// own buffers.

#include <cuda.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/cuda/codegen.h"
#include "backends/cuda/driver.h"
#include "backends/cuda/nvrtc.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cuda {

/// A generated elementwise kernel of one node (codegen.h's calling convention).
struct CudaLaunch {
  const CudaDevice* dev = nullptr;
  std::shared_ptr<const Compiled> binary;  ///< kept for the module's life
  CUmodule module = nullptr;
  CUfunction fn = nullptr;
  Geometry geometry;
  std::vector<size_t> in_bytes;  ///< per input, as gpu::NodeIO
  size_t out_bytes = 0;
  int64_t work_items = 0;           ///< the `n` parameter (threads of the grid-stride loop)
  std::vector<unsigned char> meta;  ///< the `meta` parameter (pack_meta)
  double p0 = 0, p1 = 0;            ///< the formula's parameters, passed as T
  bool t_is_double = false;
  unsigned grid = 1;  ///< blocks of kBlock threads (grid-stride loop beyond that)
  /// Set for a node whose device work is a library call (cuBLASLt) instead of a generated
  /// kernel: enqueues it on the stream reading `inputs` (per in_bytes entry) and writing
  /// `output`, with `workspace` of at least workspace_bytes device bytes.
  std::function<Status(CUstream stream, std::span<const CUdeviceptr> inputs, CUdeviceptr output,
                       CUdeviceptr workspace)>
      custom;
  size_t workspace_bytes = 0;  ///< device scratch `custom` needs per launch
  /// As NodeKernel::device_error: the kernel takes an `int* err` last parameter, and a set
  /// flag is turned into the node's error at the run's end.
  std::function<Status(int64_t position, int64_t value)> device_error;
  size_t error_input = 0;
  size_t error_elem_bytes = 0;
  /// NodeKernel::table in device memory (owned; 0 when the kernel has no table parameter).
  CUdeviceptr table = 0;

  CudaLaunch() = default;
  CudaLaunch(const CudaLaunch&) = delete;
  CudaLaunch& operator=(const CudaLaunch&) = delete;
  ~CudaLaunch();

  /// Enqueues the kernel on `stream` reading `inputs` (per in_bytes entry a device pointer, 0
  /// where absent; the first geometry.num_inputs are the kernel's input parameters) and
  /// writing `output`. Nothing for zero work items. Errors name the driver error.
  Status launch(CUstream stream, std::span<const CUdeviceptr> inputs, CUdeviceptr output,
                CUdeviceptr workspace = 0, CUdeviceptr error = 0) const;
};

/// The node's error for a device error flag `flag` (0: none) of launch `l`, whose input
/// `l.error_input` is at `input` on the device: reads the bad element back (blocking) and
/// calls l.device_error. OK when the flag is clear.
Status device_error_status(const CudaLaunch& l, int32_t flag, CUdeviceptr input);

/// Threads per block of every generated kernel (its __launch_bounds__).
inline constexpr unsigned kBlock = 256;

/// Compiles `source` for the device (NVRTC, cached), loads it into the device's context and
/// fills `l`'s module, function and grid for `l.work_items`. Errors name the node (`where`).
Status load_kernel(CudaLaunch& l, const std::string& source, const std::string& where);

/// OK when the node can run on cuda as far as the device goes, else kUnimplemented with why:
/// the probe's reason (no driver, no device), or an input or output larger than the device's
/// memory.
Status device_ready(const ops::NodeContext& ctx);

/// `accepts` of every generated cuda kernel: device_ready, then whether node_kernel
/// (codegen.h) generates the node.
Status generated_accepts(const ops::NodeContext& ctx);

/// `prepare` of every generated cuda kernel: node_kernel's source compiled and loaded, its
/// launch parameters in a CudaLaunch. Errors name the node.
Result<std::shared_ptr<void>> generated_prepare(const ops::NodeContext& ctx);

/// Registers the generated cuda kernel of `op` (generated_prepare, generated_accepts,
/// run_standalone) for `dtypes`, naming `file`:`line` as its registration site.
void register_generated_kernel(std::string_view op, DTypeSet dtypes, const char* file, int line);

/// The kernel function of every generated cuda kernel when a node runs on its own (the op
/// database, a node outside any device group): allocates device buffers, copies the inputs
/// in, launches, copies the output back and frees (blocking). Errors name the node and the
/// driver error.
Status run_standalone(ops::KernelContext& ctx);

}  // namespace frame::backends::cuda
