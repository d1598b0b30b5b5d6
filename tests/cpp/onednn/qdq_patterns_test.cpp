// onednn QDQ lowering patterns (src/backends/onednn/qdq_patterns.cpp): dequantize_linear ->
// conv / matmul -> quantize_linear with int8-valued constant weights becomes one qlinear_conv /
// qlinear_matmul on onednn. The rewritten graph is checked against the float QDQ graph run on
// cpu (every output within one quantization step, almost all equal), and for not firing with
// backends {"cpu"}, with weights that are not int8 multiples of a per-channel scale, or when
// the float result has a second reader. quantize_before_max_pool: a conv -> relu -> max_pool ->
// quantize_linear (a ResNet stem) becomes qlinear_conv -> max -> u8 max_pool.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>

#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

Tensor u8_tensor(Shape s, uint32_t seed) {
  Tensor t = Tensor::empty(DTypeCode::kUInt8, std::move(s)).value();
  std::mt19937 rng(seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] = static_cast<uint8_t>(rng() % 256);
  return t;
}

// Float weights [groups x inner] that are int8 values times a per-group scale (the max |value|
// of each group is 127, as symmetric per-channel quantization gives), laid out with strides.
Tensor int8_valued(Shape s, int64_t groups, int64_t inner, int64_t o_stride, int64_t i_stride,
                   uint32_t seed) {
  Tensor t = Tensor::empty(DTypeCode::kFloat32, std::move(s)).value();
  std::mt19937 rng(seed);
  for (int64_t o = 0; o < groups; ++o) {
    const float scale = 0.001F + 0.0005F * static_cast<float>(o % 7);
    for (int64_t i = 0; i < inner; ++i) {
      const int k = i == 0 ? 127 : static_cast<int>(rng() % 255) - 127;
      t.data<float>()[o * o_stride + i * i_stride] = static_cast<float>(k) * scale;
    }
  }
  return t;
}

// x (u8) -> dequantize_linear -> conv(W, B) or matmul(W) -> quantize_linear -> y (u8); with
// `second_reader` the float result is also a graph output; with `relu` a relu precedes the
// quantize.
ir::Graph qdq_graph(bool conv, bool int8_weights, bool second_reader, bool relu = false) {
  ir::Graph g("qdq");
  const Shape xs = conv ? Shape{1, 16, 10, 10} : Shape{6, 40};
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kUInt8, xs});
  const ir::ValueId sx = g.add_constant("x_scale", Tensor::scalar<float>(0.02F));
  const ir::ValueId zx = g.add_constant("x_zp", Tensor::scalar<uint8_t>(128));
  const ir::ValueId xf =
      g.node(*g.create_node("dequantize_linear", "dq", {x, sx, zx}, 1)).outputs[0];
  ir::ValueId yf;
  if (conv) {
    Tensor w = int8_weights ? int8_valued({24, 16, 3, 3}, 24, 144, 144, 1, 3)
                            : grid_tensor({24, 16, 3, 3}, 3);
    const ir::ValueId wv = g.add_constant("w", std::move(w));
    const ir::ValueId b = g.add_constant("b", grid_tensor({24}, 4));
    yf = g.node(*g.create_node("conv", "conv0", {xf, wv, b}, 1, {{"pads", ints{1, 1, 1, 1}}}))
             .outputs[0];
  } else {
    Tensor w = int8_weights ? int8_valued({40, 12}, 12, 40, 1, 12, 5) : grid_tensor({40, 12}, 5);
    const ir::ValueId wv = g.add_constant("w", std::move(w));
    yf = g.node(*g.create_node("matmul", "mm0", {xf, wv}, 1)).outputs[0];
  }
  if (relu) yf = g.node(*g.create_node("relu", "relu0", {yf}, 1)).outputs[0];
  const ir::ValueId sy = g.add_constant("y_scale", Tensor::scalar<float>(conv ? 0.05F : 0.1F));
  const ir::ValueId zy = g.add_constant("y_zp", Tensor::scalar<uint8_t>(120));
  g.add_output(g.node(*g.create_node("quantize_linear", "q", {yf, sy, zy}, 1)).outputs[0]);
  if (second_reader) g.add_output(yf);
  return g;
}

// Whether some node that `pick` selects is placed on onednn.
template <typename Pick>
bool any_on_onednn(const runtime::Executable& exe, Pick pick) {
  for (const runtime::Placement& p : exe.report().placements) {
    if (pick(p) && p.backend == "onednn") return true;
  }
  return false;
}

TEST(OnednnQdqPatterns, QdqBecomesOneInt8Node) {
  for (bool conv : {true, false}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE(fmt::format("{}{}", conv ? "conv" : "matmul", relu ? " + relu" : ""));
      ir::Graph g = qdq_graph(conv, true, false, relu);
      const std::vector<std::string> rw = lower(g, {"onednn", "cpu"});
      if (!cpu_has_vnni()) {
        // The int8 kernels decline here, so the patterns that would create their nodes do not
        // fire: the float conv / matmul stays between the quantize and dequantize.
        for (const std::string& r : rw) EXPECT_EQ(r.find("quantize_qdq_"), std::string::npos) << r;
        continue;
      }
      ASSERT_FALSE(rw.empty());
      EXPECT_NE(rw.back().find(conv ? "quantize_qdq_conv" : "quantize_qdq_matmul"),
                std::string::npos)
          << rw.back();
      // relu: the int8 node, then max(., y_zero_point).
      ASSERT_EQ(g.num_nodes(), relu ? 2u : 1u);
      EXPECT_EQ(g.node(g.node_ids()[0]).op, conv ? "qlinear_conv" : "qlinear_matmul");
      if (relu) {
        EXPECT_EQ(g.node(g.node_ids()[1]).op, "max");
      }
    }
  }
}

TEST(OnednnQdqPatterns, MatchesTheFloatQdqGraphWithinOneStep) {
  for (bool conv : {true, false}) {
    for (bool relu : {false, true}) {
      SCOPED_TRACE(fmt::format("{}{}", conv ? "conv" : "matmul", relu ? " + relu" : ""));
      const ir::Graph g = qdq_graph(conv, true, false, relu);
      Result<runtime::Executable> fast = runtime::compile(g, uncached({"onednn", "cpu"}));
      Result<runtime::Executable> slow = runtime::compile(g, uncached({"cpu"}));
      ASSERT_TRUE(fast.is_ok()) << fast.status().message();
      ASSERT_TRUE(slow.is_ok()) << slow.status().message();
      EXPECT_EQ(
          any_on_onednn(*fast,
                        [](const runtime::Placement& p) { return p.op.rfind("qlinear_", 0) == 0; }),
          cpu_has_vnni());
      const runtime::TensorMap in{{"x", u8_tensor(conv ? Shape{1, 16, 10, 10} : Shape{6, 40}, 11)}};
      Result<runtime::TensorMap> a = fast->run(in), e = slow->run(in);
      ASSERT_TRUE(a.is_ok()) << a.status().message();
      ASSERT_TRUE(e.is_ok()) << e.status().message();
      ASSERT_EQ(a->size(), 1u);
      const Tensor& ya = a->begin()->second;
      const Tensor& ye = e->at(a->begin()->first);
      ASSERT_EQ(ya.shape(), ye.shape());
      int64_t differ = 0, saturated = 0;
      for (int64_t i = 0; i < ya.numel(); ++i) {
        const int d = std::abs(int{ya.data<uint8_t>()[i]} - int{ye.data<uint8_t>()[i]});
        EXPECT_LE(d, 1) << "element " << i;
        differ += d != 0 ? 1 : 0;
        saturated += ye.data<uint8_t>()[i] == 0 || ye.data<uint8_t>()[i] == 255 ? 1 : 0;
      }
      // Only sums within float rounding of a rounding boundary may land one step apart.
      EXPECT_LE(differ * 100, ya.numel()) << differ << " of " << ya.numel() << " differ";
      EXPECT_LT(saturated, ya.numel());  // the data exercises the unsaturated range
    }
  }
}

TEST(OnednnQdqPatterns, DoesNotFireWithoutItsPreconditions) {
  for (bool conv : {true, false}) {
    SCOPED_TRACE(conv ? "conv" : "matmul");
    ir::Graph cpu_only = qdq_graph(conv, true, false);
    EXPECT_TRUE(lower(cpu_only, {"cpu"}).empty());
    ir::Graph float_weights = qdq_graph(conv, false, false);
    for (const std::string& r : lower(float_weights, {"onednn", "cpu"})) {
      EXPECT_EQ(r.find("quantize_qdq"), std::string::npos) << r;
    }
    ir::Graph shared = qdq_graph(conv, true, true);
    for (const std::string& r : lower(shared, {"onednn", "cpu"})) {
      EXPECT_EQ(r.find("quantize_qdq"), std::string::npos) << r;
    }
  }
}

// x (u8) -> dequantize_linear -> conv -> relu -> max_pool (3x3, stride 2, pads 1) ->
// quantize_linear -> y (u8); with `pool_output` the pool's float result is also an output.
ir::Graph stem_graph(bool pool_output) {
  ir::Graph g("stem");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kUInt8, {1, 16, 10, 10}});
  const ir::ValueId sx = g.add_constant("x_scale", Tensor::scalar<float>(0.02F));
  const ir::ValueId zx = g.add_constant("x_zp", Tensor::scalar<uint8_t>(128));
  const ir::ValueId xf =
      g.node(*g.create_node("dequantize_linear", "dq", {x, sx, zx}, 1)).outputs[0];
  const ir::ValueId wv = g.add_constant("w", int8_valued({24, 16, 3, 3}, 24, 144, 144, 1, 3));
  const ir::ValueId b = g.add_constant("b", grid_tensor({24}, 4));
  ir::ValueId v =
      g.node(*g.create_node("conv", "conv0", {xf, wv, b}, 1, {{"pads", ints{1, 1, 1, 1}}}))
          .outputs[0];
  v = g.node(*g.create_node("relu", "relu0", {v}, 1)).outputs[0];
  v = g
          .node(*g.create_node(
              "max_pool", "pool0", {v}, 1,
              {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}, {"pads", ints{1, 1, 1, 1}}}))
          .outputs[0];
  const ir::ValueId sy = g.add_constant("y_scale", Tensor::scalar<float>(0.05F));
  const ir::ValueId zy = g.add_constant("y_zp", Tensor::scalar<uint8_t>(120));
  g.add_output(g.node(*g.create_node("quantize_linear", "q", {v, sy, zy}, 1)).outputs[0]);
  if (pool_output) g.add_output(v);
  return g;
}

TEST(OnednnQdqPatterns, QuantizeMovesBeforeMaxPool) {
  ir::Graph g = stem_graph(false);
  const std::vector<std::string> rw = lower(g, {"onednn", "cpu"});
  bool moved = false;
  for (const std::string& r : rw) {
    moved = moved || r.find("quantize_before_max_pool") != std::string::npos;
  }
  EXPECT_TRUE(moved);
  std::vector<std::string> ops;
  for (ir::NodeId id : g.node_ids()) ops.push_back(g.node(id).op);
  std::sort(ops.begin(), ops.end());
  // Without VNNI the conv stays float (fused with its relu) between dequantize and quantize.
  const std::vector<std::string> int8_ops{"max", "max_pool", "qlinear_conv"};
  const std::vector<std::string> float_ops{"dequantize_linear", "fused_post_ops_internal",
                                           "max_pool", "quantize_linear"};
  EXPECT_EQ(ops, cpu_has_vnni() ? int8_ops : float_ops);

  ir::Graph shared = stem_graph(true);
  for (const std::string& r : lower(shared, {"onednn", "cpu"})) {
    EXPECT_EQ(r.find("quantize_before_max_pool"), std::string::npos) << r;
  }
}

TEST(OnednnQdqPatterns, StemMatchesTheFloatQdqGraphWithinOneStep) {
  const ir::Graph g = stem_graph(false);
  Result<runtime::Executable> fast = runtime::compile(g, uncached({"onednn", "cpu"}));
  Result<runtime::Executable> slow = runtime::compile(g, uncached({"cpu"}));
  ASSERT_TRUE(fast.is_ok()) << fast.status().message();
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  // The u8 max_pool runs on onednn.
  EXPECT_TRUE(any_on_onednn(*fast, [](const runtime::Placement& p) { return p.op == "max_pool"; }));
  const runtime::TensorMap in{{"x", u8_tensor(Shape{1, 16, 10, 10}, 12)}};
  Result<runtime::TensorMap> a = fast->run(in), e = slow->run(in);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  const Tensor& ya = a->begin()->second;
  const Tensor& ye = e->at(a->begin()->first);
  ASSERT_EQ(ya.shape(), (Shape{1, 24, 5, 5}));
  ASSERT_EQ(ya.shape(), ye.shape());
  int64_t differ = 0;
  for (int64_t i = 0; i < ya.numel(); ++i) {
    const int d = std::abs(int{ya.data<uint8_t>()[i]} - int{ye.data<uint8_t>()[i]});
    EXPECT_LE(d, 1) << "element " << i;
    differ += d != 0 ? 1 : 0;
  }
  EXPECT_LE(differ * 50, ya.numel()) << differ << " of " << ya.numel() << " differ";
}

}  // namespace
}  // namespace frame::test::linear
