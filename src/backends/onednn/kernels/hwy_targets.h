#pragma once
/// \file
/// Highway targets the `onednn` backend compiles (docs/backends/onednn.md): SSE4, AVX2 and
/// AVX-512 (AVX3), chosen at run time by HWY_DYNAMIC_DISPATCH, plus the portable EMU128 baseline
/// Highway always builds for static dispatch. SSSE3 and AVX3_DL add compile time for no gain on
/// the x86 machines we run on, so they are disabled. Include before any Highway header; never
/// build these files with -march=native (the dispatch picks the best target per machine).

#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_AVX3_DL)
#endif
