// The CUDA driver API opened with dlopen, and the device probe (driver.h).

#include "backends/cuda/driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "frame/ops/backend_availability.h"

namespace frame::backends::cuda {
namespace {

#define FRAME_CU_STR2(x) #x
#define FRAME_CU_STR(x) FRAME_CU_STR2(x)

struct Probe {
  DriverApi api;
  CudaDevice device;
  bool ok = false;
  std::string reason;
};

// Resolves every entry point; "" or the first missing symbol.
std::string resolve(void* lib, DriverApi& api) {
  std::string missing;
  auto get = [&](auto& fn, const char* symbol) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
    if (fn == nullptr && missing.empty()) missing = symbol;
  };
  // FRAME_CU_STR expands cuda.h's macros first: cuMemAlloc -> "cuMemAlloc_v2".
#define FRAME_CU_GET(name) get(api.name, FRAME_CU_STR(name));
  FRAME_CU_GET(cuInit)
  FRAME_CU_GET(cuDriverGetVersion)
  FRAME_CU_GET(cuGetErrorName)
  FRAME_CU_GET(cuDeviceGetCount)
  FRAME_CU_GET(cuDeviceGet)
  FRAME_CU_GET(cuDeviceGetName)
  FRAME_CU_GET(cuDeviceGetAttribute)
  FRAME_CU_GET(cuDeviceTotalMem)
  FRAME_CU_GET(cuDevicePrimaryCtxRetain)
  FRAME_CU_GET(cuCtxSetCurrent)
  FRAME_CU_GET(cuModuleLoadData)
  FRAME_CU_GET(cuModuleUnload)
  FRAME_CU_GET(cuModuleGetFunction)
  FRAME_CU_GET(cuLaunchKernel)
  FRAME_CU_GET(cuMemAlloc)
  FRAME_CU_GET(cuMemFree)
  FRAME_CU_GET(cuMemAllocHost)
  FRAME_CU_GET(cuMemFreeHost)
  FRAME_CU_GET(cuMemcpyHtoDAsync)
  FRAME_CU_GET(cuMemcpyHtoD)
  FRAME_CU_GET(cuMemcpyDtoHAsync)
  FRAME_CU_GET(cuMemcpyDtoH)
  FRAME_CU_GET(cuMemsetD8Async)
  FRAME_CU_GET(cuMemcpyDtoDAsync)
  FRAME_CU_GET(cuStreamCreate)
  FRAME_CU_GET(cuStreamDestroy)
  FRAME_CU_GET(cuStreamSynchronize)
#undef FRAME_CU_GET
  return missing;
}

std::string error_name(const DriverApi& api, CUresult r) {
  const char* name = nullptr;
  if (api.cuGetErrorName == nullptr || api.cuGetErrorName(r, &name) != CUDA_SUCCESS ||
      name == nullptr) {
    return fmt::format("CUDA error {}", static_cast<int>(r));
  }
  return fmt::format("{} ({})", name, static_cast<int>(r));
}

void run_probe(Probe& p) {
  // The library stays open for the process's life (its functions are cached in `api`).
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* e = dlerror();
    p.reason = fmt::format("no NVIDIA driver ({})", e != nullptr ? e : "libcuda.so.1 not found");
    return;
  }
  if (std::string missing = resolve(lib, p.api); !missing.empty()) {
    p.reason = fmt::format(
        "the NVIDIA driver's libcuda.so.1 lacks {} (the backend is built against CUDA 13: a "
        "driver supporting it is needed)",
        missing);
    return;
  }
  const DriverApi& api = p.api;
  if (CUresult r = api.cuInit(0); r != CUDA_SUCCESS) {
    p.reason = "cuInit: " + error_name(api, r);
    return;
  }
  int count = 0;
  if (CUresult r = api.cuDeviceGetCount(&count); r != CUDA_SUCCESS) {
    p.reason = "cuDeviceGetCount: " + error_name(api, r);
    return;
  }
  if (count == 0) {
    p.reason = "no CUDA device";
    return;
  }
  int ordinal = 0;
  if (const char* env = std::getenv(kDeviceEnv); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end == env || *end != '\0' || v < 0 || v >= count) {
      p.reason = fmt::format("{}='{}' is not a device ordinal (this machine has {} device{})",
                             kDeviceEnv, env, count, count == 1 ? "" : "s");
      return;
    }
    ordinal = static_cast<int>(v);
  }
  CudaDevice& d = p.device;
  d.api = &p.api;
  d.ordinal = ordinal;
  if (CUresult r = api.cuDeviceGet(&d.id, ordinal); r != CUDA_SUCCESS) {
    p.reason = "cuDeviceGet: " + error_name(api, r);
    return;
  }
  char name[256] = {};
  api.cuDeviceGetName(name, sizeof(name) - 1, d.id);
  d.name = name;
  int major = 0, minor = 0;
  api.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, d.id);
  api.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, d.id);
  api.cuDeviceGetAttribute(&d.multiprocessors, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, d.id);
  api.cuDeviceTotalMem(&d.total_memory, d.id);
  api.cuDriverGetVersion(&d.driver_version);
  d.compute_capability = major * 10 + minor;
  if (d.compute_capability < kMinComputeCapability) {
    p.reason =
        fmt::format("device {} ({}) has compute capability {}.{}, below {}.{}", ordinal, d.name,
                    major, minor, kMinComputeCapability / 10, kMinComputeCapability % 10);
    return;
  }
  if (CUresult r = api.cuDevicePrimaryCtxRetain(&d.context, d.id); r != CUDA_SUCCESS) {
    p.reason = "cuDevicePrimaryCtxRetain: " + error_name(api, r);
    return;
  }
  p.ok = true;
}

Probe& probe() {
  static Probe* p = [] {
    auto* made = new Probe();  // never destroyed: kernels hold pointers into it
    run_probe(*made);
    return made;
  }();
  return *p;
}

[[maybe_unused]] const bool kProbeRegistered = [] {
  ops::register_availability_probe(std::string(kBackendName), [] { return unavailable_reason(); });
  return true;
}();

}  // namespace

const CudaDevice* selected_device() {
  Probe& p = probe();
  return p.ok ? &p.device : nullptr;
}

const std::string& unavailable_reason() { return probe().reason; }

void* open_toolkit_library(const char* soname, std::string& error) {
  std::vector<std::string> paths;
  if (const char* dir = std::getenv(kLibDirEnv); dir != nullptr && *dir != '\0') {
    paths.push_back(fmt::format("{}/{}", dir, soname));
  }
  paths.emplace_back(soname);
#ifdef FRAME_CUDA_TOOLKIT_LIB_DIR
  paths.push_back(fmt::format("{}/{}", FRAME_CUDA_TOOLKIT_LIB_DIR, soname));
#endif
  error.clear();
  for (const std::string& p : paths) {
    if (void* lib = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* e = dlerror();
    error += fmt::format("{}{}", error.empty() ? "" : "; ", e != nullptr ? e : p);
  }
  return nullptr;
}

std::string cu_error_name(const CudaDevice& d, CUresult r) { return error_name(*d.api, r); }

Status cu_check(const CudaDevice& d, CUresult r, std::string_view what) {
  if (r == CUDA_SUCCESS) return Status();
  return internal_error("cuda: {}: {}", what, cu_error_name(d, r));
}

Status make_current(const CudaDevice& d) {
  return cu_check(d, d.api->cuCtxSetCurrent(d.context), "cuCtxSetCurrent");
}

}  // namespace frame::backends::cuda
