// NVRTC opened with dlopen, with the in-memory and on-disk cubin caches (nvrtc.h).

#include "backends/cuda/nvrtc.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nvrtc.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "backends/cuda/driver.h"
#include "backends/gpu/binary_cache.h"

namespace frame::backends::cuda {
namespace {

struct NvrtcApi {
#define FRAME_NVRTC_FN(name) decltype(&::name) name = nullptr;
  FRAME_NVRTC_FN(nvrtcVersion)
  FRAME_NVRTC_FN(nvrtcGetErrorString)
  FRAME_NVRTC_FN(nvrtcCreateProgram)
  FRAME_NVRTC_FN(nvrtcDestroyProgram)
  FRAME_NVRTC_FN(nvrtcCompileProgram)
  FRAME_NVRTC_FN(nvrtcGetProgramLogSize)
  FRAME_NVRTC_FN(nvrtcGetProgramLog)
  FRAME_NVRTC_FN(nvrtcGetCUBINSize)
  FRAME_NVRTC_FN(nvrtcGetCUBIN)
#undef FRAME_NVRTC_FN
  std::string version;
  std::string reason;  // "" when usable
};

constexpr const char* kSoname = "libnvrtc.so.13";

const NvrtcApi& api() {
  static const NvrtcApi* a = [] {
    auto* n = new NvrtcApi();  // never destroyed: compiles may run during static teardown
    std::string tried;
    void* lib = open_toolkit_library(kSoname, tried);
    if (lib == nullptr) {
      n->reason = fmt::format("NVRTC not found ({})", tried);
      return n;
    }
    std::string missing;
    auto get = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, symbol));
      if (fn == nullptr && missing.empty()) missing = symbol;
    };
#define FRAME_NVRTC_GET(name) get(n->name, #name);
    FRAME_NVRTC_GET(nvrtcVersion)
    FRAME_NVRTC_GET(nvrtcGetErrorString)
    FRAME_NVRTC_GET(nvrtcCreateProgram)
    FRAME_NVRTC_GET(nvrtcDestroyProgram)
    FRAME_NVRTC_GET(nvrtcCompileProgram)
    FRAME_NVRTC_GET(nvrtcGetProgramLogSize)
    FRAME_NVRTC_GET(nvrtcGetProgramLog)
    FRAME_NVRTC_GET(nvrtcGetCUBINSize)
    FRAME_NVRTC_GET(nvrtcGetCUBIN)
#undef FRAME_NVRTC_GET
    if (!missing.empty()) {
      n->reason = fmt::format("{} lacks {}", kSoname, missing);
      return n;
    }
    int major = 0, minor = 0;
    n->nvrtcVersion(&major, &minor);
    n->version = fmt::format("{}.{}", major, minor);
    return n;
  }();
  return *a;
}

struct Cache {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const Compiled>> entries;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed
  return *c;
}

std::atomic<size_t> g_compiled{0};

constexpr std::string_view kCacheFormat = "frame cubin 1\n";
constexpr std::string_view kCacheExt = ".cubin";

// The options every source compiles with: exact division and sqrt, denormals kept (the host's
// IEEE arithmetic), no fast-math contraction beyond FMA.
std::vector<std::string> options(int arch) {
  return {fmt::format("--gpu-architecture=sm_{}", arch), "--std=c++17", "--prec-div=true",
          "--prec-sqrt=true", "--ftz=false"};
}

Result<std::string> run_nvrtc(const NvrtcApi& n, const std::string& source, int arch) {
  nvrtcProgram prog = nullptr;
  if (nvrtcResult r =
          n.nvrtcCreateProgram(&prog, source.c_str(), "frame_kernel.cu", 0, nullptr, nullptr);
      r != NVRTC_SUCCESS) {
    return internal_error("cuda: nvrtcCreateProgram: {}", n.nvrtcGetErrorString(r));
  }
  const std::vector<std::string> opts = options(arch);
  std::vector<const char*> argv;
  for (const std::string& o : opts) argv.push_back(o.c_str());
  const nvrtcResult compiled =
      n.nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  std::string out;
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    n.nvrtcGetProgramLogSize(prog, &log_size);
    std::string log(log_size, '\0');
    if (log_size > 0) n.nvrtcGetProgramLog(prog, log.data());
    n.nvrtcDestroyProgram(&prog);
    return internal_error("cuda: NVRTC could not compile a generated kernel for sm_{}: {}\n{}",
                          arch, n.nvrtcGetErrorString(compiled), log);
  }
  size_t size = 0;
  n.nvrtcGetCUBINSize(prog, &size);
  out.resize(size);
  if (size > 0) n.nvrtcGetCUBIN(prog, out.data());
  n.nvrtcDestroyProgram(&prog);
  if (out.empty()) return internal_error("cuda: NVRTC produced no cubin for sm_{}", arch);
  return out;
}

}  // namespace

const std::string& nvrtc_unavailable_reason() { return api().reason; }

std::string nvrtc_version() { return api().version; }

size_t sources_compiled() { return g_compiled.load(); }

Result<std::shared_ptr<const Compiled>> compile_cuda(const std::string& source, int arch) {
  const NvrtcApi& n = api();
  if (!n.reason.empty()) return unimplemented("cuda: {}", n.reason);
  const std::string key = fmt::format("{}nvrtc {}\nsm_{}\n{}\n{}", kCacheFormat, n.version, arch,
                                      fmt::join(options(arch), " "), source);
  Cache& c = cache();
  {
    std::lock_guard lock(c.mu);
    if (auto it = c.entries.find(key); it != c.entries.end()) return it->second;
  }
  // Compiled outside the lock, so distinct sources compile in parallel; two threads that miss
  // on the same key both compile it and the first insert wins.
  auto made = std::make_shared<Compiled>();
  const char* dir_env = std::getenv(kCacheDirEnv);
  const std::string dir = dir_env == nullptr ? std::string() : std::string(dir_env);
  if (std::optional<std::string> bin = gpu::read_cached_binary(dir, key, kCacheExt)) {
    made->cubin = std::move(*bin);
    made->from_disk = true;
  } else {
    FRAME_ASSIGN_OR_RETURN(made->cubin, run_nvrtc(n, source, arch));
    g_compiled.fetch_add(1);
    gpu::write_cached_binary(dir, key, kCacheExt, made->cubin, n.version);
  }
  std::lock_guard lock(c.mu);
  auto it = c.entries.emplace(key, std::move(made)).first;
  std::shared_ptr<const Compiled> entry = it->second;
  return entry;
}

}  // namespace frame::backends::cuda
