#pragma once
// Private to the cpu backend: converting rank-4 activations between plain NCHW and the layouts
// the onednn patterns give them (nhwc, nChw8c, nChw16c; src/ops/schemas/nn_fused_internal.h), for
// the reference kernels of fused_post_ops_internal and laid_out_internal (ARCH-041: a node the
// onednn pattern marked computes the same when the chain places it on cpu).

#include <cstddef>
#include <vector>

#include "frame/core/tensor.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::cpu {

/// Copies the rank-4 tensor of logical `shape` [N, C, H, W] from layout `from_l` to `to_l`, by
/// index arithmetic (ops::fused::layout_offset).
template <typename T>
void relayout(const T* from, T* to, const Shape& shape, ops::fused::ActivationLayout from_l,
              ops::fused::ActivationLayout to_l) {
  const int64_t n = shape[0], c = shape[1], hw = shape[2] * shape[3];
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t s = 0; s < hw; ++s) {
        to[ops::fused::layout_offset(to_l, c, hw, i, ch, s)] =
            from[ops::fused::layout_offset(from_l, c, hw, i, ch, s)];
      }
    }
  }
}

/// Per-thread scratch buffer number `slot` of at least `bytes` (grows once; kernels' run() is
/// re-entrant, so these are not in prepared state). Valid until the thread asks for the same
/// slot again.
inline std::byte* layout_scratch(size_t slot, size_t bytes) {
  thread_local std::vector<std::vector<std::byte>> bufs;
  if (bufs.size() <= slot) bufs.resize(slot + 1);
  std::vector<std::byte>& b = bufs[slot];
  if (b.size() < bytes) b.resize(bytes);
  return b.data();
}

/// A plain NCHW copy of the float tensor `t` stored in `layout`, in scratch `slot`. Errors:
/// a dtype outside kFloatDTypes.
inline Result<Tensor> plain_copy(const Tensor& t, ops::fused::ActivationLayout layout,
                                 size_t slot) {
  std::byte* buf = layout_scratch(slot, t.nbytes());
  FRAME_RETURN_IF_ERROR(dispatch_dtype<kFloatDTypes>(t.dtype(), [&]<typename T>() {
    relayout(t.data<T>(), reinterpret_cast<T*>(buf), t.shape(), layout,
             ops::fused::ActivationLayout::kPlain);
    return Status();
  }));
  return Tensor::view(t.dtype(), t.shape(), buf);
}

}  // namespace frame::cpu
