// The onednn backend's own Winograd F(2x2, 3x3) conv (src/backends/onednn/kernels/
// conv_winograd.cpp; docs/backends/onednn.md#convolution-matmul-and-gemm): where it applies
// (make_winograd_conv's checks, each refusal naming its reason), and what it computes against a
// float64 conv written here, within the BUILD-011 f32 cross-backend class: nhwc, nChw8c and
// nChw16c activations with plain NCHW sides among them, symmetric, asymmetric and no padding, odd
// output sizes (tiles cut at the edge), two images, bias and residual present or not, blocks of
// tiles and output-channel ranges split over threads, on every Highway target this CPU supports.
// Cost: about 2 s.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backends/onednn/kernels/hwy_targets.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

struct WinoCase {
  Shape x;             // [N, C, H, W]
  int64_t m = 0;       // output channels
  ints pads;           // top, left, bottom, right
  int64_t layout = 8;  // of X, Y and R: 1 nhwc, 8 nChw8c, 16 nChw16c
  bool bias = true;
  bool residual = true;  // post-ops add R then relu; else relu alone
  int plain = 0;         // sides in plain NCHW instead: 1 X, 2 Y, 4 R (a bit mask)
  int64_t kernel = 3, group = 1;

  int64_t side(int bit) const { return (plain & bit) != 0 ? 0 : layout; }
};

std::vector<float> normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.F, 1.F);
  std::vector<float> v(n);
  for (float& x : v) x = nd(rng) * scale;
  return v;
}

// The fused conv node of `c` (3x3, stride 1) in a graph whose inputs are x and, with a
// residual, r; weights and bias constant.
struct WinoGraph {
  ir::Graph g{"winograd"};
  ir::NodeId node = -1;
  Shape y;
  std::vector<float> w, b;
};

std::unique_ptr<WinoGraph> wino_graph(const WinoCase& c, ir::AttrMap extra = {},
                                      bool weights_constant = true) {
  auto wg = std::make_unique<WinoGraph>();
  const int64_t n = c.x[0], ch = c.x[1];
  const int64_t oh = c.x[2] + c.pads[0] + c.pads[2] - c.kernel + 1,
                ow = c.x[3] + c.pads[1] + c.pads[3] - c.kernel + 1;
  wg->y = {n, c.m, oh, ow};
  const int64_t k = c.kernel, cg = ch / c.group;
  wg->w = normal(static_cast<size_t>(c.m * cg * k * k), 3,
                 1.F / std::sqrt(9.F * static_cast<float>(ch)));
  wg->b = normal(static_cast<size_t>(c.m), 4, 0.5F);
  ir::Graph& g = wg->g;
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, c.x});
  const ir::ValueId w =
      weights_constant ? g.add_constant("w", Tensor::from_vector<float>({c.m, cg, k, k}, wg->w))
                       : g.add_input("w", ir::TensorType{DTypeCode::kFloat32, {c.m, cg, k, k}});
  const ir::ValueId b =
      c.bias ? g.add_constant("b", Tensor::from_vector<float>({c.m}, wg->b)) : ir::kNoValue;
  std::vector<ir::ValueId> in{x, w, b};
  std::vector<std::string> post{"relu"};
  if (c.residual) {
    in.push_back(g.add_input("r", ir::TensorType{DTypeCode::kFloat32, wg->y}));
    post = {"add", "relu"};
  }
  ir::AttrMap attrs{{"base_op", std::string("conv")},
                    {"post_ops", post},
                    {"post_op_params", std::vector<double>(2 * post.size(), 0.0)},
                    {"pads", c.pads},
                    {"group", c.group},
                    {"src_layout", c.side(1)},
                    {"dst_layout", c.side(2)},
                    {"residual_layout", c.residual ? c.side(4) : int64_t{0}}};
  for (auto& [k, v] : extra) attrs[k] = v;
  Result<ir::NodeId> id = g.create_node("fused_post_ops_internal", "f", in, 1, attrs, {"y"});
  EXPECT_TRUE(id.is_ok()) << id.status().message();
  if (!id.is_ok()) return nullptr;
  wg->node = *id;
  g.add_output(g.node(*id).outputs[0]);
  return wg;
}

// make_winograd_conv on the node of `wg` (the checks only, as accepts() asks).
Status winograd_applies(const WinoGraph& wg) {
  const ir::Node& n = wg.g.node(wg.node);
  const ops::NodeContext ctx =
      ops::make_node_context(wg.g, n, ops::OpRegistry::global().find("fused_post_ops_internal"));
  Result<ops::fused::FusedSpec> spec = ops::fused::decode_fused(ctx);
  if (!spec.is_ok()) return spec.status();
  const backends::onednn::ConvLayouts layouts{spec->src_layout, spec->dst_layout,
                                              spec->residual_layout};
  return backends::onednn::make_winograd_conv(ctx, spec->post_ops, layouts, false).status();
}

// relu(conv(x, w) + b + r) in float64, plain [N, M, OH, OW].
std::vector<double> reference(const WinoCase& c, const WinoGraph& wg, const std::vector<float>& x,
                              const std::vector<float>& r) {
  const int64_t n = c.x[0], ch = c.x[1], h = c.x[2], w = c.x[3];
  const int64_t oh = wg.y[2], ow = wg.y[3];
  std::vector<double> y(static_cast<size_t>(n * c.m * oh * ow));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t o = 0; o < c.m; ++o) {
      for (int64_t py = 0; py < oh; ++py) {
        for (int64_t px = 0; px < ow; ++px) {
          double s = c.bias ? wg.b[static_cast<size_t>(o)] : 0.0;
          for (int64_t k = 0; k < ch; ++k) {
            for (int64_t ky = 0; ky < 3; ++ky) {
              const int64_t iy = py + ky - c.pads[0];
              if (iy < 0 || iy >= h) continue;
              for (int64_t kx = 0; kx < 3; ++kx) {
                const int64_t ix = px + kx - c.pads[1];
                if (ix < 0 || ix >= w) continue;
                s += static_cast<double>(
                         wg.w[static_cast<size_t>(((o * ch + k) * 3 + ky) * 3 + kx)]) *
                     x[static_cast<size_t>(((i * ch + k) * h + iy) * w + ix)];
              }
            }
          }
          const auto at = static_cast<size_t>(((i * c.m + o) * oh + py) * ow + px);
          if (c.residual) s += r[at];
          y[at] = std::max(s, 0.0);
        }
      }
    }
  }
  return y;
}

std::vector<WinoCase> cases() {
  return {
      // Odd output (7x9: the last tile row and column cut), two images, nChw8c.
      {{2, 32, 7, 9}, 48, {1, 1, 1, 1}, 8, true, true},
      // No padding, asymmetric padding, nhwc, no bias.
      {{1, 40, 10, 6}, 32, {0, 0, 0, 0}, 1, false, true},
      {{1, 64, 9, 8}, 40, {0, 2, 1, 0}, 1, true, false},
      // nChw16c (channels not a multiple of 16 are not representable there: 32 / 48).
      {{1, 48, 11, 11}, 32, {1, 1, 1, 1}, 16, true, true},
      // Many tiles (several blocks of tiles), and a deep 7x7 layer whose 16 tiles are one block:
      // its output channels are split into ranges at 2 threads.
      {{1, 32, 40, 38}, 32, {1, 1, 1, 1}, 8, true, true},
      {{1, 256, 7, 7}, 256, {1, 1, 1, 1}, 8, true, true},
      // Plain NCHW sides (64 channels on the other side): X; Y and R; all three (a residual
      // written over in place is the compile's choice, not this graph's: R is a graph input).
      {{1, 32, 9, 10}, 64, {1, 1, 1, 1}, 8, true, true, 1},
      {{2, 64, 6, 7}, 32, {1, 0, 1, 2}, 1, true, true, 6},
      {{1, 64, 12, 5}, 64, {1, 1, 1, 1}, 16, false, true, 7},
  };
}

TEST(OnednnWinograd, MatchesAFloat64ConvOnEveryTarget) {
  if (!backends::onednn::winograd_conv_enabled()) GTEST_SKIP() << "FRAME_WINOGRAD=0";
  for (int64_t target : backends::onednn::vec_targets_supported()) {
    backends::onednn::set_vec_target_for_test(target);
    for (const WinoCase& c : cases()) {
      std::unique_ptr<WinoGraph> wg = wino_graph(c);
      ASSERT_NE(wg, nullptr);
      const std::string what = shape_to_string(c.x) + " -> " + std::to_string(c.m) + " layout " +
                               std::to_string(c.layout) + " plain " + std::to_string(c.plain) +
                               " target " + std::to_string(target);
      Status applies = winograd_applies(*wg);
      ASSERT_TRUE(applies.is_ok()) << what << ": " << applies.message();
      const std::vector<float> x = normal(static_cast<size_t>(numel_of(c.x)), 1, 1.F);
      const std::vector<float> r = normal(static_cast<size_t>(numel_of(wg->y)), 2, 1.F);
      const std::vector<double> want = reference(c, *wg, x, r);
      const Tensor want_laid =
          to_layout(Tensor::from_vector<float>(wg->y, std::vector<float>(want.begin(), want.end())),
                    c.side(2));
      for (int threads : {1, 2}) {
        runtime::CompileOptions o = uncached({"onednn"});
        o.num_threads = threads;
        Result<runtime::Executable> exe = runtime::compile(wg->g, o);
        ASSERT_TRUE(exe.is_ok()) << what << ": " << exe.status().message();
        ASSERT_EQ(placement_of(*exe, "f").backend, "onednn") << what;
        runtime::TensorMap in{{"x", to_layout(Tensor::from_vector<float>(c.x, x), c.side(1))}};
        if (c.residual) in["r"] = to_layout(Tensor::from_vector<float>(wg->y, r), c.side(4));
        // Into an output of NaN: a pixel the kernel leaves unwritten fails the compare.
        runtime::TensorMap out{
            {"y",
             Tensor::from_vector<float>(
                 wg->y, std::vector<float>(static_cast<size_t>(numel_of(wg->y)), std::nanf("")))}};
        Status run = exe->run(in, out);
        ASSERT_TRUE(run.is_ok()) << what << ": " << run.message();
        // want_laid holds the float64 result rounded once to f32; the class bounds the rest.
        const CompareResult cmp =
            compare_tensors(out.at("y"), want_laid,
                            tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
        EXPECT_TRUE(cmp.ok) << what << " at " << threads << " thread(s): " << cmp.message;
      }
    }
  }
  backends::onednn::set_vec_target_for_test(0);
}

// Each condition of make_winograd_conv refuses on its own, naming what does not apply; the
// base case applies.
TEST(OnednnWinograd, AppliesOnlyToUngroupedStrideOne3x3ConvsOverConstantWeights) {
  if (!backends::onednn::winograd_conv_enabled()) GTEST_SKIP() << "FRAME_WINOGRAD=0";
  const WinoCase base{{1, 32, 8, 8}, 32, {1, 1, 1, 1}, 8, true, true};
  {
    std::unique_ptr<WinoGraph> wg = wino_graph(base);
    ASSERT_NE(wg, nullptr);
    EXPECT_TRUE(winograd_applies(*wg).is_ok()) << winograd_applies(*wg).message();
  }
  {
    // No residual: R's layout (plain, as the attribute's default) is not asked about.
    WinoCase alone = base;
    alone.residual = false;
    std::unique_ptr<WinoGraph> wg = wino_graph(alone);
    ASSERT_NE(wg, nullptr);
    EXPECT_TRUE(winograd_applies(*wg).is_ok()) << winograd_applies(*wg).message();
  }
  const auto refused = [](std::unique_ptr<WinoGraph> wg, const std::string& reason) {
    ASSERT_NE(wg, nullptr);
    const Status s = winograd_applies(*wg);
    ASSERT_FALSE(s.is_ok()) << reason;
    EXPECT_NE(s.message().find(reason), std::string::npos) << s.message();
  };
  refused(wino_graph(base, {{"strides", ints{2, 2}}}), "stride");
  refused(wino_graph(base, {{"dilations", ints{2, 2}}, {"pads", ints{2, 2, 2, 2}}}), "dilation");
  // A plain side needs 64 channels on the other side (32 -> 32 here).
  WinoCase plain_x = base;
  plain_x.plain = 1;
  refused(wino_graph(plain_x), "plain NCHW X with 32 output");
  WinoCase plain_r = base;
  plain_r.plain = 4;
  refused(wino_graph(plain_r), "plain NCHW Y with 32 input");
  WinoCase grouped = base;
  grouped.group = 2;
  refused(wino_graph(grouped), "grouped");
  WinoCase wide = base;
  wide.kernel = 5;
  wide.pads = {2, 2, 2, 2};
  refused(wino_graph(wide), "5x5");
  refused(wino_graph(base, {}, false), "run time");
  WinoCase narrow = base;  // nhwc: any channel count is representable
  narrow.layout = 1;
  narrow.x[1] = 16;
  refused(wino_graph(narrow), "16 input");
  WinoCase odd = base;
  odd.layout = 1;
  odd.m = 36;
  refused(wino_graph(odd), "36 output");
}

}  // namespace
}  // namespace frame::test::linear
