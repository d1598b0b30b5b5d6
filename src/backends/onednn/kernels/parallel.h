#pragma once
/// \file
/// Helpers of the onednn backend's byte-moving kernels (layout.cpp, gather_pad_resize.cpp,
/// ew_program_run.cpp): element-size dispatch (a byte move needs no per-dtype arithmetic,
/// ARCH-042), and splitting over threads by the bytes they move: small copies run inline on the
/// caller, never one chunk per thread regardless of size (docs/backends/onednn.md "Threads and the
/// wait policy").

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "frame/ops/parallel.h"

namespace frame::backends::onednn {

/// Bytes per thread below which a copy uses fewer threads (256 KiB).
inline constexpr int64_t kCopyGrainBytes = int64_t{1} << 18;

/// Threads for a copy of `bytes` bytes given the budget `budget` (>= 1 returned).
inline int threads_for_bytes(int64_t bytes, int budget) {
  return static_cast<int>(std::clamp<int64_t>(bytes / kCopyGrainBytes, 1, std::max(1, budget)));
}

/// Runs f(i0, i1) over [0, n) split into `nt` contiguous ranges (inline when nt == 1).
using ops::parallel_ranges;

/// Calls f.template operator()<E>() with E the unsigned integer of `size` bytes (1, 2, 4; any
/// other size: 8).
template <typename F>
void by_element_size(size_t size, F&& f) {
  switch (size) {
    case 1:
      f.template operator()<uint8_t>();
      break;
    case 2:
      f.template operator()<uint16_t>();
      break;
    case 4:
      f.template operator()<uint32_t>();
      break;
    default:
      f.template operator()<uint64_t>();
      break;
  }
}

}  // namespace frame::backends::onednn
