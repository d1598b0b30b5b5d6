// shape-inference: types of every node output, error messages, value propagation through
// evaluable nodes so shape inputs computed from shapes are static (ARCH-044).

#include <gtest/gtest.h>

#include "cpp/passes/pass_test_util.h"
#include "frame/ops/kernel_registry.h"

namespace frame::passes {
namespace {

TEST(ShapeInference, GoldenTypesEveryOutput) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2,3]
  %b = const tensor<f32[3]>[1, 2, 3]
  %y = add(%x, %b) @add_0
  %r = relu(%y) @relu_0
  %m = reduce_mean(%r) {axes = [1], keepdims = 0} @mean_0
  %c = greater(%m, %m) @cmp_0
  graph_output(%m, %c)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference").is_ok());
  test::expect_golden(g, "shape_inference_basic");
}

TEST(ShapeInference, BroadcastErrorNamesNodeOpInputAndDims) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2,3]
  %w = graph_input() : f32[4]
  %y = add(%x, %w) @add_0
  graph_output(%y)
}
)");
  Status s = test::run_verified(g, "shape-inference");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  const std::string& m = s.message();
  EXPECT_NE(m.find("node 'add_0' (add)"), std::string::npos) << m;
  // The node prefix appears once, not once per layer.
  EXPECT_EQ(m.find("node 'add_0'"), m.rfind("node 'add_0'")) << m;
  EXPECT_NE(m.find("[2,3]"), std::string::npos) << m;
  EXPECT_NE(m.find("[4]"), std::string::npos) << m;
}

TEST(ShapeInference, UntypedInputIsAnError) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input()
  %y = relu(%x) @r
  graph_output(%y)
}
)");
  PassContext ctx;
  Status s = run_pipeline(g, "shape-inference", ctx);
  EXPECT_EQ(s.message(), "pass 'shape-inference': node 'r' (relu): input 0 ('x') has no type");
}

TEST(ShapeInference, DtypeMismatchIsReported) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2]
  %i = graph_input() : i64[2]
  %y = add(%x, %i) @a
  graph_output(%y)
}
)");
  Status s = test::run_verified(g, "shape-inference");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("node 'a' (add): input 1"), std::string::npos) << s.message();
}

TEST(ShapeInference, PropagatesShapeSubgraphValues) {
  const ops::KernelDef* k = ops::KernelRegistry::global().find("shape", "cpu");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->type_only_inputs, std::vector<int>{0}) << "shape@cpu must read only input 0's type";
  ir::Graph g = test::parse_graph(test::kShapeSubgraph);
  ASSERT_TRUE(test::run_verified(g, "shape-inference").is_ok());
  const ir::Value& y = g.value(g.find_value("y"));
  ASSERT_TRUE(y.type.has_value());
  EXPECT_EQ(y.type->shape, (Shape{2, 12}));
  // Shape inference changes nothing but types: the sub-graph is still there.
  EXPECT_EQ(g.num_nodes(), 4u);
}

}  // namespace
}  // namespace frame::passes
