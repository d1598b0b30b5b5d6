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

/// Per-thread scratch slots of the kernels (each node uses them only during its own call).
enum class BufferSlot : int { kSrc = 0, kDst = 1, kWeights = 2 };

/// Memory of `desc` in the calling thread's buffer `slot` (grows, never shrinks; 64-byte
/// aligned): no allocation per run in the steady state, and concurrent runs never share one.
dnnl::memory thread_buffer(BufferSlot slot, const dnnl::memory::desc& desc);

/// Appends the oneDNN form of `post` to `ops`, the activations as eltwise post-ops. "add"
/// becomes a binary add whose src1 is `*residual` (plain, the dst shape), or, with `residual`
/// null, a sum post-op (the caller puts the residual into dst before the primitive runs: a
/// plain binary operand would make oneDNN drop to a plain-layout implementation for a conv
/// with blocked dst). Returns the post-op index of the add, or -1.
int append_post_ops(dnnl::post_ops& ops, std::span<const ops::fused::PostOp> post,
                    const dnnl::memory::desc* residual);

/// One argument of a primitive execution.
struct ExecArg {
  int arg = 0;
  const dnnl::memory* mem = nullptr;
};

/// Executes `prim` on the calling thread's stream with `args` through the C API (no argument
/// map is built per run) and waits. Errors: kInternal naming the node, op and oneDNN status.
Status execute(const ops::NodeContext& node, const dnnl::primitive& prim,
               std::span<const ExecArg> args);

/// kInternal "node '<n>' (<op>): oneDNN <what>: <message>".
Status dnnl_failure(const ops::NodeContext& node, std::string_view what, const dnnl::error& e);

/// kUnimplemented "oneDNN has no <what> for this node: <message>" (an accepts() answer, so the
/// fallback chain takes the node, M10).
Status dnnl_declines(std::string_view what, const dnnl::error& e);

}  // namespace frame::backends::onednn
