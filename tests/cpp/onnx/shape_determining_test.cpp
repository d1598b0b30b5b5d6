// Shape-determining graph inputs of imported ONNX models (ADR 0006): the import error names
// them, and a structure-only load (LoadOptions::keep_untyped) classifies every one. Expected
// lists are written by hand from each model's wiring.

#include "frame/passes/shape_determining.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frame/onnx/onnx.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

// dims (i32) -> Cast -> Concat(k * k) -> Reshape shape; w -> Shape -> Expand shape (a shape,
// not a value); k -> TopK K; x -> data only.
std::string chain_model() {
  ModelBuilder m(17);
  m.input("x", {2, 6})
      .input("dims", {1}, ::onnx::TensorProto::INT32)
      .input("k", {1}, ::onnx::TensorProto::INT64)
      .input("w", {3, 4})
      .input("v", {10})
      .output("y")
      .output("vals");
  ::onnx::AttributeProto to;
  to.set_name("to");
  to.set_type(::onnx::AttributeProto::INT);
  to.set_i(::onnx::TensorProto::INT64);
  m.add(node("Cast", {"dims"}, {"dims64"}, "cast", {to}));
  m.add(node("Mul", {"k", "k"}, {"kk"}, "mul"));
  m.add(node("Concat", {"dims64", "kk"}, {"target"}, "concat", {attr_i("axis", 0)}));
  m.add(node("Reshape", {"x", "target"}, {"r"}, "reshape"));
  m.add(node("Shape", {"w"}, {"ws"}, "shape_w"));
  m.add(node("Expand", {"r", "ws"}, {"y"}, "expand"));
  m.add(node("TopK", {"v", "k"}, {"vals", "idx"}, "topk"));
  return m.bytes();
}

TEST(OnnxShapeDetermining, ImportErrorNamesTheInputs) {
  Result<ir::Graph> g = load_from_bytes(chain_model());
  ASSERT_FALSE(g.is_ok());
  const std::string msg = g.status().message();
  EXPECT_NE(msg.find("input 1 (shape) must be a constant"), std::string::npos) << msg;
  EXPECT_NE(msg.find("hint: graph input 'dims' decides output shapes: node 'reshape' (reshape) "
                     "input 1 (shape)"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("hint: graph input 'k' decides output shapes"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'w'"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("'x'"), std::string::npos) << msg;
}

TEST(OnnxShapeDetermining, StructureOnlyLoadClassifiesEveryInput) {
  LoadOptions o;
  o.keep_untyped = true;
  Result<ir::Graph> g = load_from_bytes(chain_model(), o);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const std::vector<passes::ShapeDeterminingInput> sdi = passes::shape_determining_inputs(*g);
  ASSERT_EQ(sdi.size(), 2u);
  EXPECT_EQ(sdi[0].name, "dims");
  ASSERT_EQ(sdi[0].uses.size(), 1u);
  EXPECT_EQ(sdi[0].uses[0].node_name, "reshape");
  EXPECT_EQ(sdi[0].uses[0].input, 1u);
  EXPECT_EQ(sdi[1].name, "k");
  ASSERT_EQ(sdi[1].uses.size(), 2u);
  EXPECT_EQ(sdi[1].uses[0].node_name, "reshape");
  EXPECT_EQ(sdi[1].uses[1].node_name, "topk");
  EXPECT_EQ(sdi[1].uses[1].op, "top_k");
  EXPECT_EQ(sdi[1].uses[1].input_name, "K");
}

TEST(OnnxShapeDetermining, BoundAsConstantItIsNoLongerShapeDetermining) {
  // Binding `shape` at load time (today's only way, ADR 0006) makes the model static.
  ModelBuilder m(17);
  m.input("x", {2, 6}).input("shape", {2}, ::onnx::TensorProto::INT64).output("y");
  m.add(node("Reshape", {"x", "shape"}, {"y"}, "r"));
  LoadOptions o;
  o.constant_inputs.emplace("shape", Tensor::from_vector<int64_t>({2}, {3, 4}));
  Result<ir::Graph> g = load_from_bytes(m.bytes(), o);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_TRUE(passes::shape_determining_inputs(*g).empty());
  EXPECT_EQ(g->value(g->outputs()[0]).type->to_string(), "f32[3,4]");
}

}  // namespace
}  // namespace frame::onnx
