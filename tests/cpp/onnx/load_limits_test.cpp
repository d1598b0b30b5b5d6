// Structural limits of the ONNX loader (onnx::LoadLimits, docs/security.md): a model file over
// protobuf's 2 GiB, nesting depth, node count, attribute sizes, the sum of initializers,
// negative and overflowing dims, cycles, dangling names, duplicate outputs and wrong attribute
// kinds are each an error naming the place, never a crash or a huge allocation.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

namespace fs = std::filesystem;
using namespace frame::onnx::testing;  // NOLINT(build/namespaces)
using ::onnx::TensorProto;

::onnx::ValueInfoProto untyped(const std::string& name) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  return v;
}

// `depth` Ifs nested in each other's then-branches; the innermost returns x.
std::string nested_if_model(int depth) {
  ::onnx::GraphProto inner;
  inner.set_name("l0");
  *inner.add_node() = node("Identity", {"x"}, {"o0"});
  *inner.add_output() = untyped("o0");
  for (int d = 1; d <= depth; ++d) {
    const std::string s = std::to_string(d);
    ::onnx::GraphProto els;
    els.set_name("e" + s);
    *els.add_node() = node("Neg", {"x"}, {"n" + s});
    *els.add_output() = untyped("n" + s);
    ::onnx::GraphProto outer;
    outer.set_name("l" + s);
    *outer.add_node() = node("If", {"c"}, {"o" + s}, "if" + s,
                             {attr_g("then_branch", inner), attr_g("else_branch", els)});
    *outer.add_output() = untyped("o" + s);
    inner = outer;
  }
  ModelBuilder m(17);
  m.input("c", {}, TensorProto::BOOL).input("x", {2});
  for (const auto& n : inner.node()) m.add(n);
  m.output(inner.output(0).name());
  return m.bytes();
}

TEST(LoadLimits, DefaultsAreDocumentedValues) {
  const LoadLimits l;
  EXPECT_EQ(l.max_model_bytes, size_t{2000} << 20);
  EXPECT_EQ(l.max_tensor_bytes, size_t{4} << 30);
  EXPECT_EQ(l.max_nesting_depth, 16);
  EXPECT_EQ(l.max_nodes, size_t{1000000});
  EXPECT_EQ(l.max_attribute_elements, size_t{1} << 20);
  // 3/4 of physical memory, read independently here.
  const size_t phys =
      static_cast<size_t>(sysconf(_SC_PHYS_PAGES)) * static_cast<size_t>(sysconf(_SC_PAGE_SIZE));
  EXPECT_EQ(l.max_initializer_bytes, phys / 4 * 3);
}

TEST(LoadLimits, ModelOverTwoGigabytesAsksForExternalData) {
  // A sparse file: 2.5 GiB long, no disk used. The size is refused before it is parsed.
  const fs::path p = fs::temp_directory_path() / fmt::format("frame_huge_{}.onnx", getpid());
  {
    std::ofstream f(p, std::ios::binary);
    f << "x";
  }
  fs::resize_file(p, (size_t{5} << 29));
  expect_error(load(p.string()).status(),
               {p.string(), "2684354560 bytes", "2 GiB", "external data"});
  expect_error(open_session(p.string()).status(), {"2684354560 bytes", "external data"});
  fs::remove(p);
}

TEST(LoadLimits, NestingDepth) {
  ASSERT_TRUE(load_from_bytes(nested_if_model(4)).is_ok());
  LoadOptions o;
  o.max_nesting_depth = 3;
  expect_error(load_from_bytes(nested_if_model(4), o).status(),
               {"node 'if1' (If)", "nested deeper than 3 levels (max_nesting_depth)"});
  o.max_nesting_depth = 4;
  EXPECT_TRUE(load_from_bytes(nested_if_model(4), o).is_ok());
  // Much deeper: the message names the outermost and the innermost body, not every level
  // (8 nested Ifs, limit 3: 2 of the 8 "(If)" prefixes).
  o.max_nesting_depth = 3;
  const std::string m = load_from_bytes(nested_if_model(8), o).status().message();
  size_t prefixes = 0;
  for (size_t at = m.find("(If): "); at != std::string::npos; at = m.find("(If): ", at + 1)) {
    ++prefixes;
  }
  EXPECT_EQ(prefixes, 2U) << m;
  EXPECT_NE(m.find("nested deeper than 3 levels"), std::string::npos) << m;
}

TEST(LoadLimits, NodeCountCountsBodies) {
  LoadOptions o;
  o.max_nodes = 6;  // nested_if_model(3): 3 Ifs, 3 Negs, 1 Identity
  expect_error(load_from_bytes(nested_if_model(3), o).status(), {"more than 6 nodes (max_nodes)"});
  o.max_nodes = 7;
  EXPECT_TRUE(load_from_bytes(nested_if_model(3), o).is_ok());
}

TEST(LoadLimits, AttributeSizes) {
  ModelBuilder m(10);
  m.input("x", {2, 3}).output("y");
  m.add(node("Pad", {"x"}, {"y"}, "pad", {attr_ints("pads", {0, 1, 0, 1})}));
  LoadOptions o;
  o.max_attribute_elements = 3;
  expect_error(load_from_bytes(m.bytes(), o).status(),
               {"node 'pad' (Pad", "attribute 'pads' has 4 elements", "max_attribute_elements"});
  o.max_attribute_elements = 4;
  EXPECT_TRUE(load_from_bytes(m.bytes(), o).is_ok());
}

TEST(LoadLimits, SumOfInitializers) {
  ModelBuilder m(13);
  m.input("x", {16}).output("y");
  m.init(float_tensor("a", {16}, std::vector<float>(16, 1.0f), true));  // 64 bytes
  m.init(float_tensor("b", {16}, std::vector<float>(16, 2.0f), true));  // 64 bytes
  m.add(node("Add", {"x", "a"}, {"t"}, "add")).add(node("Mul", {"t", "b"}, {"y"}, "mul"));
  LoadOptions o;
  o.max_initializer_bytes = 100;
  expect_error(
      load_from_bytes(m.bytes(), o).status(),
      {"initializer 'b' (64 bytes)", "to 128 bytes", "limit of 100", "max_initializer_bytes"});
  expect_error(open_session_from_bytes(m.bytes(), {}, o).status(),
               {"initializer 'b' (64 bytes)", "limit of 100"});
  o.max_initializer_bytes = 128;
  EXPECT_TRUE(load_from_bytes(m.bytes(), o).is_ok());
  EXPECT_TRUE(open_session_from_bytes(m.bytes(), {}, o).is_ok());
  // A Constant node's tensor counts too.
  ModelBuilder c(13);
  c.input("x", {16}).output("y");
  c.init(float_tensor("a", {16}, std::vector<float>(16, 1.0f), true));
  c.add(node("Constant", {}, {"k"}, "k",
             {attr_t("value", float_tensor("kv", {16}, std::vector<float>(16, 3.0f)))}));
  c.add(node("Add", {"x", "a"}, {"t"}, "add")).add(node("Mul", {"t", "k"}, {"y"}, "mul"));
  o.max_initializer_bytes = 100;
  expect_error(load_from_bytes(c.bytes(), o).status(),
               {"node 'k' (Constant", "attribute 'value' (64 bytes)", "max_initializer_bytes"});
}

TEST(LoadLimits, NegativeAndOverflowingDims) {
  {
    ModelBuilder m(13);
    m.input("x", {4}).output("y");
    m.init(float_tensor("w", {-1, 4}, {}));
    m.add(node("Add", {"x", "w"}, {"y"}, "add"));
    expect_error(load_from_bytes(m.bytes()).status(), {"tensor 'w'", "bad dims"});
  }
  {
    // 2^32 x 2^32 elements: the element count overflows int64.
    ModelBuilder m(13);
    m.input("x", {4}).output("y");
    m.init(float_tensor("w", {int64_t{1} << 32, int64_t{1} << 32}, {}));
    m.add(node("Add", {"x", "w"}, {"y"}, "add"));
    expect_error(load_from_bytes(m.bytes()).status(), {"tensor 'w'", "bad dims"});
  }
  {
    ModelBuilder m(13);
    m.input("x", {int64_t{1} << 40, int64_t{1} << 40}).output("y");
    m.add(node("Relu", {"x"}, {"y"}, "relu"));
    expect_error(load_from_bytes(m.bytes()).status(), {"graph input 'x'", "shape"});
  }
  {
    ModelBuilder m(13);
    m.model.mutable_graph()->add_input()->CopyFrom(value_info("x", TensorProto::FLOAT, {2}));
    m.model.mutable_graph()
        ->mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(0)
        ->set_dim_value(-5);
    m.output("y");
    m.add(node("Relu", {"x"}, {"y"}, "relu"));
    expect_error(load_from_bytes(m.bytes()).status(), {"graph input 'x'", "dim 0"});
  }
}

// An initializer declaring 2^29 floats (2 GiB) or 2^28 int64 but holding 4 typed values is
// refused before its buffer is allocated: the peak RSS does not grow by the declared size.
TEST(LoadLimits, TypedFieldCountCheckedBeforeAllocation) {
  for (const bool f32 : {true, false}) {
    ModelBuilder m(13);
    m.input("x", {4}, f32 ? TensorProto::FLOAT : TensorProto::INT64)
        .output("y", f32 ? TensorProto::FLOAT : TensorProto::INT64);
    m.init(f32 ? float_tensor("w", {int64_t{1} << 29}, {1, 2, 3, 4})
               : int64_tensor("w", {int64_t{1} << 28}, {1, 2, 3, 4}));
    m.add(node("Add", {"x", "w"}, {"y"}, "add"));
    rusage before{}, after{};
    getrusage(RUSAGE_SELF, &before);
    expect_error(load_from_bytes(m.bytes()).status(),
                 {"tensor 'w'", f32 ? "float_data has 4 values" : "int64_data has 4 values"});
    getrusage(RUSAGE_SELF, &after);
    EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 256 * 1024);  // KiB
  }
}

TEST(LoadLimits, ConstantsBuiltFromDeclaredShapesAreChecked) {
  // EyeLike becomes a constant shaped like its input: f32[100000,100000] would be 40 GB.
  ModelBuilder m(13);
  m.input("x", {100000, 100000}).output("y");
  m.add(node("EyeLike", {"x"}, {"y"}, "eye"));
  expect_error(
      load_from_bytes(m.bytes()).status(),
      {"node 'eye' (EyeLike", "f32[100000,100000] is 40000000000 bytes", "max_tensor_bytes"});
  LoadOptions o;
  o.max_tensor_bytes = 15;  // f32[2,2] is 16 bytes
  ModelBuilder small(13);
  small.input("x", {2, 2}).output("y");
  small.add(node("EyeLike", {"x"}, {"y"}, "eye"));
  expect_error(load_from_bytes(small.bytes(), o).status(), {"16 bytes, over the limit of 15"});
  o.max_tensor_bytes = 16;
  EXPECT_TRUE(load_from_bytes(small.bytes(), o).is_ok());
}

TEST(LoadLimits, CyclesDanglingNamesAndDuplicateOutputs) {
  {
    ModelBuilder m(13);
    m.input("x", {2}).output("y");
    m.add(node("Add", {"x", "b"}, {"a"}, "first"));
    m.add(node("Relu", {"a"}, {"b"}, "second"));
    m.add(node("Relu", {"a"}, {"y"}, "out"));
    expect_error(load_from_bytes(m.bytes()).status(), {"cycle through node", "(Add)"});
  }
  {
    ModelBuilder m(13);
    m.input("x", {2}).output("y");
    m.add(node("Add", {"x", "nowhere"}, {"y"}, "add"));
    expect_error(load_from_bytes(m.bytes()).status(),
                 {"node 'add' (Add)", "input 1 'nowhere' is not produced"});
  }
  {
    ModelBuilder m(13);
    m.input("x", {2}).output("y");
    m.add(node("Relu", {"x"}, {"y"}, "one"));
    m.add(node("Neg", {"x"}, {"y"}, "two"));
    expect_error(load_from_bytes(m.bytes()).status(),
                 {"value 'y' is defined more than once", "node 'two' (Neg)"});
  }
  {
    // A node output that shadows a graph input.
    ModelBuilder m(13);
    m.input("x", {2}).output("x");
    m.add(node("Relu", {"x"}, {"x"}, "self"));
    expect_error(load_from_bytes(m.bytes()).status(), {"'x' is defined more than once"});
  }
  {
    ModelBuilder m(13);
    m.input("x", {2}).output("nowhere");
    m.add(node("Relu", {"x"}, {"y"}, "relu"));
    expect_error(load_from_bytes(m.bytes()).status(), {"graph output 'nowhere'"});
  }
}

TEST(LoadLimits, WrongAttributeKinds) {
  {
    // perm must be INTS.
    ModelBuilder m(13);
    m.input("x", {2, 3}).output("y");
    m.add(node("Transpose", {"x"}, {"y"}, "tr", {attr_floats("perm", {1.0f, 0.0f})}));
    expect_error(load_from_bytes(m.bytes()).status(), {"'tr'", "perm"});
  }
  {
    // axis must be INT.
    ModelBuilder m(13);
    m.input("x", {2, 3}).output("y");
    m.add(node("Softmax", {"x"}, {"y"}, "sm", {attr_f("axis", 1.0f)}));
    expect_error(load_from_bytes(m.bytes()).status(), {"'sm'", "axis"});
  }
  {
    // alpha must be FLOAT; a string is refused.
    ModelBuilder m(13);
    m.input("x", {2, 3}).output("y");
    ::onnx::AttributeProto a;
    a.set_name("alpha");
    a.set_type(::onnx::AttributeProto::STRING);
    a.set_s("big");
    m.add(node("LeakyRelu", {"x"}, {"y"}, "lr", {a}));
    expect_error(load_from_bytes(m.bytes()).status(), {"'lr'", "alpha"});
  }
}

}  // namespace
}  // namespace frame::onnx
