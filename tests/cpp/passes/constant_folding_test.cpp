// constant-folding: folds side-effect-free nodes of constants with the cpu kernel, keeps graph
// output names, honours the size limit, never folds random ops, and folds nodes whose kernel
// reads some inputs only for their type.

#include <gtest/gtest.h>

#include "common/op_runner.h"
#include "cpp/passes/pass_test_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::passes {
namespace {

// Test-only op whose kernel reads only the type of its input: the input's rank as i64[].
Result<std::vector<ir::TensorType>> rank_infer(const ops::NodeContext&) {
  return std::vector<ir::TensorType>{ir::TensorType{DTypeCode::kInt64, {}}};
}
Status rank_cpu(ops::KernelContext& ctx) {
  ctx.output(0).data<int64_t>()[0] = ctx.input(0).rank();
  return Status();
}
FRAME_REGISTER_OP(pass_test_rank)
    .doc("test only: rank of the input")
    .input("x", "any tensor")
    .output("rank", "i64 scalar", DTypeSet{DTypeCode::kInt64})
    .shape_infer(rank_infer);
FRAME_REGISTER_KERNEL(pass_test_rank, "cpu", rank_cpu).type_only_inputs({0});

const Tensor& constant_of(const ir::Graph& g, std::string_view name) {
  const ir::ValueId v = g.find_value(name);
  EXPECT_NE(v, ir::kNoValue) << name;
  EXPECT_TRUE(g.value(v).is_constant()) << name;
  static const Tensor kNone;
  return v != ir::kNoValue && g.value(v).constant ? *g.value(v).constant : kNone;
}

TEST(ConstantFolding, FoldsArithmeticChainsInOneSweep) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[3]
  %a = const tensor<f32[3]>[1, 2, 3]
  %b = const tensor<f32[3]>[4, 5, 6]
  %two = const tensor<f32[]>[2]
  %s = add(%a, %b) @add_ab
  %p = mul(%s, %two) @mul_s2
  %n = neg(%p) @neg_p
  %y = add(%x, %n) @add_x
  graph_output(%y)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,constant-folding").is_ok());
  test::expect_golden(g, "constant_folding_arithmetic");
  // -((1+4)*2), -((2+5)*2), -((3+6)*2)
  const Tensor& n = constant_of(g, "n");
  ASSERT_EQ(n.numel(), 3);
  EXPECT_EQ(n.data<float>()[0], -10.0F);
  EXPECT_EQ(n.data<float>()[1], -14.0F);
  EXPECT_EQ(n.data<float>()[2], -18.0F);
}

TEST(ConstantFolding, IntegerDivisionTruncatesLikeTheKernelAndKeepsTheOutputName) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %a = const tensor<i32[4]>[7, -7, 7, -7]
  %b = const tensor<i32[4]>[2, 2, -2, -2]
  %q = div(%a, %b) @div_ab
  %r = neg(%q) @neg_q
  graph_output(%q, %r)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,constant-folding").is_ok());
  test::expect_golden(g, "constant_folding_int_div");
  // ONNX Div on integers truncates toward zero (C semantics), not numpy's floor division.
  const Tensor& q = constant_of(g, "q");
  ASSERT_EQ(q.dtype(), DTypeCode::kInt32);
  const std::vector<int32_t> expected = {3, -3, -3, 3};
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(q.data<int32_t>()[i], expected[i]);
  // The folded value is exactly what the runtime kernel computes.
  test::OpCall call;
  call.op = "div";
  call.inputs = {Tensor::from_vector<int32_t>({4}, {7, -7, 7, -7}),
                 Tensor::from_vector<int32_t>({4}, {2, 2, -2, -2})};
  Result<std::vector<Tensor>> run = test::run_op(call);
  ASSERT_TRUE(run.is_ok()) << run.status().to_string();
  EXPECT_TRUE((*run)[0].bitwise_equal(q));
  // Both graph outputs are still found by their names.
  ASSERT_EQ(g.outputs().size(), 2u);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "q");
  EXPECT_EQ(g.value(g.outputs()[1]).name, "r");
}

TEST(ConstantFolding, LeavesNodesTheKernelRejects) {
  // Integer division by zero is a kernel error: the node stays for the runtime to report.
  ir::Graph g = test::parse_graph(R"(graph main {
  %a = const tensor<i64[2]>[1, 2]
  %z = const tensor<i64[2]>[1, 0]
  %q = div(%a, %z) @div_0
  graph_output(%q)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,constant-folding").is_ok());
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_GE(g.find_node("div_0"), 0);
}

TEST(ConstantFolding, RespectsTheSizeLimit) {
  constexpr std::string_view kText = R"(graph main {
  %a = const tensor<f32[4]>[1, 2, 3, 4]
  %y = relu(%a) @relu_0
  graph_output(%y)
}
)";
  ir::Graph g = test::parse_graph(kText);
  PassContext ctx;
  ctx.fold_size_limit = 15;  // the output needs 16 bytes
  ASSERT_TRUE(test::run_verified(g, "shape-inference,constant-folding", ctx).is_ok());
  EXPECT_EQ(g.num_nodes(), 1u);
  ir::Graph g2 = test::parse_graph(kText);
  ctx.fold_size_limit = 16;
  ASSERT_TRUE(test::run_verified(g2, "shape-inference,constant-folding", ctx).is_ok());
  EXPECT_EQ(g2.num_nodes(), 0u);
}

TEST(ConstantFolding, NeverFoldsSideEffectOps) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %c = const tensor<f32[2]>[1, 2]
  %r = random_uniform() {shape = [2]} @rand_0
  %l = random_uniform_like(%c) @rand_like_0
  %y = add(%r, %l) @add_0
  %p = print(%c) @print_0
  graph_output(%y, %p)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,constant-folding").is_ok());
  test::expect_golden(g, "constant_folding_side_effects");
  EXPECT_EQ(g.num_nodes(), 4u);
}

TEST(ConstantFolding, FoldsTypeOnlyInputsOfNonConstants) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2,3,4]
  %r = pass_test_rank(%x) @rank_0
  %y = add(%r, %r) @add_0
  graph_output(%y)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,constant-folding").is_ok());
  test::expect_golden(g, "constant_folding_type_only");
  EXPECT_EQ(constant_of(g, "y").data<int64_t>()[0], 6);
}

TEST(ConstantFolding, ShapeSubgraphVanishes) {
  const ops::KernelDef* k = ops::KernelRegistry::global().find("shape", "cpu");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->type_only_inputs, std::vector<int>{0}) << "shape@cpu must read only input 0's type";
  ir::Graph g = test::parse_graph(test::kShapeSubgraph);
  ASSERT_TRUE(test::run_verified(g, "shape-inference,constant-folding,dce").is_ok());
  test::expect_golden(g, "constant_folding_shape_subgraph");
}

}  // namespace
}  // namespace frame::passes
