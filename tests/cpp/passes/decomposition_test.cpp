// decomposition: composites are inlined when the first preferred backend has no kernel for
// them (or when forced), recursively, with output names kept and the result verified.

#include <gtest/gtest.h>

#include <cmath>

#include "cpp/passes/pass_test_util.h"
#include "frame/ops/op_schema.h"

namespace frame::passes {
namespace {

Result<std::vector<ir::TensorType>> same_type(const ops::NodeContext& ctx) {
  return std::vector<ir::TensorType>{ctx.input_types[0]};
}

// Micro-graph `op(relu(in0))` with every type set.
Result<ir::Graph> relu_then(const ops::NodeContext& ctx, std::string_view op) {
  ir::Graph m("micro");
  const ir::ValueId in = m.add_input("in0", ctx.input_types[0]);
  FRAME_ASSIGN_OR_RETURN(ir::NodeId r, m.create_node("relu", "relu", {in}, 1));
  m.value(m.node(r).outputs[0]).type = ctx.input_types[0];
  FRAME_ASSIGN_OR_RETURN(ir::NodeId o, m.create_node(op, "inner", {m.node(r).outputs[0]}, 1));
  m.value(m.node(o).outputs[0]).type = ctx.input_types[0];
  m.add_output(m.node(o).outputs[0]);
  return m;
}
Result<ir::Graph> decompose_nested(const ops::NodeContext& ctx) { return relu_then(ctx, "gelu"); }
Result<ir::Graph> decompose_loop(const ops::NodeContext& ctx) {
  return relu_then(ctx, "pass_test_loop");
}

// The signature both test composites share: x -> y of the same float type.
void float_x_to_y(ops::OpSchemaBuilder& b) {
  b.input("x", "input", kFloatDTypes, "T")
      .output("y", "output", kFloatDTypes, "T")
      .shape_infer(same_type);
}

// Test-only composites: one containing a composite (gelu), one containing itself.
FRAME_REGISTER_OP(pass_test_nested)
    .doc("test only: gelu(relu(x))")
    .with(float_x_to_y)
    .decomposition(decompose_nested);
FRAME_REGISTER_OP(pass_test_loop)
    .doc("test only: decomposes into itself")
    .with(float_x_to_y)
    .decomposition(decompose_loop);

PassContext on_backend(std::string backend) {
  PassContext ctx;
  ctx.backends = {std::move(backend), "cpu"};
  return ctx;
}

// No backend is named test_backend, so it has no kernel for any composite: each is expanded.
Status decompose_for_test_backend(ir::Graph& g) {
  return test::run_verified(g, "shape-inference,decomposition", on_backend("test_backend"));
}

constexpr std::string_view kGelu = R"(graph main {
  %x = graph_input() : f32[2,3]
  %y = gelu(%x) @gelu_0
  %z = relu(%y) @relu_0
  graph_output(%z, %y)
}
)";

TEST(Decomposition, ExpandsGeluWhenThePreferredBackendLacksIt) {
  ir::Graph g = test::parse_graph(kGelu);
  ASSERT_TRUE(decompose_for_test_backend(g).is_ok());
  test::expect_golden(g, "decomposition_gelu");
  test::expect_verifies(g);
  EXPECT_LT(g.find_node("gelu_0"), 0);
  EXPECT_EQ(g.value(g.outputs()[1]).name, "y");
}

TEST(Decomposition, KeepsOpsThePreferredBackendRuns) {
  ir::Graph g = test::parse_graph(kGelu);
  ASSERT_TRUE(test::run_verified(g, "shape-inference,decomposition", on_backend("cpu")).is_ok());
  EXPECT_GE(g.find_node("gelu_0"), 0);
  EXPECT_EQ(g.num_nodes(), 2u);
}

TEST(Decomposition, ForceExpandsEvenOnCpu) {
  ir::Graph g = test::parse_graph(kGelu);
  PassContext ctx = on_backend("cpu");
  ctx.force_decompose = true;
  ASSERT_TRUE(test::run_verified(g, "shape-inference,decomposition", ctx).is_ok());
  EXPECT_LT(g.find_node("gelu_0"), 0);
}

TEST(Decomposition, ExpandsLayerNormalization) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2,4]
  %scale = const tensor<f32[4]>[1, 2, 3, 4]
  %bias = const tensor<f32[4]>[0, 0, 1, 1]
  %y = layer_normalization(%x, %scale, %bias) {epsilon = 0.001} @ln
  graph_output(%y)
}
)");
  ASSERT_TRUE(decompose_for_test_backend(g).is_ok());
  test::expect_golden(g, "decomposition_layer_norm");
  test::expect_verifies(g);
}

// The inlined micro-graph computes gelu: evaluate it by folding a constant input and compare
// with 0.5 x (1 + erf(x / sqrt 2)) computed here in double.
TEST(Decomposition, InlinedGeluComputesGelu) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = const tensor<f32[4]>[-1, 0, 1, 2]
  %y = gelu(%x) @gelu_0
  graph_output(%y)
}
)");
  PassContext ctx = on_backend("test_backend");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,decomposition,constant-folding", ctx).is_ok());
  EXPECT_EQ(g.num_nodes(), 0u);
  const ir::Value& y = g.value(g.outputs()[0]);
  EXPECT_EQ(y.name, "y");
  ASSERT_TRUE(y.constant.has_value());
  const float xs[] = {-1.0F, 0.0F, 1.0F, 2.0F};
  for (int i = 0; i < 4; ++i) {
    const double x = xs[i];
    const double want = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    EXPECT_NEAR(y.constant->data<float>()[i], want, 1e-6) << i;
  }
}

TEST(Decomposition, ExpandsRecursively) {
  ir::Graph g = test::one_op_graph("pass_test_nested", "nested", "f32[3]");
  ASSERT_TRUE(decompose_for_test_backend(g).is_ok());
  // nested -> relu + gelu, and gelu -> its erf form: no composite is left.
  test::expect_golden(g, "decomposition_nested");
}

TEST(Decomposition, StopsAtTheDepthLimit) {
  ir::Graph g = test::one_op_graph("pass_test_loop", "loop", "f32[3]");
  ASSERT_TRUE(decompose_for_test_backend(g).is_ok());
  // Eight expansions each add a relu; the ninth-level composite stays as a node.
  size_t loops = 0;
  size_t relus = 0;
  for (ir::NodeId id : g.node_ids()) {
    loops += g.node(id).op == "pass_test_loop" ? 1 : 0;
    relus += g.node(id).op == "relu" ? 1 : 0;
  }
  EXPECT_EQ(loops, 1u);
  EXPECT_EQ(relus, 8u);
  EXPECT_EQ(g.value(g.outputs()[0]).name, "y");
}

}  // namespace
}  // namespace frame::passes
