#pragma once
/// \file
/// Prepared oneDNN conv / conv_transpose / matmul / gemm primitives, shared by their own
/// kernels (conv.cpp, matmul.cpp) and by the fused_post_ops_internal kernel, which builds the
/// same primitive with oneDNN post-ops attached.

#include <memory>
#include <span>

#include "frame/core/status.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::backends::onednn {

/// Prepared, read-only state of one node: primitive(s), reordered constant weights. `run` is
/// re-entrant (per-thread buffers, per-thread stream).
class LinearPrimitive {
 public:
  virtual ~LinearPrimitive() = default;
  /// Runs the node: inputs/outputs as in the frame op (residual R at input 3 when fused).
  virtual Status run(ops::KernelContext& ctx) const = 0;
};

/// Builds the conv (or, with `transpose`, conv_transpose) primitive of `ctx` with `post`
/// attached. With `reorder_weights` false only the primitive descriptor is created (the
/// accepts() check). Errors: kUnimplemented when oneDNN cannot run the node (dtype, rank,
/// geometry), naming why.
Result<std::shared_ptr<LinearPrimitive>> make_conv(const ops::NodeContext& ctx, bool transpose,
                                                   std::span<const ops::fused::PostOp> post,
                                                   bool reorder_weights);

/// Builds the matmul (`gemm` false) or gemm primitive of `ctx` with `post` attached; as
/// make_conv otherwise.
Result<std::shared_ptr<LinearPrimitive>> make_matmul(const ops::NodeContext& ctx, bool gemm,
                                                     std::span<const ops::fused::PostOp> post,
                                                     bool reorder_weights);

/// Kernel function of every LinearPrimitive-based kernel: runs the prepared state.
Status run_linear(ops::KernelContext& ctx);

}  // namespace frame::backends::onednn
