#pragma once
/// \file
/// Private to the onednn backend: the pieces of the pool, concat and batch-norm kernels
/// (pool.cpp, layout.cpp, norm.cpp) that laid_out_internal's kernel (laid_out.cpp) runs on
/// channels-last or channel-blocked activations (src/ops/schemas/laid_out_internal.h,
/// docs/backends/onednn.md).

#include <memory>
#include <string_view>

#include "frame/core/status.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::backends::onednn {

/// Whether oneDNN pools the node (base op `base_op`: max_pool, average_pool, global_max_pool or
/// global_average_pool; X and Y rank 4, stored in `layout`: nhwc, nChw8c or nChw16c) with a jit
/// implementation (or, nhwc, frame's own channels-last loop); kUnimplemented with the reason
/// otherwise (its reference loops only, configurations pool.cpp declines).
Status laid_out_pool_accepts(const ops::NodeContext& node, std::string_view base_op,
                             ops::fused::ActivationLayout layout);

/// The prepared pooling primitive of such a node (run with run_pool). Errors: as
/// laid_out_pool_accepts, or oneDNN's, naming the node.
Result<std::shared_ptr<void>> laid_out_pool_prepare(const ops::NodeContext& node,
                                                    std::string_view base_op,
                                                    ops::fused::ActivationLayout layout);

/// Runs a node prepared by laid_out_pool_prepare (ctx.state is its state).
Status run_pool(ops::KernelContext& ctx);

/// The copy plan of a concat along the channel axis of rank-4 parts stored in `layout`: nhwc
/// (rows of N*H*W, each part's C_k channels side by side) or nChw8c / nChw16c (per image, each
/// part's C_k/b blocks of H*W*b elements one after the other; every C_k a multiple of b).
/// Errors: a part not rank 4 or (blocked) a channel count not a multiple of the block, naming
/// the node.
Result<std::shared_ptr<void>> laid_out_concat_prepare(const ops::NodeContext& ctx,
                                                      ops::fused::ActivationLayout layout);

/// Runs a node prepared by laid_out_concat_prepare (ctx.state is its state).
Status run_concat(ops::KernelContext& ctx);

/// Whether the f32 affine loop runs the inference batch_normalization node (X rank 4, stored
/// in `layout`: nhwc, nChw8c or nChw16c); kUnimplemented otherwise (training mode, other
/// dtypes).
Status laid_out_batch_norm_accepts(const ops::NodeContext& node);

/// The prepared state of such a node: y = x * a[c] + b[c] over the N*H*W pixels of C channels
/// stored in `layout` (a, b folded once when the parameters are constants). Errors: as
/// laid_out_batch_norm_accepts.
Result<std::shared_ptr<void>> laid_out_batch_norm_prepare(const ops::NodeContext& node,
                                                          ops::fused::ActivationLayout layout);

/// Runs a node prepared by laid_out_batch_norm_prepare (ctx.state is its state).
Status run_norm(ops::KernelContext& ctx);

}  // namespace frame::backends::onednn
