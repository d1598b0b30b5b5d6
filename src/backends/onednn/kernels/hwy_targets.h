#pragma once
/// \file
/// Highway targets the `onednn` backend compiles (docs/backends/onednn.md): SSE4, AVX2 and
/// AVX-512 (AVX3), chosen at run time by `FRAME_HWY_DISPATCH`, plus the portable EMU128 baseline
/// Highway always builds for static dispatch. SSSE3 and AVX3_DL add compile time for no gain on
/// the x86 machines we run on, so they are disabled. Include before any Highway header; never
/// build these files with -march=native (the dispatch picks the best target per machine).
///
/// The choice is ours, not Highway's `HWY_DYNAMIC_DISPATCH`: that one calls into libhwy.so, and
/// loading libhwy.so (Debian's Highway 1.0.3) runs a static initializer that calibrates its
/// benchmark timer, ~5 ms in every process that loads libframe.so (later Highway releases defer
/// it). With this dispatch libframe.so needs only Highway's headers.

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL)
#endif

#include <cstdint>
#include <vector>

#include "hwy/detect_targets.h"

namespace frame::backends::onednn {

/// The Highway target the vector kernels run: the bit (`HWY_AVX3`, `HWY_AVX2`, `HWY_SSE4`, or
/// the build's static baseline `HWY_STATIC_TARGET`, EMU128 or SCALAR as the compiler allows)
/// of the best target this file's set compiles that the CPU supports, decided once per process
/// from CPUID (every feature Highway's target requires, and OS support for its registers), or
/// the target `set_vec_target_for_test` forced. Off x86 only the static baseline is chosen.
/// Thread-safe.
int64_t vec_target();

/// The targets `vec_target` may pick on this CPU, best first (tests run each).
std::vector<int64_t> vec_targets_supported();

/// Tests: the kernels prepared after this call dispatch to `target` (one of
/// `vec_targets_supported()`); 0 restores the CPU's best. Errors: none (an unsupported target
/// aborts: running its instructions would fault).
void set_vec_target_for_test(int64_t target);

/// The function of a `FRAME_HWY_DISPATCH` list for `target`: the first compiled one (non-null)
/// whose target is `target` or below it (a CPU with AVX3 runs AVX2 code).
template <typename Fn>
Fn pick_vec_target(int64_t target, Fn avx3, Fn avx2, Fn sse4, Fn fallback);

}  // namespace frame::backends::onednn

/// Highway's HWY_DYNAMIC_DISPATCH(FUNC) without libhwy.so: a pointer to FUNC compiled for
/// `vec_target()`. FUNC is a function defined per target (inside HWY_NAMESPACE) of a file that
/// includes hwy/foreach_target.h; use after hwy/highway.h, outside HWY_NAMESPACE, where
/// HWY_EXPORT would go (no HWY_EXPORT is needed).
#define FRAME_HWY_DISPATCH(FUNC)                                                             \
  ::frame::backends::onednn::pick_vec_target<decltype(&HWY_STATIC_DISPATCH(FUNC))>(          \
      ::frame::backends::onednn::vec_target(), HWY_CHOOSE_AVX3(FUNC), HWY_CHOOSE_AVX2(FUNC), \
      HWY_CHOOSE_SSE4(FUNC), HWY_CHOOSE_FALLBACK(FUNC))

template <typename Fn>
Fn frame::backends::onednn::pick_vec_target(int64_t target, Fn avx3, Fn avx2, Fn sse4,
                                            Fn fallback) {
  // Highway's x86 target bits: a lower bit is a better target; EMU128 runs anywhere.
  if (avx3 != nullptr && target <= HWY_AVX3) return avx3;
  if (avx2 != nullptr && target <= HWY_AVX2) return avx2;
  if (sse4 != nullptr && target <= HWY_SSE4) return sse4;
  return fallback;
}
