// ONNX Runtime benchmark driver: loads libonnxruntime.so.1 (the one the npm package
// onnxruntime-node carries) with dlopen, creates a CPU session with N intra-op threads, binds
// inputs and outputs to buffers it owns (no copy per run: Run() writes into the preallocated
// output values), and times warm-up then timed runs. Command line and result line:
// driver_common.h.
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver_common.h"
#include "npy_lite.h"
#include "ort_api.h"

namespace {

using ortlite::Api;

// Throws with ORT's message when `st` is an error.
void check(const Api& api, ortlite::OrtStatus* st, const char* what) {
  if (st == nullptr) return;
  std::string msg = std::string(what) + ": " + api.GetErrorMessage(st);
  api.ReleaseStatus(st);
  throw std::runtime_error(msg);
}

template <typename F>
void take(F& dst, const void* const* table, size_t slot) {
  dst = reinterpret_cast<F>(const_cast<void*>(table[slot]));
}

// Loads the library, checks its version and fills `api` from the OrtApi table.
Api load_api(const std::string& lib, std::string* version) {
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) throw std::runtime_error("cannot load " + lib + ": " + dlerror());
  auto get_base = reinterpret_cast<ortlite::GetApiBaseFn>(dlsym(h, "OrtGetApiBase"));
  if (get_base == nullptr) throw std::runtime_error(lib + " has no OrtGetApiBase");
  const ortlite::ApiBase* base = get_base();
  *version = base->GetVersionString();
  // The slots in ort_api.h were checked against the 1.30 table; refuse anything else.
  if (version->rfind("1.30.", 0) != 0) {
    throw std::runtime_error("expected ONNX Runtime 1.30.x, " + lib + " reports " + *version);
  }
  // Version 1 of the API: every slot we use is in that frozen block.
  const auto* table = static_cast<const void* const*>(base->GetApi(1));
  if (table == nullptr) throw std::runtime_error("GetApi(1) returned null");
  Api api{};
  using namespace ortlite;
  take(api.CreateStatus, table, kCreateStatus);
  take(api.GetErrorCode, table, kGetErrorCode);
  take(api.GetErrorMessage, table, kGetErrorMessage);
  take(api.CreateEnv, table, kCreateEnv);
  take(api.CreateSession, table, kCreateSession);
  take(api.Run, table, kRun);
  take(api.CreateSessionOptions, table, kCreateSessionOptions);
  take(api.SetSessionGraphOptimizationLevel, table, kSetSessionGraphOptimizationLevel);
  take(api.SetIntraOpNumThreads, table, kSetIntraOpNumThreads);
  take(api.SetInterOpNumThreads, table, kSetInterOpNumThreads);
  take(api.SessionGetInputCount, table, kSessionGetInputCount);
  take(api.SessionGetOutputCount, table, kSessionGetOutputCount);
  take(api.SessionGetInputName, table, kSessionGetInputName);
  take(api.SessionGetOutputName, table, kSessionGetOutputName);
  take(api.CreateTensorWithDataAsOrtValue, table, kCreateTensorWithDataAsOrtValue);
  take(api.CreateCpuMemoryInfo, table, kCreateCpuMemoryInfo);
  take(api.AllocatorFree, table, kAllocatorFree);
  take(api.GetAllocatorWithDefaultOptions, table, kGetAllocatorWithDefaultOptions);
  take(api.ReleaseEnv, table, kReleaseEnv);
  take(api.ReleaseStatus, table, kReleaseStatus);
  take(api.ReleaseMemoryInfo, table, kReleaseMemoryInfo);
  take(api.ReleaseSession, table, kReleaseSession);
  take(api.ReleaseValue, table, kReleaseValue);
  take(api.ReleaseSessionOptions, table, kReleaseSessionOptions);
  // Round-trip a status through slots 0..2 and 93: a wrong table fails here, not later.
  OrtStatus* probe = api.CreateStatus(kErrorFail, "frame-bench-probe");
  const bool ok = api.GetErrorCode(probe) == kErrorFail &&
                  std::string(api.GetErrorMessage(probe)) == "frame-bench-probe";
  api.ReleaseStatus(probe);
  if (!ok) throw std::runtime_error("OrtApi table of " + lib + " does not match ort_api.h");
  return api;
}

// Checks that the session's input (or output) names are exactly `want`, in any order.
void check_names(const Api& api, ortlite::OrtSession* s, bool inputs,
                 const std::vector<std::string>& want) {
  size_t n = 0;
  check(api, (inputs ? api.SessionGetInputCount : api.SessionGetOutputCount)(s, &n), "count");
  ortlite::OrtAllocator* alloc = nullptr;
  check(api, api.GetAllocatorWithDefaultOptions(&alloc), "GetAllocatorWithDefaultOptions");
  std::vector<std::string> got;
  for (size_t i = 0; i < n; ++i) {
    char* name = nullptr;
    check(api, (inputs ? api.SessionGetInputName : api.SessionGetOutputName)(s, i, alloc, &name),
          "name");
    got.emplace_back(name);
    check(api, api.AllocatorFree(alloc, name), "AllocatorFree");
  }
  std::string list;
  for (const auto& g : got) list += " " + g;
  if (got.size() != want.size()) {
    throw std::runtime_error(std::string("model ") + (inputs ? "inputs" : "outputs") + " are" +
                             list + ", but the command line gives " + std::to_string(want.size()));
  }
  for (const auto& w : want) {
    bool found = false;
    for (const auto& g : got) found = found || g == w;
    if (!found) throw std::runtime_error("model has no " + w + "; it has" + list);
  }
}

int element_type(const std::string& descr) {
  if (descr == "<f4") return ortlite::kFloat;
  if (descr == "<f8") return ortlite::kDouble;
  if (descr == "<i4") return ortlite::kInt32;
  return ortlite::kInt64;
}

int run(const bench::DriverArgs& args) {
  if (args.lib.empty()) throw std::runtime_error("--lib PATH/libonnxruntime.so.1 is required");
  if (args.outputs.empty()) throw std::runtime_error("--output NAME=D0,D1,... is required");
  std::string version;
  Api api = load_api(args.lib, &version);

  ortlite::OrtEnv* env = nullptr;
  check(api, api.CreateEnv(ortlite::kLogWarning, "bench", &env), "CreateEnv");
  ortlite::OrtSessionOptions* opts = nullptr;
  check(api, api.CreateSessionOptions(&opts), "CreateSessionOptions");
  check(api, api.SetIntraOpNumThreads(opts, args.threads), "SetIntraOpNumThreads");
  check(api, api.SetInterOpNumThreads(opts, 1), "SetInterOpNumThreads");
  check(api, api.SetSessionGraphOptimizationLevel(opts, ortlite::kEnableAllOptimizations),
        "SetSessionGraphOptimizationLevel");

  // Session creation = load + optimize + kernel preparation: compared with frame's
  // load + compile.
  auto t0 = std::chrono::steady_clock::now();
  ortlite::OrtSession* session = nullptr;
  check(api, api.CreateSession(env, args.model.c_str(), opts, &session), "CreateSession");
  const double create_ms = bench::ms_since(t0);

  std::vector<std::string> in_names, out_names;
  for (const auto& [n, p] : args.inputs) in_names.push_back(n);
  for (const auto& [n, s] : args.outputs) out_names.push_back(n);
  check_names(api, session, true, in_names);
  check_names(api, session, false, out_names);

  ortlite::OrtMemoryInfo* mem = nullptr;
  check(api, api.CreateCpuMemoryInfo(ortlite::kArenaAllocator, ortlite::kMemTypeDefault, &mem),
        "CreateCpuMemoryInfo");
  std::vector<npy_lite::Array> in_arrays;
  std::vector<ortlite::OrtValue*> in_values;
  for (const auto& [name, path] : args.inputs) in_arrays.push_back(npy_lite::read(path));
  for (auto& a : in_arrays) {
    ortlite::OrtValue* v = nullptr;
    check(api,
          api.CreateTensorWithDataAsOrtValue(mem, a.bytes.data(), a.bytes.size(), a.shape.data(),
                                             a.shape.size(), element_type(a.descr), &v),
          "CreateTensorWithDataAsOrtValue(input)");
    in_values.push_back(v);
  }
  // Outputs: f32 buffers of the given shapes, owned here and reused by every run.
  std::vector<std::vector<float>> out_bufs;
  std::vector<ortlite::OrtValue*> out_values;
  for (const auto& [name, shape] : args.outputs) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    out_bufs.emplace_back(n);
    ortlite::OrtValue* v = nullptr;
    check(api,
          api.CreateTensorWithDataAsOrtValue(mem, out_bufs.back().data(), n * sizeof(float),
                                             shape.data(), shape.size(), ortlite::kFloat, &v),
          "CreateTensorWithDataAsOrtValue(output)");
    out_values.push_back(v);
  }
  std::vector<const char*> in_c, out_c;
  for (const auto& n : in_names) in_c.push_back(n.c_str());
  for (const auto& n : out_names) out_c.push_back(n.c_str());
  std::vector<const ortlite::OrtValue*> in_const(in_values.begin(), in_values.end());

  auto run_once = [&] {
    check(api,
          api.Run(session, nullptr, in_c.data(), in_const.data(), in_c.size(), out_c.data(),
                  out_c.size(), out_values.data()),
          "Run");
  };
  const std::vector<double> run_ms = bench::timed_runs(args, run_once);
  if (!args.save_dir.empty()) {
    for (size_t i = 0; i < out_names.size(); ++i) {
      npy_lite::write(args.save_dir + "/" + out_names[i] + ".npy", "<f4", args.outputs[i].second,
                      out_bufs[i].data(), out_bufs[i].size() * sizeof(float));
    }
  }
  bench::print_result("onnxruntime", version, 0.0, create_ms, run_ms, "");

  for (auto* v : in_values) api.ReleaseValue(v);
  for (auto* v : out_values) api.ReleaseValue(v);
  api.ReleaseMemoryInfo(mem);
  api.ReleaseSession(session);
  api.ReleaseSessionOptions(opts);
  api.ReleaseEnv(env);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::driver_main("ort_driver", argc, argv, run); }
