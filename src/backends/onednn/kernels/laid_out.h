#pragma once
/// \file
/// Private to the onednn backend: the pieces of the pool, concat and batch-norm kernels
/// (pool.cpp, layout.cpp, norm.cpp) that laid_out_internal's kernel (laid_out.cpp) runs on
/// channels-last activations (src/ops/schemas/laid_out_internal.h, docs/backends/onednn.md).

#include <memory>
#include <string_view>

#include "frame/core/status.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::onednn {

/// Whether oneDNN pools the node (base op `base_op`: max_pool, average_pool, global_max_pool or
/// global_average_pool; X and Y rank 4, stored nhwc) with a jit implementation; kUnimplemented
/// with the reason otherwise (its reference loops only, configurations pool.cpp declines).
Status nhwc_pool_accepts(const ops::NodeContext& node, std::string_view base_op);

/// The prepared pooling primitive of such a node (run with run_pool). Errors: as
/// nhwc_pool_accepts, or oneDNN's, naming the node.
Result<std::shared_ptr<void>> nhwc_pool_prepare(const ops::NodeContext& node,
                                                std::string_view base_op);

/// Runs a node prepared by nhwc_pool_prepare (ctx.state is its state).
Status run_pool(ops::KernelContext& ctx);

/// The copy plan of a concat along the channel axis of rank-4 parts stored nhwc (rows of
/// N*H*W, each part's C_k channels side by side). Errors: a part not rank 4, naming the node.
Result<std::shared_ptr<void>> nhwc_concat_prepare(const ops::NodeContext& ctx);

/// Runs a node prepared by nhwc_concat_prepare (ctx.state is its state).
Status run_concat(ops::KernelContext& ctx);

/// Whether the f32 affine loop runs the inference batch_normalization node (X rank 4, stored
/// nhwc); kUnimplemented otherwise (training mode, other dtypes).
Status nhwc_batch_norm_accepts(const ops::NodeContext& node);

/// The prepared state of such a node: y = x * a[c] + b[c] over N*H*W pixels of C channels
/// (a, b folded once when the parameters are constants). Errors: as nhwc_batch_norm_accepts.
Result<std::shared_ptr<void>> nhwc_batch_norm_prepare(const ops::NodeContext& node);

/// Runs a node prepared by nhwc_batch_norm_prepare (ctx.state is its state).
Status run_norm(ops::KernelContext& ctx);

}  // namespace frame::backends::onednn
