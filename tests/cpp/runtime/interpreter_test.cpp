// The interpreted tier (src/runtime/interpreter.h; docs/adr/0007-first-seen-shapes.md, stage
// C): a typed graph run node by node, with outputs checked against values computed by hand,
// and each way it declines a graph (a body, limits, terminate); and the buffer pool its values
// come from (reuse by size class, the bound on what it keeps).

#include "runtime/interpreter.h"

#include <gtest/gtest.h>

#include <atomic>
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

TEST(Interpreter, RecurringKeysCompileLaterWhereEntriesGoUnused) {
  EXPECT_EQ(recurring_compile_threshold_us(1000, 0, 0), 1000);    // no evictions
  EXPECT_EQ(recurring_compile_threshold_us(1000, 10, 0), 1000);   // every entry served a run
  EXPECT_EQ(recurring_compile_threshold_us(1000, 10, 5), 2000);   // half of them did
  EXPECT_EQ(recurring_compile_threshold_us(1000, 16, 14), 8000);  // 1/8 did
  EXPECT_EQ(recurring_compile_threshold_us(1000, 16, 16), 8000);  // none did: capped at 8x
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

}  // namespace
}  // namespace frame::runtime::detail
