#pragma once
/// \file
/// Helpers of the onednn conv / matmul / gemm kernels (docs/backends/onednn.md#convolution-
/// matmul-and-gemm): per-thread activation buffers, oneDNN post-ops from the post-op list of
/// fused_post_ops_internal, allocation-free primitive execution, and dnnl::error -> Status.

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <string_view>

#include "backends/onednn/dnnl_util.h"
#include "frame/core/status.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::backends::onednn {

/// Appends the oneDNN form of `post` to `ops`, the activations as eltwise post-ops. "add"
/// becomes a binary add whose src1 is `*residual` (plain, the dst shape), or, with `residual`
/// null, a sum post-op (the caller puts the residual into dst before the primitive runs: a
/// plain binary operand would make oneDNN drop to a plain-layout implementation for a conv
/// with blocked dst). Returns the post-op index of the add, or -1.
int append_post_ops(dnnl::post_ops& ops, std::span<const ops::fused::PostOp> post,
                    const dnnl::memory::desc* residual);

}  // namespace frame::backends::onednn
