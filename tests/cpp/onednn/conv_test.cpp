// onednn conv / conv_transpose kernels against the cpu reference kernels (BUILD-011 op class):
// 1-d/2-d/3-d, odd sizes, groups, depthwise, dilation, stride, asymmetric pads, auto_pad, bias,
// constant and non-constant weights; plus placement through runtime::compile, and constant
// weights packed once per process: shared by compiles of other input shapes (pointer equality).

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <tuple>
#include <utility>

#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/primitive_util.h"
#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/kernel_registry.h"
#include "runtime/interpreter.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

OpCall conv_call(const std::string& op, Shape x, Shape w, bool bias, ir::AttrMap attrs) {
  OpCall c{op};
  const int64_t m =
      op == "conv" ? w[0]
                   : w[1] * std::get<int64_t>(attrs.count("group") ? attrs.at("group")
                                                                   : ir::AttrValue(int64_t{1}));
  c.inputs = {grid_tensor(x, 1), grid_tensor(w, 2), bias ? grid_tensor({m}, 3) : Tensor()};
  c.attrs = std::move(attrs);
  return c;
}

TEST(OnednnConv, Plain2dWithBias) {
  expect_onednn_matches_cpu(conv_call("conv", {1, 3, 9, 11}, {5, 3, 3, 3}, true, {}), {1});
}

TEST(OnednnConv, StridedPaddedAsymmetric2d) {
  expect_onednn_matches_cpu(conv_call("conv", {2, 4, 13, 10}, {6, 4, 3, 2}, true,
                                      {{"strides", ints{2, 3}}, {"pads", ints{1, 0, 2, 1}}}),
                            {1});
}

TEST(OnednnConv, Dilated2d) {
  expect_onednn_matches_cpu(conv_call("conv", {1, 8, 15, 15}, {16, 8, 3, 3}, false,
                                      {{"dilations", ints{2, 3}}, {"pads", ints{2, 3, 2, 3}}}),
                            {1});
}

TEST(OnednnConv, Grouped2d) {
  expect_onednn_matches_cpu(conv_call("conv", {1, 12, 7, 9}, {18, 4, 3, 3}, true,
                                      {{"group", int64_t{3}}, {"pads", ints{1, 1, 1, 1}}}),
                            {1});
}

TEST(OnednnConv, Depthwise2d) {
  expect_onednn_matches_cpu(
      conv_call("conv", {2, 16, 11, 11}, {16, 1, 3, 3}, true,
                {{"group", int64_t{16}}, {"strides", ints{2, 2}}, {"pads", ints{1, 1, 1, 1}}}),
      {1});
}

TEST(OnednnConv, AutoPadSameUpperAndLower) {
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    expect_onednn_matches_cpu(conv_call("conv", {1, 5, 10, 7}, {7, 5, 4, 3}, true,
                                        {{"auto_pad", std::string(mode)}, {"strides", ints{2, 2}}}),
                              {1});
  }
}

TEST(OnednnConv, AutoPadValid) {
  expect_onednn_matches_cpu(
      conv_call("conv", {1, 5, 10, 7}, {7, 5, 3, 3}, false, {{"auto_pad", std::string("VALID")}}),
      {1});
}

TEST(OnednnConv, OneD) {
  expect_onednn_matches_cpu(conv_call("conv", {3, 6, 17}, {4, 3, 5}, true,
                                      {{"group", int64_t{2}},
                                       {"pads", ints{2, 1}},
                                       {"strides", ints{2}},
                                       {"dilations", ints{2}}}),
                            {1});
}

// A 1-d conv with at least 16 input channels per group skips oneDNN's brgconv (its creation
// grows with the output width: 15-73 ms at width 3199 against ~0.5 ms for jit:avx512_core, same
// run time; conv.cpp kBrgconv1dMinChannels); the 2-d conv of the same channels keeps oneDNN's
// first choice, and the 1-d one still matches the cpu kernel at a long width.
TEST(OnednnConv, OneDWithManyChannelsSkipsBrgconv) {
  const auto impl_of = [](Shape x, Shape w, int64_t group) {
    ir::Graph g("conv1d");
    const ir::ValueId in = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, x});
    const ir::ValueId wv = g.add_constant("w", grid_tensor(w, 5));
    const ir::NodeId id = *g.create_node("conv", "c", {in, wv}, 1,
                                         {{"group", group}, {"strides", ints(x.size() - 2, 2)}});
    const ir::Node& n = g.node(id);
    const ops::NodeContext ctx =
        ops::make_node_context(g, n, ops::OpRegistry::global().find("conv"));
    Result<std::shared_ptr<backends::onednn::LinearPrimitive>> p =
        backends::onednn::make_conv(ctx, false, {}, true);
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? std::string((*p)->implementation()) : std::string();
  };
  for (const auto& [x, w, group] : {std::tuple{Shape{1, 64, 3199}, Shape{64, 64, 3}, int64_t{1}},
                                    std::tuple{Shape{1, 64, 999}, Shape{64, 32, 5}, int64_t{2}}}) {
    const std::string impl = impl_of(x, w, group);
    EXPECT_FALSE(impl.empty());
    EXPECT_NE(impl.substr(0, 7), "brgconv") << shape_to_string(x);
  }
  if (dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core) {
    EXPECT_EQ(impl_of({1, 64, 56, 56}, {64, 64, 3, 3}, 1).substr(0, 7), "brgconv");
  }
  expect_onednn_matches_cpu(
      conv_call("conv", {1, 32, 1201}, {48, 32, 3}, true, {{"strides", ints{2}}}), {1});
}

TEST(OnednnConv, ThreeD) {
  expect_onednn_matches_cpu(
      conv_call("conv", {1, 4, 5, 6, 7}, {8, 4, 3, 3, 3}, true, {{"pads", ints{1, 0, 1, 1, 1, 0}}}),
      {1});
}

// Geometries the shape-agnostic conv (a first-seen shape's conv without a oneDNN primitive,
// conv_agnostic.cpp) takes its own ways, each against the cpu kernel with constant and
// run-time weights: 1x1 as one product, taps that read only padding dropped (an ASPP-style
// dilation whose only tap is the centre, a partial one, asymmetric pads), one product per tap
// over the rectangle it reads (in place or gathered), depthwise planes
// (channel multiplier 2, strides 2 and 3, rows several vectors wide, 1-d, dilated), and a
// stride that steps over the input.
TEST(OnednnConv, ShapeAgnosticGeometries) {
  const auto both = [](const ints& v) { return ints{v[0], v[1]}; };
  expect_onednn_matches_cpu(conv_call("conv", {2, 24, 7, 9}, {16, 24, 1, 1}, true, {}), {1});
  // A 1x1 conv large enough to split its output channels over 2 threads (by_channels), two
  // images, without and with a bias.
  expect_onednn_matches_cpu(conv_call("conv", {2, 32, 30, 21}, {50, 32, 1, 1}, true, {}), {1, 2});
  expect_onednn_matches_cpu(conv_call("conv", {2, 32, 30, 21}, {50, 32, 1, 1}, false, {}), {1, 2});
  expect_onednn_matches_cpu(
      conv_call("conv", {1, 8, 9, 7}, {6, 8, 3, 3}, true,
                {{"dilations", both({12, 12})}, {"pads", ints{12, 12, 12, 12}}}),
      {1});
  expect_onednn_matches_cpu(conv_call("conv", {1, 4, 8, 6}, {5, 4, 3, 3}, false,
                                      {{"dilations", both({5, 5})}, {"pads", ints{5, 5, 5, 5}}}),
                            {1});
  expect_onednn_matches_cpu(
      conv_call("conv", {1, 2, 5, 5}, {3, 2, 3, 3}, true, {{"pads", ints{4, 0, 0, 4}}}), {1});
  // One product per tap over its rectangle: grouped, strided, dilated past half the map.
  expect_onednn_matches_cpu(conv_call("conv", {2, 4, 7, 9}, {6, 2, 3, 3}, true,
                                      {{"group", int64_t{2}},
                                       {"strides", both({2, 2})},
                                       {"dilations", both({4, 4})},
                                       {"pads", ints{4, 4, 4, 4}}}),
                            {1});
  expect_onednn_matches_cpu(
      conv_call("conv", {1, 6, 10, 13}, {12, 1, 3, 3}, true,
                {{"group", int64_t{6}}, {"strides", both({2, 2})}, {"pads", ints{1, 1, 1, 1}}}),
      {1});
  expect_onednn_matches_cpu(
      conv_call("conv", {2, 5, 17, 19}, {5, 1, 5, 5}, true,
                {{"group", int64_t{5}}, {"strides", both({3, 3})}, {"pads", ints{2, 2, 2, 2}}}),
      {1});
  expect_onednn_matches_cpu(conv_call("conv", {1, 3, 4, 70}, {3, 1, 3, 3}, true,
                                      {{"group", int64_t{3}}, {"pads", ints{1, 1, 1, 1}}}),
                            {1});
  expect_onednn_matches_cpu(
      conv_call("conv", {1, 3, 9, 41}, {3, 1, 3, 5}, false,
                {{"group", int64_t{3}}, {"strides", both({1, 2})}, {"pads", ints{1, 2, 0, 3}}}),
      {1});
  expect_onednn_matches_cpu(
      conv_call("conv", {2, 4, 40}, {4, 1, 7}, true,
                {{"group", int64_t{4}}, {"dilations", ints{2}}, {"pads", ints{3, 3}}}),
      {1});
  expect_onednn_matches_cpu(conv_call("conv", {1, 3, 2, 2}, {4, 3, 3, 3}, true,
                                      {{"strides", both({4, 4})}, {"pads", ints{1, 1, 1, 1}}}),
                            {1});
  // A network's first conv (3 channels, 3x3, stride 2: im2col gathers every second column
  // with VecTable::even_copy), rows of several vectors with a tail, odd and even widths, and
  // a column stride alone with asymmetric pads; whole-image and by-rows (2 threads) alike.
  expect_onednn_matches_cpu(conv_call("conv", {1, 3, 21, 75}, {16, 3, 3, 3}, true,
                                      {{"strides", both({2, 2})}, {"pads", ints{1, 1, 1, 1}}}),
                            {1, 2});
  expect_onednn_matches_cpu(conv_call("conv", {2, 3, 12, 68}, {8, 3, 3, 3}, false,
                                      {{"strides", both({2, 2})}, {"pads", ints{0, 0, 1, 1}}}),
                            {1, 2});
  expect_onednn_matches_cpu(conv_call("conv", {1, 2, 9, 53}, {4, 2, 3, 5}, true,
                                      {{"strides", both({1, 2})}, {"pads", ints{1, 3, 1, 0}}}),
                            {1, 2});
}

// A compiled plan's dilated conv over a map not much larger than the dilation (DeepLabV3's ASPP
// convs), whose off-centre taps read only padding or a corner: where oneDNN's choice is its
// im2col gemm (AVX2 here: every tap's columns, padding included), padding_taps_conv computes
// only the taps that read the input (a 1x1 product for the centre alone, one product per tap
// over its rectangle otherwise); elsewhere it declines and the primitive stays. Either way the
// compiled conv, alone and fused with a bias and relu, matches the cpu kernel at 1 and 2 threads.
TEST(OnednnConv, CompiledConvsSkipTapsThatReadOnlyPadding) {
  struct Case {
    Shape x, w;
    int64_t dilation;
    bool skipped;  // some tap reads only padding or the rectangles cover little of the map
  };
  const std::vector<Case> cases = {{{1, 16, 6, 6}, {8, 16, 3, 3}, 6, true},
                                   {{1, 12, 8, 7}, {10, 12, 3, 3}, 5, true},
                                   {{2, 8, 9, 9}, {4, 8, 3, 3}, 1, false}};
  uint32_t seed = 90;
  for (const Case& c : cases) {
    const int64_t d = c.dilation;
    const ir::AttrMap attrs = {{"dilations", ints{d, d}}, {"pads", ints{d, d, d, d}}};
    ir::Graph g("aspp");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, c.x});
    const ir::ValueId w = g.add_constant("w", grid_tensor(c.w, seed++));
    const ir::ValueId b = g.add_constant("b", grid_tensor({c.w[0]}, seed++));
    const ir::NodeId id = *g.create_node("conv", "c", {x, w, b}, 1, attrs);
    const ops::NodeContext ctx =
        ops::make_node_context(g, g.node(id), ops::OpRegistry::global().find("conv"));
    Result<std::shared_ptr<backends::onednn::LinearPrimitive>> prim =
        backends::onednn::make_conv(ctx, false, {}, false);
    ASSERT_TRUE(prim.is_ok()) << prim.status().message();
    const bool gemm = (*prim)->implementation().find("gemm") != std::string_view::npos;
    Result<std::shared_ptr<backends::onednn::LinearPrimitive>> own =
        backends::onednn::padding_taps_conv(ctx, {}, true);
    EXPECT_EQ(own.is_ok(), gemm && c.skipped)
        << shape_to_string(c.x) << " dilation " << d << ", oneDNN: " << (*prim)->implementation()
        << (own.is_ok() ? "" : ", declined: " + own.status().message());
    if (own.is_ok()) {
      EXPECT_TRUE((*own)->implementation().empty());
    }
    // Run-time weights keep every tap: the own conv declines them.
    ir::Graph h("aspp_runtime_w");
    const ir::ValueId hx = h.add_input("x", ir::TensorType{DTypeCode::kFloat32, c.x});
    const ir::ValueId hw = h.add_input("w", ir::TensorType{DTypeCode::kFloat32, c.w});
    const ir::NodeId hid = *h.create_node("conv", "c", {hx, hw}, 1, attrs);
    EXPECT_FALSE(backends::onednn::padding_taps_conv(
                     ops::make_node_context(h, h.node(hid), ops::OpRegistry::global().find("conv")),
                     {}, false)
                     .is_ok());

    expect_onednn_matches_cpu(conv_call("conv", c.x, c.w, true, attrs), {1, 2});
    ir::Graph f("aspp_relu");
    const ir::ValueId fx = f.add_input("x", ir::TensorType{DTypeCode::kFloat32, c.x});
    const ir::NodeId fc = *f.create_node("conv", "c",
                                         {fx, f.add_constant("w", grid_tensor(c.w, seed++)),
                                          f.add_constant("b", grid_tensor({c.w[0]}, seed++))},
                                         1, attrs);
    const ir::ValueId cy = f.node(fc).outputs[0];
    f.add_output(f.node(*f.create_node("relu", "r", {cy}, 1, {})).outputs[0]);
    runtime::TensorMap in{{"x", grid_tensor(c.x, seed++)}};
    expect_same_as_unfused(f, in, ToleranceClass::kCrossBackend, {"c"});
  }
}

// The interpreted tier's depthwise conv of small planes (output rows narrower than a vector:
// conv_agnostic.cpp depthwise, VecTable::dw_plane over a zero-padded copy of each plane):
// channel counts off the vector width, two images, blocks of eight and of four rows and a last
// block past the output, stride 2 with asymmetric pads, dilation, a kernel wider than its input,
// no bias, 1-d; each against the cpu kernel at 1 and 2 threads.
TEST(OnednnConv, ShapeAgnosticDepthwiseNarrowPlanes) {
  const auto dw = [](Shape x, int64_t k0, int64_t k1, bool bias, ir::AttrMap attrs) {
    const int64_t c = x[1];
    attrs["group"] = c;
    Shape w = {c, 1, k0};
    if (x.size() == 4) w.push_back(k1);
    expect_onednn_matches_cpu(conv_call("conv", x, w, bias, std::move(attrs)), {1});
  };
  dw({2, 37, 16, 8}, 5, 5, true, {{"pads", ints{2, 2, 2, 2}}});
  dw({1, 20, 7, 7}, 3, 3, false, {{"strides", ints{2, 2}}, {"pads", ints{1, 0, 2, 1}}});
  dw({1, 33, 12, 10}, 3, 3, true, {{"dilations", ints{2, 3}}, {"pads", ints{2, 3, 2, 3}}});
  dw({1, 17, 3, 3}, 5, 5, true, {{"pads", ints{2, 2, 2, 2}}});
  dw({1, 40, 15}, 3, 0, true, {{"pads", ints{1, 1}}});
  dw({1, 3, 4, 80}, 1, 71, true, {{"pads", ints{0, 35, 0, 35}}});  // 71 taps wide
}

TEST(OnednnConvTranspose, Plain2d) {
  expect_onednn_matches_cpu(conv_call("conv_transpose", {1, 4, 5, 6}, {4, 3, 3, 3}, true, {}), {1});
}

TEST(OnednnConvTranspose, StridedPaddedOutputPadding) {
  expect_onednn_matches_cpu(
      conv_call(
          "conv_transpose", {2, 6, 5, 4}, {6, 2, 3, 4}, true,
          {{"strides", ints{2, 3}}, {"pads", ints{1, 0, 1, 2}}, {"output_padding", ints{1, 2}}}),
      {1});
}

TEST(OnednnConvTranspose, OutputPaddingBeyondEndPad) {
  // output_padding larger than the end pad: oneDNN sees a negative right pad.
  expect_onednn_matches_cpu(conv_call("conv_transpose", {1, 3, 5, 5}, {3, 4, 3, 3}, true,
                                      {{"strides", ints{2, 3}}, {"output_padding", ints{1, 2}}}),
                            {1});
}

TEST(OnednnConvTranspose, GroupedDilated) {
  expect_onednn_matches_cpu(
      conv_call("conv_transpose", {1, 6, 7, 5}, {6, 2, 3, 2}, false,
                {{"group", int64_t{3}}, {"dilations", ints{2, 1}}, {"strides", ints{1, 2}}}),
      {1});
}

TEST(OnednnConvTranspose, OutputShapeAndAutoPad) {
  expect_onednn_matches_cpu(conv_call("conv_transpose", {1, 3, 4, 5}, {3, 2, 3, 3}, true,
                                      {{"strides", ints{2, 2}}, {"output_shape", ints{9, 10}}}),
                            {1});
  expect_onednn_matches_cpu(
      conv_call("conv_transpose", {1, 3, 4, 5}, {3, 2, 3, 3}, true,
                {{"strides", ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}),
      {1});
}

TEST(OnednnConvTranspose, OneDAndThreeD) {
  expect_onednn_matches_cpu(
      conv_call("conv_transpose", {2, 4, 9}, {4, 3, 3}, true, {{"strides", ints{2}}}), {1});
  expect_onednn_matches_cpu(
      conv_call("conv_transpose", {1, 2, 3, 4, 3}, {2, 3, 2, 2, 2}, false, {}), {1});
}

// Plain 3x3 stride-1 `conv` nodes wide enough for Winograd (the backend's own F(2x2, 3x3),
// conv_winograd.cpp, unless FRAME_WINOGRAD=0; then with FRAME_ONEDNN_WINOGRAD=1 oneDNN's
// jit_fp32_wino_2x3 on AVX-512; direct otherwise) against a float64 conv
// computed here: within the BUILD-011 f32 cross-backend class on unit-normal data with
// 1/sqrt(fan-in) weights. Cost: about 1 s.
TEST(OnednnConv, WinogradShapesWithinCrossBackendToleranceOfFloat64) {
  for (const auto& [ch, hw] : std::vector<std::pair<int64_t, int64_t>>{{64, 14}, {128, 12}}) {
    OpCall c{"conv"};
    std::mt19937 rng(static_cast<uint32_t>(ch));
    std::normal_distribution<float> nd(0.F, 1.F);
    std::vector<float> x(static_cast<size_t>(ch * hw * hw)), w(static_cast<size_t>(ch * ch * 9));
    for (float& v : x) v = nd(rng);
    const float ws = 1.F / std::sqrt(static_cast<float>(ch * 9));
    for (float& v : w) v = nd(rng) * ws;
    c.inputs = {Tensor::from_vector<float>({1, ch, hw, hw}, x),
                Tensor::from_vector<float>({ch, ch, 3, 3}, w), Tensor()};
    c.attrs = {{"pads", ints{1, 1, 1, 1}}};
    c.constant_inputs = {1};
    Result<std::vector<Tensor>> got = run_op(c, "onednn");
    ASSERT_TRUE(got.is_ok()) << got.status().message();
    std::vector<double> ref(static_cast<size_t>(ch * hw * hw), 0.0);
    for (int64_t o = 0; o < ch; ++o) {
      for (int64_t i = 0; i < ch; ++i) {
        for (int64_t ky = 0; ky < 3; ++ky) {
          for (int64_t kx = 0; kx < 3; ++kx) {
            const double wv = w[static_cast<size_t>(((o * ch + i) * 3 + ky) * 3 + kx)];
            for (int64_t y = 0; y < hw; ++y) {
              const int64_t iy = y + ky - 1;
              if (iy < 0 || iy >= hw) continue;
              for (int64_t xx = 0; xx < hw; ++xx) {
                const int64_t ix = xx + kx - 1;
                if (ix < 0 || ix >= hw) continue;
                ref[static_cast<size_t>((o * hw + y) * hw + xx)] +=
                    wv * x[static_cast<size_t>((i * hw + iy) * hw + ix)];
              }
            }
          }
        }
      }
    }
    Tensor want = Tensor::from_vector<double>({1, ch, hw, hw}, ref);
    std::vector<float> got64((*got)[0].data<float>(), (*got)[0].data<float>() + (*got)[0].numel());
    std::vector<double> gd(got64.begin(), got64.end());
    const CompareResult r =
        compare_tensors(Tensor::from_vector<double>({1, ch, hw, hw}, gd), want,
                        tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
    EXPECT_TRUE(r.ok) << ch << " channels at " << hw << "x" << hw << ": " << r.message;
  }
}

TEST(OnednnConv, DeclinesF64SoTheChainFallsBack) {
  const ops::KernelDef* k = ops::KernelRegistry::global().find("conv", "onednn");
  ASSERT_NE(k, nullptr);
  OpCall c{"conv"};
  c.inputs = {Tensor::from_vector<double>({1, 1, 3, 3}, std::vector<double>(9, 1.0)),
              Tensor::from_vector<double>({1, 1, 1, 1}, {2.0}), Tensor()};
  Result<std::vector<Tensor>> r = run_op(c, "onednn");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("f64"), std::string::npos) << r.status().message();
}

TEST(OnednnConv, RunsOnOnednnThroughCompile) {
  ir::Graph g("conv");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 8, 12, 12}});
  const ir::ValueId w = g.add_constant("w", grid_tensor({16, 8, 3, 3}, 5));
  const ir::ValueId b = g.add_constant("b", grid_tensor({16}, 6));
  Result<ir::NodeId> n = g.create_node("conv", "c0", {x, w, b}, 1,
                                       {{"pads", ints{1, 1, 1, 1}}, {"strides", ints{2, 2}}});
  ASSERT_TRUE(n.is_ok()) << n.status().message();
  g.add_output(g.node(*n).outputs[0]);
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  Result<runtime::Executable> fast = runtime::compile(g, on);
  ASSERT_TRUE(fast.is_ok()) << fast.status().message();
  const runtime::Placement p = placement_of(*fast, "c0");
  EXPECT_EQ(p.backend, "onednn");
  EXPECT_EQ(p.path, "kernel");
  runtime::CompileOptions ref = uncached({"cpu"});
  Result<runtime::Executable> slow = runtime::compile(g, ref);
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  const runtime::TensorMap in{{"x", grid_tensor({1, 8, 12, 12}, 7)}};
  Result<runtime::TensorMap> a = fast->run(in), e = slow->run(in);
  ASSERT_TRUE(a.is_ok() && e.is_ok());
  const CompareResult c =
      compare_tensors(a->begin()->second, e->begin()->second, tolerance_for(DTypeCode::kFloat32));
  EXPECT_TRUE(c.ok) << c.message;
}

// Executable::run is re-entrant: concurrent runs share the prepared primitive and packed
// weights, each with its own stream and scratch buffers.
TEST(OnednnConv, ConcurrentRunsAgree) {
  ir::Graph g("conv");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 16, 20, 20}});
  const ir::ValueId w = g.add_constant("w", grid_tensor({16, 16, 3, 3}, 5));
  const ir::NodeId n = *g.create_node("conv", "c0", {x, w}, 1, {{"pads", ints{1, 1, 1, 1}}});
  const ir::NodeId r = *g.create_node("relu", "r0", {g.node(n).outputs[0]}, 1);
  g.add_output(g.node(r).outputs[0]);
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  on.num_threads = 1;
  Result<runtime::Executable> exe = runtime::compile(g, on);
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  runtime::CompileOptions ref = uncached({"cpu"});
  Result<runtime::Executable> slow = runtime::compile(g, ref);
  ASSERT_TRUE(slow.is_ok());
  constexpr int kThreads = 4;
  std::vector<runtime::TensorMap> in(kThreads), out(kThreads);
  std::vector<std::thread> pool;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    in[static_cast<size_t>(t)] = {{"x", grid_tensor({1, 16, 20, 20}, 100 + t)}};
    pool.emplace_back([&, t] {
      for (int rep = 0; rep < 10; ++rep) {
        Result<runtime::TensorMap> o = exe->run(in[static_cast<size_t>(t)]);
        if (!o.is_ok()) {
          ++failures;
          return;
        }
        out[static_cast<size_t>(t)] = *o;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  ASSERT_EQ(failures.load(), 0);
  for (int t = 0; t < kThreads; ++t) {
    Result<runtime::TensorMap> e = slow->run(in[static_cast<size_t>(t)]);
    ASSERT_TRUE(e.is_ok());
    const CompareResult c = compare_tensors(out[static_cast<size_t>(t)].begin()->second,
                                            e->begin()->second, tolerance_for(DTypeCode::kFloat32));
    EXPECT_TRUE(c.ok) << "thread " << t << ": " << c.message;
  }
}

TEST(OnednnPackedWeights, OneObjectPerConstantAndLayout) {
  using dnnl::memory;
  namespace dnn = backends::onednn;
  const Tensor w = grid_tensor({16, 8, 3, 3}, 11);
  const Tensor same_bytes = w.clone();  // equal values, another constant
  const memory::desc user({16, 8, 3, 3}, memory::data_type::f32, memory::format_tag::oihw);
  const memory::desc blocked({16, 8, 3, 3}, memory::data_type::f32, memory::format_tag::ohwi);
  ops::NodeContext ctx;
  ctx.op = "conv";
  ctx.node_name = "packed_weights_test";
  const size_t live_before = dnn::packed_weight_stats().live;
  Result<std::shared_ptr<const dnn::PackedWeights>> a = dnn::pack_weights(ctx, user, blocked, w);
  Result<std::shared_ptr<const dnn::PackedWeights>> b = dnn::pack_weights(ctx, user, blocked, w);
  Result<std::shared_ptr<const dnn::PackedWeights>> c =
      dnn::pack_weights(ctx, user, blocked, same_bytes);
  Result<std::shared_ptr<const dnn::PackedWeights>> plain = dnn::pack_weights(ctx, user, user, w);
  ASSERT_TRUE(a.is_ok() && b.is_ok() && c.is_ok() && plain.is_ok());
  EXPECT_EQ(a->get(), b->get());
  EXPECT_EQ((*a)->mem.get_data_handle(), (*b)->mem.get_data_handle());
  EXPECT_NE(a->get(), c->get());
  // Already in the primitive's layout: the constant's own bytes, no copy.
  EXPECT_EQ((*plain)->mem.get_data_handle(), w.raw_data());
  // ohwi of oihw: element (o, i, h, w) at ((o * 3 + h) * 3 + w) * 8 + i.
  const float* packed = static_cast<const float*>((*a)->mem.get_data_handle());
  for (int64_t o = 0; o < 16; ++o) {
    for (int64_t i = 0; i < 8; ++i) {
      for (int64_t k = 0; k < 9; ++k) {
        ASSERT_EQ(packed[(o * 9 + k) * 8 + i], w.data<float>()[(o * 8 + i) * 9 + k])
            << o << "," << i << "," << k;
      }
    }
  }
  EXPECT_EQ(dnn::packed_weight_stats().live, live_before + 3);
  *a = nullptr;
  *b = nullptr;
  *c = nullptr;
  *plain = nullptr;
  EXPECT_EQ(dnn::packed_weight_stats().live, live_before);
}

TEST(OnednnPackedWeights, TheInterpretersHeldStatesKeepThemAcrossSizes) {
  // The interpreted tier (ADR 0007 stage C) prepares every node per run; a Session holds its
  // last runs' prepared states (HeldStates), so the next size finds the packed weights instead of
  // rearranging them again. A transB gemm over constant weights is packed once into the own
  // matmul loops' strips (VecTable::gemm_packed); the interpreted tier's conv
  // (conv_agnostic.cpp) reads its weights as they are and packs nothing.
  namespace dnn = backends::onednn;
  const Tensor w = grid_tensor({16, 8}, 13);  // a transB gemm's
  const Tensor wc = grid_tensor({16, 8, 3, 3}, 14);
  const auto graph = [&](int64_t h) {
    ir::Graph g("matmul_conv");
    const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {h, 8}});
    const ir::ValueId wv = g.add_constant("w", w);
    const ir::ValueId y =
        g.node(*g.create_node("gemm", "mm", {x, wv}, 1, {{"transB", int64_t{1}}}, {"y"}))
            .outputs[0];
    g.value(y).type = ir::TensorType{DTypeCode::kFloat32, {h, 16}};
    g.add_output(y);
    const ir::ValueId xc = g.add_input("xc", {DTypeCode::kFloat32, {1, 8, h, h}});
    const ir::ValueId wcv = g.add_constant("wc", wc);
    ir::AttrMap a;
    a["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    const ir::ValueId yc = g.node(*g.create_node("conv", "c", {xc, wcv}, 1, a, {"yc"})).outputs[0];
    g.value(yc).type = ir::TensorType{DTypeCode::kFloat32, {1, 16, h, h}};
    g.add_output(yc);
    return g;
  };
  runtime::CompileOptions o = uncached({"onednn", "cpu"});
  o.num_threads = 1;
  const auto run = [&](int64_t h, const runtime::CompileOptions& opts) {
    return runtime::detail::interpret(
        graph(h), {{"x", grid_tensor({h, 8}, 5)}, {"xc", grid_tensor({1, 8, h, h}, 6)}}, opts,
        nullptr);
  };
  const uint64_t packs0 = dnn::packed_weight_stats().packs;
  runtime::detail::Interpreted first = run(12, o);
  ASSERT_TRUE(first.status.is_ok()) << first.status.message();
  const uint64_t packs1 = dnn::packed_weight_stats().packs;
  EXPECT_EQ(packs1, packs0 + 1);  // the gemm's weights; the conv's are read as they are
  runtime::detail::Interpreted second = run(20, o);  // `first` still holds its states
  ASSERT_TRUE(second.status.is_ok()) << second.status.message();
  EXPECT_EQ(dnn::packed_weight_stats().packs, packs1);
  for (runtime::detail::Interpreted* r : {&first, &second}) {
    r->states.clear();
    r->node_states.clear();  // kept for a next run's reuse: they hold the states too
  }
  runtime::detail::Interpreted third = run(20, o);  // nothing held: packed again
  ASSERT_TRUE(third.status.is_ok());
  EXPECT_GT(dnn::packed_weight_stats().packs, packs1);
  // The outputs against the cpu reference kernels'.
  runtime::detail::Interpreted ref = run(20, uncached({"cpu"}));
  ASSERT_TRUE(ref.status.is_ok());
  for (const char* name : {"y", "yc"}) {
    const CompareResult c = compare_tensors(third.outputs.at(name), ref.outputs.at(name),
                                            tolerance_for(DTypeCode::kFloat32));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
}

TEST(OnednnPackedWeights, TheInterpretedConvsTapWeightsAreSharedAcrossSizes) {
  // A dilated conv over a map too short for its outer rows of taps (dilation 6, pads 6, h < 6:
  // only the middle row of taps reads the input) keeps W restricted to those taps; that
  // arrangement is made once per constant and tap set (pack_weights_own), not per run.
  namespace dnn = backends::onednn;
  const Tensor wc = grid_tensor({16, 8, 3, 3}, 21);
  const auto graph = [&](int64_t h, int64_t w) {
    ir::Graph g("dilated");
    const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1, 8, h, w}});
    const ir::ValueId wv = g.add_constant("w", wc);
    ir::AttrMap a;
    a["pads"] = std::vector<int64_t>{6, 6, 6, 6};
    a["dilations"] = std::vector<int64_t>{6, 6};
    const ir::ValueId y = g.node(*g.create_node("conv", "c", {x, wv}, 1, a, {"y"})).outputs[0];
    g.value(y).type = ir::TensorType{DTypeCode::kFloat32, {1, 16, h, w}};
    g.add_output(y);
    return g;
  };
  runtime::CompileOptions o = uncached({"onednn", "cpu"});
  o.num_threads = 1;
  const auto run = [&](int64_t h, int64_t w, const runtime::CompileOptions& opts) {
    return runtime::detail::interpret(graph(h, w), {{"x", grid_tensor({1, 8, h, w}, 7)}}, opts,
                                      nullptr);
  };
  const uint64_t packs0 = dnn::packed_weight_stats().packs;
  runtime::detail::Interpreted first = run(5, 20, o);
  ASSERT_TRUE(first.status.is_ok()) << first.status.message();
  const uint64_t packs1 = dnn::packed_weight_stats().packs;
  EXPECT_EQ(packs1, packs0 + 1);
  runtime::detail::Interpreted second = run(4, 23, o);  // same taps; `first` holds its state
  ASSERT_TRUE(second.status.is_ok()) << second.status.message();
  EXPECT_EQ(dnn::packed_weight_stats().packs, packs1);
  runtime::detail::Interpreted ref = run(4, 23, uncached({"cpu"}));
  ASSERT_TRUE(ref.status.is_ok());
  const CompareResult c = compare_tensors(second.outputs.at("y"), ref.outputs.at("y"),
                                          tolerance_for(DTypeCode::kFloat32));
  EXPECT_TRUE(c.ok) << c.message;
}

// `exe` (compiled from `g`, whose one input is "x") against the cpu reference kernels on a grid
// input made from `seed`.
void expect_matches_cpu(const ir::Graph& g, const runtime::Executable& exe, uint32_t seed) {
  Result<runtime::Executable> ref = runtime::compile(g, uncached({"cpu"}));
  ASSERT_TRUE(ref.is_ok());
  const Shape xs = g.value(g.inputs()[0]).type->shape;
  const runtime::TensorMap in{{"x", grid_tensor(xs, seed)}};
  Result<runtime::TensorMap> a = exe.run(in), e = ref->run(in);
  ASSERT_TRUE(a.is_ok() && e.is_ok());
  const CompareResult cmp =
      compare_tensors(a->begin()->second, e->begin()->second, tolerance_for(DTypeCode::kFloat32));
  EXPECT_TRUE(cmp.ok) << shape_to_string(xs) << ": " << cmp.message;
}

TEST(OnednnPackedWeights, CompilesForOtherInputShapesShareThem) {
  // What a session does for each new input shape: compile the graph again around the same
  // constant. The second compile creates a new primitive but packs nothing.
  const Tensor w = grid_tensor({16, 8, 3, 3}, 12);
  auto graph_for = [&](int64_t hw) {
    ir::Graph g("conv");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 8, hw, hw}});
    const ir::ValueId wv = g.add_constant("w", w);
    const ir::NodeId n = *g.create_node("conv", "c0", {x, wv}, 1, {{"pads", ints{1, 1, 1, 1}}});
    g.add_output(g.node(n).outputs[0]);
    return g;
  };
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  on.num_threads = 1;
  const ir::Graph g12 = graph_for(12), g20 = graph_for(20);
  Result<runtime::Executable> first = runtime::compile(g12, on);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  ASSERT_EQ(placement_of(*first, "c0").backend, "onednn");
  const backends::onednn::PackedWeightStats before = backends::onednn::packed_weight_stats();
  Result<runtime::Executable> second = runtime::compile(g20, on);
  ASSERT_TRUE(second.is_ok()) << second.status().message();
  const backends::onednn::PackedWeightStats after = backends::onednn::packed_weight_stats();
  EXPECT_EQ(after.packs, before.packs);
  EXPECT_EQ(after.reuses, before.reuses + 1);
  EXPECT_EQ(after.live, before.live);
  // Both still compute the convolution (the cpu kernel is the reference).
  expect_matches_cpu(g12, *first, 13);
  expect_matches_cpu(g20, *second, 13);
}

// Convolution descriptors are built once per distinct conv (pd_cache.h): the node's accepts(),
// the layout pass, the fusion patterns and prepare() of one compile share one, and a second
// compile of the same graph (a Session's tier-up, another session) creates none, while a new
// input size creates new ones. Outputs stay the reference's. Under 0.2 s.
TEST(OnednnConvDescriptors, OnePerDistinctConvAcrossCompiles) {
  const Tensor w1 = grid_tensor({16, 8, 3, 3}, 14), w2 = grid_tensor({16, 16, 1, 1}, 15);
  auto graph_for = [&](int64_t hw) {
    ir::Graph g("conv2");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 8, hw, hw}});
    const ir::ValueId a = g.node(*g.create_node("conv", "c0", {x, g.add_constant("w1", w1)}, 1,
                                                {{"pads", ints{1, 1, 1, 1}}}))
                              .outputs[0];
    const ir::ValueId r = g.node(*g.create_node("relu", "r0", {a}, 1, {})).outputs[0];
    const ir::NodeId c1 = *g.create_node("conv", "c1", {r, g.add_constant("w2", w2)}, 1, {});
    g.add_output(g.node(c1).outputs[0]);
    return g;
  };
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  on.num_threads = 1;
  const ir::Graph g9 = graph_for(9), g13 = graph_for(13);
  const backends::onednn::PdCacheStats start = backends::onednn::conv_cache_stats();
  Result<runtime::Executable> first = runtime::compile(g9, on);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  ASSERT_EQ(placement_of(*first, "c1").backend, "onednn");
  const backends::onednn::PdCacheStats one = backends::onednn::conv_cache_stats();
  // Two convs, each asked several times (fusion of the ReLU, layouts): at most a few distinct
  // descriptors (a conv with and without its fused ReLU, plain and blocked layouts), and
  // every later question is a hit.
  EXPECT_GE(one.created - start.created, 2u);
  EXPECT_LE(one.created - start.created, 6u);
  EXPECT_GT(one.hits, start.hits);
  Result<runtime::Executable> again = runtime::compile(g9, on);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_EQ(backends::onednn::conv_cache_stats().created, one.created);
  Result<runtime::Executable> other = runtime::compile(g13, on);
  ASSERT_TRUE(other.is_ok()) << other.status().message();
  EXPECT_GT(backends::onednn::conv_cache_stats().created, one.created);
  expect_matches_cpu(g9, *first, 16);
  expect_matches_cpu(g9, *again, 16);
  expect_matches_cpu(g13, *other, 16);
}

}  // namespace
}  // namespace frame::test::linear
