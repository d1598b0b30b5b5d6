// dce: removes what no graph output needs, keeps side-effect nodes (and their inputs) in their
// order, and compacts the graph.

#include <gtest/gtest.h>

#include "cpp/passes/pass_test_util.h"

namespace frame::passes {
namespace {

TEST(Dce, KeepsSideEffectsInOrderAndRemovesTheRest) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2]
  %unused = const tensor<f32[2]>[1, 2]
  %a = relu(%x) @a
  %dead1 = neg(%a) @dead1
  %p1 = print(%a) @print_1
  %dead2 = exp(%dead1) @dead2
  %b = abs(%x) @b
  %p2 = print(%b) @print_2
  %dead3 = add(%p2, %unused) @dead3
  %y = sigmoid(%x) @y_node
  graph_output(%y)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,dce").is_ok());
  test::expect_golden(g, "dce_side_effects");
  EXPECT_EQ(g.num_nodes(), 5u);
  // Compacted: ids are dense, no dead slots remain.
  EXPECT_EQ(g.num_node_slots(), g.num_nodes());
  EXPECT_LT(g.find_node("print_1"), g.find_node("print_2"));
  EXPECT_EQ(g.find_value("unused"), ir::kNoValue);
}

TEST(Dce, EmptiesAGraphWhoseOutputIsAnInput) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2]
  %a = relu(%x) @a
  graph_output(%x)
}
)");
  ASSERT_TRUE(test::run_verified(g, "shape-inference,dce").is_ok());
  EXPECT_EQ(g.num_nodes(), 0u);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.outputs(), g.inputs());
}

}  // namespace
}  // namespace frame::passes
