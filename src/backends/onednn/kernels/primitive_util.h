#pragma once
/// \file
/// Helpers of the onednn conv / matmul / gemm kernels (docs/backends/onednn.md#convolution-
/// matmul-and-gemm): per-thread activation buffers, oneDNN post-ops from the post-op list of
/// fused_post_ops_internal, allocation-free primitive execution, and dnnl::error -> Status.
/// Also the pieces the float and int8 kernels share: reorders with a user scratchpad, the
/// numpy matmul dims, and the one-time reorder of constant weights.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "core/packed_constants.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
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

/// A reorder primitive with a user scratchpad (so the prepared state holds no mutable memory);
/// `active` false where no reorder is needed.
struct Reorder {
  dnnl::primitive prim;
  dnnl::memory::desc scratch;
  bool active = false;
};

/// The reorder `from` -> `to`; inactive when the two descriptors are equal. Throws
/// dnnl::error where oneDNN cannot reorder between them.
Reorder make_reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

/// Runs the active reorder `r` from `from` into `to` on the thread's stream. Errors: as
/// execute().
Status run_reorder(const ops::NodeContext& node, const Reorder& r, const dnnl::memory& from,
                   const dnnl::memory& to);

/// `user` as the primitive reads it: `user` itself, or (with `r` active) `user` reordered into
/// the thread's `slot` buffer of layout `md`. Errors: as run_reorder.
Result<dnnl::memory> in_layout(const ops::NodeContext& node, const Reorder& r, BufferSlot slot,
                               const dnnl::memory::desc& md, const dnnl::memory& user);

/// `s` with leading 1s up to `rank` dims (oneDNN wants equal ranks); `s` unchanged when it
/// has `rank` dims or more.
dnnl::memory::dims padded(const Shape& s, size_t rank);

/// The oneDNN dims of numpy matmul A x B, all of one rank.
struct MatmulDims {
  dnnl::memory::dims a, b, y;
};

/// Dims of numpy matmul `as` x `bs` (non-empty shapes): a 1-D A is a row, a 1-D B a column
/// (the output buffer has the same elements); with a 2-D B, A's batch dims fold into M.
MatmulDims matmul_dims(Shape as, Shape bs);

/// Constant weights in a primitive's layout (pack_weights). One object per (constant tensor,
/// source layout, packed layout): every kernel that packs the same constant into the same
/// layout, in any compile or session specialization of the process, holds the same object,
/// which lives as long as one of them does: a new input shape re-creates primitives, never
/// the packed weights (ADR 0007, stage A). `source` and `storage` (mem's bytes where they are a
/// copy: Tensor::empty, huge pages if large, or a blob of the compile cache on disk) are the
/// frame::detail::PackedConstant's, so that the cache on disk can store and offer them.
struct PackedWeights : frame::detail::PackedConstant {
  dnnl::memory mem;  ///< the packed weights; read-only
};

/// The constant weights `w` (laid out as `user`) in layout `md`: reordered into new memory the
/// first time, after that the object packed before, while one lives (looked up by `w`'s data
/// address and byte count and both layouts; constants are immutable). Where `md` equals `user`
/// the memory is `w`'s own bytes, not a copy. Thread-safe. Errors: "weight reorder" failures
/// (dnnl_failure) and execute()'s.
Result<std::shared_ptr<const PackedWeights>> pack_weights(const ops::NodeContext& ctx,
                                                          const dnnl::memory::desc& user,
                                                          const dnnl::memory::desc& md,
                                                          const Tensor& w);

/// Constant weights rearranged by a kernel's own code (pack_weights_own): f32 [count] in
/// `storage` (Tensor::empty: no zero-filling pass, huge pages when large; or a blob of the
/// compile cache on disk), read-only.
struct OwnPackedWeights : frame::detail::PackedConstant {
  const float* data() const { return static_cast<const float*>(storage.raw_data()); }
};

/// The constant f32 weights `w` in a kernel's own arrangement, named by `layout` (its kind and
/// every parameter it depends on): `fill` writes its `count` floats the first time, after that
/// the object made before is returned while one lives, exactly as pack_weights shares oneDNN
/// layouts (the shape-agnostic conv's tap-major weights: a first-seen image size of a conv
/// network rearranged every conv's weights per run before). Both take the bytes the compile
/// cache on disk offers (frame::detail::offered_packed) instead of packing. Thread-safe;
/// counted in packed_weight_stats.
std::shared_ptr<const OwnPackedWeights> pack_weights_own(const Tensor& w, const std::string& layout,
                                                         size_t count,
                                                         const std::function<void(float*)>& fill);

/// Counters of pack_weights over the process, for tests and reports.
struct PackedWeightStats {
  uint64_t packs = 0;   ///< weights reordered or wrapped (a new object)
  uint64_t reuses = 0;  ///< calls served by a live object packed before
  size_t live = 0;      ///< objects alive now
};
/// A snapshot of the counters.
PackedWeightStats packed_weight_stats();

}  // namespace frame::backends::onednn
