// TensorType printing, attr type names, attr_equal / attr_hash.

#include "frame/ir/types.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frame/ir/graph.h"

namespace frame::ir {
namespace {

TEST(TensorType, ToString) {
  EXPECT_EQ((TensorType{DTypeCode::kFloat32, {1, 3, 224, 224}}.to_string()), "f32[1,3,224,224]");
  EXPECT_EQ((TensorType{DTypeCode::kInt64, {}}.to_string()), "i64[]");
  EXPECT_EQ((TensorType{DTypeCode::kBFloat16, {0}}.to_string()), "bf16[0]");
  EXPECT_EQ((TensorType{DTypeCode::kBool, {2, 1}}.to_string()), "bool[2,1]");
}

TEST(AttrType, NamesAndIndices) {
  EXPECT_EQ(attr_type_name(AttrType::kInt), "int");
  EXPECT_EQ(attr_type_name(AttrType::kFloat), "float");
  EXPECT_EQ(attr_type_name(AttrType::kString), "string");
  EXPECT_EQ(attr_type_name(AttrType::kInts), "ints");
  EXPECT_EQ(attr_type_name(AttrType::kFloats), "floats");
  EXPECT_EQ(attr_type_name(AttrType::kStrings), "strings");
  EXPECT_EQ(attr_type_name(AttrType::kTensor), "tensor");
  EXPECT_EQ(attr_type_name(AttrType::kGraph), "graph");
  EXPECT_EQ(attr_type_of(AttrValue(std::vector<double>{1.0})), AttrType::kFloats);
}

void expect_equal(const AttrValue& a, const AttrValue& b) {
  EXPECT_TRUE(attr_equal(a, b));
  EXPECT_EQ(attr_hash(a), attr_hash(b));
}

TEST(AttrEqual, ScalarsAndLists) {
  expect_equal(int64_t{3}, int64_t{3});
  EXPECT_FALSE(attr_equal(int64_t{3}, int64_t{4}));
  EXPECT_FALSE(attr_equal(int64_t{1}, 1.0));  // different kinds never compare equal
  expect_equal(0.5, 0.5);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  expect_equal(nan, -nan);              // NaN attributes are interchangeable for CSE
  EXPECT_FALSE(attr_equal(0.0, -0.0));  // 1/x tells them apart
  expect_equal(std::string("a"), std::string("a"));
  expect_equal(std::vector<int64_t>{1, 2}, std::vector<int64_t>{1, 2});
  EXPECT_FALSE(attr_equal(std::vector<int64_t>{1, 2}, std::vector<int64_t>{1}));
  expect_equal(std::vector<double>{1.0, nan}, std::vector<double>{1.0, nan});
  expect_equal(std::vector<std::string>{"x"}, std::vector<std::string>{"x"});
}

TEST(AttrEqual, TensorsBytewise) {
  Tensor a = Tensor::from_vector<float>({2}, {1.0F, 2.0F});
  Tensor b = Tensor::from_vector<float>({2}, {1.0F, 2.0F});
  Tensor c = Tensor::from_vector<float>({2}, {1.0F, 3.0F});
  Tensor d = Tensor::from_vector<int32_t>({2}, {1, 2});
  expect_equal(a, b);
  EXPECT_FALSE(attr_equal(a, c));
  EXPECT_FALSE(attr_equal(a, d));
}

TEST(AttrEqual, GraphsByText) {
  auto make = [](std::string_view op) {
    auto g = std::make_shared<Graph>("body");
    ValueId x = g->add_input("x", TensorType{DTypeCode::kFloat32, {1}});
    NodeId n = *g->create_node(op, "n", {x}, 1);
    g->add_output(g->node(n).outputs[0]);
    return std::shared_ptr<const Graph>(g);
  };
  expect_equal(make("relu"), make("relu"));
  EXPECT_FALSE(attr_equal(make("relu"), make("neg")));
}

}  // namespace
}  // namespace frame::ir
