// operator-fusion: golden text IR before/after, the sharing and shape rules, and the
// preferred-backend condition.

#include <gtest/gtest.h>

#include "cpp/passes/fusion_test_util.h"
#include "frame/ir/text.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"

namespace frame::passes {
namespace {

using ir::TensorType;
constexpr DTypeCode kF32 = DTypeCode::kFloat32;

using test::add_node;

Status run_fusion(ir::Graph& g, std::vector<std::string> backends = {"cpu"}) {
  PassContext ctx;
  ctx.backends = std::move(backends);
  Result<std::unique_ptr<Pass>> p = make_pass("operator-fusion");
  if (!p.is_ok()) return p.status();
  FRAME_RETURN_IF_ERROR((*p)->run(g, ctx));
  const ir::OpQuery q = ops::make_op_query();
  return g.verify(q);
}

// x + b -> sigmoid -> x * sigmoid -> relu: one group, inputs broadcast ([3] against [2,3]).
ir::Graph swish_graph() {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", TensorType{kF32, {2, 3}});
  ir::ValueId b = g.add_input("b", TensorType{kF32, {3}});
  ir::ValueId a = add_node(g, "add", "a", {x, b});
  ir::ValueId s = add_node(g, "sigmoid", "s", {a});
  ir::ValueId m = add_node(g, "mul", "m", {a, s});
  ir::ValueId o = add_node(g, "relu", "o", {m});
  g.add_output(o);
  EXPECT_TRUE(test::infer_types(g).is_ok());
  return g;
}

TEST(FusionGolden, ChainWithDiamondBecomesOneNode) {
  ir::Graph g = swish_graph();
  EXPECT_EQ(ir::print_text(g),
            "graph main {\n"
            "  %x = graph_input() : f32[2,3]\n"
            "  %b = graph_input() : f32[3]\n"
            "  %a = add(%x, %b) : f32[2,3] @a\n"
            "  %s = sigmoid(%a) : f32[2,3] @s\n"
            "  %m = mul(%a, %s) : f32[2,3] @m\n"
            "  %o = relu(%m) : f32[2,3] @o\n"
            "  graph_output(%o)\n"
            "}\n");
  ASSERT_TRUE(run_fusion(g).is_ok());
  EXPECT_EQ(ir::print_text(g),
            "graph main {\n"
            "  %x = graph_input() : f32[2,3]\n"
            "  %b = graph_input() : f32[3]\n"
            "  %o = fused_elementwise_internal(%x, %b) {body = graph o_body {\n"
            "    %in0 = graph_input() : f32[2,3]\n"
            "    %in1 = graph_input() : f32[3]\n"
            "    %a = add(%in0, %in1) : f32[2,3] @a\n"
            "    %s = sigmoid(%a) : f32[2,3] @s\n"
            "    %m = mul(%a, %s) : f32[2,3] @m\n"
            "    %o = relu(%m) : f32[2,3] @o\n"
            "    graph_output(%o)\n"
            "  }} : f32[2,3] @fused_o\n"
            "  graph_output(%o)\n"
            "}\n");
}

TEST(FusionGolden, ValueUsedOutsideTheGroupEndsAGroup) {
  ir::Graph g = swish_graph();
  g.add_output(g.find_value("a"));  // `a` is now read outside: it cannot be swallowed
  ASSERT_TRUE(run_fusion(g).is_ok());
  EXPECT_EQ(ir::print_text(g),
            "graph main {\n"
            "  %x = graph_input() : f32[2,3]\n"
            "  %b = graph_input() : f32[3]\n"
            "  %a = add(%x, %b) : f32[2,3] @a\n"
            "  %o = fused_elementwise_internal(%a) {body = graph o_body {\n"
            "    %in0 = graph_input() : f32[2,3]\n"
            "    %s = sigmoid(%in0) : f32[2,3] @s\n"
            "    %m = mul(%in0, %s) : f32[2,3] @m\n"
            "    %o = relu(%m) : f32[2,3] @o\n"
            "    graph_output(%o)\n"
            "  }} : f32[2,3] @fused_o\n"
            "  graph_output(%o, %a)\n"
            "}\n");
}

TEST(FusionGolden, SmallerOutputShapeIsNotFusedIntoABroadcastingConsumer) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", TensorType{kF32, {2, 3}});
  ir::ValueId b = g.add_input("b", TensorType{kF32, {3}});
  ir::ValueId e = add_node(g, "exp", "e", {b});     // f32[3]
  ir::ValueId n = add_node(g, "neg", "n", {e});     // f32[3]
  ir::ValueId a = add_node(g, "add", "a", {x, n});  // f32[2,3]
  ir::ValueId t = add_node(g, "tanh", "t", {a});    // f32[2,3]
  g.add_output(t);
  ASSERT_TRUE(test::infer_types(g).is_ok());
  ASSERT_TRUE(run_fusion(g).is_ok());
  // Two groups: {exp, neg} at f32[3] and {add, tanh} at f32[2,3].
  EXPECT_EQ(ir::print_text(g),
            "graph main {\n"
            "  %x = graph_input() : f32[2,3]\n"
            "  %b = graph_input() : f32[3]\n"
            "  %n = fused_elementwise_internal(%b) {body = graph n_body {\n"
            "    %in0 = graph_input() : f32[3]\n"
            "    %e = exp(%in0) : f32[3] @e\n"
            "    %n = neg(%e) : f32[3] @n\n"
            "    graph_output(%n)\n"
            "  }} : f32[3] @fused_n\n"
            "  %t = fused_elementwise_internal(%x, %n) {body = graph t_body {\n"
            "    %in0 = graph_input() : f32[2,3]\n"
            "    %in1 = graph_input() : f32[3]\n"
            "    %a = add(%in0, %in1) : f32[2,3] @a\n"
            "    %t = tanh(%a) : f32[2,3] @t\n"
            "    graph_output(%t)\n"
            "  }} : f32[2,3] @fused_t\n"
            "  graph_output(%t)\n"
            "}\n");
}

TEST(FusionGolden, NonFusableNodeSplitsGroupsAndSingletonsStay) {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", TensorType{kF32, {2, 2}});
  ir::ValueId r = add_node(g, "relu", "r", {x});
  ir::ValueId mm = add_node(g, "matmul", "mm", {r, r});
  ir::ValueId s = add_node(g, "sigmoid", "s", {mm});
  g.add_output(s);
  ASSERT_TRUE(test::infer_types(g).is_ok());
  const std::string before = ir::print_text(g);
  ASSERT_TRUE(run_fusion(g).is_ok());
  EXPECT_EQ(ir::print_text(g), before);
}

TEST(FusionGolden, BackendWithoutFusedKernelFusesNothing) {
  ir::Graph g = swish_graph();
  const std::string before = ir::print_text(g);
  ASSERT_TRUE(run_fusion(g, {"no_such_backend", "cpu"}).is_ok());
  EXPECT_EQ(ir::print_text(g), before);
}

TEST(FusionGolden, FusedNodeShapeInferenceRunsTheBody) {
  ir::Graph g = swish_graph();
  ASSERT_TRUE(run_fusion(g).is_ok());
  const ir::NodeId f = g.find_node("fused_o");
  ASSERT_GE(f, 0);
  const ops::OpSchema* s = ops::OpRegistry::global().find("fused_elementwise_internal");
  ASSERT_NE(s, nullptr);
  auto types = s->infer(ops::make_node_context(g, g.node(f), s));
  ASSERT_TRUE(types.is_ok()) << types.status().to_string();
  EXPECT_EQ((*types)[0].to_string(), "f32[2,3]");
}

}  // namespace
}  // namespace frame::passes
