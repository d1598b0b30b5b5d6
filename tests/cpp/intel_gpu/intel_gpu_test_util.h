#pragma once
/// \file
/// What the intel_gpu test files share: the skip when the backend cannot run here and the
/// compile options that prefer it.

#include <gtest/gtest.h>

#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::runtime::test {

/// Skips the test when the backend is not built or no OpenCL device exists (CI installs
/// PoCL, so there every test runs).
#define REQUIRE_INTEL_GPU()                                                                 \
  do {                                                                                      \
    const ::frame::runtime::Backend* b = ::frame::runtime::find_backend("intel_gpu");       \
    if (b == nullptr) GTEST_SKIP() << "intel_gpu is not in this build (no OpenCL headers)"; \
    if (!b->unavailable_reason().empty()) GTEST_SKIP() << b->unavailable_reason();          \
  } while (0)

/// Backends {intel_gpu, cpu}, no compile cache (each test sees a real compilation).
inline CompileOptions gpu_options() {
  CompileOptions o;
  o.backends = {"intel_gpu", "cpu"};
  o.use_cache = false;
  return o;
}

/// intel_gpu alone, strict (every node must run on an intel_gpu kernel), no compile cache.
inline CompileOptions strict_gpu_options() {
  CompileOptions o;
  o.backends = {"intel_gpu"};
  o.use_cache = false;
  o.strict = true;
  return o;
}

}  // namespace frame::runtime::test
