// Elementwise throughput in GB/s (bytes read + written per run / time), next to STREAM-style
// copy and triad measured in the same binary with the same thread count:
//  - BM_FusedChain8: x -> add, mul, max, relu, add, mul, max, relu (scalar constants) over
//    16M float32: one pass if the chain is fused, bytes = 16M * 4 * 2.
//    Target (issue 8): at 2 threads at least 70% of BM_StreamCopy's GB/s.
//  - BM_GeluBiasRelu: relu(tanh-GELU(x) + bias) on 1024x4096 (bias [4096]), as the ONNX
//    export of the compare.py "gelu" model spells it (Pow/Mul/Add/Tanh); bytes = 2 * 16 MiB.
//  - BM_StreamCopy (c = a: 2 arrays) and BM_StreamTriad (a = b + s*c: 3 arrays), 16M floats,
//    OpenMP static schedule, first touch by the same threads.
#include <omp.h>

#include <chrono>
#include <cmath>

#include "bench_util.h"

namespace {

constexpr int64_t kN = int64_t{16} << 20;

void set_gbps(benchmark::State& state, double bytes_per_iter, double total_s) {
  state.counters["GB/s"] = bytes_per_iter * static_cast<double>(state.iterations()) / total_s / 1e9;
}

void BM_FusedChain8(benchmark::State& state) {
  bench::ir::Graph g("chain8");
  bench::ir::ValueId v = g.add_input("x", {frame::DTypeCode::kFloat32, {kN}});
  const char* ops[] = {"add", "mul", "max", "relu", "add", "mul", "max", "relu"};
  const float consts[] = {0.25f, 1.5f, -0.5f, 0.f, -0.125f, 0.75f, 0.0625f, 0.f};
  for (int i = 0; i < 8; ++i) {
    std::vector<bench::ir::ValueId> in{v};
    if (std::string(ops[i]) != "relu") {
      in.push_back(bench::add_fill(g, "c" + std::to_string(i), {1}, consts[i]));
    }
    v = bench::add_node(state, g, ops[i], in);
    if (v == bench::ir::kNoValue) return;
  }
  g.add_output(v);
  bench::rt::CompileOptions options;  // default backends and pipeline (fusion on)
  options.num_threads = static_cast<int>(state.range(0));
  options.use_cache = false;
  auto exe = bench::compile_or_skip(state, g, options);
  if (!exe) return;
  const double total = bench::run_timed(state, *exe, {{"x", bench::random_tensor({kN})}});
  if (total < 0) return;
  set_gbps(state, 2.0 * kN * sizeof(float), total);
  state.SetLabel(bench::placement_label(*exe));
}
BENCHMARK(BM_FusedChain8)->Apply(bench::timed_threads);

void BM_GeluBiasRelu(benchmark::State& state) {
  const int64_t rows = 1024, cols = 4096;
  bench::ir::Graph g("gelu");
  auto& s = state;
  const bench::ir::ValueId x = g.add_input("x", {frame::DTypeCode::kFloat32, {rows, cols}});
  const bench::ir::ValueId bias = g.add_constant("bias", bench::random_tensor({cols}, -.1f, .1f));
  auto c = [&](const char* name, float v) { return bench::add_fill(g, name, {}, v); };
  // 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
  const bench::ir::ValueId x3 = bench::add_node(s, g, "pow", {x, c("three", 3.f)});
  const bench::ir::ValueId t1 = bench::add_node(s, g, "mul", {x3, c("k", 0.044715f)});
  const bench::ir::ValueId t2 = bench::add_node(s, g, "add", {x, t1});
  const bench::ir::ValueId t3 =
      bench::add_node(s, g, "mul", {t2, c("sqrt2pi", static_cast<float>(std::sqrt(2.0 / M_PI)))});
  const bench::ir::ValueId t4 = bench::add_node(s, g, "tanh", {t3});
  const bench::ir::ValueId t5 = bench::add_node(s, g, "add", {t4, c("one", 1.f)});
  const bench::ir::ValueId t6 = bench::add_node(s, g, "mul", {x, c("half", 0.5f)});
  const bench::ir::ValueId t7 = bench::add_node(s, g, "mul", {t6, t5});
  const bench::ir::ValueId t8 = bench::add_node(s, g, "add", {t7, bias});
  const bench::ir::ValueId y = bench::add_node(s, g, "relu", {t8});
  if (y == bench::ir::kNoValue) return;
  g.add_output(y);
  bench::rt::CompileOptions options;
  options.num_threads = static_cast<int>(state.range(0));
  options.use_cache = false;
  auto exe = bench::compile_or_skip(state, g, options);
  if (!exe) return;
  const double total = bench::run_timed(state, *exe, {{"x", bench::random_tensor({rows, cols})}});
  if (total < 0) return;
  set_gbps(state, 2.0 * rows * cols * sizeof(float), total);
  state.SetLabel(bench::placement_label(*exe));
}
BENCHMARK(BM_GeluBiasRelu)->Apply(bench::timed_threads);

// STREAM kernels: `arrays` is 2 for copy, 3 for triad.
template <bool kTriad>
void stream(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  frame::Tensor ta = frame::Tensor::empty(frame::DTypeCode::kFloat32, {kN}).value();
  frame::Tensor tb = frame::Tensor::empty(frame::DTypeCode::kFloat32, {kN}).value();
  frame::Tensor tc = frame::Tensor::empty(frame::DTypeCode::kFloat32, {kN}).value();
  float* a = ta.data<float>();
  float* b = tb.data<float>();
  float* c = tc.data<float>();
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < kN; ++i) {
    a[i] = 1.0f;
    b[i] = 2.0f;
    c[i] = 0.5f;
  }
  const float scalar = 3.0f;
  double total = 0.0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    if constexpr (kTriad) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < kN; ++i) a[i] = b[i] + scalar * c[i];
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < kN; ++i) c[i] = a[i];
    }
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(a);
    benchmark::DoNotOptimize(c);
    benchmark::ClobberMemory();
    state.SetIterationTime(s);
    total += s;
  }
  set_gbps(state, (kTriad ? 3.0 : 2.0) * kN * sizeof(float), total);
}
void BM_StreamCopy(benchmark::State& state) { stream<false>(state); }
void BM_StreamTriad(benchmark::State& state) { stream<true>(state); }
BENCHMARK(BM_StreamCopy)->Apply(bench::timed_threads);
BENCHMARK(BM_StreamTriad)->Apply(bench::timed_threads);

}  // namespace
