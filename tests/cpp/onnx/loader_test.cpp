// ONNX loader: the bundled model, opset conversions, constants, dynamic dims, and bad input
// (truncated files, random bytes, unsupported ops, cycles). Expected values are hand-computed.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "frame/onnx/onnx.h"
#include "frame/ops/op_registry.h"
#include "frame/runtime/compile.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace frame::onnx::testing;  // NOLINT(build/namespaces)
using ::onnx::TensorProto;

std::string source_dir() {
  const char* env = std::getenv("FRAME_SOURCE_DIR");
  return env != nullptr ? env : FRAME_SOURCE_DIR;
}

std::string read_all(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

int count_op(const ir::Graph& g, std::string_view op) {
  int n = 0;
  for (ir::NodeId id : g.node_ids()) n += g.node(id).op == op ? 1 : 0;
  return n;
}

const ir::Node* first_node(const ir::Graph& g, std::string_view op) {
  for (ir::NodeId id : g.node_ids()) {
    if (g.node(id).op == op) return &g.node(id);
  }
  return nullptr;
}

// Runs a one-input float model on cpu and returns output 0 as doubles.
std::vector<double> run_float(const ir::Graph& g, const std::string& in_name, const Shape& shape,
                              const std::vector<float>& x) {
  runtime::CompileOptions co;
  co.backends = {"cpu"};
  Result<runtime::Executable> exe = runtime::compile(g, co);
  EXPECT_TRUE(exe.is_ok()) << exe.status().message();
  if (!exe.is_ok()) return {};
  Result<runtime::TensorMap> out = exe->run({{in_name, Tensor::from_vector<float>(shape, x)}});
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  if (!out.is_ok()) return {};
  const Tensor& t = out->at(exe->output_signature()[0].first);
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

TEST(OnnxLoader, BundledModelStructure) {
  Result<ir::Graph> g = load(source_dir() + "/models/small_cnn.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  ASSERT_EQ(g->inputs().size(), 1u);
  const ir::Value& in = g->value(g->inputs()[0]);
  EXPECT_EQ(in.name, "input");
  EXPECT_EQ(in.type->to_string(), "f32[1,3,32,32]");
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->value(g->outputs()[0]).name, "probs");
  EXPECT_EQ(g->value(g->outputs()[0]).type->to_string(), "f32[1,10]");
  EXPECT_EQ(count_op(*g, "conv"), 2);
  EXPECT_EQ(count_op(*g, "relu"), 2);
  EXPECT_EQ(count_op(*g, "gemm"), 1);
  EXPECT_EQ(count_op(*g, "softmax"), 1);
  EXPECT_EQ(g->num_nodes(), 10u);
  const ir::Node* conv = first_node(*g, "conv");
  ASSERT_NE(conv, nullptr);
  EXPECT_TRUE(g->value(conv->inputs[1]).is_constant());
  EXPECT_EQ(g->value(conv->inputs[1]).type->to_string(), "f32[8,3,3,3]");
  EXPECT_TRUE(g->verify(ops::make_op_query()).is_ok());
}

TEST(OnnxLoader, MissingFileIsIoError) {
  Result<ir::Graph> g = load("/nonexistent/model.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kIo);
  EXPECT_NE(g.status().message().find("/nonexistent/model.onnx"), std::string::npos);
}

TEST(OnnxLoader, TruncatedFilesNeverCrash) {
  const std::string bytes = read_all(source_dir() + "/models/small_cnn.onnx");
  ASSERT_GT(bytes.size(), 1000u);
  int failures = 0;
  int tries = 0;
  for (size_t len = 0; len < bytes.size(); len += 37) {
    ++tries;
    Result<ir::Graph> g = load_from_bytes(std::string_view(bytes).substr(0, len));
    failures += g.is_ok() ? 0 : 1;
  }
  // A cut that lands on a field boundary can still parse; nearly every cut must fail.
  EXPECT_GE(failures, tries * 9 / 10);
  Result<ir::Graph> half = load_from_bytes(std::string_view(bytes).substr(0, bytes.size() / 2));
  ASSERT_FALSE(half.is_ok());
}

TEST(OnnxLoader, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  for (int i = 0; i < 300; ++i) {
    std::string b(static_cast<size_t>(rng() % 2048), '\0');
    for (char& c : b) c = static_cast<char>(rng());
    Result<ir::Graph> g = load_from_bytes(b);
    EXPECT_FALSE(g.is_ok());
  }
}

TEST(OnnxLoader, MutatedModelsNeverCrash) {
  const std::string bytes = read_all(source_dir() + "/models/small_cnn.onnx");
  std::mt19937 rng(11);
  for (int i = 0; i < 200; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 4; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    (void)load_from_bytes(b);  // any Status is fine; it must not crash
  }
}

TEST(OnnxLoader, UnsupportedOpsAreAllListed) {
  ModelBuilder m(13);
  m.input("x", {2}).output("z");
  m.add(node("FancyOp", {"x"}, {"a"}, "fancy1"));
  m.add(node("Relu", {"a"}, {"b"}, "relu"));
  m.add(node("Custom", {"b"}, {"c"}, "custom1", {}, "com.example"));
  m.add(node("FancyOp", {"c"}, {"z"}, "fancy2"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  const std::string msg = g.status().message();
  EXPECT_NE(msg.find("3 node(s)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ai.onnx::FancyOp (opset 13) at node 'fancy1'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("at node 'fancy2'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("com.example::Custom"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("Relu"), std::string::npos) << msg;
}

TEST(OnnxLoader, FutureOpsetIsRefused) {
  ModelBuilder m(max_supported_opset() + 1);
  m.input("x", {2}).output("y");
  m.add(node("Relu", {"x"}, {"y"}, "relu"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(g.status().message().find("opset"), std::string::npos);
}

TEST(OnnxLoader, CyclicGraphIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2}).output("y");
  m.add(node("Add", {"x", "y"}, {"a"}, "add"));
  m.add(node("Relu", {"a"}, {"y"}, "relu"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("cycle"), std::string::npos) << g.status().message();
}

TEST(OnnxLoader, DanglingInputIsAnError) {
  ModelBuilder m(13);
  m.input("x", {2}).output("y");
  m.add(node("Add", {"x", "nowhere"}, {"y"}, "add"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("'nowhere'"), std::string::npos) << g.status().message();
}

TEST(OnnxLoader, DynamicDimsNeedShapes) {
  ModelBuilder m(13);
  m.input("x", {-1, 3}).output("y");
  m.add(node("Relu", {"x"}, {"y"}, "relu"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("graph input 'x': dim 0 is symbolic ('N')"),
            std::string::npos)
      << g.status().message();

  LoadOptions o;
  o.input_shapes["x"] = {5, 3};
  g = load_from_bytes(m.bytes(), o);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->outputs()[0]).type->to_string(), "f32[5,3]");

  o.input_shapes["x"] = {5, 4};  // contradicts the fixed dim 1
  g = load_from_bytes(m.bytes(), o);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("dim 1 is 4, the model fixes it to 3"), std::string::npos);

  o.input_shapes = {{"x", {5, 3}}, {"bogus", {1}}};
  g = load_from_bytes(m.bytes(), o);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("'bogus'"), std::string::npos);
}

TEST(OnnxLoader, InitializersAndConstantNodes) {
  ModelBuilder m(13);
  m.input("x", {3}).output("y");
  m.init(float_tensor("w_typed", {3}, {1, 2, 3}));
  m.init(float_tensor("w_raw", {3}, {10, 20, 30}, /*raw=*/true));
  // A graph input that is also an initializer is a constant (IR "initializer as default").
  *m.model.mutable_graph()->add_input() = value_info("w_raw", TensorProto::FLOAT, {3});
  m.add(node("Constant", {}, {"c_float"}, "cf", {attr_f("value_float", 0.5f)}));
  m.add(node("Constant", {}, {"c_ints"}, "ci", {attr_ints("value_ints", {3})}));
  m.add(node("Constant", {}, {"c_t"}, "ct",
             {attr_t("value", float_tensor("", {3}, {100, 200, 300}))}));
  m.add(node("Add", {"x", "w_typed"}, {"a"}, "add1"));
  m.add(node("Add", {"a", "w_raw"}, {"b"}, "add2"));
  m.add(node("Mul", {"b", "c_float"}, {"c"}, "mul"));
  m.add(node("Add", {"c", "c_t"}, {"d"}, "add3"));
  m.add(node("Reshape", {"d", "c_ints"}, {"y"}, "reshape"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(count_op(*g, "constant"), 0);
  // (x + [1,2,3] + [10,20,30]) * 0.5 + [100,200,300] with x = [1,1,1]
  EXPECT_EQ(run_float(*g, "x", {3}, {1, 1, 1}), (std::vector<double>{106, 211.5, 317}));
}

TEST(OnnxLoader, ShapeArithmeticFoldsAtImport) {
  // Reshape(x, Concat(Shape(x)[0:1], [-1])): the shape input becomes a constant.
  ModelBuilder m(13);
  m.input("x", {2, 3, 4}).output("y");
  m.init(int64_tensor("minus1", {1}, {-1}));
  m.add(node("Shape", {"x"}, {"s"}, "shape"));
  m.init(int64_tensor("zero", {1}, {0}));
  m.init(int64_tensor("one", {1}, {1}));
  m.add(node("Slice", {"s", "zero", "one"}, {"s0"}, "slice"));
  m.add(node("Concat", {"s0", "minus1"}, {"target"}, "concat", {attr_i("axis", 0)}));
  m.add(node("Reshape", {"x", "target"}, {"y"}, "reshape"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->num_nodes(), 1u);
  EXPECT_EQ(g->value(g->outputs()[0]).type->to_string(), "f32[2,12]");
}

TEST(OnnxLoader, ClipOpset6AttrsBecomeInputs) {
  ModelBuilder m(6);
  m.input("x", {4}).output("y");
  m.add(node("Clip", {"x"}, {"y"}, "clip", {attr_f("min", -1.0f), attr_f("max", 1.0f)}));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const ir::Node* clip = first_node(*g, "clip");
  ASSERT_NE(clip, nullptr);
  ASSERT_EQ(clip->inputs.size(), 3u);
  EXPECT_TRUE(clip->attrs.empty());
  EXPECT_EQ(run_float(*g, "x", {4}, {-2, -0.5f, 0.5f, 3}), (std::vector<double>{-1, -0.5, 0.5, 1}));
}

TEST(OnnxLoader, UnsqueezeAndSliceOpset9AttrsBecomeInputs) {
  ModelBuilder m(9);
  m.input("x", {4}).output("y");
  m.add(node("Slice", {"x"}, {"s"}, "slice",
             {attr_ints("starts", {1}), attr_ints("ends", {3}), attr_ints("axes", {0})}));
  m.add(node("Unsqueeze", {"s"}, {"y"}, "unsq", {attr_ints("axes", {0})}));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->value(g->outputs()[0]).type->to_string(), "f32[1,2]");
  EXPECT_EQ(run_float(*g, "x", {4}, {1, 2, 3, 4}), (std::vector<double>{2, 3}));
}

TEST(OnnxLoader, SoftmaxOpset11UsesLegacyFlatten) {
  ModelBuilder m(11);
  m.input("x", {1, 2, 2}).output("y");
  m.add(node("Softmax", {"x"}, {"y"}, "sm"));  // opset < 13: axis 1, over dims [1, 3)
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const ir::Node* sm = first_node(*g, "softmax");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(std::get<int64_t>(sm->attrs.at("legacy_flatten")), 1);
  EXPECT_EQ(std::get<int64_t>(sm->attrs.at("axis")), 1);
  // All four values equal -> each is 1/4 (the flattened row has 4 elements).
  EXPECT_EQ(run_float(*g, "x", {1, 2, 2}, {0, 0, 0, 0}),
            (std::vector<double>{0.25, 0.25, 0.25, 0.25}));
}

// Hardmax before opset 13 works on the input coerced to 2-D at `axis`. An empty input (found
// by the onnx_load fuzzer: x [0, 4] read a dim past the reshaped value's type) keeps its dims
// (ONNX: the output has the input's shape); a non-empty one is one-hot at the first maximum of
// each coerced row, by hand.
TEST(OnnxLoader, HardmaxOpset8CoercesTo2DAlsoWhenEmpty) {
  const auto hardmax = [](const std::vector<int64_t>& dims, int64_t axis) {
    ModelBuilder m(8);
    m.input("x", dims).output("y");
    m.add(node("Hardmax", {"x"}, {"y"}, "hardmax", {attr_i("axis", axis)}));
    return load_from_bytes(m.bytes());
  };
  for (const auto& [dims, axis] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{0, 4}, 1}, {{2, 0, 4}, 2}, {{2, 3, 0}, 1}}) {
    Result<ir::Graph> g = hardmax(dims, axis);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    ASSERT_EQ(g->outputs().size(), 1U);
    const std::optional<ir::TensorType>& t = g->value(g->outputs()[0]).type;
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->shape, Shape(dims.begin(), dims.end()));
    EXPECT_TRUE(run_float(*g, "x", Shape(dims.begin(), dims.end()), {}).empty());
  }
  // [2, 2, 2] at axis 1: rows of 4 (the last two dims); the first maximum of each wins.
  Result<ir::Graph> g = hardmax({2, 2, 2}, 1);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(run_float(*g, "x", {2, 2, 2}, {1, 5, 5, 2, -1, -3, -2, -1}),
            (std::vector<double>{0, 1, 0, 0, 1, 0, 0, 0}));
}

TEST(OnnxLoader, SplitAndPadOldOpsets) {
  ModelBuilder m(10);
  m.input("x", {5}).output("a").output("b");
  m.add(node("Split", {"x"}, {"p", "b"}, "split", {attr_ints("split", {2, 3})}));
  m.add(node("Pad", {"p"}, {"a"}, "pad", {attr_ints("pads", {1, 0}), attr_f("value", 9.0f)}));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(run_float(*g, "x", {5}, {1, 2, 3, 4, 5}), (std::vector<double>{9, 1, 2}));
}

TEST(OnnxLoader, ExternalDataRelativeToModel) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "frame_onnx_external_test";
  fs::create_directories(dir);
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    const float pad[2] = {0, 0};
    const float w[3] = {1.5f, -2.0f, 4.0f};
    f.write(reinterpret_cast<const char*>(pad), sizeof pad);
    f.write(reinterpret_cast<const char*>(w), sizeof w);
  }
  ModelBuilder m(13);
  m.input("x", {3}).output("y");
  m.init(
      external_tensor("w", {3}, {{"location", "weights.bin"}, {"offset", "8"}, {"length", "12"}}));
  m.add(node("Mul", {"x", "w"}, {"y"}, "mul"));
  {
    std::ofstream f(dir / "model.onnx", std::ios::binary);
    f << m.bytes();
  }
  Result<ir::Graph> g = load((dir / "model.onnx").string());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(run_float(*g, "x", {3}, {2, 2, 2}), (std::vector<double>{3, -4, 8}));

  // A location escaping the model directory is rejected.
  m.model.mutable_graph()->mutable_initializer(0)->mutable_external_data(0)->set_value(
      "../weights.bin");
  g = load_from_bytes(m.bytes(), {}, dir.string());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("leaves the model directory"), std::string::npos);
  fs::remove_all(dir);
}

TEST(OnnxLoader, BadTensorSizesAreErrors) {
  ModelBuilder m(13);
  m.input("x", {3}).output("y");
  m.init(float_tensor("w", {4}, {1, 2, 3}));  // 3 values for 4 elements
  m.add(node("Add", {"x", "w"}, {"y"}, "add"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("tensor 'w'"), std::string::npos) << g.status().message();

  ModelBuilder huge(13);
  huge.input("x", {3}).output("y");
  TensorProto t = float_tensor("big", {1 << 30, 1 << 30}, {});
  huge.init(t);
  huge.add(node("Add", {"x", "big"}, {"y"}, "add"));
  g = load_from_bytes(huge.bytes());
  ASSERT_FALSE(g.is_ok());
}

TEST(OnnxLoader, UnsupportedElementTypeNamesIt) {
  ModelBuilder m(13);
  m.input("x", {3}, TensorProto::COMPLEX64).output("y", TensorProto::COMPLEX64);
  m.add(node("Identity", {"x"}, {"y"}, "id"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("COMPLEX64"), std::string::npos) << g.status().message();
}

TEST(OnnxLoader, UnsignedElementTypesMapToFrameDTypes) {
  // UINT16/UINT32/UINT64 graph inputs: max(x, 7) on the largest values, which a signed
  // comparison would get wrong.
  const std::pair<int, DTypeCode> kTypes[] = {{TensorProto::UINT16, DTypeCode::kUInt16},
                                              {TensorProto::UINT32, DTypeCode::kUInt32},
                                              {TensorProto::UINT64, DTypeCode::kUInt64}};
  for (const auto& [onnx_type, dtype] : kTypes) {
    ModelBuilder m(13);
    m.input("x", {2}, onnx_type).input("z", {2}, onnx_type).output("y", onnx_type);
    m.add(node("Max", {"x", "z"}, {"y"}, "max"));
    Result<ir::Graph> g = load_from_bytes(m.bytes());
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    Result<runtime::Executable> exe = runtime::compile(*g, {});
    ASSERT_TRUE(exe.is_ok()) << exe.status().message();
    Tensor x = *Tensor::zeros(dtype, {2});
    Tensor z = *Tensor::zeros(dtype, {2});
    // x = {all ones, 0}, z = {7, 7}: max = {all ones, 7}.
    auto* xb = static_cast<uint8_t*>(x.raw_data());
    std::memset(xb, 0xff, dtype_size(dtype));
    Tensor expected = x.clone();
    (void)dispatch_dtype<kUnsignedIntDTypes>(dtype, [&]<typename T>() {
      z.data<T>()[0] = z.data<T>()[1] = T{7};
      expected.data<T>()[1] = T{7};
    });
    Result<runtime::TensorMap> r = exe->run({{"x", x}, {"z", z}});
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r->at("y").dtype(), dtype);
    EXPECT_TRUE(r->at("y").bitwise_equal(expected)) << dtype_name(dtype);
  }
}

TEST(OnnxLoader, WrongInputsAtRunAreErrors) {
  Result<ir::Graph> g = load(source_dir() + "/models/small_cnn.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  Result<runtime::Executable> exe = runtime::compile(*g, {});
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  // Wrong shape.
  Result<runtime::TensorMap> r =
      exe->run({{"input", Tensor::zeros(DTypeCode::kFloat32, {1, 3, 16, 16}).value()}});
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("input"), std::string::npos) << r.status().message();
  // Wrong dtype.
  r = exe->run({{"input", Tensor::zeros(DTypeCode::kFloat64, {1, 3, 32, 32}).value()}});
  ASSERT_FALSE(r.is_ok());
  // Missing input.
  r = exe->run({});
  ASSERT_FALSE(r.is_ok());
}

TEST(OnnxLoader, OpTableIsSortedAndNamesRegisteredOps) {
  std::vector<OpTableEntry> t = op_table();
  ASSERT_GT(t.size(), 100u);
  for (const OpTableEntry& e : t) {
    if (e.frame_op.empty()) continue;
    EXPECT_NE(ops::OpRegistry::global().find(e.frame_op), nullptr)
        << e.op_type << " -> " << e.frame_op;
  }
}

// A node of a custom domain imports as the frame op it is mapped to (register_custom_op):
// com.cpptest::MyRelu -> relu, run on [-1, 2] gives [0, 2] (ONNX Relu by hand).
TEST(OnnxLoader, CustomDomainNodesImportThroughTheirMapping) {
  testing::ModelBuilder b(17);
  auto* o = b.model.add_opset_import();
  o->set_domain("com.cpptest");
  o->set_version(1);
  b.input("x", {2}).output("y").add(testing::node("MyRelu", {"x"}, {"y"}, "r", {}, "com.cpptest"));
  Result<ir::Graph> before = load_from_bytes(b.bytes());
  ASSERT_FALSE(before.is_ok());
  EXPECT_NE(before.status().message().find("com.cpptest::MyRelu"), std::string::npos);

  ASSERT_TRUE(register_custom_op("com.cpptest", "MyRelu", "relu").is_ok());
  Result<ir::Graph> g = load_from_bytes(b.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  Result<runtime::Executable> exe = runtime::compile(*g, {});
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  Tensor x = Tensor::zeros(DTypeCode::kFloat32, {2}).value();
  x.data<float>()[0] = -1.0f;
  x.data<float>()[1] = 2.0f;
  Result<runtime::TensorMap> out = exe->run({{"x", x}});
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  EXPECT_EQ(out->at("y").data<float>()[0], 0.0f);
  EXPECT_EQ(out->at("y").data<float>()[1], 2.0f);

  bool listed = false;
  for (const OpTableEntry& e : op_table()) {
    listed |= e.domain == "com.cpptest" && e.op_type == "MyRelu" && e.frame_op == "relu";
  }
  EXPECT_TRUE(listed);
  EXPECT_EQ(register_custom_op("com.cpptest", "MyRelu", "relu").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(register_custom_op("ai.onnx", "Relu", "relu").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(register_custom_op("com.cpptest", "Other", "no_such_op").code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace frame::onnx
