#pragma once
/// \file
/// cuDNN 9 for the cuda backend's conv, max_pool, average_pool and batch_normalization
/// (docs/backends/cuda.md, "Convolution, pooling and batch norm"), opened with dlopen at first
/// use (libcudnn.so.9) like the other CUDA libraries. Nodes use cuDNN's descriptor API (the
/// "legacy" API, deprecated in cuDNN 9 in favour of the graph API but complete for these ops) on
/// frame's plain NCHW / NCDHW layout. A node's descriptors and algorithm are made once at
/// prepare; a run enqueues the call on the group's stream.

#include <cuda.h>

#include <memory>
#include <string>

#include "backends/cuda/driver.h"
#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::cuda {

/// "" when cuDNN could be opened, else why.
const std::string& cudnn_unavailable_reason();

/// Whether cuDNN can run node `ctx` (conv, max_pool, average_pool, batch_normalization) as
/// far as shapes, attributes and dtypes go; needs no device. Errors: kUnimplemented naming
/// what cuDNN is not asked to do here (asymmetric pads, ceil_mode, pooling dilations, max_pool's
/// Indices output, batch norm in training mode or over f16/bf16, ranks other than 4 and 5, ...).
Status dnn_supports(const ops::NodeContext& ctx);

/// One node's cuDNN plan.
class DnnPlan {
 public:
  /// Descriptors and (for conv) the fastest algorithm cuDNN's heuristic offers that needs at
  /// most `max_workspace` bytes. Errors: dnn_supports' reasons; kInternal naming the failing
  /// cuDNN call.
  static Result<std::shared_ptr<DnnPlan>> make(const CudaDevice& dev, const ops::NodeContext& ctx,
                                               size_t max_workspace);
  ~DnnPlan();
  DnnPlan(const DnnPlan&) = delete;
  DnnPlan& operator=(const DnnPlan&) = delete;

  /// Enqueues the node on `stream`: `in` holds the device pointers of its inputs in node order
  /// (0 for absent ones), `out` its output. Errors name the cuDNN call.
  Status run(CUstream stream, std::span<const CUdeviceptr> in, CUdeviceptr out,
             CUdeviceptr workspace) const;

  size_t workspace_bytes() const { return workspace_; }

 private:
  DnnPlan() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t workspace_ = 0;
};

}  // namespace frame::backends::cuda
