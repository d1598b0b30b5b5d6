// One Executable run from 8 threads at once with different inputs; each result is checked
// against its own independent reference (thread-safety and per-run arenas).

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

TEST(Concurrency, EightThreadsShareOneExecutable) {
  ir::Graph g("concurrent");
  const int64_t n = 4096;  // several fused blocks per run
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {n}});
  ir::ValueId two = g.add_constant("two", Tensor::scalar<float>(2.0F));
  auto mk = [&](std::string_view op, std::string name, std::vector<ir::ValueId> ins) {
    auto id = g.create_node(op, name, std::move(ins), 1, {}, {name});
    EXPECT_TRUE(id.is_ok());
    return g.node(*id).outputs[0];
  };
  ir::ValueId a = mk("mul", "a", {x, two});
  ir::ValueId t = mk("tanh", "t", {a});
  ir::ValueId s = mk("sub", "s", {t, x});
  ir::ValueId e = mk("exp", "e", {mk("neg", "nx", {s})});
  g.add_output(e);
  g.add_output(t);
  auto exe = compile(g);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_FALSE(exe->report().fused_groups.empty());

  constexpr int kThreads = 8;
  constexpr int kRuns = 25;
  std::vector<int> failures(kThreads, 0);
  std::vector<std::thread> threads;
  for (int tid = 0; tid < kThreads; ++tid) {
    threads.emplace_back([&, tid] {
      for (int r = 0; r < kRuns; ++r) {
        std::vector<float> xv(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) {
          xv[i] = std::sin(static_cast<float>(i * (tid + 1) + r)) * 0.9F;
        }
        auto out = exe->run({{"x", Tensor::from_vector<float>({n}, xv)}});
        if (!out.is_ok()) {
          ++failures[tid];
          continue;
        }
        for (int64_t i = 0; i < n; ++i) {
          const double tv = std::tanh(2.0 * xv[i]);
          const double ev = std::exp(-(tv - xv[i]));
          if (std::fabs(out->at("t").data<float>()[i] - tv) > 1e-5 ||
              std::fabs(out->at("e").data<float>()[i] - ev) > 1e-5 * ev) {
            ++failures[tid];
            break;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int tid = 0; tid < kThreads; ++tid) EXPECT_EQ(failures[tid], 0) << "thread " << tid;
}

}  // namespace
}  // namespace frame::runtime
