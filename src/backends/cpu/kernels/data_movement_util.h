#pragma once
/// \file
/// Helpers private to the cpu data-movement kernels: a NodeContext whose constant inputs are
/// the run-time inputs (so kernels reuse the shape functions' parameter code in
/// ops/schemas/data_movement_shapes.h), and a strided gather-copy that memcpys contiguous runs.

#include <cstring>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cpu {

/// Copy of the kernel's NodeContext in which every present input is visible as a constant.
inline ops::NodeContext runtime_context(const ops::KernelContext& ctx) {
  ops::NodeContext n = *ctx.node;
  n.input_constants.assign(n.input_types.size(), nullptr);
  for (size_t i = 0; i < ctx.inputs.size() && i < n.input_constants.size(); ++i) {
    if (n.has_input(i)) n.input_constants[i] = &ctx.inputs[i];
  }
  return n;
}

/// dst (contiguous, shape `dims`) = src[offset + sum_d i_d * strides[d]]. Strides are in
/// elements and may be 0 (broadcast) or negative (reversed slices). Size-1 dims are dropped and
/// dims contiguous in the source merged, so transposes/slices keeping the last axis copy whole
/// runs with memcpy. OpenMP above kParallelThreshold elements.
template <typename T>
void strided_copy(const T* src, int64_t offset, const std::vector<int64_t>& dims,
                  const std::vector<int64_t>& strides, T* dst, int num_threads) {
  BroadcastPlan<1> p;
  p.numel = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    p.numel *= dims[d];
    if (dims[d] == 1) continue;
    if (!p.dims.empty() && p.strides[0].back() == strides[d] * dims[d]) {
      p.dims.back() *= dims[d];
      p.strides[0].back() = strides[d];
      continue;
    }
    p.dims.push_back(dims[d]);
    p.strides[0].push_back(strides[d]);
  }
  if (p.dims.empty()) {
    p.dims.push_back(1);
    p.strides[0].push_back(0);
  }
  const T* base = src + offset;
  for_each_row(p, num_threads,
               [&](int64_t o, int64_t n, const std::array<int64_t, 1>& off,
                   const std::array<int64_t, 1>& step) {
                 const T* s = base + off[0];
                 T* d = dst + o;
                 if (step[0] == 1) {
                   std::memcpy(static_cast<void*>(d), static_cast<const void*>(s),
                               static_cast<size_t>(n) * sizeof(T));
                 } else {
                   const int64_t st = step[0];
                   for (int64_t i = 0; i < n; ++i) d[i] = s[i * st];
                 }
               });
}

/// Row-major element strides of `shape`.
inline std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  return contiguous_strides(shape);
}

}  // namespace frame::backends::cpu
