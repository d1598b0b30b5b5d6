// sgemm throughput (GFLOP/s = 2*M*N*K / time) of frame's matmul — a one-node graph
// A[M,K] x B[K,N] with B a constant (weights), compiled with the default backend chain and
// with {"cpu"} — next to oneDNN's own dnnl_sgemm on the same data and thread count.
#include <dnnl.h>
#include <omp.h>

#include <chrono>

#include "bench_util.h"

namespace {

void set_gflops(benchmark::State& state, double total_s) {
  const double flops = 2.0 * static_cast<double>(state.range(0)) *
                       static_cast<double>(state.range(1)) * static_cast<double>(state.range(2));
  state.counters["GFLOP/s"] = flops * static_cast<double>(state.iterations()) / total_s / 1e9;
}

void frame_matmul(benchmark::State& state, bool default_backends) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  bench::ir::Graph g("matmul");
  const bench::ir::ValueId a = g.add_input("a", {frame::DTypeCode::kFloat32, {m, k}});
  const bench::ir::ValueId b = g.add_constant("b", bench::random_tensor({k, n}, -1.f, 1.f, 7));
  const bench::ir::ValueId y = bench::add_node(state, g, "matmul", {a, b});
  if (y == bench::ir::kNoValue) return;
  g.add_output(y);
  bench::rt::CompileOptions options;
  if (!default_backends) options.backends = {"cpu"};
  options.num_threads = static_cast<int>(state.range(3));
  options.use_cache = false;
  auto exe = bench::compile_or_skip(state, g, options);
  if (!exe) return;
  const double total = bench::run_timed(state, *exe, {{"a", bench::random_tensor({m, k})}});
  if (total < 0) return;
  set_gflops(state, total);
  state.SetLabel(bench::placement_label(*exe));
}

void BM_SgemmFrameDefault(benchmark::State& state) { frame_matmul(state, true); }
void BM_SgemmFrameCpu(benchmark::State& state) { frame_matmul(state, false); }

void BM_SgemmOneDnn(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const frame::Tensor a = bench::random_tensor({m, k});
  const frame::Tensor b = bench::random_tensor({k, n}, -1.f, 1.f, 7);
  frame::Tensor c = frame::Tensor::zeros(frame::DTypeCode::kFloat32, {m, n}).value();
  // dnnl_sgemm runs on OpenMP's thread count; restore it afterwards for the other benchmarks.
  const int saved = omp_get_max_threads();
  omp_set_num_threads(static_cast<int>(state.range(3)));
  auto gemm = [&] {
    return dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data<float>(), k, b.data<float>(), n, 0.0f,
                      c.data<float>(), n);
  };
  if (gemm() != dnnl_success) {
    state.SkipWithError("dnnl_sgemm failed");
    omp_set_num_threads(saved);
    return;
  }
  double total = 0.0;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    gemm();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    benchmark::DoNotOptimize(c.data<float>());
    state.SetIterationTime(s);
    total += s;
  }
  omp_set_num_threads(saved);
  set_gflops(state, total);
  state.SetLabel("dnnl_sgemm");
}

// M, K, N: MLP layer 1 (batch 64), a transformer projection (128 tokens, d768), BERT-base's
// feed-forward pair (B 9 MiB, past L2), ViT-S's (197 tokens, d384), a square one.
void sizes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"M", "K", "N", "threads"});
  for (int threads : {1, 2}) {
    b->Args({64, 784, 512, threads});
    b->Args({128, 768, 768, threads});
    b->Args({128, 768, 3072, threads});
    b->Args({128, 3072, 768, threads});
    b->Args({197, 384, 1536, threads});
    b->Args({197, 1536, 384, threads});
    b->Args({1024, 1024, 1024, threads});
  }
  b->UseManualTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_SgemmFrameDefault)->Apply(sizes);
BENCHMARK(BM_SgemmFrameCpu)->Apply(sizes);
BENCHMARK(BM_SgemmOneDnn)->Apply(sizes);

}  // namespace
