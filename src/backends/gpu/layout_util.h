#pragma once
/// \file
/// Index arithmetic both GPU backends' kernels share (docs/backends/gpu-codegen.md).

#include <cstdint>
#include <span>
#include <vector>

#include "frame/core/tensor.h"

namespace frame::backends::gpu {

/// Strides of a tensor of shape `s`, right-aligned to the dims `norm` (e.g. a LayerNorm's
/// normalised dims), per dim of `norm`: 0 where `s` broadcasts (has 1 or lacks the dim), as
/// the cpu kernels' expand_to reads it. `s` may carry leading 1s beyond `norm`'s rank.
std::vector<int64_t> aligned_strides(const Shape& s, std::span<const int64_t> norm);

}  // namespace frame::backends::gpu
