#pragma once
/// \file
/// OpenCL host side of the `intel_gpu` backend (docs/backends/intel-gpu.md): the device chosen
/// once per process, RAII handles, and the in-memory program cache (one clBuildProgram per
/// distinct source text, so per op and dtype for the list kernels and per body fingerprint
/// for fused groups).

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include "frame/core/status.h"

namespace frame::backends::intel_gpu {

/// Name under which intel_gpu kernels are registered.
inline constexpr std::string_view kBackendName = "intel_gpu";

/// Environment variable selecting the device: a case-insensitive substring of
/// "<platform name> / <device name>" (e.g. "portable" for PoCL, "Arc", "UHD").
inline constexpr const char* kDeviceEnv = "FRAME_OPENCL_DEVICE";

/// The device every intel_gpu kernel runs on, with its context and one in-order queue.
/// OpenCL enqueue calls are thread-safe; a kernel object with per-node buffers is guarded by
/// its node's own mutex (clSetKernelArg is not).
struct Device {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  std::string platform_name;
  std::string device_name;
  bool is_gpu = false;
  bool is_intel = false;  ///< vendor or platform names Intel
  bool fp64 = false;      ///< cl_khr_fp64: double precision kernels can be built
  /// CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes: the alignment of a sub-buffer's origin.
  size_t base_align = 128;
  /// CL_DEVICE_MAX_MEM_ALLOC_SIZE in bytes: the largest single buffer. Kernels decline values
  /// above it; a device group spreads its values over buffers of at most this size.
  size_t max_alloc = SIZE_MAX;
  /// Platform, device and driver versions: program binaries on disk are reused only by the
  /// same identity.
  std::string identity;
};

/// Environment variable naming a directory where built program binaries are kept across
/// processes (unset: in-memory cache only). Created if missing.
inline constexpr const char* kCacheDirEnv = "FRAME_OPENCL_CACHE_DIR";

/// The selected device, probed once per process (thread-safe), or nullptr when none is usable.
/// Preference: among the devices whose "<platform> / <device>" contains $FRAME_OPENCL_DEVICE
/// (all devices when unset), an Intel GPU, else any GPU, else the first device.
const Device* selected_device();

/// "" when selected_device() is non-null; else why (no platform, no device, no match for the
/// environment variable, context creation failed), for `frame backends` and kernel errors.
const std::string& unavailable_reason();

/// Symbolic name of an OpenCL error code, e.g. "CL_OUT_OF_RESOURCES (-5)".
std::string cl_error_name(cl_int code);

/// Owning handle of an OpenCL object, released with `Release`.
template <typename T, cl_int (*Release)(T)>
class ClHandle {
 public:
  ClHandle() = default;
  explicit ClHandle(T h) : h_(h) {}
  ClHandle(const ClHandle&) = delete;
  ClHandle& operator=(const ClHandle&) = delete;
  ClHandle(ClHandle&& o) noexcept : h_(o.h_) { o.h_ = nullptr; }
  ClHandle& operator=(ClHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = o.h_;
      o.h_ = nullptr;
    }
    return *this;
  }
  ~ClHandle() { reset(); }
  T get() const { return h_; }
  void reset() {
    if (h_ != nullptr) Release(h_);
    h_ = nullptr;
  }

 private:
  T h_ = nullptr;
};
using ClMem = ClHandle<cl_mem, clReleaseMemObject>;
using ClKernel = ClHandle<cl_kernel, clReleaseKernel>;

/// A device buffer of at least `bytes` bytes (OpenCL forbids empty buffers: at least 16).
/// Errors: kInternal naming the OpenCL error and `what`.
Result<ClMem> make_buffer(const Device& d, size_t bytes, cl_mem_flags flags, std::string_view what);

/// A kernel object named `kernel_name` from the program built from `source` with `options`,
/// building the program once per process per (source, options) (in-memory cache). Build
/// errors carry the compiler log. Thread-safe.
Result<ClKernel> make_kernel(const Device& d, const std::string& source, std::string_view options,
                             std::string_view kernel_name);

/// Programs this process built from source so far (cache misses), for tests and docs.
size_t programs_built();
/// Programs this process loaded from the on-disk cache (kCacheDirEnv) instead of building.
size_t programs_loaded();

/// Sets kernel argument `index` to `value`. Errors name the argument and the OpenCL error.
template <typename V>
Status set_arg(cl_kernel k, cl_uint index, const V& value) {
  static_assert(std::is_trivially_copyable_v<V>);
  const cl_int e = clSetKernelArg(k, index, sizeof(V), &value);
  if (e != CL_SUCCESS) return internal_error("clSetKernelArg({}): {}", index, cl_error_name(e));
  return Status();
}

}  // namespace frame::backends::intel_gpu
