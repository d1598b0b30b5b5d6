// runtime::compile names the shape-determining graph input when a shape function rejects a
// non-constant shape input (ARCH-044, ADR 0006).

#include <gtest/gtest.h>

#include <string>

#include "frame/core/tensor.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

TEST(ShapeDeterminingHint, CompileErrorNamesTheGraphInput) {
  ir::Graph g("reshape_by_input");
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2, 6}});
  ir::ValueId shape = g.add_input("target", {DTypeCode::kInt64, {2}});
  // A typed graph as a builder would make it: the output type is claimed, not inferred.
  Result<ir::NodeId> n = g.create_node("reshape", "r", {x, shape}, 1);
  ASSERT_TRUE(n.is_ok()) << n.status().to_string();
  g.value(g.node(*n).outputs[0]).type = ir::TensorType{DTypeCode::kFloat32, {3, 4}};
  g.add_output(g.node(*n).outputs[0]);
  CompileOptions o;
  o.use_cache = false;
  Result<Executable> exe = compile(g, o);
  ASSERT_FALSE(exe.is_ok());
  const std::string msg = exe.status().message();
  EXPECT_NE(msg.find("must be a constant"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hint: graph input 'target' decides output shapes: node 'r' (reshape) input "
                     "1 (shape)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("ADR 0006"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'x'"), std::string::npos) << msg;
}

TEST(ShapeDeterminingHint, OtherErrorsAreUnchanged) {
  ir::Graph g("bad");
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2, 6}});
  ir::ValueId shape = g.add_constant("shape", Tensor::from_vector<int64_t>({2}, {5, 5}));
  Result<ir::NodeId> n = g.create_node("reshape", "r", {x, shape}, 1);
  ASSERT_TRUE(n.is_ok());
  g.value(g.node(*n).outputs[0]).type = ir::TensorType{DTypeCode::kFloat32, {5, 5}};
  g.add_output(g.node(*n).outputs[0]);
  CompileOptions o;
  o.use_cache = false;
  Result<Executable> exe = compile(g, o);
  ASSERT_FALSE(exe.is_ok());
  EXPECT_EQ(exe.status().message().find("hint:"), std::string::npos) << exe.status().message();
}

}  // namespace
}  // namespace frame::runtime
