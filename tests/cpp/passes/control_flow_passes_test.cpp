// Passes around control-flow nodes (ADR 0006 decision 5): CSE merges identical pure If nodes but
// never one whose body holds a side-effecting (random) op; DCE removes an unused pure If and
// keeps one with effects in its body; an If with a constant condition becomes its branch.

#include <gtest/gtest.h>

#include <memory>

#include "cpp/passes/pass_test_util.h"

namespace frame::passes {
namespace {

const ir::TensorType kF32x2{DTypeCode::kFloat32, {2}};

// One branch over the captured x: relu(x), or x + random_uniform when `random`.
std::shared_ptr<const ir::Graph> branch(bool random) {
  auto b = std::make_shared<ir::Graph>(random ? "random_branch" : "pure_branch");
  const ir::ValueId x = b->add_input("x", kF32x2);
  ir::NodeId n;
  if (random) {
    const ir::NodeId r =
        b->create_node("random_uniform", "r", {}, 1, {{"shape", std::vector<int64_t>{2}}}).value();
    b->value(b->node(r).outputs[0]).type = kF32x2;
    n = b->create_node("add", "a", {x, b->node(r).outputs[0]}, 1).value();
  } else {
    n = b->create_node("relu", "a", {x}, 1).value();
  }
  b->value(b->node(n).outputs[0]).type = kF32x2;
  b->add_output(b->node(n).outputs[0]);
  return b;
}

// Two identical if nodes (cond, captured x) feeding one add; `use_second` = false leaves the
// second one unread.
ir::Graph two_ifs(bool random, bool use_second) {
  ir::Graph g;
  const ir::ValueId cond = g.add_input("cond", ir::TensorType{DTypeCode::kBool, {}});
  const ir::ValueId x = g.add_input("x", kF32x2);
  ir::AttrMap attrs = {{"then_branch", branch(random)}, {"else_branch", branch(false)}};
  const ir::NodeId a = g.create_node("if", "if_a", {cond, x}, 1, attrs).value();
  const ir::NodeId b = g.create_node("if", "if_b", {cond, x}, 1, attrs).value();
  const ir::ValueId ya = g.node(a).outputs[0];
  const ir::ValueId yb = g.node(b).outputs[0];
  const ir::NodeId s = g.create_node("add", "sum", {ya, use_second ? yb : ya}, 1).value();
  g.add_output(g.node(s).outputs[0]);
  return g;
}

int count_ifs(const ir::Graph& g) {
  int n = 0;
  for (ir::NodeId id : g.node_ids()) n += g.node(id).op == "if" ? 1 : 0;
  return n;
}

TEST(ControlFlowPasses, CseMergesPureIfsOnly) {
  ir::Graph pure = two_ifs(false, true);
  ASSERT_TRUE(test::run_verified(pure, "shape-inference,cse").is_ok());
  EXPECT_EQ(count_ifs(pure), 1);
  ir::Graph random = two_ifs(true, true);
  ASSERT_TRUE(test::run_verified(random, "shape-inference,cse").is_ok());
  EXPECT_EQ(count_ifs(random), 2);
}

TEST(ControlFlowPasses, DceKeepsAnIfWhoseBodyHasEffects) {
  ir::Graph pure = two_ifs(false, false);
  ASSERT_TRUE(test::run_verified(pure, "shape-inference,dce").is_ok());
  EXPECT_EQ(count_ifs(pure), 1);
  ir::Graph random = two_ifs(true, false);
  ASSERT_TRUE(test::run_verified(random, "shape-inference,dce").is_ok());
  EXPECT_EQ(count_ifs(random), 2);
}

TEST(ControlFlowPasses, ConstantIfDecomposesToItsBranchThenFolds) {
  // cond and x constant: folding does not run the If (its kernel declines a constant
  // condition), the decomposition inlines the then branch (ARCH-021), and folding then
  // computes relu(x) through the ordinary evaluator.
  ir::Graph g;
  const ir::ValueId cond = g.add_constant("cond", Tensor::scalar<bool>(true));
  const ir::ValueId x = g.add_constant("x", Tensor::from_vector<float>({2}, {1.5f, -1.f}));
  ir::AttrMap attrs = {{"then_branch", branch(false)}, {"else_branch", branch(true)}};
  const ir::NodeId a = g.create_node("if", "if_a", {cond, x}, 1, attrs).value();
  g.add_output(g.node(a).outputs[0]);
  ASSERT_TRUE(
      test::run_verified(g, "shape-inference,constant-folding,decomposition,constant-folding")
          .is_ok());
  EXPECT_EQ(count_ifs(g), 0);
  ASSERT_EQ(g.outputs().size(), 1u);
  const ir::Value& out = g.value(g.outputs()[0]);
  ASSERT_TRUE(out.is_constant());
  EXPECT_EQ(out.constant->data<float>()[0], 1.5f);
  EXPECT_EQ(out.constant->data<float>()[1], 0.f);
}

}  // namespace
}  // namespace frame::passes
