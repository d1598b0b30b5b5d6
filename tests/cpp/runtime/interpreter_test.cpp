// The interpreted tier (src/runtime/interpreter.h; docs/adr/0007-first-seen-shapes.md, stage
// C): a typed graph run node by node, with outputs checked against values computed by hand,
// and each way it declines a graph (a body, limits, terminate); and the buffer pool its values
// come from (reuse by size class, the bound on what it keeps).

#include "runtime/interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace frame::runtime::detail {
namespace {

CompileOptions host() {
  CompileOptions o;
  o.backends = {"onednn", "cpu"};
  o.num_threads = 1;
  return o;
}

// Types a value the way a specialization's import leaves it.
void type(ir::Graph& g, ir::ValueId v, Shape shape) {
  g.value(v).type = ir::TensorType{DTypeCode::kFloat32, std::move(shape)};
}

// y = relu(x @ w + b) with x: f32[2,3], w = [[1,0],[0,1],[1,1]], b = [-1, 2]; also z = x, a
// graph output that is a graph input, and an unused node (u = relu(x)) that must not run.
ir::Graph mlp() {
  ir::Graph g("mlp");
  const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2, 3}});
  const ir::ValueId w = g.add_constant("w", Tensor::from_vector<float>({3, 2}, {1, 0, 0, 1, 1, 1}));
  const ir::ValueId b = g.add_constant("b", Tensor::from_vector<float>({2}, {-1, 2}));
  const ir::ValueId m = g.node(*g.create_node("matmul", "mm", {x, w}, 1)).outputs[0];
  type(g, m, {2, 2});
  const ir::ValueId a = g.node(*g.create_node("add", "bias", {m, b}, 1)).outputs[0];
  type(g, a, {2, 2});
  const ir::ValueId y = g.node(*g.create_node("relu", "act", {a}, 1, {}, {"y"})).outputs[0];
  type(g, y, {2, 2});
  const ir::ValueId u = g.node(*g.create_node("relu", "unused", {x}, 1)).outputs[0];
  type(g, u, {2, 3});
  g.add_output(y);
  g.add_output(x);
  return g;
}

TEST(Interpreter, RunsTheGraphNodeByNode) {
  const ir::Graph g = mlp();
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -4, -5, -6});
  auto pool = std::make_shared<BufferPool>(1 << 20);
  const Interpreted r = interpret(g, {{"x", x}}, host(), nullptr, pool.get());
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  // x @ w = [[1+3, 2+3], [-4-6, -5-6]] = [[4, 5], [-10, -11]]; + b = [[3, 7], [-11, -9]].
  const Tensor& y = r.outputs.at("y");
  ASSERT_EQ(y.shape(), (Shape{2, 2}));
  const std::vector<float> expected = {3, 7, 0, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.data<float>()[i], expected[i]) << i;
  // An output that is a graph input is a tensor of its own, equal to the input.
  const Tensor& z = r.outputs.at("x");
  EXPECT_NE(z.raw_data(), x.raw_data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(z.data<float>()[i], x.data<float>()[i]);
}

// A view op's output shares its input's storage, except a graph output, which gets its own:
// y = relu(reshape(x, [3, 2])), flat = reshape(x, [6]) (a graph output), a = abs(flat).
TEST(Interpreter, ViewOpsShareStorageExceptForGraphOutputs) {
  ir::Graph g("views");
  const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2, 3}});
  const ir::ValueId s32 = g.add_constant("s32", Tensor::from_vector<int64_t>({2}, {3, 2}));
  const ir::ValueId s6 = g.add_constant("s6", Tensor::from_vector<int64_t>({1}, {6}));
  const ir::ValueId r = g.node(*g.create_node("reshape", "r", {x, s32}, 1)).outputs[0];
  type(g, r, {3, 2});
  const ir::ValueId y = g.node(*g.create_node("relu", "act", {r}, 1, {}, {"y"})).outputs[0];
  type(g, y, {3, 2});
  const ir::ValueId flat =
      g.node(*g.create_node("reshape", "f", {x, s6}, 1, {}, {"flat"})).outputs[0];
  type(g, flat, {6});
  const ir::ValueId a = g.node(*g.create_node("abs", "abs", {flat}, 1, {}, {"a"})).outputs[0];
  type(g, a, {6});
  g.add_output(y);
  g.add_output(flat);
  g.add_output(a);
  const std::vector<float> xs = {1, -2, 3, -4, 5, -6};
  const Tensor x_in = Tensor::from_vector<float>({2, 3}, xs);
  auto pool = std::make_shared<BufferPool>(1 << 20);
  const Interpreted out = interpret(g, {{"x", x_in}}, host(), nullptr, pool.get());
  ASSERT_TRUE(out.status.is_ok()) << out.status.message();
  const Tensor& ty = out.outputs.at("y");
  const Tensor& tf = out.outputs.at("flat");
  const Tensor& ta = out.outputs.at("a");
  ASSERT_EQ(ty.shape(), (Shape{3, 2}));
  ASSERT_EQ(tf.shape(), (Shape{6}));
  EXPECT_NE(tf.raw_data(), x_in.raw_data());  // a graph output: storage of its own
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(ty.data<float>()[i], std::max(xs[i], 0.0F)) << i;
    EXPECT_EQ(tf.data<float>()[i], xs[i]) << i;
    EXPECT_EQ(ta.data<float>()[i], std::abs(xs[i])) << i;
    EXPECT_EQ(x_in.data<float>()[i], xs[i]) << i;  // the caller's input untouched
  }
}

TEST(Interpreter, DeclinesWhatItDoesNotRun) {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  // Sizes the compile might refuse: it decides (kOverLimits).
  CompileOptions small = host();
  small.max_tensor_bytes = 16;  // x is 24 bytes
  Interpreted r = interpret(mlp(), {{"x", x}}, small, nullptr);
  EXPECT_FALSE(r.status.is_ok());
  EXPECT_EQ(r.failure, InterpretFailure::kOverLimits);
  // Strict mode is a compile setting (kFallback).
  CompileOptions strict = host();
  strict.strict = true;
  r = interpret(mlp(), {{"x", x}}, strict, nullptr);
  EXPECT_EQ(r.failure, InterpretFailure::kFallback);
  EXPECT_FALSE(r.status.is_ok());
  // A node with a body (kFallback).
  ir::Graph g = mlp();
  const ir::ValueId y = g.outputs()[0];
  const ir::ValueId c = g.add_constant("c", Tensor::scalar<bool>(true));
  auto body = std::make_shared<const ir::Graph>("branch");
  ir::AttrMap attrs;
  attrs["then_branch"] = body;
  attrs["else_branch"] = body;
  const ir::ValueId o = g.node(*g.create_node("if", "branch", {c}, 1, attrs)).outputs[0];
  type(g, o, {2, 2});
  g.set_outputs({y, o});
  r = interpret(g, {{"x", x}}, host(), nullptr);
  EXPECT_EQ(r.failure, InterpretFailure::kFallback);
  EXPECT_NE(r.status.message().find("body"), std::string::npos) << r.status.message();
  // Terminated before the first node (kTerminated, the run's error).
  std::atomic<bool> stop{true};
  r = interpret(mlp(), {{"x", x}}, host(), &stop);
  EXPECT_EQ(r.failure, InterpretFailure::kTerminated);
  EXPECT_NE(r.status.message().find("terminated"), std::string::npos) << r.status.message();
}

TEST(Interpreter, RemovedNodesValuesDoNotCountAgainstTheLimits) {
  // A graph re-typed in place keeps the types an earlier, larger key gave the outputs of nodes
  // its fusions removed; they are never computed, so they do not count: the run goes ahead.
  // The same value on a live node (the unused relu, typed past the limit) does count.
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, -4, -5, -6});
  CompileOptions o = host();
  o.max_memory_bytes = 1 << 20;
  ir::Graph g = mlp();
  const ir::NodeId unused = g.find_node("unused");
  ASSERT_GE(unused, 0);
  type(g, g.node(unused).outputs[0], {1024, 1024});  // 4 MiB, over a quarter of 1 MiB
  Interpreted r = interpret(g, {{"x", x}}, o, nullptr);
  EXPECT_EQ(r.failure, InterpretFailure::kOverLimits);
  g.remove_node(unused);
  r = interpret(g, {{"x", x}}, o, nullptr);
  ASSERT_TRUE(r.status.is_ok()) << r.status.message();
  // relu(x @ w + b) as in RunsTheGraphNodeByNode: [[3, 7], [0, 0]].
  const Tensor& y = r.outputs.at("y");
  ASSERT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.data<float>()[0], 3.0f);
  EXPECT_EQ(y.data<float>()[1], 7.0f);
  EXPECT_EQ(y.data<float>()[2], 0.0f);
  EXPECT_EQ(y.data<float>()[3], 0.0f);
}

TEST(Interpreter, RecurringKeysCompileLaterWhereEntriesGoUnused) {
  EXPECT_EQ(recurring_compile_threshold_us(1000, 0, 0), 1000);    // no evictions
  EXPECT_EQ(recurring_compile_threshold_us(1000, 10, 0), 1000);   // every entry served a run
  EXPECT_EQ(recurring_compile_threshold_us(1000, 10, 5), 2000);   // half of them did
  EXPECT_EQ(recurring_compile_threshold_us(1000, 16, 14), 8000);  // 1/8 did
  EXPECT_EQ(recurring_compile_threshold_us(1000, 16, 16), 8000);  // none did: capped at 8x
}

TEST(HeldStates, KeepsTheLastRunsStatesAndHandsBackTheOldest) {
  HeldStates held(3);
  std::vector<std::weak_ptr<void>> watch;
  for (int run = 0; run < 5; ++run) {
    auto state = std::make_shared<int>(run);
    watch.emplace_back(state);
    std::vector<std::shared_ptr<void>> out = held.hold({state});
    state.reset();
    // Runs 0-2 fit; run 3 pushes run 0 out, run 4 run 1, each handed back to the caller.
    ASSERT_EQ(out.size(), run < 3 ? 0u : 1u) << run;
    if (!out.empty()) {
      EXPECT_EQ(*std::static_pointer_cast<int>(out[0]), run - 3);
    }
    out.clear();  // released by the caller, as the Session does after its unlock
    EXPECT_EQ(held.size(), std::min<size_t>(static_cast<size_t>(run) + 1, 3));
  }
  for (int run = 0; run < 5; ++run) EXPECT_EQ(watch[static_cast<size_t>(run)].expired(), run < 2);
}

TEST(BufferPool, ReusesAReleasedBufferOfTheSameClass) {
  auto pool = std::make_shared<BufferPool>(1 << 20);
  const void* first = nullptr;
  {
    Result<Tensor> a = pool->empty(DTypeCode::kFloat32, {1000});  // 4000 bytes: class 4096
    ASSERT_TRUE(a.is_ok());
    first = a->raw_data();
    EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 64, 0u);
  }
  EXPECT_EQ(pool->free_bytes(), 4096u);
  Result<Tensor> b = pool->empty(DTypeCode::kFloat32, {900});  // 3600 bytes: class 4096
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->raw_data(), first);
  EXPECT_EQ(pool->free_bytes(), 0u);
  Result<Tensor> c = pool->empty(DTypeCode::kFloat32, {2000});  // another class: fresh
  ASSERT_TRUE(c.is_ok());
  EXPECT_NE(c->raw_data(), first);
}

TEST(BufferPool, TakesTheSmallestFreeBufferUpToTwiceTheRequest) {
  auto pool = std::make_shared<BufferPool>(1 << 20);
  const void* big = nullptr;
  const void* mid = nullptr;
  {
    Result<Tensor> a = pool->empty(DTypeCode::kFloat32, {2048});  // 8192 bytes
    Result<Tensor> b = pool->empty(DTypeCode::kFloat32, {1280});  // 5120 bytes
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    big = a->raw_data();
    mid = b->raw_data();
  }
  EXPECT_EQ(pool->free_bytes(), 8192u + 5120u);
  // 4000 bytes (class 4096): 5120 is the smallest within 2x.
  Result<Tensor> c = pool->empty(DTypeCode::kFloat32, {1000});
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->raw_data(), mid);
  EXPECT_EQ(pool->free_bytes(), 8192u);
  // 2000 bytes (class 2048): 8192 is over twice that, so a fresh buffer.
  Result<Tensor> d = pool->empty(DTypeCode::kFloat32, {500});
  ASSERT_TRUE(d.is_ok());
  EXPECT_NE(d->raw_data(), big);
  EXPECT_EQ(pool->free_bytes(), 8192u);
  c = Tensor();  // back with its whole capacity
  EXPECT_EQ(pool->free_bytes(), 8192u + 5120u);
}

TEST(BufferPool, EndRunReleasesOnlyBuffersIdleForManyRuns) {
  auto pool = std::make_shared<BufferPool>(1 << 20);
  { ASSERT_TRUE(pool->empty(DTypeCode::kFloat32, {1024}).is_ok()); }  // 4096 free from run 0
  for (uint64_t r = 0; r < BufferPool::kIdleRuns; ++r) pool->end_run();
  EXPECT_EQ(pool->free_bytes(), 4096u);  // idle for kIdleRuns runs: kept
  { ASSERT_TRUE(pool->empty(DTypeCode::kFloat32, {256}).is_ok()); }  // 1024, released now
  pool->end_run();
  EXPECT_EQ(pool->free_bytes(), 1024u);  // the 4096 one went unused one run too long
  // Taking and releasing a buffer renews it.
  for (uint64_t r = 0; r < 3 * BufferPool::kIdleRuns; ++r) {
    { ASSERT_TRUE(pool->empty(DTypeCode::kFloat32, {256}).is_ok()); }
    pool->end_run();
  }
  EXPECT_EQ(pool->free_bytes(), 1024u);
}

TEST(BufferPool, KeepsNoMoreThanItsBound) {
  auto pool = std::make_shared<BufferPool>(4096);
  {
    Result<Tensor> a = pool->empty(DTypeCode::kFloat32, {1024});  // 4096 bytes
    Result<Tensor> b = pool->empty(DTypeCode::kFloat32, {1024});
    ASSERT_TRUE(a.is_ok() && b.is_ok());
  }
  EXPECT_EQ(pool->free_bytes(), 4096u);  // one kept, one freed
  pool->trim(4096);
  EXPECT_EQ(pool->free_bytes(), 4096u);
  pool->trim(100);
  EXPECT_EQ(pool->free_bytes(), 0u);
  Result<Tensor> huge = pool->empty(DTypeCode::kFloat32, {std::numeric_limits<int64_t>::max()});
  EXPECT_FALSE(huge.is_ok());
}

TEST(BufferPool, ATensorOutlivesItsPool) {
  Result<Tensor> t = Status();
  {
    auto pool = std::make_shared<BufferPool>(1 << 20);
    t = pool->empty(DTypeCode::kFloat32, {16});
    ASSERT_TRUE(t.is_ok());
  }
  t->data<float>()[15] = 1.0f;  // the tensor keeps the pool (and its storage) alive
  EXPECT_EQ(t->data<float>()[15], 1.0f);
}

// reprobe_interval by hand: ceil(32 * (loser - winner) / winner) first-seen keys, within [64,
// 4096].
TEST(Interpreter, ProbesOfTheCostlierWayAreRarerTheMoreItCosts) {
  EXPECT_EQ(reprobe_interval(1000, 1000), 64);       // a tie: the floor
  EXPECT_EQ(reprobe_interval(1000, 2000), 64);       // 32 keys: the floor
  EXPECT_EQ(reprobe_interval(1000, 4000), 96);       // 32 * 3
  EXPECT_EQ(reprobe_interval(12000, 200000), 502);   // ceil(32 * 188000 / 12000) = ceil(501.3)
  EXPECT_EQ(reprobe_interval(1000, 1000000), 4096);  // 31968 keys: the cap
  EXPECT_EQ(reprobe_interval(1, int64_t{1} << 60), 4096);  // no overflow
  EXPECT_EQ(reprobe_interval(0, 5000), 64);                // nothing measured
}

// first_seen_way by hand: interpreted until two interpreted samples, then one probe of the
// compiled way; then the cheaper way, and the other at a reprobe. Only a measurement of the
// compiled way is a probe: where it wins, a key compiles (its entry serves it), and its
// reprobe is an interpreted run.
TEST(Interpreter, AFirstSeenKeyGoesTheCheaperWayAndOnlyTheCompiledWayIsProbed) {
  using W = FirstSeenWay;
  EXPECT_EQ(first_seen_way(0, 0, 0, 0, false), W::kInterpret);
  EXPECT_EQ(first_seen_way(1, 0, 900, 0, false), W::kInterpret);
  EXPECT_EQ(first_seen_way(2, 0, 900, 0, false), W::kProbe);  // the compiled way's first sample
  EXPECT_EQ(first_seen_way(5, 1, 900, 20000, false), W::kInterpret);  // interpreted is cheaper
  EXPECT_EQ(first_seen_way(5, 1, 900, 20000, true), W::kProbe);
  EXPECT_EQ(first_seen_way(5, 1, 900, 900, false), W::kInterpret);  // a tie stays interpreted
  EXPECT_EQ(first_seen_way(5, 1, 20000, 900, false), W::kCompile);  // compiled is cheaper
  EXPECT_EQ(first_seen_way(5, 1, 20000, 900, true), W::kInterpret);
}

// ThreadModeChoice, fed by hand: serial runs cost 1.0 us per estimated us of work, parallel
// ones 1.5 (then the reverse), on keys whose work grows run by run (the normalization keeps
// the ways comparable). Each way's first run pays 100x (its setup) and is not a sample. After
// the alternating start (each way: one setup run, three samples) the cheaper way runs, and the
// other every 16th run.
TEST(Interpreter, ThreadModeChoiceRunsTheCheaperWayAndProbesTheOther) {
  for (const bool serial_cheaper : {true, false}) {
    ThreadModeChoice c;
    bool setup_serial = true, setup_parallel = true;
    int64_t costlier = 0;
    for (int run = 0; run < 1000; ++run) {
      const bool serial = c.next_serial();
      const double work_ns = 1e6 * (1 + run % 7);
      const double per_ns = serial == serial_cheaper ? 1.0 : 1.5;
      bool& setup = serial ? setup_serial : setup_parallel;
      c.add(serial, static_cast<int64_t>(work_ns / 1000.0 * per_ns * (setup ? 100.0 : 1.0)),
            work_ns);
      setup = false;
      if (run < 8) {
        EXPECT_EQ(serial, run == 2 || run == 3 || run == 5 || run == 7) << "run " << run;
      } else if (serial != serial_cheaper) {
        ++costlier;
      }
    }
    EXPECT_EQ(costlier, (1000 - 8) / 16) << "serial cheaper: " << serial_cheaper;
  }
}

// The cheaper way's first three samples cost 10x (a session's first runs pay its setup), so it
// loses the start; its probes every 16th run fill its window of 8 with its real cost, and once
// four of them are in the median is that: from then on it runs, and the other is the probe.
TEST(Interpreter, ThreadModeChoiceRecoversFromACostlyStart) {
  ThreadModeChoice c;
  int serial_samples = 0;
  int64_t parallel_late = 0;
  for (int run = 0; run < 1000; ++run) {
    const bool serial = c.next_serial();
    const double per_ns = serial ? (serial_samples++ <= 3 ? 10.0 : 1.0) : 1.5;
    c.add(serial, static_cast<int64_t>(1000 * per_ns), 1e6);
    if (run >= 300 && !serial) ++parallel_late;
  }
  EXPECT_GE(parallel_late, 700 / 16 - 1);
  EXPECT_LE(parallel_late, 700 / 16 + 1);
}

}  // namespace
}  // namespace frame::runtime::detail
