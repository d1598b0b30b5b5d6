// Per-node runtime overhead: a chain of 10,000 `add(x, c)` nodes on 1-element tensors, with
// the passes that would shrink it (constant folding, CSE, DCE, fusion) disabled, so the time
// per run divided by the node count is what the executor spends per node beyond the
// (negligible) arithmetic. Target (issue 8): at most 1 us per node.
#include "bench_util.h"

namespace {

constexpr int kNodes = 10000;

void BM_NodeOverhead(benchmark::State& state) {
  bench::ir::Graph g("chain");
  bench::ir::ValueId v = g.add_input("x", {frame::DTypeCode::kFloat32, {1}});
  const bench::ir::ValueId c = bench::add_fill(g, "c", {1}, 0.5f);
  for (int i = 0; i < kNodes; ++i) {
    v = bench::add_node(state, g, "add", {v, c});
    if (v == bench::ir::kNoValue) return;
  }
  g.add_output(v);
  bench::rt::CompileOptions options;
  options.num_threads = static_cast<int>(state.range(0));
  options.disabled_passes = {"constant-folding", "cse", "dce", "operator-fusion"};
  options.use_cache = false;
  auto exe = bench::compile_or_skip(state, g, options);
  if (!exe) return;
  const bench::rt::TensorMap inputs{{"x", frame::Tensor::from_vector<float>({1}, {1.0f})}};
  const double total = bench::run_timed(state, *exe, inputs);
  if (total < 0) return;
  // Divide by the nodes that actually run (a pass could still have removed some).
  const double nodes = static_cast<double>(exe->compiled_graph().num_nodes());
  state.counters["nodes"] = nodes;
  state.counters["ns_per_node"] = total * 1e9 / static_cast<double>(state.iterations()) / nodes;
  state.SetLabel(bench::placement_label(*exe));
}
BENCHMARK(BM_NodeOverhead)->Apply(bench::timed_threads);

}  // namespace
