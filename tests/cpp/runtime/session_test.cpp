// runtime::Session::from_graph (ADR 0006): a graph built in C++ whose Reshape target is a graph
// input runs with any target value, one cached specialization per value; the caller-buffer run
// and the cache reports. Expected values are the reshape's definition (same data, new shape).

#include "frame/runtime/session.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/reshape_graph.h"

namespace frame::runtime {
namespace {

using test::expect_reshape;
using test::reshape_graph;

const Tensor kX = test::reshape_input();

SessionOptions cpu() {
  SessionOptions o;
  o.compile.backends = {"cpu"};
  o.compile.num_threads = 1;
  return o;
}

TEST(Session, FromGraphBindsTheShapeInputPerRun) {
  Result<Session> s = Session::from_graph(reshape_graph(), cpu());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->shape_determining_inputs(), std::vector<std::string>{"target"});
  ASSERT_EQ(s->inputs().size(), 2u);
  EXPECT_EQ(s->inputs()[0].to_string(), "f32[2,6]");
  for (const Shape& shape : {Shape{3, 4}, Shape{4, 3}, Shape{12, 1}, Shape{3, 4}}) {
    Result<TensorMap> out =
        s->run({{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, shape)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    expect_reshape(out->at("y"), shape);
  }
  const CacheStats st = s->cache_stats();
  EXPECT_EQ(st.entries, 3u);
  EXPECT_EQ(st.misses, 3u);
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.evictions, 0u);
}

// A specialization's report starts with the session's own import stage, then compile()'s; the
// stages add up to at most the first run's wall time (measured here). About 0.05 s.
TEST(Session, ReportTimesTheSpecializationStageByStage) {
  Result<Session> s = Session::from_graph(reshape_graph(), cpu());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const TensorMap in{{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, {3, 4})}};
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(s->run(in).is_ok());
  const std::chrono::duration<double, std::milli> wall = std::chrono::steady_clock::now() - t0;
  for (const std::optional<CompileReport>& r : {s->last_report(), *s->report_for(in)}) {
    ASSERT_TRUE(r.has_value());
    std::vector<std::string> names;
    double sum = 0;
    for (const auto& [stage, ms] : r->stage_times_ms) {
      names.push_back(stage);
      sum += ms;
    }
    EXPECT_EQ(names,
              (std::vector<std::string>{"specialize", "verify", "passes", "check", "prepare"}));
    EXPECT_LE(sum, wall.count());
  }
}

TEST(Session, CallerBufferRun) {
  Result<Session> s = Session::from_graph(reshape_graph(), cpu());
  ASSERT_TRUE(s.is_ok());
  const TensorMap in{{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, {6, 2})}};
  Result<Tensor> y = Tensor::zeros(DTypeCode::kFloat32, {6, 2});
  ASSERT_TRUE(y.is_ok());
  TensorMap outputs{{"y", *y}};
  Status st = s->run(in, outputs);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  expect_reshape(outputs.at("y"), {6, 2});
  // The output tensor is the caller's buffer.
  EXPECT_EQ(outputs.at("y").raw_data(), y->raw_data());
}

TEST(Session, StaticDimsOfABuiltGraphAreChecked) {
  Result<Session> s = Session::from_graph(reshape_graph(), cpu());
  ASSERT_TRUE(s.is_ok());
  Result<TensorMap> out =
      s->run({{"x", Tensor::from_vector<float>({3, 4}, std::vector<float>(12, 1.0f))},
              {"target", Tensor::from_vector<int64_t>({2}, {4, 3})}});
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("input 'x' has shape [3,4], the model fixes dim 0 to 2"),
            std::string::npos)
      << out.status().message();
}

// Runs the reshape_graph session with target `shape`: true when y has that shape and holds
// x's values 0..11 in order.
bool reshapes_to(const Session& s, const Shape& shape) {
  Result<TensorMap> out = s.run({{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, shape)}});
  bool ok = out.is_ok() && out->at("y").shape() == shape;
  for (int64_t k = 0; ok && k < 12; ++k) {
    ok = out->at("y").data<float>()[k] == static_cast<float>(k);
  }
  return ok;
}

// Tiered compiles (ADR 0007): a first-seen key is compiled with shape-agnostic kernels; once
// its runs have taken as long as that compile, a hit compiles it again in full and replaces the
// entry; later runs only hit. prepare() always gives the full compile; tiered_compile = false
// and a graph whose inputs admit one key compile in full at once. Outputs are the reshape's
// definition every time. About 0.05 s.
TEST(Session, AFirstSeenKeyIsCompiledAgainInFullWhenItRecurs) {
  Result<Session> s = Session::from_graph(reshape_graph(), cpu());
  ASSERT_TRUE(s.is_ok());
  const TensorMap a{{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, {3, 4})}};
  auto agnostic = [&](const TensorMap& in) {
    Result<std::optional<CompileReport>> r = s->report_for(in);
    EXPECT_TRUE(r.is_ok() && r->has_value());
    return r.is_ok() && r->has_value() && (*r)->shape_agnostic_kernels;
  };
  ASSERT_TRUE(reshapes_to(*s, {3, 4}));
  EXPECT_TRUE(agnostic(a));
  EXPECT_EQ(s->cache_stats().tier_ups, 0u);
  // A run of a reshape takes microseconds, its compile far longer: the second run is usually
  // no tier-up yet. It is timing, not a rule (a run preempted on a loaded machine can take as
  // long as the compile did), so only an entry still of the first tier is checked here.
  ASSERT_TRUE(reshapes_to(*s, {3, 4}));
  if (s->cache_stats().tier_ups == 0) {
    EXPECT_TRUE(agnostic(a));
  }
  uint64_t runs = 2;
  while (s->cache_stats().tier_ups == 0 && runs < 200000) {
    ASSERT_TRUE(reshapes_to(*s, {3, 4}));
    ++runs;
  }
  EXPECT_FALSE(agnostic(a));
  for (int run = 0; run < 3; ++run) ASSERT_TRUE(reshapes_to(*s, {3, 4}));
  CacheStats st = s->cache_stats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.hits, runs + 2);
  EXPECT_EQ(st.tier_ups, 1u);
  EXPECT_EQ(st.entries, 1u);

  const TensorMap b{{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, {6, 2})}};
  ASSERT_TRUE(s->prepare(b).is_ok());
  EXPECT_FALSE(agnostic(b));
  ASSERT_TRUE(reshapes_to(*s, {6, 2}));
  EXPECT_EQ(s->cache_stats().tier_ups, 1u);

  SessionOptions off = cpu();
  off.tiered_compile = false;
  Result<Session> plain = Session::from_graph(reshape_graph(), off);
  ASSERT_TRUE(plain.is_ok());
  ASSERT_TRUE(reshapes_to(*plain, {4, 3}));
  ASSERT_TRUE(reshapes_to(*plain, {4, 3}));
  const TensorMap c{{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, {4, 3})}};
  Result<std::optional<CompileReport>> r = plain->report_for(c);
  ASSERT_TRUE(r.is_ok() && r->has_value());
  EXPECT_FALSE((*r)->shape_agnostic_kernels);
  EXPECT_EQ(plain->cache_stats().tier_ups, 0u);

  // One possible key (static dims, no shape-determining input): compiled in full at once.
  ir::Graph g("relu");
  const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2, 6}});
  Result<ir::NodeId> n = g.create_node("relu", "r", {x}, 1, {}, {"y"});
  ASSERT_TRUE(n.is_ok());
  g.add_output(g.node(*n).outputs[0]);
  Result<Session> fixed = Session::from_graph(std::move(g), cpu());
  ASSERT_TRUE(fixed.is_ok());
  Result<TensorMap> y = fixed->run({{"x", kX}});
  ASSERT_TRUE(y.is_ok());
  for (int64_t k = 0; k < 12; ++k) EXPECT_EQ(y->at("y").data<float>()[k], static_cast<float>(k));
  ASSERT_TRUE(fixed->last_report().has_value());
  EXPECT_FALSE(fixed->last_report()->shape_agnostic_kernels);
}

TEST(Session, ConcurrentRunsWithDifferentTargets) {
  Result<Session> s = Session::from_graph(reshape_graph(), cpu());
  ASSERT_TRUE(s.is_ok());
  const std::vector<Shape> shapes = {{1, 12}, {2, 6}, {3, 4}, {4, 3}, {6, 2}, {12, 1}};
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 24; ++i) {
        const Shape& shape = shapes[static_cast<size_t>(i + t) % shapes.size()];
        if (!reshapes_to(*s, shape)) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const CacheStats st = s->cache_stats();
  EXPECT_EQ(st.entries, shapes.size());
  EXPECT_EQ(st.hits + st.misses, 96u);
}

TEST(Session, CreateRejectsABadSource) {
  ModelSource src;
  src.name = "m";
  src.inputs.push_back(ValueInfo{"a", DTypeCode::kFloat32, {}, true});
  src.shape_determining = {"b"};
  src.specialize = [](const Specialization&) -> Result<ir::Graph> { return ir::Graph(); };
  Result<Session> s = Session::create(src);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("shape-determining input 'b' is not a declared input"),
            std::string::npos);
  src.shape_determining.clear();
  src.specialize = nullptr;
  EXPECT_FALSE(Session::create(src).is_ok());
}

TEST(Session, ConcurrentRunsOfOneNewKeyCompileItOnce) {
  Result<Session> s = Session::from_graph(reshape_graph(), cpu());
  ASSERT_TRUE(s.is_ok());
  constexpr int kThreads = 8;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      if (!reshapes_to(*s, Shape{4, 3})) ++wrong;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const CacheStats st = s->cache_stats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.hits, static_cast<uint64_t>(kThreads - 1));
  EXPECT_EQ(st.entries, 1u);
}

// y = expand(x, target): x f32[1], target i64[2] decides the output shape.
ir::Graph expand_graph() {
  ir::Graph g("expand_by_input");
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1}});
  ir::ValueId target = g.add_input("target", {DTypeCode::kInt64, {2}});
  Result<ir::NodeId> n = g.create_node("expand", "e", {x, target}, 1, {}, {"y"});
  EXPECT_TRUE(n.is_ok());
  g.add_output(g.node(*n).outputs[0]);
  return g;
}

// A shape-determining value asking for a tensor no machine holds (2^40 x 3 floats = 13 TB) is
// refused before any kernel prepares, on every chain, with a message naming the value; the key
// in the message prints the integer exactly (2^40 + 1, not 1.09951e+12).
TEST(Session, AHugeShapeIsRefusedAtCompileNamingTheValue) {
  for (const char* backend : {"cpu", "auto"}) {
    SessionOptions o = cpu();
    o.compile.backends = {backend};
    Result<Session> s = Session::from_graph(expand_graph(), o);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    const int64_t huge = (int64_t{1} << 40) + 1;
    Result<TensorMap> out = s->run({{"x", Tensor::from_vector<float>({1}, {1.0f})},
                                    {"target", Tensor::from_vector<int64_t>({2}, {huge, 3})}});
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().code(), StatusCode::kOutOfRange);
    const std::string m = out.status().message();
    EXPECT_NE(m.find("target = [1099511627777,3]"), std::string::npos) << m;
    EXPECT_NE(m.find("node 'e' (expand): output 0 'y'"), std::string::npos) << m;
    EXPECT_NE(m.find("13194139533324 bytes, over the limit"), std::string::npos) << m;
    EXPECT_NE(m.find("max_tensor_bytes"), std::string::npos) << m;
    EXPECT_EQ(s->cache_stats().entries, 0u);
  }
}

// The byte bound counts what an entry keeps alive, the run's output included: with 1 MiB
// outputs (256 x 1024 floats) and a 3.5 MiB bound at most 3 entries stay, whatever the count
// bound allows; each result is still right (every element is x).
TEST(Session, TheByteBoundCountsOutputsAnEntryKeepsAlive) {
  SessionOptions o = cpu();
  o.max_specializations = 32;
  o.max_cache_bytes = (size_t{7} << 20) / 2;
  Result<Session> s = Session::from_graph(expand_graph(), o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  for (int64_t rows = 256; rows < 256 + 10; ++rows) {
    Result<TensorMap> out = s->run({{"x", Tensor::from_vector<float>({1}, {1.5f})},
                                    {"target", Tensor::from_vector<int64_t>({2}, {rows, 1024})}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tensor& y = out->at("y");
    ASSERT_EQ(y.shape(), (Shape{rows, 1024}));
    EXPECT_EQ(y.data<float>()[y.numel() - 1], 1.5f);
    EXPECT_LE(s->cache_stats().entries, 3u);
    EXPECT_LE(s->cache_stats().bytes, o.max_cache_bytes);
  }
  EXPECT_EQ(s->cache_stats().evictions, 7u);
}

}  // namespace
}  // namespace frame::runtime
