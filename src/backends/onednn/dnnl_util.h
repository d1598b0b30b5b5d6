#pragma once
/// \file
/// Shared plumbing of the `onednn` backend's primitive kernels (docs/backends/onednn.md):
/// one CPU engine per process, one stream per calling thread, frame dtype -> oneDNN data type,
/// plain (row-major) memory descriptors, and a per-thread user scratchpad so concurrent
/// Executable::run calls never share oneDNN scratch memory (Executable::run is re-entrant).

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::backends::onednn {

/// The process-wide CPU engine (created on first use; thread-safe).
dnnl::engine& engine();
/// A stream on engine() owned by the calling thread (so concurrent runs never share one).
dnnl::stream& thread_stream();

/// oneDNN data type of a frame dtype: f32, f16, bf16, s8, u8, s32; nullopt for the rest
/// (kernels declare those dtypes unsupported so the fallback chain takes them).
std::optional<dnnl::memory::data_type> to_dnnl(DTypeCode dtype);

/// Row-major (plain, dense) descriptor of `shape` with `dt`; a rank-0 shape becomes {1}.
dnnl::memory::desc plain_desc(std::span<const int64_t> shape, dnnl::memory::data_type dt);

/// The descriptor of a rank-4 activation [N, C, H, W] of `dims` stored in `layout`
/// (src/ops/schemas/nn_fused_internal.h: plain NCHW, nhwc, nChw8c or nChw16c); plain_desc for
/// kPlain.
dnnl::memory::desc activation_desc(const dnnl::memory::dims& dims, dnnl::memory::data_type dt,
                                   ops::fused::ActivationLayout layout);

/// OK when oneDNN's int8 convolution and matmul sum u8 x s8 products exactly in int32 on
/// this CPU: with VNNI (AVX512_VNNI or AVX_VNNI, read once from dnnl::get_effective_cpu_isa, so
/// DNNL_MAX_CPU_ISA counts). Without it oneDNN's AVX2 and AVX-512 int8 kernels add pairs of
/// products in saturating 16-bit lanes (vpmaddubsw), while ONNX ConvInteger, MatMulInteger,
/// QLinearConv and QLinearMatMul specify exact int32 sums; then kUnimplemented "int8 on a CPU
/// without VNNI ...", the int8 kernels' accepts() answer, so the cpu kernels run those nodes
/// (docs/backends/onednn.md, "int8 without VNNI").
Status int8_sums_exact();

/// Primitive attributes every frame primitive uses: user-managed scratchpad (see
/// scratchpad()), so the primitive itself holds no mutable memory.
dnnl::primitive_attr default_attr();

/// Per-thread buffers of the primitive kernels: activations reordered to and from the layout a
/// primitive prefers, weights reordered per run, and the primitives' user scratchpad. A node
/// uses them only during its own call.
enum class BufferSlot : int { kSrc = 0, kDst = 1, kWeights = 2, kScratchpad = 3 };

/// Memory of `desc` in the calling thread's buffer `slot` (grows, never shrinks; 64-byte
/// aligned): no allocation per run in the steady state, and concurrent runs never share one.
dnnl::memory thread_buffer(BufferSlot slot, const dnnl::memory::desc& desc);

/// The primitive's user scratchpad: thread_buffer(BufferSlot::kScratchpad, desc).
inline dnnl::memory scratchpad(const dnnl::memory::desc& desc) {
  return thread_buffer(BufferSlot::kScratchpad, desc);
}

/// Wraps tensor memory for a primitive argument without copying.
inline dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& t) {
  return dnnl::memory(desc, engine(), const_cast<void*>(t.raw_data()));
}

/// One argument of a primitive execution.
struct ExecArg {
  int arg = 0;
  const dnnl::memory* mem = nullptr;
};

/// Executes `prim` on the calling thread's stream with `args` through the C API (no argument
/// map is built per run) and waits. Errors: kInternal naming the node, op and oneDNN status.
Status execute(const ops::NodeContext& node, const dnnl::primitive& prim,
               std::span<const ExecArg> args);

/// "node '<n>' (<op>): oneDNN <what>: <message>": kUnimplemented when oneDNN has no
/// implementation for the configuration (dnnl_unimplemented), else kInternal.
Status dnnl_failure(const ops::NodeContext& node, std::string_view what, const dnnl::error& e);

/// kUnimplemented "oneDNN has no <what> for this node: <message>" (an accepts() answer, so the
/// fallback chain takes the node, M10).
Status dnnl_declines(std::string_view what, const dnnl::error& e);

}  // namespace frame::backends::onednn
