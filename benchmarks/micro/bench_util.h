#pragma once
/// \file
/// Helpers shared by the micro-benchmarks: graph building that aborts the benchmark (not the
/// process) on an error, compile + run with manual timing, and the placement label.

#include <benchmark/benchmark.h>

#include <chrono>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/frame_run.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/runtime/compile.h"

namespace bench {

namespace ir = frame::ir;
namespace rt = frame::runtime;

/// Adds node `op(inputs)` with one output and returns that value, or kNoValue after
/// recording the error on `state`.
inline ir::ValueId add_node(benchmark::State& state, ir::Graph& g, const char* op,
                            std::vector<ir::ValueId> inputs) {
  frame::Result<ir::NodeId> n = g.create_node(op, "", std::move(inputs), 1);
  if (!n.is_ok()) {
    state.SkipWithError(n.status().message().c_str());
    return ir::kNoValue;
  }
  return g.node(*n).outputs[0];
}

/// A float32 constant of `shape` filled with `v`.
inline ir::ValueId add_fill(ir::Graph& g, const std::string& name, frame::Shape shape, float v) {
  const int64_t n = frame::numel_of(shape);
  return g.add_constant(name, frame::Tensor::from_vector<float>(
                                  std::move(shape), std::vector<float>(static_cast<size_t>(n), v)));
}

/// A float32 tensor of `shape` with uniform values in [lo, hi) (fixed seed).
inline frame::Tensor random_tensor(frame::Shape shape, float lo = -1.f, float hi = 1.f,
                                   unsigned seed = 1234) {
  frame::Tensor t = frame::Tensor::empty(frame::DTypeCode::kFloat32, std::move(shape)).value();
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

/// The common benchmark arguments: one `threads` argument of 1 and 2, manual timing, in ms.
/// Use as `BENCHMARK(BM_x)->Apply(bench::timed_threads)`.
inline void timed_threads(benchmark::internal::Benchmark* b) {
  b->ArgName("threads")->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond);
}

/// Compiles `g`; on error records it on `state` and returns nothing.
inline std::optional<rt::Executable> compile_or_skip(benchmark::State& state, const ir::Graph& g,
                                                     const rt::CompileOptions& options) {
  frame::Result<rt::Executable> exe = rt::compile(g, options);
  if (!exe.is_ok()) {
    state.SkipWithError(("compile: " + exe.status().message()).c_str());
    return std::nullopt;
  }
  return std::move(exe).value();
}

/// "backendxN,..." over the compiled placements, the fused-group count and the run form.
inline std::string placement_label(const rt::Executable& exe) {
  std::map<std::string, int> placed;
  for (const auto& p : exe.report().placements) ++placed[p.backend];
  std::string s;
  for (const auto& [backend, n] : placed)
    s += (s.empty() ? "" : ",") + backend + "x" + std::to_string(n);
  if (!exe.report().fused_groups.empty()) {
    s += " fused_groups=" + std::to_string(exe.report().fused_groups.size());
  }
  return s + (RunsIntoOutputs<rt::Executable> ? " run=into" : " run=alloc");
}

/// Runs `exe` once untimed, then once per benchmark iteration with manual timing (use with
/// ->UseManualTime()). Returns the total timed seconds, or a negative value after an error.
/// Outputs are reused across runs where the runtime can write into them (frame_run.h).
inline double run_timed(benchmark::State& state, const rt::Executable& exe,
                        const rt::TensorMap& inputs) {
  frame::Result<rt::TensorMap> outputs = make_outputs(exe);
  frame::Status st = outputs.is_ok() ? run_reusing(exe, inputs, *outputs) : outputs.status();
  if (!st.is_ok()) {
    state.SkipWithError(("run: " + st.message()).c_str());
    return -1.0;
  }
  double total = 0.0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    st = run_reusing(exe, inputs, *outputs);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(outputs);
    if (!st.is_ok()) {
      state.SkipWithError(("run: " + st.message()).c_str());
      return -1.0;
    }
    state.SetIterationTime(s);
    total += s;
  }
  return total;
}

}  // namespace bench
