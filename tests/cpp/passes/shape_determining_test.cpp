// Classification of shape-determining graph inputs (ADR 0006): the expected uses are written
// by hand from each graph's wiring and the schema flags of reshape/expand/top_k.

#include "frame/passes/shape_determining.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "frame/core/tensor.h"

namespace frame {
namespace {

using passes::shape_determining_inputs;
using passes::ShapeDeterminingInput;

constexpr DTypeCode kF32 = DTypeCode::kFloat32;
constexpr DTypeCode kI64 = DTypeCode::kInt64;

// Adds node `op` with one output and returns that output.
ir::ValueId add(ir::Graph& g, std::string_view op, std::string name,
                std::vector<ir::ValueId> inputs, ir::AttrMap attrs = {}) {
  Result<ir::NodeId> n = g.create_node(op, std::move(name), std::move(inputs), 1, std::move(attrs));
  EXPECT_TRUE(n.is_ok()) << n.status().to_string();
  return n.is_ok() ? g.node(*n).outputs[0] : ir::kNoValue;
}

// "node:op:input(name)" per use, for compact comparisons.
std::vector<std::string> uses_of(const ShapeDeterminingInput& in) {
  std::vector<std::string> out;
  for (const auto& u : in.uses) {
    out.push_back(u.node_name + ":" + u.op + ":" + std::to_string(u.input) + "(" + u.input_name +
                  ")");
  }
  return out;
}

TEST(ShapeDetermining, DirectFeedIsClassifiedDataInputIsNot) {
  ir::Graph g("direct");
  ir::ValueId x = g.add_input("x", {kF32, {2, 6}});
  ir::ValueId shape = g.add_input("shape", {kI64, {2}});
  g.add_output(add(g, "reshape", "r", {x, shape}));
  const std::vector<ShapeDeterminingInput> sdi = shape_determining_inputs(g);
  ASSERT_EQ(sdi.size(), 1u);
  EXPECT_EQ(sdi[0].name, "shape");
  EXPECT_EQ(sdi[0].value, shape);
  EXPECT_EQ(uses_of(sdi[0]), std::vector<std::string>{"r:reshape:1(shape)"});
}

TEST(ShapeDetermining, ThroughCastConcatGatherMulChains) {
  ir::Graph g("chain");
  ir::ValueId x = g.add_input("x", {kF32, {2, 3, 4}});
  ir::ValueId dims = g.add_input("dims", {DTypeCode::kInt32, {3}});
  ir::ValueId scale = g.add_input("scale", {kI64, {1}});
  ir::ValueId k = g.add_input("k", {kI64, {1}});
  ir::ValueId idx = g.add_constant("idx", Tensor::from_vector<int64_t>({2}, {0, 1}));
  // dims -> cast -> gather -> concat(scale * scale) -> expand's shape.
  ir::ValueId c = add(g, "cast", "c", {dims}, {{"to", int64_t{7}}});
  ir::ValueId ga = add(g, "gather", "ga", {c, idx});
  ir::ValueId m = add(g, "mul", "m", {scale, scale});
  ir::ValueId cat = add(g, "concat", "cat", {ga, m}, {{"axis", int64_t{0}}});
  g.add_output(add(g, "expand", "e", {x, cat}));
  // k feeds top_k's K directly.
  Result<ir::NodeId> tk = g.create_node("top_k", "tk", {x, k}, 2);
  ASSERT_TRUE(tk.is_ok()) << tk.status().to_string();
  g.add_output(g.node(*tk).outputs[0]);
  const std::vector<ShapeDeterminingInput> sdi = shape_determining_inputs(g);
  ASSERT_EQ(sdi.size(), 3u);
  EXPECT_EQ(sdi[0].name, "dims");
  EXPECT_EQ(uses_of(sdi[0]), std::vector<std::string>{"e:expand:1(shape)"});
  EXPECT_EQ(sdi[1].name, "scale");
  EXPECT_EQ(uses_of(sdi[1]), std::vector<std::string>{"e:expand:1(shape)"});
  EXPECT_EQ(sdi[2].name, "k");
  EXPECT_EQ(uses_of(sdi[2]), std::vector<std::string>{"tk:top_k:1(K)"});
}

TEST(ShapeDetermining, ValuePathStopsAtShape) {
  // x -> shape -> reshape's shape input: the reshape depends on x's SHAPE, not its values.
  ir::Graph g("via_shape");
  ir::ValueId x = g.add_input("x", {kF32, {2, 6}});
  ir::ValueId y = g.add_input("y", {kF32, {12}});
  ir::ValueId s = add(g, "shape", "s", {x});
  g.add_output(add(g, "reshape", "r", {y, s}));
  EXPECT_TRUE(shape_determining_inputs(g).empty());
}

TEST(ShapeDetermining, ReachingOnlyDataPositionsIsNotShapeDetermining) {
  // `bias` flows through add into reshape's DATA input and into top_k's X: neither decides a
  // shape by its values.
  ir::Graph g("data_only");
  ir::ValueId x = g.add_input("x", {kF32, {12}});
  ir::ValueId bias = g.add_input("bias", {kF32, {12}});
  ir::ValueId shape = g.add_constant("shape", Tensor::from_vector<int64_t>({2}, {3, 4}));
  ir::ValueId sum = add(g, "add", "a", {x, bias});
  g.add_output(add(g, "reshape", "r", {sum, shape}));
  EXPECT_TRUE(shape_determining_inputs(g).empty());
  EXPECT_TRUE(passes::describe_shape_determining_inputs({}).empty());
}

TEST(ShapeDetermining, DescribeNamesInputNodeAndPosition) {
  ir::Graph g("describe");
  ir::ValueId x = g.add_input("x", {kF32, {2, 6}});
  ir::ValueId shape = g.add_input("shape", {kI64, {2}});
  g.add_output(add(g, "reshape", "r", {x, shape}));
  EXPECT_EQ(passes::describe_shape_determining_inputs(shape_determining_inputs(g)),
            std::vector<std::string>{
                "graph input 'shape' decides output shapes: node 'r' (reshape) input 1 (shape)"});
}

// A body reading one captured f32[2,3] `x` and yielding op(x).
std::shared_ptr<const ir::Graph> unary_branch(const std::string& name, std::string_view op) {
  auto b = std::make_shared<ir::Graph>(name);
  ir::ValueId x = b->add_input("x", {kF32, {2, 3}});
  b->add_output(add(*b, op, name + "_out", {x}));
  return b;
}

TEST(ShapeDetermining, IfNarrowingIsSkippedWhenAskedTo) {
  // Both branches yield f32[2,3]: narrowed, cond decides no shape; without narrowing (the
  // session's choice when the input shapes are placeholders) the marked cond counts.
  ir::Graph g("if");
  ir::ValueId c = g.add_input("c", {DTypeCode::kBool, {}});
  ir::ValueId x = g.add_input("x", {kF32, {2, 3}});
  g.add_output(add(g, "if", "branch", {c, x},
                   {{"then_branch", unary_branch("then", "neg")},
                    {"else_branch", unary_branch("else", "abs")}}));
  EXPECT_TRUE(shape_determining_inputs(g).empty());
  passes::ShapeDeterminingOptions o;
  o.narrow = false;
  const std::vector<ShapeDeterminingInput> sdi = shape_determining_inputs(g, o);
  ASSERT_EQ(sdi.size(), 1u);
  EXPECT_EQ(sdi[0].name, "c");
  EXPECT_EQ(uses_of(sdi[0]), std::vector<std::string>{"branch:if:0(cond)"});
}

TEST(ShapeDetermining, LoopConditionCountsWithATripCountThatReachesTheBody) {
  // The body reshapes by its iteration number, so M is shape-determining through the body;
  // cond decides which iteration numbers the body sees, so it counts too. The loop has no
  // scan outputs (its own narrowing would drop both) and v0 is data.
  auto body = std::make_shared<ir::Graph>("body");
  ir::ValueId i = body->add_input("i", {kI64, {}});
  ir::ValueId cin = body->add_input("c_in", {DTypeCode::kBool, {}});
  ir::ValueId v = body->add_input("v", {kF32, {6}});
  add(*body, "reshape", "by_i", {v, i});
  body->add_output(cin);
  body->add_output(v);
  ir::Graph g("loop");
  ir::ValueId m = g.add_input("M", {kI64, {}});
  ir::ValueId cond = g.add_input("cond", {DTypeCode::kBool, {}});
  ir::ValueId v0 = g.add_input("v0", {kF32, {6}});
  g.add_output(
      add(g, "loop", "l", {m, cond, v0}, {{"body", std::shared_ptr<const ir::Graph>(body)}}));
  const std::vector<ShapeDeterminingInput> sdi = shape_determining_inputs(g);
  ASSERT_EQ(sdi.size(), 2u);
  EXPECT_EQ(sdi[0].name, "M");
  EXPECT_EQ(uses_of(sdi[0]), std::vector<std::string>{"l:loop:0(M)"});
  EXPECT_EQ(sdi[1].name, "cond");
  EXPECT_EQ(uses_of(sdi[1]), std::vector<std::string>{"l:loop:1(cond)"});
}

}  // namespace
}  // namespace frame
