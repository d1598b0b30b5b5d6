// DFT opset 20 import: the `axis` input (constant, default -2) becomes the opset-17 attribute.
// Expected spectra are hand-computed: X[k] = sum_j x[j] exp(-2 pi i j k / n).

#include <gtest/gtest.h>

#include <cmath>

#include "frame/onnx/onnx.h"
#include "frame/runtime/compile.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace frame::onnx::testing;  // NOLINT(build/namespaces)
using ::onnx::TensorProto;

const ir::Node* first_node(const ir::Graph& g, std::string_view op) {
  for (ir::NodeId id : g.node_ids()) {
    if (g.node(id).op == op) return &g.node(id);
  }
  return nullptr;
}

// x = [[1, 2, 3], [4, 5, 6]] as a real signal [1, 2, 3, 1], run on cpu; `y` has shape `ys`.
std::vector<double> run_dft(const ir::Graph& g, const Shape& ys = {1, 2, 3, 2}) {
  runtime::CompileOptions co;
  co.backends = {"cpu"};
  Result<runtime::Executable> exe = runtime::compile(g, co);
  EXPECT_TRUE(exe.is_ok()) << exe.status().message();
  if (!exe.is_ok()) return {};
  Result<runtime::TensorMap> out =
      exe->run({{"x", Tensor::from_vector<float>({1, 2, 3, 1}, {1, 2, 3, 4, 5, 6})}});
  EXPECT_TRUE(out.is_ok()) << out.status().message();
  if (!out.is_ok()) return {};
  const Tensor& t = out->at("y");
  EXPECT_EQ(t.shape(), ys);
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.element_as_double(i));
  return v;
}

void expect_near(const std::vector<double>& got, const std::vector<double>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "element " << i;
}

TEST(OnnxDftOpset20, AxisDefaultsToLastSignalDim) {
  ModelBuilder m(20);
  m.input("x", {1, 2, 3, 1}).output("y");
  m.add(node("DFT", {"x"}, {"y"}, "dft"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const ir::Node* dft = first_node(*g, "dft");
  ASSERT_NE(dft, nullptr);
  EXPECT_EQ(std::get<int64_t>(dft->attrs.at("axis")), -2);
  // Length-3 transforms of each row: X1 = sum - 1.5 * (x1 + x2) + i sqrt(3)/2 (x2 - x1) etc.
  const double h = std::sqrt(3.0) / 2;
  expect_near(run_dft(*g), {6, 0, -1.5, h, -1.5, -h, 15, 0, -1.5, h, -1.5, -h});
}

TEST(OnnxDftOpset20, ConstantAxisInputAndLength) {
  ModelBuilder m(20);
  m.input("x", {1, 2, 3, 1}).output("y");
  m.init(int64_tensor("axis", {}, {1}));
  m.add(node("DFT", {"x", "", "axis"}, {"y"}, "dft"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  // Length-2 transforms down the columns: [r0 + r1, r0 - r1].
  expect_near(run_dft(*g), {5, 0, 7, 0, 9, 0, -3, 0, -3, 0, -3, 0});

  // dft_length 2 on a length-3 axis truncates: the same as transforming [1, 2] and [4, 5].
  ModelBuilder t(20);
  t.input("x", {1, 2, 3, 1}).output("y");
  t.init(int64_tensor("len", {}, {2}));
  t.init(int64_tensor("axis", {}, {-2}));
  t.add(node("DFT", {"x", "len", "axis"}, {"y"}, "dft"));
  Result<ir::Graph> gt = load_from_bytes(t.bytes());
  ASSERT_TRUE(gt.is_ok()) << gt.status().message();
  expect_near(run_dft(*gt, {1, 2, 2, 2}), {3, 0, -1, 0, 9, 0, -1, 0});
}

TEST(OnnxDftOpset20, RuntimeAxisIsRejected) {
  ModelBuilder m(20);
  m.input("x", {1, 2, 3, 1}).input("axis", {}, TensorProto::INT64).output("y");
  m.add(node("DFT", {"x", "", "axis"}, {"y"}, "dft"));
  Result<ir::Graph> g = load_from_bytes(m.bytes());
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("input 2 (axis) must be a constant"), std::string::npos)
      << g.status().message();
}

}  // namespace
}  // namespace frame::onnx
