// Threads per node (src/runtime/node_threads.h): the cost model by hand, and a probe kernel that
// records the OpenMP thread count its prepare and run see, in compiled plans and in the
// interpreted tier.

#include "runtime/node_threads.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"
#include "frame/runtime/compile.h"
#include "runtime/interpreter.h"

namespace frame::runtime::detail {
namespace {

ir::ValueId typed_node(ir::Graph& g, const std::string& op, std::vector<ir::ValueId> ins, Shape out,
                       ir::AttrMap attrs = {}) {
  const ir::NodeId id = *g.create_node(op, op + std::to_string(g.num_values()), ins, 1, attrs);
  const ir::ValueId y = g.node(id).outputs[0];
  g.value(y).type = ir::TensorType{DTypeCode::kFloat32, std::move(out)};
  return y;
}

TEST(NodeThreads, CostIsBytesOrFlopsWhicheverIsLarger) {
  ir::Graph g("cost");
  // conv X[1,8,10,10] * W[16,8,3,3] -> Y[1,16,10,10]: 1600 outputs x 72 products x 2 = 230,400
  // flop at 100 flop/ns = 2,304 ns; its bytes (800 + 1152 + 1600 floats) x 4 / 50 = 284 ns.
  const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1, 8, 10, 10}});
  const ir::ValueId w = g.add_input("w", {DTypeCode::kFloat32, {16, 8, 3, 3}});
  const ir::ValueId c = typed_node(g, "conv", {x, w}, {1, 16, 10, 10});
  EXPECT_DOUBLE_EQ(node_cost_ns(g, g.node(g.value(c).producer)), 2304.0);
  // matmul A[64,784] B[784,512] -> [64,512]: 2 x 32768 x 784 = 51,380,224 flop -> 513,802 ns.
  const ir::ValueId a = g.add_input("a", {DTypeCode::kFloat32, {64, 784}});
  const ir::ValueId b = g.add_input("b", {DTypeCode::kFloat32, {784, 512}});
  const ir::ValueId m = typed_node(g, "matmul", {a, b}, {64, 512});
  EXPECT_DOUBLE_EQ(node_cost_ns(g, g.node(g.value(m).producer)), 513802.24);
  // add of two [1000] -> [1000]: 3000 floats x 4 bytes / 50 = 240 ns.
  const ir::ValueId p = g.add_input("p", {DTypeCode::kFloat32, {1000}});
  const ir::ValueId q = g.add_input("q", {DTypeCode::kFloat32, {1000}});
  const ir::ValueId s = typed_node(g, "add", {p, q}, {1000});
  const ir::Node& add = g.node(g.value(s).producer);
  EXPECT_DOUBLE_EQ(node_cost_ns(g, add), 240.0);
  EXPECT_EQ(node_threads(g, add, 2), 1);
  EXPECT_EQ(node_threads(g, add, 1), 1);
  EXPECT_EQ(node_threads(g, g.node(g.value(m).producer), 2), 2);
}

// A probe op whose cpu kernel records omp_get_max_threads() in prepare and in run, and the
// KernelContext::num_threads it was given.
std::atomic<int> g_prepare_threads{0}, g_run_threads{0}, g_run_budget{0};

Result<std::shared_ptr<void>> probe_prepare(const ops::NodeContext&) {
  g_prepare_threads = omp_get_max_threads();
  return std::shared_ptr<void>(std::make_shared<int>(0));
}

Status probe_run(ops::KernelContext& ctx) {
  g_run_threads = omp_get_max_threads();
  g_run_budget = ctx.num_threads;
  std::memcpy(ctx.output(0).raw_data(), ctx.input(0).raw_data(), ctx.input(0).nbytes());
  return Status();
}

const char* probe_op() {
  static const bool registered = [] {
    ops::OpSchemaBuilder b("node_threads_probe", __FILE__, __LINE__);
    b.doc("test: copies X, recording the thread counts its kernel sees")
        .input("X", "x")
        .output("Y", "y")
        .shape_infer([](const ops::NodeContext& ctx) -> Result<std::vector<ir::TensorType>> {
          return std::vector<ir::TensorType>{ctx.input_types.at(0)};
        });
    ops::KernelDef k;
    k.op = "node_threads_probe";
    k.backend = "cpu";
    k.fn = probe_run;
    k.prepare = probe_prepare;
    k.file = __FILE__;
    k.line = __LINE__;
    return ops::register_op_with_kernels(b.build(), {k}).is_ok();
  }();
  EXPECT_TRUE(registered);
  return "node_threads_probe";
}

ir::Graph probe_graph(int64_t n) {
  ir::Graph g("probe");
  const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {n}});
  const ir::NodeId id = *g.create_node(probe_op(), "probe", {x}, 1, {}, {"y"});
  const ir::ValueId y = g.node(id).outputs[0];
  g.value(y).type = ir::TensorType{DTypeCode::kFloat32, {n}};
  g.add_output(y);
  return g;
}

TEST(NodeThreads, SmallNodesPrepareAndRunOnOneThread) {
  // 16 floats in and out: 128 bytes, 2.6 ns, under kSerialNodeNs; 1 Mi floats: 8 MiB,
  // 168 us, over it. Both at 2 threads, compiled and interpreted.
  for (const auto& [n, want] : {std::pair<int64_t, int>{16, 1}, {int64_t{1} << 20, 2}}) {
    const ir::Graph g = probe_graph(n);
    std::vector<float> xs(static_cast<size_t>(n));
    for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 97);
    const TensorMap in{{"x", Tensor::from_vector<float>({n}, xs)}};
    CompileOptions o;
    o.backends = {"cpu"};
    o.num_threads = 2;
    o.use_cache = false;
    const int caller = omp_get_max_threads();
    g_prepare_threads = g_run_threads = g_run_budget = 0;
    Result<Executable> exe = compile(g, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    EXPECT_EQ(g_prepare_threads, want) << n;
    Result<TensorMap> out = exe->run(in);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(g_run_threads, want) << n;
    EXPECT_EQ(g_run_budget, want) << n;
    EXPECT_EQ(out->at("y").data<float>()[n - 1], xs.back());
    EXPECT_EQ(omp_get_max_threads(), caller);  // the run restored the caller's count
    g_prepare_threads = g_run_threads = g_run_budget = 0;
    Interpreted r = interpret(g, in, o, nullptr);
    ASSERT_TRUE(r.status.is_ok()) << r.status.to_string();
    EXPECT_EQ(g_prepare_threads, want) << n << " interpreted";
    EXPECT_EQ(g_run_threads, want) << n << " interpreted";
    EXPECT_EQ(g_run_budget, want) << n << " interpreted";
  }
}

}  // namespace
}  // namespace frame::runtime::detail
