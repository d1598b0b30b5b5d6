// frame benchmark driver: the same command line, clock and result line as the ONNX Runtime
// driver (driver_common.h). Times ONNX load and compile (default CompileOptions, so the
// default backend chain is measured) with `num_threads` = --threads, then warm-up and timed
// `Executable::run` calls (into reused output tensors where the runtime offers that form, see
// common/frame_run.h). Compiling with the thread count the runs use matters: kernels are
// prepared under the compiled count, and oneDNN fixes a primitive's thread partition when it
// is created, so compiling with 0 (the OpenMP default) and running with another count would
// time a mismatched partition.
#include <chrono>
#include <cstdio>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/frame_run.h"
#include "driver_common.h"
#include "frame/core/npy.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/compile.h"
#include "frame/runtime/threads.h"

namespace {

template <typename T>
T value_or_throw(frame::Result<T> r, const std::string& what) {
  if (!r.is_ok()) throw std::runtime_error(what + ": " + r.status().message());
  return std::move(r).value();
}

int run(const bench::DriverArgs& args) {
  namespace rt = frame::runtime;
  if (args.threads < 1) {
    throw std::runtime_error("--threads must be at least 1, got " + std::to_string(args.threads) +
                             " (0 would compile for the OpenMP default thread count)");
  }
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
  std::map<std::string, int> placed;
  for (const auto& p : exe.report().placements) ++placed[p.backend];
  std::string extra = "\"placements\": {";
  bool first = true;
  for (const auto& [backend, n] : placed) {
    extra += (first ? "\"" : ", \"") + backend + "\": " + std::to_string(n);
    first = false;
  }
  extra += "}, \"backends\": \"";
  const std::vector<std::string>& chain = exe.report().backends;  // "auto" expanded
  for (size_t i = 0; i < chain.size(); ++i) extra += (i ? "," : "") + chain[i];
  extra += "\", \"fused_groups\": " + std::to_string(exe.report().fused_groups.size());
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
