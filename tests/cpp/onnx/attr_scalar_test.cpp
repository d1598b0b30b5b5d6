// Float attributes that become constants of an integer input dtype (Shrink, ThresholdedRelu,
// Clip-6, Pad-2 value): a value the dtype cannot hold is an import error naming the node and
// attribute, not an undefined cast (found by the onnx_load fuzz smoke:
// tests/fuzz/regressions/onnx_load/shrink_int_bias_out_of_range.onnx).

#include <gtest/gtest.h>

#include <limits>

#include "frame/onnx/onnx.h"
#include "frame/runtime/compile.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace frame::onnx::testing;  // NOLINT(build/namespaces)
using ::onnx::TensorProto;

Result<ir::Graph> shrink_i32(float bias, float lambd) {
  ModelBuilder m(13);
  m.input("x", {4}, TensorProto::INT32).output("y", TensorProto::INT32);
  m.add(node("Shrink", {"x"}, {"y"}, "shrink", {attr_f("bias", bias), attr_f("lambd", lambd)}));
  return load_from_bytes(m.bytes());
}

TEST(OnnxAttrScalar, OutOfRangeBiasOfAnIntegerInputIsAnError) {
  Result<ir::Graph> g = shrink_i32(-1.0e34F, 1.5F);
  ASSERT_FALSE(g.is_ok());
  const std::string msg = g.status().message();
  EXPECT_NE(msg.find("shrink"), std::string::npos) << msg;
  EXPECT_NE(msg.find("attribute 'bias'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("does not fit the input dtype i32"), std::string::npos) << msg;
}

TEST(OnnxAttrScalar, NanLambdOfAnIntegerInputIsAnError) {
  Result<ir::Graph> g = shrink_i32(0.0F, std::numeric_limits<float>::quiet_NaN());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("attribute 'lambd'"), std::string::npos)
      << g.status().message();
}

// In range: Shrink(x; lambd = 1.5, bias = 2) on int32 -> x < -1 ? x + 2 : (x > 1 ? x - 2 : 0),
// the ONNX definition with the attributes converted to the input dtype (1.5 -> 1).
TEST(OnnxAttrScalar, InRangeAttributesOfAnIntegerInputImportAndRun) {
  Result<ir::Graph> g = shrink_i32(2.0F, 1.5F);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  runtime::CompileOptions co;
  co.backends = {"cpu"};
  Result<runtime::Executable> exe = runtime::compile(*g, co);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  Result<runtime::TensorMap> out =
      exe->run({{"x", Tensor::from_vector<int32_t>({4}, {-5, -1, 1, 7})}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const int32_t* y = out->at("y").data<int32_t>();
  EXPECT_EQ(y[0], -3);
  EXPECT_EQ(y[1], 0);
  EXPECT_EQ(y[2], 0);
  EXPECT_EQ(y[3], 5);
}

}  // namespace
}  // namespace frame::onnx
