// Device selection and the program cache of the intel_gpu backend (opencl.h).

#include "backends/intel_gpu/opencl.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <vector>

#include "backends/gpu/binary_cache.h"
#include "frame/ops/backend_availability.h"

namespace frame::backends::intel_gpu {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetPlatformInfo(p, what, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  clGetDeviceInfo(d, what, n, s.data(), nullptr);
  s.resize(s.find('\0') == std::string::npos ? n : s.find('\0'));
  return s;
}

struct Probe {
  Device device;
  bool ok = false;
  std::string reason;
};

// Lower rank is preferred: Intel GPU, other GPU, anything else.
int rank_of(const Device& d) { return d.is_gpu ? (d.is_intel ? 0 : 1) : 2; }

Probe probe_devices() {
  Probe p;
  cl_uint np = 0;
  cl_int e = clGetPlatformIDs(0, nullptr, &np);
  if (e != CL_SUCCESS || np == 0) {
    p.reason = e == CL_SUCCESS || e == -1001  // CL_PLATFORM_NOT_FOUND_KHR from the ICD loader
                   ? "no OpenCL platform found (install an OpenCL driver, e.g. Debian "
                     "intel-opencl-icd for Intel GPUs or pocl-opencl-icd for the CPU)"
                   : "clGetPlatformIDs failed: " + cl_error_name(e);
    return p;
  }
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  const char* env = std::getenv(kDeviceEnv);
  const std::string want = env == nullptr ? std::string() : lower(env);
  std::vector<Device> candidates;
  std::vector<std::string> seen;
  for (cl_platform_id pl : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) {
      continue;
    }
    std::vector<cl_device_id> ids(nd);
    clGetDeviceIDs(pl, CL_DEVICE_TYPE_ALL, nd, ids.data(), nullptr);
    for (cl_device_id id : ids) {
      Device d;
      d.platform = pl;
      d.id = id;
      d.platform_name = platform_string(pl, CL_PLATFORM_NAME);
      d.device_name = device_string(id, CL_DEVICE_NAME);
      cl_device_type type = 0;
      clGetDeviceInfo(id, CL_DEVICE_TYPE, sizeof(type), &type, nullptr);
      d.is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
      const std::string vendor = lower(device_string(id, CL_DEVICE_VENDOR));
      d.is_intel = vendor.find("intel") != std::string::npos ||
                   lower(d.platform_name).find("intel") != std::string::npos;
      d.fp64 = device_string(id, CL_DEVICE_EXTENSIONS).find("cl_khr_fp64") != std::string::npos;
      cl_uint align_bits = 0;
      if (clGetDeviceInfo(id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits,
                          nullptr) == CL_SUCCESS &&
          align_bits >= 8) {
        d.base_align = std::max<size_t>(align_bits / 8, 16);
      }
      cl_ulong max_alloc = 0;
      if (clGetDeviceInfo(id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc), &max_alloc,
                          nullptr) == CL_SUCCESS &&
          max_alloc > 0 && max_alloc < SIZE_MAX) {
        d.max_alloc = static_cast<size_t>(max_alloc);
      }
      d.identity = fmt::format("{} | {} | {} | {}", d.platform_name,
                               platform_string(pl, CL_PLATFORM_VERSION), d.device_name,
                               device_string(id, CL_DRIVER_VERSION));
      const std::string label = d.platform_name + " / " + d.device_name;
      seen.push_back(label);
      if (want.empty() || lower(label).find(want) != std::string::npos) candidates.push_back(d);
    }
  }
  if (seen.empty()) {
    p.reason = "no OpenCL device found on any platform";
    return p;
  }
  if (candidates.empty()) {
    p.reason = fmt::format("no OpenCL device matches {}='{}' (devices: {})", kDeviceEnv,
                           env == nullptr ? "" : env, fmt::join(seen, "; "));
    return p;
  }
  // stable: the first device of the best rank, in platform order.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Device& a, const Device& b) { return rank_of(a) < rank_of(b); });
  p.device = candidates.front();
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(p.device.platform), 0};
  p.device.context = clCreateContext(props, 1, &p.device.id, nullptr, nullptr, &e);
  if (e != CL_SUCCESS) {
    p.reason = fmt::format("clCreateContext on '{} / {}' failed: {}", p.device.platform_name,
                           p.device.device_name, cl_error_name(e));
    return p;
  }
  p.device.queue = clCreateCommandQueue(p.device.context, p.device.id, 0, &e);
  if (e != CL_SUCCESS) {
    p.reason = fmt::format("clCreateCommandQueue on '{} / {}' failed: {}", p.device.platform_name,
                           p.device.device_name, cl_error_name(e));
    return p;
  }
  p.ok = true;
  return p;
}

// Probed once; never destroyed (kernels hold its context until process exit).
const Probe& probe() {
  static const Probe* p = new Probe(probe_devices());
  return *p;
}

struct ProgramCache {
  std::mutex mu;
  std::map<std::string, cl_program> programs;  // key: options + '\n' + source
};
ProgramCache& cache() {
  static ProgramCache* c = new ProgramCache();  // programs live for the process
  return *c;
}
std::atomic<size_t> g_built{0};
std::atomic<size_t> g_loaded{0};

std::string cache_dir() {
  const char* dir = std::getenv(kCacheDirEnv);
  return dir == nullptr ? std::string() : std::string(dir);
}

// The shared file format (src/backends/gpu/binary_cache.h); the format tag in the key keeps
// files of an older layout from matching.
constexpr std::string_view kCacheFormat = "frame clbin 2\n";
constexpr std::string_view kCacheExt = ".clbin";

// The program from the on-disk cache, or nullptr (no file, another key, a stale binary).
cl_program load_cached(const Device& d, const std::string& key, const std::string& options) {
  const std::optional<std::string> bin = gpu::read_cached_binary(cache_dir(), key, kCacheExt);
  if (!bin) return nullptr;  // absent, truncated or damaged: rebuilt from source and rewritten
  const auto* ptr = reinterpret_cast<const unsigned char*>(bin->data());
  const size_t size = bin->size();
  cl_int status = CL_SUCCESS;
  cl_int e = CL_SUCCESS;
  cl_program prog = clCreateProgramWithBinary(d.context, 1, &d.id, &size, &ptr, &status, &e);
  if (e != CL_SUCCESS || status != CL_SUCCESS) return nullptr;
  if (clBuildProgram(prog, 1, &d.id, options.c_str(), nullptr, nullptr) != CL_SUCCESS) {
    clReleaseProgram(prog);
    return nullptr;  // e.g. a driver update invalidated it: rebuilt from source
  }
  return prog;
}

// Best effort: a cache that cannot be written only costs a rebuild in the next process.
void store_cached(const Device& d, const std::string& key, cl_program prog) {
  const std::string dir = cache_dir();
  if (dir.empty()) return;
  size_t size = 0;
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr) != CL_SUCCESS ||
      size == 0) {
    return;
  }
  std::string bin(size, '\0');
  auto* ptr = reinterpret_cast<unsigned char*>(bin.data());
  if (clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr) != CL_SUCCESS) {
    return;
  }
  gpu::write_cached_binary(dir, key, kCacheExt, bin, d.identity);
}

Result<cl_program> cached_program(const Device& d, const std::string& source,
                                  std::string_view options) {
  ProgramCache& c = cache();
  std::lock_guard lock(c.mu);  // also serializes builds: each source is built once
  std::string key = fmt::format("{}{}\n{}\n{}", kCacheFormat, d.identity, options, source);
  if (auto it = c.programs.find(key); it != c.programs.end()) return it->second;
  const std::string opts(options);
  if (cl_program prog = load_cached(d, key, opts); prog != nullptr) {
    ++g_loaded;
    c.programs.emplace(std::move(key), prog);
    return prog;
  }
  cl_int e = CL_SUCCESS;
  const char* src = source.c_str();
  cl_program prog = clCreateProgramWithSource(d.context, 1, &src, nullptr, &e);
  if (e != CL_SUCCESS) return internal_error("clCreateProgramWithSource: {}", cl_error_name(e));
  e = clBuildProgram(prog, 1, &d.id, opts.c_str(), nullptr, nullptr);
  if (e != CL_SUCCESS) {
    size_t n = 0;
    clGetProgramBuildInfo(prog, d.id, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n);
    std::string log(n, '\0');
    clGetProgramBuildInfo(prog, d.id, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
    clReleaseProgram(prog);
    if (log.size() > 2000) log = log.substr(0, 2000) + "...";
    return internal_error("clBuildProgram on '{}': {}; log: {}; source:\n{}", d.device_name,
                          cl_error_name(e), log, source);
  }
  ++g_built;
  store_cached(d, key, prog);
  c.programs.emplace(std::move(key), prog);
  return prog;
}

// `frame backends` and the generic backend's unavailable_reason() ask this.
[[maybe_unused]] const bool kProbeRegistered = [] {
  ops::register_availability_probe(std::string(kBackendName), [] { return unavailable_reason(); });
  return true;
}();

}  // namespace

const Device* selected_device() { return probe().ok ? &probe().device : nullptr; }

const std::string& unavailable_reason() { return probe().reason; }

size_t programs_built() { return g_built; }

size_t programs_loaded() { return g_loaded; }

std::string cl_error_name(cl_int code) {
  const char* name = "unknown OpenCL error";
  switch (code) {
    case CL_DEVICE_NOT_FOUND:
      name = "CL_DEVICE_NOT_FOUND";
      break;
    case CL_DEVICE_NOT_AVAILABLE:
      name = "CL_DEVICE_NOT_AVAILABLE";
      break;
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
      name = "CL_MEM_OBJECT_ALLOCATION_FAILURE";
      break;
    case CL_OUT_OF_RESOURCES:
      name = "CL_OUT_OF_RESOURCES";
      break;
    case CL_OUT_OF_HOST_MEMORY:
      name = "CL_OUT_OF_HOST_MEMORY";
      break;
    case CL_BUILD_PROGRAM_FAILURE:
      name = "CL_BUILD_PROGRAM_FAILURE";
      break;
    case CL_INVALID_VALUE:
      name = "CL_INVALID_VALUE";
      break;
    case CL_INVALID_BUFFER_SIZE:
      name = "CL_INVALID_BUFFER_SIZE";
      break;
    case CL_INVALID_KERNEL_NAME:
      name = "CL_INVALID_KERNEL_NAME";
      break;
    case CL_INVALID_ARG_INDEX:
      name = "CL_INVALID_ARG_INDEX";
      break;
    case CL_INVALID_ARG_SIZE:
      name = "CL_INVALID_ARG_SIZE";
      break;
    case CL_INVALID_KERNEL_ARGS:
      name = "CL_INVALID_KERNEL_ARGS";
      break;
    case CL_INVALID_WORK_GROUP_SIZE:
      name = "CL_INVALID_WORK_GROUP_SIZE";
      break;
    case CL_INVALID_GLOBAL_WORK_SIZE:
      name = "CL_INVALID_GLOBAL_WORK_SIZE";
      break;
    case CL_INVALID_BUILD_OPTIONS:
      name = "CL_INVALID_BUILD_OPTIONS";
      break;
    default:
      break;
  }
  return fmt::format("{} ({})", name, code);
}

Result<ClMem> make_buffer(const Device& d, size_t bytes, cl_mem_flags flags,
                          std::string_view what) {
  cl_int e = CL_SUCCESS;
  cl_mem m = clCreateBuffer(d.context, flags, std::max<size_t>(bytes, 16), nullptr, &e);
  if (e != CL_SUCCESS) {
    return internal_error("clCreateBuffer of {} bytes for {}: {}", bytes, what, cl_error_name(e));
  }
  return ClMem(m);
}

Result<ClKernel> make_kernel(const Device& d, const std::string& source, std::string_view options,
                             std::string_view kernel_name) {
  FRAME_ASSIGN_OR_RETURN(cl_program prog, cached_program(d, source, options));
  cl_int e = CL_SUCCESS;
  const std::string name(kernel_name);
  cl_kernel k = clCreateKernel(prog, name.c_str(), &e);
  if (e != CL_SUCCESS) return internal_error("clCreateKernel('{}'): {}", name, cl_error_name(e));
  return ClKernel(k);
}

}  // namespace frame::backends::intel_gpu
