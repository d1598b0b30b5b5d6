// ONNX Runtime benchmark driver: loads libonnxruntime.so.1 (the one the npm package
// onnxruntime-node carries) with dlopen, creates a CPU session with N intra-op threads, binds
// inputs and outputs to buffers it owns (no copy per run: Run() writes into the preallocated
// output values), and times warm-up then timed runs. Command line and result line:
// driver_common.h.
//
// Stream mode (--stream): the same session (the model's dynamic axes stay dynamic), every
// manifest line's inputs read and wrapped in OrtValues before the first run; each run is one
// timed `Run` with null output values, so ORT allocates outputs of the run's shapes, followed
// by ReleaseValue of each (inside the timed region, except for a run whose outputs
// --save-every writes: those are released after saving, untimed). load_ms is 0 and
// compile_ms is CreateSession, as in the fixed-shape mode.
//
// --save-optimized PATH has session creation write ORT's optimized model file; --opt-level N
// sets the graph optimization level (0 disables, 99 all; default all), e.g. 0 to load such a
// file without optimizing it again (benchmarks/warm_start.py). --profile PREFIX has ORT write
// its per-node profile (PREFIX_<date>.json, Chrome trace format) when the session is released,
// to set next to `frame run --profile` (benchmarks/ort_profile.py sums it per node and op).
#include <dlfcn.h>

#include <algorithm>
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
  take(api.SetOptimizedModelFilePath, table, kSetOptimizedModelFilePath);
  take(api.EnableProfiling, table, kEnableProfiling);
  take(api.SetSessionGraphOptimizationLevel, table, kSetSessionGraphOptimizationLevel);
  take(api.SetIntraOpNumThreads, table, kSetIntraOpNumThreads);
  take(api.SetInterOpNumThreads, table, kSetInterOpNumThreads);
  take(api.SessionGetInputCount, table, kSessionGetInputCount);
  take(api.SessionGetOutputCount, table, kSessionGetOutputCount);
  take(api.SessionGetInputName, table, kSessionGetInputName);
  take(api.SessionGetOutputName, table, kSessionGetOutputName);
  take(api.CreateTensorWithDataAsOrtValue, table, kCreateTensorWithDataAsOrtValue);
  take(api.GetTensorMutableData, table, kGetTensorMutableData);
  take(api.GetTensorElementType, table, kGetTensorElementType);
  take(api.GetDimensionsCount, table, kGetDimensionsCount);
  take(api.GetDimensions, table, kGetDimensions);
  take(api.GetTensorTypeAndShape, table, kGetTensorTypeAndShape);
  take(api.CreateCpuMemoryInfo, table, kCreateCpuMemoryInfo);
  take(api.AllocatorFree, table, kAllocatorFree);
  take(api.GetAllocatorWithDefaultOptions, table, kGetAllocatorWithDefaultOptions);
  take(api.ReleaseEnv, table, kReleaseEnv);
  take(api.ReleaseStatus, table, kReleaseStatus);
  take(api.ReleaseMemoryInfo, table, kReleaseMemoryInfo);
  take(api.ReleaseSession, table, kReleaseSession);
  take(api.ReleaseValue, table, kReleaseValue);
  take(api.ReleaseTensorTypeAndShapeInfo, table, kReleaseTensorTypeAndShapeInfo);
  take(api.ReleaseSessionOptions, table, kReleaseSessionOptions);
  // Round-trip a status through slots 0..2 and 93: a wrong table fails here, not later.
  OrtStatus* probe = api.CreateStatus(kErrorFail, "frame-bench-probe");
  const bool ok = api.GetErrorCode(probe) == kErrorFail &&
                  std::string(api.GetErrorMessage(probe)) == "frame-bench-probe";
  api.ReleaseStatus(probe);
  if (!ok) throw std::runtime_error("OrtApi table of " + lib + " does not match ort_api.h");
  return api;
}

// The session's input (or output) names, in model order.
std::vector<std::string> session_names(const Api& api, ortlite::OrtSession* s, bool inputs) {
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
  return got;
}

// Checks that the session's input (or output) names are exactly `want`, in any order.
void check_names(const Api& api, ortlite::OrtSession* s, bool inputs,
                 const std::vector<std::string>& want) {
  const std::vector<std::string> got = session_names(api, s, inputs);
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

// The npy descr of an ORT element type, for saving outputs; throws for other types.
std::string npy_descr(int type) {
  if (type == ortlite::kFloat) return "<f4";
  if (type == ortlite::kDouble) return "<f8";
  if (type == ortlite::kInt32) return "<i4";
  if (type == ortlite::kInt64) return "<i8";
  throw std::runtime_error("output element type " + std::to_string(type) +
                           " cannot be saved (float, double, int32, int64 only)");
}

// Writes one output ORT allocated to `path` (.npy), reading its type and shape from the value.
void save_value(const Api& api, ortlite::OrtValue* v, const std::string& path) {
  ortlite::OrtTensorTypeAndShapeInfo* info = nullptr;
  check(api, api.GetTensorTypeAndShape(v, &info), "GetTensorTypeAndShape");
  int type = 0;
  size_t rank = 0;
  ortlite::OrtStatus* st = api.GetTensorElementType(info, &type);
  if (st == nullptr) st = api.GetDimensionsCount(info, &rank);
  std::vector<int64_t> shape(rank);
  if (st == nullptr) st = api.GetDimensions(info, shape.data(), rank);
  api.ReleaseTensorTypeAndShapeInfo(info);
  check(api, st, "output type and shape");
  const std::string descr = npy_descr(type);
  size_t bytes = npy_lite::item_size(descr);
  for (int64_t d : shape) bytes *= static_cast<size_t>(d);
  void* data = nullptr;
  check(api, api.GetTensorMutableData(v, &data), "GetTensorMutableData");
  npy_lite::write(path, descr, shape, data, bytes);
}

// Stream mode (see the file comment): `session` is open; times every manifest line once per
// pass and prints the RESULT line.
void run_stream(const Api& api, ortlite::OrtSession* session, const bench::DriverArgs& args,
                const std::string& version, double create_ms) {
  const std::vector<bench::StreamRun> manifest = bench::read_manifest(args.stream);
  std::vector<std::string> in_names;
  for (const auto& [n, p] : manifest.front()) in_names.push_back(n);
  check_names(api, session, true, in_names);
  const std::vector<std::string> out_names = session_names(api, session, false);
  std::vector<const char*> out_c;
  for (const auto& n : out_names) out_c.push_back(n.c_str());

  // Every input of every run read and wrapped before the first run.
  ortlite::OrtMemoryInfo* mem = nullptr;
  check(api, api.CreateCpuMemoryInfo(ortlite::kArenaAllocator, ortlite::kMemTypeDefault, &mem),
        "CreateCpuMemoryInfo");
  struct Run {
    std::vector<npy_lite::Array> arrays;
    std::vector<std::string> names;
    std::vector<const char*> names_c;
    std::vector<const ortlite::OrtValue*> values;
  };
  std::vector<Run> stream(manifest.size());
  for (size_t r = 0; r < manifest.size(); ++r) {
    Run& run = stream[r];
    if (manifest[r].size() != in_names.size()) {
      throw std::runtime_error(args.stream + ": run " + std::to_string(r) + " has " +
                               std::to_string(manifest[r].size()) + " inputs, the first has " +
                               std::to_string(in_names.size()));
    }
    for (const auto& [name, path] : manifest[r]) {
      run.names.push_back(name);
      run.arrays.push_back(npy_lite::read(path));
    }
    for (size_t k = 0; k < run.arrays.size(); ++k) {
      npy_lite::Array& a = run.arrays[k];
      ortlite::OrtValue* v = nullptr;
      check(api,
            api.CreateTensorWithDataAsOrtValue(mem, a.bytes.data(), a.bytes.size(), a.shape.data(),
                                               a.shape.size(), element_type(a.descr), &v),
            "CreateTensorWithDataAsOrtValue(input)");
      run.values.push_back(v);
      run.names_c.push_back(run.names[k].c_str());
    }
  }

  std::vector<double> run_ms;
  std::vector<ortlite::OrtValue*> outs(out_names.size());
  for (int pass = 0; pass < args.passes; ++pass) {
    for (size_t line = 0; line < stream.size(); ++line) {
      const size_t i = static_cast<size_t>(pass) * stream.size() + line;
      const bool save = bench::saves_run(args, i, stream.size());
      const Run& run = stream[line];
      std::fill(outs.begin(), outs.end(), nullptr);  // ORT allocates each output
      auto t = std::chrono::steady_clock::now();
      ortlite::OrtStatus* st = api.Run(session, nullptr, run.names_c.data(), run.values.data(),
                                       run.values.size(), out_c.data(), out_c.size(), outs.data());
      if (st == nullptr && !save) {
        for (auto* v : outs) api.ReleaseValue(v);
      }
      run_ms.push_back(bench::ms_since(t));
      check(api, st,
            ("Run " + std::to_string(i) + " (" + args.stream + " line " + std::to_string(line + 1) +
             ")")
                .c_str());
      if (save) {
        for (size_t k = 0; k < outs.size(); ++k) {
          save_value(api, outs[k],
                     args.save_dir + "/run" + std::to_string(i) + "_" + out_names[k] + ".npy");
          api.ReleaseValue(outs[k]);
        }
      }
    }
  }
  const std::string extra = "\"stream_runs\": " + std::to_string(stream.size()) +
                            ", \"passes\": " + std::to_string(args.passes) +
                            ", \"threads\": " + std::to_string(args.threads);
  bench::print_result("onnxruntime", version, 0.0, create_ms, run_ms, extra);
  for (Run& run : stream) {
    for (const auto* v : run.values) api.ReleaseValue(const_cast<ortlite::OrtValue*>(v));
  }
  api.ReleaseMemoryInfo(mem);
}

int run(const bench::DriverArgs& args) {
  if (args.lib.empty()) throw std::runtime_error("--lib PATH/libonnxruntime.so.1 is required");
  if (args.stream.empty() && args.outputs.empty()) {
    throw std::runtime_error("--output NAME=D0,D1,... is required (or --stream MANIFEST)");
  }
  std::string version;
  Api api = load_api(args.lib, &version);

  ortlite::OrtEnv* env = nullptr;
  check(api, api.CreateEnv(ortlite::kLogWarning, "bench", &env), "CreateEnv");
  ortlite::OrtSessionOptions* opts = nullptr;
  check(api, api.CreateSessionOptions(&opts), "CreateSessionOptions");
  check(api, api.SetIntraOpNumThreads(opts, args.threads), "SetIntraOpNumThreads");
  check(api, api.SetInterOpNumThreads(opts, 1), "SetInterOpNumThreads");
  check(api,
        api.SetSessionGraphOptimizationLevel(
            opts, args.opt_level >= 0 ? args.opt_level : ortlite::kEnableAllOptimizations),
        "SetSessionGraphOptimizationLevel");
  if (!args.profile.empty()) {
    check(api, api.EnableProfiling(opts, args.profile.c_str()), "EnableProfiling");
  }
  if (!args.save_optimized.empty()) {
    check(api, api.SetOptimizedModelFilePath(opts, args.save_optimized.c_str()),
          "SetOptimizedModelFilePath");
  }

  // Session creation = load + optimize + kernel preparation: compared with frame's
  // load + compile.
  auto t0 = std::chrono::steady_clock::now();
  ortlite::OrtSession* session = nullptr;
  check(api, api.CreateSession(env, args.model.c_str(), opts, &session), "CreateSession");
  const double create_ms = bench::ms_since(t0);
  if (!args.stream.empty()) {
    run_stream(api, session, args, version, create_ms);
    api.ReleaseSession(session);
    api.ReleaseSessionOptions(opts);
    api.ReleaseEnv(env);
    return 0;
  }

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
