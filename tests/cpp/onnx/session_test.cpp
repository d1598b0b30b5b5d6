// onnx::open_session (ADR 0006): a shape input fed as an input gets one specialization per
// value, the cache stays within its bounds, specializations share the model's initializers,
// a torch-exported encoder with dynamic axes runs at several sequence lengths, concurrent runs
// with different shapes are correct, and bad inputs are named. Expected values are computed
// by hand from the model's definition or by torch (bert.expected_*.npy).

#include "frame/onnx/session.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/tolerance.h"
#include "frame/core/npy.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/threads.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)
using runtime::TensorMap;

// y = Reshape(x, shape) + 0.5, x: f32[N] (symbolic), shape: i64[2] (a graph input).
std::string reshape_model() {
  ModelBuilder m(17);
  m.input("x", {-1}).input("shape", {2}, ::onnx::TensorProto::INT64).output("y");
  m.init(float_tensor("half", {1}, {0.5f}));
  m.add(node("Reshape", {"x", "shape"}, {"r"}, "reshape"));
  m.add(node("Add", {"r", "half"}, {"y"}, "add"));
  return m.bytes();
}

Tensor iota(int64_t n, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>(i) * scale;
  return Tensor::from_vector<float>({n}, v);
}

// Checks y == Reshape(x, shape) + 0.5 element by element.
void expect_reshaped(const Result<TensorMap>& out, const Tensor& x, const Shape& shape) {
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.shape(), shape);
  ASSERT_EQ(y.numel(), x.numel());
  for (int64_t i = 0; i < x.numel(); ++i) {
    ASSERT_EQ(y.data<float>()[i], x.data<float>()[i] + 0.5f) << "element " << i;
  }
}

TensorMap feeds(const Tensor& x, const std::vector<int64_t>& shape) {
  return {{"x", x}, {"shape", Tensor::from_vector<int64_t>({2}, shape)}};
}

// Most tests here count specializations (one per key): without the interpreted tier, which
// serves a key's first runs without one (ADR 0007 stage C; its tests say interpreter_options).
runtime::SessionOptions cpu_options() {
  runtime::SessionOptions o;
  o.compile.backends = {"cpu"};
  o.compile.num_threads = 1;
  o.interpret_first_seen = false;
  o.background_compile = false;  // compiles on the runs' path: counts do not depend on timing
  return o;
}

runtime::SessionOptions interpreter_options() {
  runtime::SessionOptions o = cpu_options();
  o.interpret_first_seen = true;
  return o;
}

TEST(OnnxSession, DescribesTheModel) {
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->inputs().size(), 2u);
  EXPECT_EQ(s->inputs()[0].name, "x");
  ASSERT_EQ(s->inputs()[0].dims.size(), 1u);
  EXPECT_FALSE(s->inputs()[0].dims[0].is_concrete());
  EXPECT_EQ(s->inputs()[0].dims[0].param, "N");
  EXPECT_EQ(s->inputs()[1].to_string(), "i64[2]");
  EXPECT_EQ(s->shape_determining_inputs(), std::vector<std::string>{"shape"});
  ASSERT_EQ(s->outputs().size(), 1u);
  EXPECT_EQ(s->outputs()[0].name, "y");
}

TEST(OnnxSession, ShapeInputRunTwiceWithTwoShapes) {
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const Tensor x = iota(12);
  expect_reshaped(s->run(feeds(x, {3, 4})), x, {3, 4});
  expect_reshaped(s->run(feeds(x, {2, 6})), x, {2, 6});
  runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.entries, 2u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.hits, 0u);
  // The first key again: a hit, still right.
  expect_reshaped(s->run(feeds(x, {3, 4})), x, {3, 4});
  st = s->cache_stats();
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.entries, 2u);
  EXPECT_GT(st.bytes, 0u);
  ASSERT_TRUE(s->last_report().has_value());
  Result<std::optional<runtime::CompileReport>> r = s->report_for(feeds(x, {2, 6}));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->has_value());
  r = s->report_for(feeds(x, {6, 2}));
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->has_value());
}

TEST(OnnxSession, ReusedShapeTensorKeepsEachSpecializationRight) {
  // A caller overwriting its shape tensor between runs (IoBinding style) must not change
  // what the earlier specialization computes.
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), cpu_options());
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(12);
  Tensor shape = Tensor::from_vector<int64_t>({2}, {3, 4});
  TensorMap in{{"x", x}, {"shape", shape}};
  expect_reshaped(s->run(in), x, {3, 4});
  shape.data<int64_t>()[0] = 4;
  shape.data<int64_t>()[1] = 3;
  expect_reshaped(s->run(in), x, {4, 3});
  shape.data<int64_t>()[0] = 3;
  shape.data<int64_t>()[1] = 4;
  expect_reshaped(s->run(in), x, {3, 4});
  EXPECT_EQ(s->cache_stats().hits, 1u);
}

TEST(OnnxSession, StreamOfDistinctShapesStaysWithinTheBound) {
  runtime::SessionOptions o = cpu_options();
  o.max_specializations = 8;
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  for (int64_t n = 1; n <= 100; ++n) {
    const Tensor x = iota(n, 0.25f);
    expect_reshaped(s->run(feeds(x, {n, 1})), x, {n, 1});
    ASSERT_LE(s->cache_stats().entries, 8u);
  }
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.entries, 8u);
  EXPECT_EQ(st.misses, 100u);
  EXPECT_EQ(st.evictions, 92u);
  // The most recent key is held; the first was evicted and compiles again.
  const Tensor x100 = iota(100, 0.25f);
  expect_reshaped(s->run(feeds(x100, {100, 1})), x100, {100, 1});
  EXPECT_EQ(s->cache_stats().hits, 1u);
  const Tensor x1 = iota(1, 0.25f);
  expect_reshaped(s->run(feeds(x1, {1, 1})), x1, {1, 1});
  EXPECT_EQ(s->cache_stats().misses, 101u);
}

TEST(OnnxSession, ByteBoundKeepsNothingLargerButStillRuns) {
  runtime::SessionOptions o = cpu_options();
  o.max_cache_bytes = 1;  // every specialization is larger
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(6);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.entries, 0u);
  EXPECT_EQ(st.bytes, 0u);
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.evictions, 2u);
}

TEST(OnnxSession, SpecializationsShareTheModelsInitializers) {
  // y = MatMul(Reshape(x, shape), W), W: f32[4,3].
  ModelBuilder m(17);
  m.input("x", {-1}).input("shape", {2}, ::onnx::TensorProto::INT64).output("y");
  std::vector<float> w(12);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) - 5.0f;
  m.init(float_tensor("W", {4, 3}, w, /*raw=*/true));
  m.add(node("Reshape", {"x", "shape"}, {"r"}, "reshape"));
  m.add(node("MatMul", {"r", "W"}, {"y"}, "matmul"));
  Result<runtime::Session> s = open_session_from_bytes(m.bytes(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const void* w_data[2] = {nullptr, nullptr};
  const int64_t rows[2] = {2, 5};
  for (int k = 0; k < 2; ++k) {
    const Tensor x = iota(rows[k] * 4);
    TensorMap in{{"x", x}, {"shape", Tensor::from_vector<int64_t>({2}, {rows[k], 4})}};
    Result<runtime::Executable> exe = s->prepare(in);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    const ir::Graph& g = exe->compiled_graph();
    const ir::ValueId v = g.find_value("W");
    ASSERT_NE(v, ir::kNoValue);
    ASSERT_TRUE(g.value(v).constant.has_value());
    w_data[k] = g.value(v).constant->raw_data();
    Result<TensorMap> out = s->run(in);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tensor& y = out->at("y");
    ASSERT_EQ(y.shape(), (Shape{rows[k], 3}));
    for (int64_t i = 0; i < rows[k]; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        float e = 0;
        for (int64_t c = 0; c < 4; ++c) e += static_cast<float>(i * 4 + c) * w[c * 3 + j];
        EXPECT_EQ(y.data<float>()[i * 3 + j], e) << i << "," << j;
      }
    }
  }
  EXPECT_EQ(w_data[0], w_data[1]);
  EXPECT_EQ(s->cache_stats().entries, 2u);
}

class OnnxSessionConcurrent : public ::testing::TestWithParam<bool> {};

TEST_P(OnnxSessionConcurrent, RunsWithDifferentShapes) {
  runtime::SessionOptions o = GetParam() ? interpreter_options() : cpu_options();
  o.background_compile = GetParam();  // and compiles beside the runs, where a core is spare
  o.max_specializations = 6;          // fewer than the distinct keys: eviction under contention too
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  constexpr int kThreads = 4;
  constexpr int kRuns = 30;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRuns; ++i) {
        const int64_t rows = 1 + (i + t) % 5;
        const int64_t cols = 1 + (i * 3 + t) % 4;
        const Tensor x = iota(rows * cols, static_cast<float>(t + 1));
        Result<TensorMap> out = s->run(feeds(x, {rows, cols}));
        bool ok = out.is_ok() && out->at("y").shape() == Shape{rows, cols};
        for (int64_t k = 0; ok && k < x.numel(); ++k) {
          ok = out->at("y").data<float>()[k] == x.data<float>()[k] + 0.5f;
        }
        if (!ok) ++wrong;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.hits + st.misses + st.interpreted, static_cast<uint64_t>(kThreads * kRuns));
  EXPECT_EQ(st.interpreted > 0, GetParam());
  EXPECT_LE(st.entries, 6u);
}

INSTANTIATE_TEST_SUITE_P(Interpreted, OnnxSessionConcurrent, ::testing::Values(false, true));

TEST(OnnxSession, AFirstSeenKeyRunsInterpretedThenCompiles) {
  // ADR 0007 stage C: a key the session holds nothing for runs node by node; once its
  // interpreted runs have cost a compile (none timed yet: the estimate is 0) it compiles.
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), interpreter_options());
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(6);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.interpreted, 1u);
  EXPECT_EQ(st.misses, 0u);
  EXPECT_EQ(st.entries, 0u);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});  // compiles
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});  // held
  expect_reshaped(s->run(feeds(x, {3, 2})), x, {3, 2});  // never seen: interpreted
  st = s->cache_stats();
  EXPECT_EQ(st.interpreted, 2u);
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.entries, 1u);
}

// Polls the session's counters until `done` holds (a background compile finished), at most 20 s.
bool wait_until(const runtime::Session& s,
                const std::function<bool(const runtime::CacheStats&)>& done) {
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done(s.cache_stats())) {
    if (std::chrono::steady_clock::now() > limit) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// The entry held for `in` is a full compile, not the first-seen tier's shape-agnostic one.
void expect_full_compile(const runtime::Session& s, const TensorMap& in) {
  Result<std::optional<runtime::CompileReport>> r = s.report_for(in);
  ASSERT_TRUE(r.is_ok() && r->has_value());
  EXPECT_FALSE((*r)->shape_agnostic_kernels);
}

// The probe of what a first-seen key costs compiled (ADR 0007 stage C: the fourth new key, after
// two interpreted samples; on a run's path that key compiled and counted a miss) runs on the
// background thread: with `threads` compute threads, every key is interpreted, no run counts a
// miss, the probe is counted once it ends and keeps no entry. Every output is the reshape's
// definition. About 0.05 s.
void expect_probe_in_background(int threads) {
  runtime::SessionOptions o = interpreter_options();
  o.background_compile = true;
  o.compile.num_threads = threads;
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(6);
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{2, 3}, {3, 2}, {1, 6}, {6, 1}}) {
    expect_reshaped(s->run(feeds(x, shape)), x, shape);
  }
  ASSERT_TRUE(wait_until(*s, [](const runtime::CacheStats& c) { return c.background_probes > 0; }));
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.interpreted, 4u);
  EXPECT_EQ(st.misses, 0u);
  EXPECT_EQ(st.background_probes, 1u);
  EXPECT_EQ(st.entries, 0u);
}

// One thread: a core is spare.
TEST(OnnxSession, TheFirstSeenProbeRunsInTheBackground) {
  if (runtime::available_cores() < 2) GTEST_SKIP() << "one core: no core to probe beside a run";
  expect_probe_in_background(1);
}

// The session's threads take every core (ADR 0007, "Revisited (2026-12-07, later)"): the probe
// still runs on the background thread, and the interpreted runs keep to one thread until it
// ends.
TEST(OnnxSession, WithNoCoreSpareTheFirstSeenProbeStillRunsInTheBackground) {
  if (runtime::available_cores() < 2) GTEST_SKIP() << "one core: no core to probe beside a run";
  expect_probe_in_background(runtime::available_cores());
}

// Background compiles (ADR 0007, "Compiles in the background"; the session's one thread leaves a
// core spare): the compile a recurring interpreted key earned at its second run (none timed yet:
// the estimate is 0) runs beside that run, which is interpreted; once it is held, runs hit it.
// No run counts a miss, and the entry is the full compile. Every output is the reshape's
// definition. A second session is destroyed right after its second run started a background
// compile, usually before that compile ends (it waits for it; ASan checks the thread touches
// nothing freed). About 0.05 s.
TEST(OnnxSession, ARecurringInterpretedKeyCompilesInTheBackground) {
  if (runtime::available_cores() < 2) GTEST_SKIP() << "one core: no core to compile beside a run";
  runtime::SessionOptions o = interpreter_options();
  o.background_compile = true;
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(6);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});  // starts the compile, interpreted
  runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.interpreted, 2u);
  EXPECT_EQ(st.misses, 0u);
  ASSERT_TRUE(
      wait_until(*s, [](const runtime::CacheStats& c) { return c.background_compiles > 0; }));
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});  // held
  st = s->cache_stats();
  EXPECT_EQ(st.interpreted, 2u);
  EXPECT_EQ(st.misses, 0u);
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.background_compiles, 1u);
  EXPECT_EQ(st.entries, 1u);
  expect_full_compile(*s, feeds(x, {2, 3}));

  {
    Result<runtime::Session> dropped = open_session_from_bytes(reshape_model(), o);
    ASSERT_TRUE(dropped.is_ok());
    expect_reshaped(dropped->run(feeds(x, {3, 2})), x, {3, 2});
    expect_reshaped(dropped->run(feeds(x, {3, 2})), x, {3, 2});
  }
}

// fork() while a background compile runs: the fork waits for it (the child inherits no lock it
// held); in the child the session compiles on the run's path (no background thread there),
// runs right, and is destroyed without joining the parent's thread. Exit codes name the first
// failed check; a child that hangs is killed after 20 s and fails the test. About 0.1 s.
TEST(OnnxSession, AForkDuringABackgroundCompileLeavesAWorkingChild) {
  if (runtime::available_cores() < 2) GTEST_SKIP() << "one core: no core to compile beside a run";
  runtime::SessionOptions o = interpreter_options();
  o.background_compile = true;
  auto s = std::make_unique<runtime::Session>(open_session_from_bytes(reshape_model(), o).value());
  const Tensor x = iota(6);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});  // starts the compile
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    for (const Shape& shape : {Shape{3, 2}, Shape{3, 2}, Shape{3, 2}, Shape{6, 1}}) {
      Result<TensorMap> out = s->run(feeds(x, {shape[0], shape[1]}));
      if (!out.is_ok()) _exit(2);
      const Tensor& y = out->at("y");
      if (y.shape() != shape) _exit(3);
      for (int64_t i = 0; i < 6; ++i) {
        if (y.data<float>()[i] != static_cast<float>(i) + 0.5f) _exit(4);
      }
    }
    if (s->cache_stats().background_compiles > 1) _exit(5);  // none started in the child
    s.reset();
    _exit(0);
  }
  int status = 0;
  pid_t done = 0;
  for (int ms = 0; ms < 20000 && done == 0; ++ms) {
    done = waitpid(pid, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (done == 0) {
    kill(pid, SIGKILL);
    (void)waitpid(pid, &status, 0);
    FAIL() << "the forked child hung";
  }
  ASSERT_EQ(done, pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  ASSERT_TRUE(
      wait_until(*s, [](const runtime::CacheStats& c) { return c.background_compiles > 0; }));
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
}

// Without the interpreted tier: a first-seen-tier entry's full compile, once its runs have taken
// as long as its first compile, runs in the background while runs go on with the held entry,
// then replaces it: one miss, one tier-up, done in the background (background_tier_ups; not in
// background_compiles).
TEST(OnnxSession, ATierUpCompilesInTheBackground) {
  if (runtime::available_cores() < 2) GTEST_SKIP() << "one core: no core to compile beside a run";
  runtime::SessionOptions o = cpu_options();
  o.background_compile = true;
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(6);
  const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (s->cache_stats().tier_ups == 0 && std::chrono::steady_clock::now() < limit) {
    expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  }
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.tier_ups, 1u);
  EXPECT_EQ(st.background_tier_ups, 1u);
  EXPECT_EQ(st.background_compiles, 0u);
  EXPECT_EQ(st.entries, 1u);
  expect_full_compile(*s, feeds(x, {2, 3}));
}

// A background compile whose result is too large to keep (max_cache_bytes 1: nothing is kept)
// is not retried there: the key's next run compiles on its own path (a miss) and runs.
TEST(OnnxSession, AKeyWhoseBackgroundCompileWasNotKeptCompilesOnItsRun) {
  if (runtime::available_cores() < 2) GTEST_SKIP() << "one core: no core to compile beside a run";
  runtime::SessionOptions o = interpreter_options();
  o.background_compile = true;
  o.max_cache_bytes = 1;
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(6);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  ASSERT_TRUE(wait_until(*s, [](const runtime::CacheStats& c) { return c.evictions > 0; }));
  EXPECT_EQ(s->cache_stats().misses, 0u);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.background_compiles, 0u);
  EXPECT_EQ(st.interpreted, 2u);
  EXPECT_EQ(st.entries, 0u);
}

// W [4, 3] and b [3] of linear_model and bound_target_model.
constexpr float kLinearW[4][3] = {
    {0.5f, -1.0f, 0.25f}, {2.0f, 0.0f, -0.5f}, {-1.5f, 1.0f, 0.75f}, {0.125f, 3.0f, -2.0f}};
constexpr float kLinearB[3] = {0.1f, -0.2f, 0.3f};

// Adds W and b as initializers "w" and "b".
void add_linear_weights(ModelBuilder& m) {
  std::vector<float> w;
  for (const auto& row : kLinearW) w.insert(w.end(), row, row + 3);
  m.init(float_tensor("w", {4, 3}, w))
      .init(float_tensor("b", {3}, std::vector<float>(kLinearB, kLinearB + 3)));
}

// Relu(x W + b) for x [rows, 4] (row-major), computed here by hand: [rows, 3].
std::vector<float> linear_relu(const std::vector<float>& x) {
  std::vector<float> y(x.size() / 4 * 3);
  for (size_t r = 0; r < x.size() / 4; ++r) {
    for (size_t j = 0; j < 3; ++j) {
      float acc = kLinearB[j];
      for (size_t k = 0; k < 4; ++k) acc += x[r * 4 + k] * kLinearW[k][j];
      y[r * 3 + j] = std::max(acc, 0.0f);
    }
  }
  return y;
}

// One thread, the interpreted tier on, compiles on the runs' path: counts do not depend on
// timing.
runtime::SessionOptions in_place_options() {
  runtime::SessionOptions o;
  o.compile.num_threads = 1;
  o.interpret_first_seen = true;
  o.background_compile = false;
  return o;
}

// y = Reshape(Relu(x W + b), Concat(Shape(x)[0:1], [-1])): x f32[N, S, 4] with two symbolic
// dims, W [4, 3], b [3]; y [N, S * 3]. MatMul, Add and Relu are what the interpreted tier fuses
// where oneDNN runs them; the Reshape's target is shape arithmetic folded per shape.
std::string linear_model() {
  ModelBuilder m(17);
  ::onnx::ValueInfoProto x;
  x.set_name("x");
  auto* tt = x.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(::onnx::TensorProto::FLOAT);
  tt->mutable_shape()->add_dim()->set_dim_param("N");
  tt->mutable_shape()->add_dim()->set_dim_param("S");
  tt->mutable_shape()->add_dim()->set_dim_value(4);
  *m.model.mutable_graph()->add_input() = x;
  m.output("y");
  add_linear_weights(m);
  m.init(int64_tensor("start", {1}, {0}))
      .init(int64_tensor("end", {1}, {1}))
      .init(int64_tensor("rest", {1}, {-1}));
  m.add(node("MatMul", {"x", "w"}, {"xw"}, "matmul"));
  m.add(node("Add", {"xw", "b"}, {"xwb"}, "add"));
  m.add(node("Relu", {"xwb"}, {"a"}, "relu"));
  m.add(node("Shape", {"x"}, {"s"}, "shape"));
  m.add(node("Slice", {"s", "start", "end"}, {"n"}, "slice"));
  m.add(node("Concat", {"n", "rest"}, {"target"}, "concat", {attr_i("axis", 0)}));
  m.add(node("Reshape", {"a", "target"}, {"y"}, "reshape"));
  return m.bytes();
}

TEST(OnnxSession, InterpretedRunsReTypeTheLastGraphInPlace) {
  // A stream of first-seen shapes on the interpreted tier: from the second key on, a run's
  // graph is the last run's re-typed in place with its fusions kept (CacheStats::
  // retyped_in_place); every output equals the model computed here by hand.
  Result<runtime::Session> s = open_session_from_bytes(linear_model(), in_place_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{1, 1}, {2, 3}, {3, 7}, {1, 5}, {4, 2},
                                                           {2, 9}, {5, 1}, {3, 3}, {6, 4}, {1, 11}};
  for (const auto& [n, len] : shapes) {
    std::vector<float> xv(static_cast<size_t>(n * len * 4));
    for (size_t i = 0; i < xv.size(); ++i) {
      xv[i] = static_cast<float>(static_cast<int>((i * 7 + static_cast<size_t>(n * 3 + len)) % 11) -
                                 5) *
              0.25f;
    }
    Result<TensorMap> out = s->run({{"x", Tensor::from_vector<float>({n, len, 4}, xv)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tensor& y = out->at("y");
    ASSERT_EQ(y.shape(), (Shape{n, len * 3})) << n << "x" << len;
    const std::vector<float> expected = linear_relu(xv);
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(y.data<float>()[i], expected[i], 1e-5f) << n << "x" << len << " at " << i;
    }
  }
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_GT(st.interpreted, 2u);
  EXPECT_EQ(st.retyped_in_place, st.interpreted - 1);  // all but the first
}

// y = Reshape(Relu(x W + b), target * one): x f32[N, 4] (N symbolic), W and b as in
// linear_model, target i64[2] a shape-determining input (bound as a constant per key), one =
// [1, 1]. The Mul folds at each key; re-typed in place, it is computed again only where what it
// reads changed, and a bound input's new value is such a change.
std::string bound_target_model() {
  ModelBuilder m(17);
  m.input("x", {-1, 4}).input("target", {2}, ::onnx::TensorProto::INT64).output("y");
  add_linear_weights(m);
  m.init(int64_tensor("one", {2}, {1, 1}));
  m.add(node("MatMul", {"x", "w"}, {"xw"}, "matmul"));
  m.add(node("Add", {"xw", "b"}, {"xwb"}, "add"));
  m.add(node("Relu", {"xwb"}, {"a"}, "relu"));
  m.add(node("Mul", {"target", "one"}, {"t2"}, "mul"));
  m.add(node("Reshape", {"a", "t2"}, {"y"}, "reshape"));
  return m.bytes();
}

TEST(OnnxSession, InPlaceReTypingFoldsWhatABoundInputChanged) {
  // The same x shape with a new Reshape target per run (a new key each time): every
  // interpreted run but the first is re-typed in place, and each output has the target's shape and
  // Relu(x W + b)'s values in row-major order, computed here by hand. A folded step that missed the
  // bound input's change would reshape to the previous target. A few ms.
  Result<runtime::Session> s = open_session_from_bytes(bound_target_model(), in_place_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  std::vector<float> xv(16);
  for (size_t i = 0; i < xv.size(); ++i) {
    xv[i] = static_cast<float>(static_cast<int>(i * 5 % 9) - 4) * 0.5f;
  }
  const std::vector<float> expected = linear_relu(xv);
  const Tensor x = Tensor::from_vector<float>({4, 4}, xv);
  const std::vector<std::vector<int64_t>> targets = {{2, 6},  {6, 2},  {3, 4},
                                                     {12, 1}, {1, 12}, {4, 3}};
  for (const std::vector<int64_t>& t : targets) {
    Result<TensorMap> out = s->run({{"x", x}, {"target", Tensor::from_vector<int64_t>({2}, t)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tensor& y = out->at("y");
    ASSERT_EQ(y.shape(), (Shape{t[0], t[1]}));
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_NEAR(y.data<float>()[i], expected[i], 1e-5f) << t[0] << "x" << t[1] << " at " << i;
    }
  }
  const runtime::CacheStats st = s->cache_stats();
  // The first three keys are interpreted; from the fourth on, a key may compile (the probe,
  // then whichever way has cost less, which depends on the machine's timing).
  EXPECT_GE(st.interpreted, 3u);
  EXPECT_EQ(st.retyped_in_place, st.interpreted - 1);  // all but the first
}

TEST(OnnxSession, AnInterpretedRunStopsWhenTerminated) {
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), interpreter_options());
  ASSERT_TRUE(s.is_ok());
  const Tensor x = iota(6);
  std::atomic<bool> stop{true};
  runtime::RunOptions ro;
  ro.terminate = &stop;
  Result<TensorMap> out = s->run(feeds(x, {2, 3}), ro);
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("terminated"), std::string::npos) << out.status().message();
  EXPECT_EQ(s->cache_stats().misses, 0u);  // not compiled instead
  stop = false;
  expect_reshaped(s->run(feeds(x, {2, 3}), ro), x, {2, 3});
  EXPECT_EQ(s->cache_stats().interpreted, 1u);
}

TEST(OnnxSession, AnInterpretedKeyOverTheLimitsGetsTheCompilesError) {
  // max_tensor_bytes 64: x of 24 floats (96 bytes) is refused by the compile, with its
  // message; a smaller key is still interpreted.
  runtime::SessionOptions o = interpreter_options();
  o.compile.max_tensor_bytes = 64;
  Result<runtime::Session> s = open_session_from_bytes(reshape_model(), o);
  ASSERT_TRUE(s.is_ok());
  const Tensor big = iota(24);
  Result<TensorMap> out = s->run(feeds(big, {4, 6}));
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("max_tensor_bytes"), std::string::npos)
      << out.status().message();
  const Tensor x = iota(6);
  expect_reshaped(s->run(feeds(x, {2, 3})), x, {2, 3});
  EXPECT_EQ(s->cache_stats().interpreted, 1u);
}

TEST(OnnxSession, BadInputsAreNamed) {
  // x: f32[2, N]; shape: i64[2].
  ModelBuilder m(17);
  m.input("x", {2, -1}).input("shape", {2}, ::onnx::TensorProto::INT64).output("y");
  m.add(node("Reshape", {"x", "shape"}, {"y"}, "reshape"));
  Result<runtime::Session> s = open_session_from_bytes(m.bytes(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const Tensor shape = Tensor::from_vector<int64_t>({2}, {3, 2});
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  auto message = [&](const TensorMap& in) {
    Result<TensorMap> out = s->run(in);
    EXPECT_FALSE(out.is_ok());
    return out.is_ok() ? std::string() : out.status().message();
  };
  std::string msg = message({{"x", x}});
  EXPECT_NE(msg.find("missing input 'shape' (expected i64[2])"), std::string::npos) << msg;
  msg = message({{"x", x}, {"shape", shape}, {"extra", x}});
  EXPECT_NE(msg.find("unknown input 'extra' (the model's inputs: x, shape)"), std::string::npos)
      << msg;
  msg =
      message({{"x", Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6})}, {"shape", shape}});
  EXPECT_NE(msg.find("input 'x' is i32, the model expects f32 (f32[2,N])"), std::string::npos)
      << msg;
  msg = message({{"x", Tensor::from_vector<float>({6}, {1, 2, 3, 4, 5, 6})}, {"shape", shape}});
  EXPECT_NE(msg.find("input 'x' has rank 1 (shape [6]), the model expects rank 2"),
            std::string::npos)
      << msg;
  msg = message({{"x", Tensor::from_vector<float>({3, 2}, {1, 2, 3, 4, 5, 6})}, {"shape", shape}});
  EXPECT_NE(msg.find("input 'x' has shape [3,2], the model fixes dim 0 to 2"), std::string::npos)
      << msg;
  // A shape value the data cannot take: the specialization fails, naming the key.
  msg = message({{"x", x}, {"shape", Tensor::from_vector<int64_t>({2}, {4, 4})}});
  EXPECT_NE(msg.find("specializing for (x: f32[2,3], shape: i64[2], shape = [4,4])"),
            std::string::npos)
      << msg;
  // Nothing was cached by the failures; a good run still works.
  EXPECT_EQ(s->cache_stats().entries, 0u);
  Result<TensorMap> out = s->run({{"x", x}, {"shape", shape}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("y").shape(), (Shape{3, 2}));
}

TEST(OnnxSession, BertWithDynamicAxesAtThreeSequenceLengths) {
  const std::string dir = FRAME_SESSION_MODELS_DIR;
  runtime::SessionOptions o;  // the default backends ("auto"), interpreted tier on
  Result<runtime::Session> s = open_session(dir + "/bert.onnx", o);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->inputs().size(), 1u);
  ASSERT_EQ(s->inputs()[0].dims.size(), 2u);
  EXPECT_EQ(s->inputs()[0].dims[0].param, "batch");
  EXPECT_EQ(s->inputs()[0].dims[1].param, "seq");
  // Pass 0: each length is new, so interpreted (ADR 0007 stage C; the fourth new key would be
  // compiled to measure what a first-seen key costs that way). Pass 1: the first compiles (its
  // interpreted run cost more than the 0 estimated for a compile none of which was timed
  // yet); each run is interpreted, compiled or held.
  for (int pass = 0; pass < 2; ++pass) {
    for (int len : {5, 8, 13}) {
      Result<Tensor> ids = read_npy(dir + "/bert.ids_" + std::to_string(len) + ".npy");
      Result<Tensor> expected = read_npy(dir + "/bert.expected_" + std::to_string(len) + ".npy");
      ASSERT_TRUE(ids.is_ok() && expected.is_ok());
      Result<TensorMap> out = s->run({{"ids", *ids}});
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      const test::CompareResult c = test::compare_tensors(
          out->at("hidden"), *expected,
          test::tolerance_for(DTypeCode::kFloat32, test::ToleranceClass::kDeepNetwork));
      EXPECT_TRUE(c.ok) << "seq " << len << ", pass " << pass << ": " << c.message;
    }
    if (pass == 0) {
      EXPECT_EQ(s->cache_stats().interpreted, 3u);
      EXPECT_EQ(s->cache_stats().misses, 0u);
    }
  }
  const runtime::CacheStats st = s->cache_stats();
  EXPECT_GE(st.misses, 1u);
  EXPECT_EQ(st.interpreted + st.misses + st.hits, 6u);
}

TEST(OnnxSession, InputTheConverterNeedsAsAValue) {
  // ReverseSequence's sequence_lens is read at import (the gather index is built from it):
  // fed as an input, it is shape-determining for the session and bound per run.
  ModelBuilder m(10);
  m.input("x", {3, 2}).input("lens", {2}, ::onnx::TensorProto::INT64).output("y");
  m.add(node("ReverseSequence", {"x", "lens"}, {"y"}, "rev",
             {attr_i("batch_axis", 1), attr_i("time_axis", 0)}));
  Result<runtime::Session> s = open_session_from_bytes(m.bytes(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->shape_determining_inputs(), std::vector<std::string>{"lens"});
  // x[t][b] = 10 t + b; batch 0 reverses its first 3 steps, batch 1 its first 2.
  const Tensor x = Tensor::from_vector<float>({3, 2}, {0, 1, 10, 11, 20, 21});
  Result<TensorMap> out = s->run({{"x", x}, {"lens", Tensor::from_vector<int64_t>({2}, {3, 2})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const std::vector<float> expected = {20, 11, 10, 1, 0, 21};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(out->at("y").data<float>()[i], expected[i]) << i;
  }
  out = s->run({{"x", x}, {"lens", Tensor::from_vector<int64_t>({2}, {1, 3})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const std::vector<float> expected2 = {0, 21, 10, 11, 20, 1};
  for (size_t i = 0; i < expected2.size(); ++i) {
    EXPECT_EQ(out->at("y").data<float>()[i], expected2[i]) << i;
  }
}

TEST(OnnxSession, DataInputBehindAShapeOfAnUntypedValueIsNotBound) {
  // x: f32[1,1,N]; c = Conv(x, w = [1,1,1], kernel 3); y = Reshape(Relu(c), Shape(c)). At the
  // placeholder N = 1 the session's structure-only import cannot type c (a kernel of 3 over 1
  // sample), so Shape(c) is a stand-in there; it still reads c only for its shape, so x's
  // values reach no shape position and x is not bound: two runs of one shape with different
  // values compile once and give different results. (The pattern of a conv front end over a
  // dynamic time axis followed by Reshape(..., Shape(...)), as in exported GroupNorm.)
  ModelBuilder m(14);
  m.input("x", {1, 1, -1}).output("y");
  m.init(float_tensor("w", {1, 1, 3}, {1, 1, 1}));
  m.add(node("Conv", {"x", "w"}, {"c"}, "conv"));
  m.add(node("Shape", {"c"}, {"cs"}, "shape_c"));
  m.add(node("Relu", {"c"}, {"r"}, "relu"));
  m.add(node("Reshape", {"r", "cs"}, {"y"}, "reshape"));
  Result<runtime::Session> s = open_session_from_bytes(m.bytes(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_TRUE(s->shape_determining_inputs().empty())
      << "marked: " << s->shape_determining_inputs().front();
  // conv[i] = x[i] + x[i+1] + x[i+2].
  for (float scale : {1.0f, -2.0f}) {
    Result<Tensor> x = iota(5, scale).reshaped({1, 1, 5});
    ASSERT_TRUE(x.is_ok());
    Result<TensorMap> out = s->run({{"x", *x}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    const Tensor& y = out->at("y");
    ASSERT_EQ(y.shape(), (Shape{1, 1, 3}));
    for (int64_t i = 0; i < 3; ++i) {
      const float conv = scale * static_cast<float>(3 * i + 3);
      EXPECT_EQ(y.data<float>()[i], std::max(conv, 0.0f)) << "scale " << scale << " i " << i;
    }
  }
  EXPECT_EQ(s->cache_stats().misses, 1u);
}

TEST(OnnxSession, ClassifyInputsListsWhatTheSessionBinds) {
  // onnx::classify_inputs (what `frame inspect` prints) names the session's inputs, with the
  // positions they reach: `shape` reaches the Reshape target; `x` (symbolic) reaches none.
  const std::string path = ::testing::TempDir() + "/classify_inputs_reshape.onnx";
  {
    std::ofstream f(path, std::ios::binary);
    f << reshape_model();
  }
  Result<runtime::Session> s = open_session(path, cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  Result<std::vector<passes::ShapeDeterminingInput>> c = classify_inputs(path);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  ASSERT_EQ(c->size(), 1u);
  EXPECT_EQ(c->front().name, "shape");
  EXPECT_EQ(s->shape_determining_inputs(), std::vector<std::string>{"shape"});
  ASSERT_EQ(c->front().uses.size(), 1u);
  EXPECT_EQ(c->front().uses[0].op, "reshape");
  EXPECT_EQ(c->front().uses[0].input, 1u);
  std::remove(path.c_str());
}

// y = x + half, with the initializer `half` also a graph input (ONNX IR spec, "Graphs": the
// initializer is the input's default, which a feed may override).
std::string overridable_model() {
  ModelBuilder m(17);
  m.input("x", {-1}).input("half", {1}).output("y");
  m.init(float_tensor("half", {1}, {0.5f}));
  m.add(node("Add", {"x", "half"}, {"y"}, "add"));
  return m.bytes();
}

TEST(OnnxSession, AFeedOverridesAnInitializerThatIsAlsoAnInput) {
  Result<runtime::Session> s = open_session_from_bytes(overridable_model(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  ASSERT_EQ(s->inputs().size(), 1u);
  ASSERT_EQ(s->overridable_inputs().size(), 1u);
  EXPECT_EQ(s->overridable_inputs()[0].name, "half");
  EXPECT_EQ(s->overridable_inputs()[0].to_string(), "f32[1]");
  EXPECT_TRUE(s->shape_determining_inputs().empty());
  const Tensor x = iota(4);
  for (const auto& [fed, add] : std::vector<std::pair<bool, float>>{
           {false, 0.5f}, {true, 3.0f}, {true, -1.0f}, {false, 0.5f}}) {
    TensorMap in{{"x", x}};
    if (fed) in.emplace("half", Tensor::from_vector<float>({1}, {add}));
    Result<TensorMap> out = s->run(in);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (int64_t i = 0; i < 4; ++i) {
      EXPECT_EQ(out->at("y").data<float>()[i], static_cast<float>(i) + add) << "fed " << fed;
    }
  }
  // Two keys (fed, not fed): the second value fed reused the plan of the first.
  EXPECT_EQ(s->cache_stats().misses, 2u);
  // A feed of the wrong shape is named.
  Result<TensorMap> bad = s->run({{"x", x}, {"half", iota(2)}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("input 'half' has shape [2]"), std::string::npos)
      << bad.status().to_string();
  // load() makes it a graph input when given a shape for it, a constant otherwise.
  LoadOptions lo;
  lo.input_shapes = {{"x", {4}}};
  Result<ir::Graph> as_constant = load_from_bytes(overridable_model(), lo);
  ASSERT_TRUE(as_constant.is_ok()) << as_constant.status().to_string();
  EXPECT_EQ(as_constant->inputs().size(), 1u);
  lo.input_shapes.emplace("half", Shape{1});
  Result<ir::Graph> as_input = load_from_bytes(overridable_model(), lo);
  ASSERT_TRUE(as_input.is_ok()) << as_input.status().to_string();
  EXPECT_EQ(as_input->inputs().size(), 2u);
}

}  // namespace
}  // namespace frame::onnx
