// ir::Graph::bind_input: a graph input becomes a constant with the given value (ADR 0006:
// sessions bind shape-determining inputs per run).

#include <gtest/gtest.h>

#include <string>

#include "frame/ir/graph.h"

namespace frame::ir {
namespace {

TEST(BindInput, InputBecomesAConstant) {
  Graph g("g");
  const ValueId x = g.add_input("x", {DTypeCode::kFloat32, {2}});
  const ValueId s = g.add_input("s", {DTypeCode::kInt64, {2}});
  const Tensor value = Tensor::from_vector<int64_t>({2}, {1, 2});
  ASSERT_TRUE(g.bind_input(s, value).is_ok());
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0], x);
  EXPECT_FALSE(g.value(s).is_graph_input);
  ASSERT_TRUE(g.value(s).is_constant());
  EXPECT_EQ(g.value(s).constant->raw_data(), value.raw_data());  // shared, not copied
  EXPECT_EQ(g.find_value("s"), s);
}

TEST(BindInput, ErrorsNameTheInput) {
  Graph g("g");
  const ValueId s = g.add_input("s", {DTypeCode::kInt64, {2}});
  Status st = g.bind_input(s, Tensor::from_vector<int64_t>({3}, {1, 2, 3}));
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("graph input 's': the bound value is i64[3], the input is i64[2]"),
            std::string::npos)
      << st.message();
  const ValueId c = g.add_constant("c", Tensor::scalar<float>(1.0f));
  EXPECT_FALSE(g.bind_input(c, Tensor::scalar<float>(2.0f)).is_ok());
  EXPECT_EQ(g.inputs().size(), 1u);
}

}  // namespace
}  // namespace frame::ir
