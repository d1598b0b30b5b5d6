#pragma once
/// \file
/// The CUDA libraries of the `cuda` backend (docs/backends/cuda.md), opened at first use with
/// dlopen so libframe, the CLI and the Python package load on a machine without any of them:
/// the driver API (libcuda.so.1, only present where an NVIDIA driver is installed) and NVRTC
/// (libnvrtc.so.13, the toolkit's run-time compiler). Nothing here links against CUDA; the
/// toolkit's headers give the types and prototypes only.
///
/// The device is probed once per process (driver, device count, compute capability); with no
/// usable device every cuda kernel declines its node with the probe's reason, so the node
/// falls back through the backend chain and `frame backends` says why.

#include <cuda.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "frame/core/status.h"

namespace frame::backends::cuda {

/// Name under which cuda kernels are registered.
inline constexpr std::string_view kBackendName = "cuda";

/// Environment variable choosing the device by ordinal (default 0).
inline constexpr const char* kDeviceEnv = "FRAME_CUDA_DEVICE";

/// Environment variable naming a directory searched first for libnvrtc.so.13 (then the
/// loader's search path, then the toolkit's lib64 found at build time).
inline constexpr const char* kLibDirEnv = "FRAME_CUDA_LIB_DIR";

/// The lowest compute capability the backend generates code for (Ampere, sm_80): bf16
/// conversions and the cp.async-free kernels here need nothing newer.
inline constexpr int kMinComputeCapability = 80;

/// Driver API entry points (the versioned symbols cuda.h maps the names to).
struct DriverApi {
#define FRAME_CU_FN(name) decltype(&::name) name = nullptr;
  FRAME_CU_FN(cuInit)
  FRAME_CU_FN(cuDriverGetVersion)
  FRAME_CU_FN(cuGetErrorName)
  FRAME_CU_FN(cuDeviceGetCount)
  FRAME_CU_FN(cuDeviceGet)
  FRAME_CU_FN(cuDeviceGetName)
  FRAME_CU_FN(cuDeviceGetAttribute)
  FRAME_CU_FN(cuDeviceTotalMem)
  FRAME_CU_FN(cuDevicePrimaryCtxRetain)
  FRAME_CU_FN(cuCtxSetCurrent)
  FRAME_CU_FN(cuModuleLoadData)
  FRAME_CU_FN(cuModuleUnload)
  FRAME_CU_FN(cuModuleGetFunction)
  FRAME_CU_FN(cuLaunchKernel)
  FRAME_CU_FN(cuMemAlloc)
  FRAME_CU_FN(cuMemFree)
  FRAME_CU_FN(cuMemAllocHost)
  FRAME_CU_FN(cuMemFreeHost)
  FRAME_CU_FN(cuMemcpyHtoDAsync)
  FRAME_CU_FN(cuMemcpyHtoD)
  FRAME_CU_FN(cuMemcpyDtoHAsync)
  FRAME_CU_FN(cuMemcpyDtoH)
  FRAME_CU_FN(cuMemsetD8Async)
  FRAME_CU_FN(cuMemcpyDtoDAsync)
  FRAME_CU_FN(cuStreamCreate)
  FRAME_CU_FN(cuStreamDestroy)
  FRAME_CU_FN(cuStreamSynchronize)
#undef FRAME_CU_FN
};

/// The device every cuda kernel runs on, with its primary context.
struct CudaDevice {
  const DriverApi* api = nullptr;
  CUdevice id = 0;
  CUcontext context = nullptr;
  int ordinal = 0;
  int compute_capability = 0;  ///< major * 10 + minor, e.g. 90 for an H100 / H200
  int multiprocessors = 0;
  size_t total_memory = 0;  ///< bytes
  std::string name;
  int driver_version = 0;  ///< e.g. 13000
};

/// The selected device, probed once per process (thread-safe), or nullptr when none is usable.
const CudaDevice* selected_device();

/// "" when selected_device() is non-null; else why ("no NVIDIA driver (libcuda.so.1: cannot
/// open shared object file)", "cuInit: CUDA_ERROR_NO_DEVICE", "compute capability 7.5 is
/// below 8.0", ...), for `frame backends`, kernel refusals and skipped tests.
const std::string& unavailable_reason();

/// Makes the device's primary context current on the calling thread (a run may be on any
/// thread). Errors name the driver error.
Status make_current(const CudaDevice& d);

/// "CUDA_ERROR_OUT_OF_MEMORY (2)" for a driver error code.
std::string cu_error_name(const CudaDevice& d, CUresult r);

/// Opens a toolkit library by soname (e.g. "libnvrtc.so.13") with dlopen: from $FRAME_CUDA_LIB_DIR,
/// then the loader's search path, then the toolkit's library directory found at build time.
/// Returns the handle (kept open for the process) or nullptr with every attempt's dlerror in
/// `error`.
void* open_toolkit_library(const char* soname, std::string& error);

/// OK for CUDA_SUCCESS, else kInternal "cuda: <what>: <error name>".
Status cu_check(const CudaDevice& d, CUresult r, std::string_view what);

}  // namespace frame::backends::cuda
