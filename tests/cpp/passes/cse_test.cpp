// cse: merges structurally equal nodes, normalising operands of commutative ops only, never
// merging side-effect ops, keeping graph output names, and merging equal small constants.

#include <gtest/gtest.h>

#include <string_view>

#include "cpp/passes/pass_test_util.h"

namespace frame::passes {
namespace {

Status cse(ir::Graph& g) { return test::run_verified(g, "shape-inference,cse"); }

// Expects cse to leave `nodes` nodes of the text-IR graph `text`.
void expect_cse_leaves(size_t nodes, std::string_view text) {
  ir::Graph g = test::parse_graph(text);
  ASSERT_TRUE(cse(g).is_ok());
  EXPECT_EQ(g.num_nodes(), nodes);
}

TEST(Cse, MergesCommutativeSwapsButNotSub) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %a = graph_input() : f32[2]
  %b = graph_input() : f32[2]
  %s1 = add(%a, %b) @add_ab
  %s2 = add(%b, %a) @add_ba
  %d1 = sub(%a, %b) @sub_ab
  %d2 = sub(%b, %a) @sub_ba
  %m1 = mul(%s1, %d1) @mul_1
  %m2 = mul(%s2, %d2) @mul_2
  %m3 = mul(%d1, %s2) @mul_3
  %o = concat(%m1, %m2, %m3) {axis = 0} @cat
  graph_output(%o)
}
)");
  ASSERT_TRUE(cse(g).is_ok());
  // add_ba merges into add_ab; the subs stay apart; then mul_3 = mul(d1, s1) is mul_1 with
  // swapped operands and merges too, while mul_2 = mul(s1, d2) differs.
  test::expect_golden(g, "cse_commutative");
  EXPECT_EQ(g.num_nodes(), 6u);
}

TEST(Cse, MergesEqualAttrsOnlyAndKeepsTheOutputName) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2,3]
  %r1 = reduce_sum(%x) {axes = [1], keepdims = 0} @sum_a
  %r2 = reduce_sum(%x) {axes = [1], keepdims = 0} @sum_b
  %r3 = reduce_sum(%x) {axes = [0], keepdims = 0} @sum_c
  %n = neg(%r1) @neg_0
  graph_output(%n, %r2, %r3)
}
)");
  ASSERT_TRUE(cse(g).is_ok());
  // sum_b is the graph output "r2", so it survives and sum_a goes.
  test::expect_golden(g, "cse_output_name");
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.value(g.outputs()[1]).name, "r2");
}

TEST(Cse, TwoOutputNamesKeepTwoNodes) {
  expect_cse_leaves(2u, R"(graph main {
  %x = graph_input() : f32[2]
  %y1 = relu(%x) @relu_a
  %y2 = relu(%x) @relu_b
  graph_output(%y1, %y2)
}
)");
}

TEST(Cse, NeverMergesSideEffectOps) {
  expect_cse_leaves(5u, R"(graph main {
  %r1 = random_uniform() {seed = 1.0, shape = [2]} @rand_a
  %r2 = random_uniform() {seed = 1.0, shape = [2]} @rand_b
  %p1 = print(%r1) @print_a
  %p2 = print(%r1) @print_b
  %y = add(%p1, %r2) @add_0
  graph_output(%y, %p2)
}
)");
}

TEST(Cse, MergesEqualConstantsSoTheirUsersMerge) {
  ir::Graph g = test::parse_graph(R"(graph main {
  %x = graph_input() : f32[2]
  %c1 = const tensor<f32[]>[0.5]
  %c2 = const tensor<f32[]>[0.5]
  %c3 = const tensor<f64[]>[0.5]
  %y1 = mul(%x, %c1) @mul_1
  %y2 = mul(%c2, %x) @mul_2
  %z = cast(%c3) {to = 1} @cast_0
  %y3 = mul(%x, %z) @mul_3
  %s = add(%y1, %y2) @add_0
  %o = add(%s, %y3) @add_1
  graph_output(%o)
}
)");
  ASSERT_TRUE(cse(g).is_ok());
  // c2 becomes c1 (same dtype and bytes); c3 is f64 and stays.
  test::expect_golden(g, "cse_constants");
}

}  // namespace
}  // namespace frame::passes
