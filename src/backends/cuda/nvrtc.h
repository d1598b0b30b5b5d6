#pragma once
/// \file
/// NVRTC, the CUDA run-time compiler, opened with dlopen (docs/backends/cuda.md, "How kernels
/// are generated and cached"): every cuda kernel is CUDA C++ generated at prepare and compiled
/// here to a cubin for the device's architecture. NVRTC needs no driver and no GPU, so the
/// compile tests run it for sm_80 and sm_90 on any machine with the toolkit
/// (tests/cpp/cuda/).

#include <cstddef>
#include <memory>
#include <string>

#include "frame/core/status.h"

namespace frame::backends::cuda {

/// Environment variable naming a directory where compiled cubins are kept across processes
/// (unset: in-memory cache only). Created if missing.
inline constexpr const char* kCacheDirEnv = "FRAME_CUDA_CACHE_DIR";

/// "" when NVRTC could be opened, else why (every path tried and dlerror's message).
const std::string& nvrtc_unavailable_reason();

/// NVRTC's version as "13.0", or "" when unavailable.
std::string nvrtc_version();

/// One compiled kernel source.
struct Compiled {
  std::string cubin;       ///< the ELF image for cuModuleLoadData
  bool from_disk = false;  ///< read from the kCacheDirEnv cache instead of compiled
};

/// `source` compiled for `sm_<arch>` (e.g. 80, 90) with the backend's options (C++17,
/// IEEE-exact division and square root, no fast-math, denormals kept, as on the host) to a
/// cubin, through an in-memory cache keyed by (source, arch, NVRTC version) and the disk cache
/// (kCacheDirEnv). Thread-safe: distinct sources compile concurrently.
/// Errors: kUnimplemented when NVRTC is unavailable; kInternal with NVRTC's log when the
/// source does not compile (a generator bug: the compile tests catch it first).
Result<std::shared_ptr<const Compiled>> compile_cuda(const std::string& source, int arch);

/// Sources compiled by NVRTC in this process so far (cache misses), for tests.
size_t sources_compiled();

}  // namespace frame::backends::cuda
