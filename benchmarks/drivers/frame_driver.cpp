// frame benchmark driver: the same command line, clock and result line as the ONNX Runtime
// driver (driver_common.h). Times ONNX load and compile (default CompileOptions, so the
// default backend chain is measured) with `num_threads` = --threads, then warm-up and timed
// `Executable::run` calls (into reused output tensors where the runtime offers that form, see
// common/frame_run.h). Compiling with the thread count the runs use matters: kernels are
// prepared under the compiled count, and oneDNN fixes a primitive's thread partition when it
// is created, so compiling with 0 (the OpenMP default) and running with another count would
// time a mismatched partition.
//
// Stream mode (--stream, driver_common.h): opens the model as a `runtime::Session`
// (`onnx::open_session`, default SessionOptions except `compile.num_threads` = --threads, so
// the default backends, cache bounds and pipeline are measured) and times each manifest line's
// allocating `Session::run`, which specializes and compiles the graph for a shape key it has
// not seen (or has evicted). load_ms is the session open; compile_ms is 0 (compiles happen in
// the runs they serve); the result adds the cache counters ("compiles" = misses,
// "cache_hits", "interpreted", "retyped_in_place" (interpreted runs whose graph was the last
// one's re-typed in place), "background_compiles" (off the runs' path, not in "compiles"),
// "evictions"), "pass_compiles" (misses per pass) and
// "compile_ms_total" (the sum of the compile stages of every specialization built, from its
// CompileReport, read outside the timed region; "compile_stages_ms_total" splits it by stage).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/frame_run.h"
#include "driver_common.h"
#include "frame/core/npy.h"
#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/runtime/compile.h"
#include "frame/runtime/session.h"
#include "frame/runtime/threads.h"

namespace {

template <typename T>
T value_or_throw(frame::Result<T> r, const std::string& what) {
  if (!r.is_ok()) throw std::runtime_error(what + ": " + r.status().message());
  return std::move(r).value();
}

void check_threads(const bench::DriverArgs& args) {
  if (args.threads < 1) {
    throw std::runtime_error("--threads must be at least 1, got " + std::to_string(args.threads) +
                             " (0 would compile for the OpenMP default thread count)");
  }
}

// "\"placements\": {...}, \"backends\": ..., \"fused_groups\": N": where the nodes of one
// compiled graph ran, so a result names the backends measured.
std::string placement_json(const frame::runtime::CompileReport& report) {
  std::map<std::string, int> placed;
  for (const auto& p : report.placements) ++placed[p.backend];
  std::string extra = "\"placements\": {";
  bool first = true;
  for (const auto& [backend, n] : placed) {
    extra += (first ? "\"" : ", \"") + backend + "\": " + std::to_string(n);
    first = false;
  }
  extra += "}, \"backends\": \"";
  const std::vector<std::string>& chain = report.backends;  // "auto" expanded
  for (size_t i = 0; i < chain.size(); ++i) extra += (i ? "," : "") + chain[i];
  extra += "\", \"fused_groups\": " + std::to_string(report.fused_groups.size());
  return extra;
}

// Stream mode: every manifest line once per pass through one Session (see the file comment).
int run_stream(const bench::DriverArgs& args) {
  namespace rt = frame::runtime;
  check_threads(args);
  // Every input of every run is read before the session opens, so no run pays for I/O.
  const std::vector<bench::StreamRun> manifest = bench::read_manifest(args.stream);
  std::vector<rt::TensorMap> stream;
  for (const bench::StreamRun& line : manifest) {
    rt::TensorMap inputs;
    for (const auto& [name, path] : line) {
      inputs[name] = value_or_throw(frame::read_npy(path), "read " + path);
    }
    stream.push_back(std::move(inputs));
  }

  rt::SessionOptions options;  // defaults (backends, pipeline, cache bounds): what a user gets
  options.compile.num_threads = args.threads;
  // FRAME_BENCH_INTERPRET=0 (shape_stream.py --env): the compiled first-seen tier instead of
  // the interpreted one, to compare the two in one build (docs/adr/0007-first-seen-shapes.md).
  if (const char* e = std::getenv("FRAME_BENCH_INTERPRET"); e != nullptr && e[0] == '0') {
    options.interpret_first_seen = false;
  }
  // FRAME_BENCH_BACKGROUND=0: compiles on the runs' path, as without a spare core.
  if (const char* e = std::getenv("FRAME_BENCH_BACKGROUND"); e != nullptr && e[0] == '0') {
    options.background_compile = false;
  }
  auto t0 = std::chrono::steady_clock::now();
  rt::Session session =
      value_or_throw(frame::onnx::open_session(args.model, options), "open " + args.model);
  const double open_ms = bench::ms_since(t0);

  std::vector<double> run_ms;
  std::vector<uint64_t> pass_compiles;
  double compile_ms_total = 0.0;
  std::vector<std::pair<std::string, double>> stage_totals;  // per compile stage, in order
  uint64_t misses = session.cache_stats().misses;
  for (int pass = 0; pass < args.passes; ++pass) {
    const uint64_t misses_before = misses;
    for (size_t line = 0; line < stream.size(); ++line) {
      const size_t i = static_cast<size_t>(pass) * stream.size() + line;
      const bool save = bench::saves_run(args, i, stream.size());
      rt::TensorMap kept;  // a saved run's outputs, released after its timing
      auto t = std::chrono::steady_clock::now();
      {
        frame::Result<rt::TensorMap> out = session.run(stream[line]);
        if (!out.is_ok()) {
          throw std::runtime_error("run " + std::to_string(i) + " (" + args.stream + " line " +
                                   std::to_string(line + 1) + "): " + out.status().message());
        }
        if (save) kept = std::move(out).value();
      }  // the outputs of an unsaved run are released inside the timed region, as ORT's are
      run_ms.push_back(bench::ms_since(t));
      const uint64_t now = session.cache_stats().misses;
      if (now != misses) {  // this run compiled: add its compile stages
        if (std::optional<rt::CompileReport> r = session.last_report()) {
          for (const auto& [stage, ms] : r->stage_times_ms) {
            compile_ms_total += ms;
            auto it = std::find_if(stage_totals.begin(), stage_totals.end(),
                                   [&](const auto& s) { return s.first == stage; });
            if (it == stage_totals.end()) {
              stage_totals.emplace_back(stage, ms);
            } else {
              it->second += ms;
            }
          }
          if (r->num_threads != args.threads) {
            throw std::runtime_error("specialization compiled for " +
                                     std::to_string(r->num_threads) + " threads, requested " +
                                     std::to_string(args.threads));
          }
        }
        misses = now;
      }
      for (const auto& [name, tensor] : kept) {
        const std::string path = args.save_dir + "/run" + std::to_string(i) + "_" + name + ".npy";
        frame::Status st = frame::write_npy(path, tensor);
        if (!st.is_ok()) throw std::runtime_error("write " + path + ": " + st.message());
      }
    }
    pass_compiles.push_back(misses - misses_before);
  }

  const rt::CacheStats stats = session.cache_stats();
  std::string extra =
      "\"stream_runs\": " + std::to_string(stream.size()) +
      ", \"passes\": " + std::to_string(args.passes) +
      ", \"compiles\": " + std::to_string(stats.misses) +
      ", \"cache_hits\": " + std::to_string(stats.hits) +
      ", \"interpreted\": " + std::to_string(stats.interpreted) +
      ", \"retyped_in_place\": " + std::to_string(stats.retyped_in_place) +
      ", \"background_compiles\": " + std::to_string(stats.background_compiles) +
      ", \"evictions\": " + std::to_string(stats.evictions) +
      ", \"cache_entries\": " + std::to_string(stats.entries) +
      ", \"max_specializations\": " + std::to_string(session.options().max_specializations) +
      ", \"pass_compiles\": [";
  for (size_t p = 0; p < pass_compiles.size(); ++p) {
    extra += (p ? ", " : "") + std::to_string(pass_compiles[p]);
  }
  char total[64];
  std::snprintf(total, sizeof total, "%.4f", compile_ms_total);
  extra += std::string("], \"compile_ms_total\": ") + total;
  extra += ", \"compile_stages_ms_total\": {";
  for (size_t i = 0; i < stage_totals.size(); ++i) {
    std::snprintf(total, sizeof total, "%.4f", stage_totals[i].second);
    extra += (i ? ", \"" : "\"") + stage_totals[i].first + "\": " + total;
  }
  extra += "}";
  if (std::optional<rt::CompileReport> r = session.last_report()) {
    extra += ", " + placement_json(*r) + ", \"threads\": " + std::to_string(r->num_threads);
  }
  extra += std::string(", \"run_form\": \"allocating outputs (Session::run)\"");
  extra += ", \"wait_policy\": \"" + rt::openmp_wait_policy() + "\"";
  bench::print_result("frame", "0.1.0", open_ms, 0.0, run_ms, extra);
  return 0;
}

// --session / --cache-dir: the model through a Session, with the compile cache on disk when
// given (the path a warm start takes): load_ms is open_session, compile_ms is prepare() (an
// entry read, or a compile and its store), runs allocate their outputs (Session::run).
int run_session(const bench::DriverArgs& args) {
  namespace rt = frame::runtime;
  check_threads(args);
  rt::TensorMap inputs;
  for (const auto& [name, path] : args.inputs) {
    inputs[name] = value_or_throw(frame::read_npy(path), "read " + path);
  }
  rt::SessionOptions so;
  so.compile.num_threads = args.threads;
  so.cache_dir = args.cache_dir;
  auto t0 = std::chrono::steady_clock::now();
  rt::Session session =
      value_or_throw(frame::onnx::open_session(args.model, so), "open " + args.model);
  const double open_ms = bench::ms_since(t0);
  t0 = std::chrono::steady_clock::now();
  (void)value_or_throw(session.prepare(inputs), "prepare " + args.model);
  const double compile_ms = bench::ms_since(t0);
  rt::TensorMap outputs;
  auto run_once = [&] { outputs = value_or_throw(session.run(inputs), "run"); };
  const std::vector<double> run_ms = bench::timed_runs(args, run_once);
  if (!args.save_dir.empty()) {
    for (const auto& [name, t] : outputs) {
      frame::Status st = frame::write_npy(args.save_dir + "/" + name + ".npy", t);
      if (!st.is_ok()) throw std::runtime_error(st.message());
    }
  }
  const rt::CacheStats cs = session.cache_stats();
  std::string extra = "\"disk_hits\": " + std::to_string(cs.disk_hits) +
                      ", \"disk_writes\": " + std::to_string(cs.disk_writes) +
                      ", \"disk_rejected\": " + std::to_string(cs.disk_rejected);
  if (std::optional<rt::CompileReport> r = session.last_report()) {
    extra += ", \"compile_stages_ms\": {";
    for (size_t i = 0; i < r->stage_times_ms.size(); ++i) {
      char ms[64];
      std::snprintf(ms, sizeof ms, "%.4f", r->stage_times_ms[i].second);
      extra += (i ? ", \"" : "\"") + r->stage_times_ms[i].first + "\": " + ms;
    }
    extra += "}, " + placement_json(*r) + ", \"threads\": " + std::to_string(r->num_threads);
  }
  bench::print_result("frame", "0.1.0", open_ms, compile_ms, run_ms, extra);
  return 0;
}

int run(const bench::DriverArgs& args) {
  namespace rt = frame::runtime;
  if (!args.profile.empty()) {
    throw std::runtime_error(
        "--profile is the ORT driver's; frame's per-node profile is "
        "`frame run MODEL --profile`");
  }
  if (!args.stream.empty()) return run_stream(args);
  if (args.session) return run_session(args);
  check_threads(args);
  auto t0 = std::chrono::steady_clock::now();
  frame::ir::Graph graph = value_or_throw(frame::onnx::load(args.model), "load " + args.model);
  const double load_ms = bench::ms_since(t0);

  rt::CompileOptions options;  // default backends and pipeline: what a user gets
  options.num_threads = args.threads;
  options.use_cache = false;
  t0 = std::chrono::steady_clock::now();
  rt::Executable exe = value_or_throw(rt::compile(graph, options), "compile " + args.model);
  const double compile_ms = bench::ms_since(t0);
  if (exe.report().num_threads != args.threads) {
    throw std::runtime_error("compiled for " + std::to_string(exe.report().num_threads) +
                             " threads, requested " + std::to_string(args.threads));
  }

  rt::TensorMap inputs;
  for (const auto& [name, path] : args.inputs) {
    inputs[name] = value_or_throw(frame::read_npy(path), "read " + path);
  }
  for (const auto& [name, shape] : args.outputs) {
    bool found = false;
    for (const auto& [oname, type] : exe.output_signature()) {
      if (oname != name) continue;
      found = true;
      if (type.shape != shape) {
        throw std::runtime_error("output " + name + " has shape " +
                                 frame::shape_to_string(type.shape) + ", expected " +
                                 frame::shape_to_string(shape));
      }
    }
    if (!found) throw std::runtime_error("compiled graph has no output " + name);
  }

  // Outputs reused across runs when the runtime can write into them (common/frame_run.h).
  rt::TensorMap outputs = value_or_throw(bench::make_outputs(exe), "allocate outputs");
  auto run_once = [&] {
    frame::Status st = bench::run_reusing(exe, inputs, outputs);
    if (!st.is_ok()) throw std::runtime_error("run: " + st.message());
  };
  const std::vector<double> run_ms = bench::timed_runs(args, run_once);
  if (!args.save_dir.empty()) {
    for (const auto& [name, t] : outputs) {
      frame::Status st = frame::write_npy(args.save_dir + "/" + name + ".npy", t);
      if (!st.is_ok()) throw std::runtime_error(st.message());
    }
  }

  // Where the nodes ran (backend -> node count), so a result names the backends measured.
  std::string extra = placement_json(exe.report());
  extra += std::string(", \"run_form\": \"") + bench::run_form() + "\"";
  extra += ", \"threads\": " + std::to_string(exe.report().num_threads);
  // libgomp's policy from the environment (this driver does not re-execute itself the way
  // `frame run` does): what a library user gets, and what --env of compare.py changes.
  extra += ", \"wait_policy\": \"" + rt::openmp_wait_policy() + "\"";
  bench::print_result("frame", "0.1.0", load_ms, compile_ms, run_ms, extra);
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return bench::driver_main("frame_driver", argc, argv, run); }
