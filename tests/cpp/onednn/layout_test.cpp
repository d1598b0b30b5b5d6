// Blocked activations between onednn convs (src/backends/onednn/patterns.cpp,
// keep_blocked_activations; docs/backends/onednn.md#convolution-matmul-and-gemm): the pattern
// marks exactly the conv -> conv edges (not an edge read by a pool or an add, not a graph
// output, not C = 24 when the layout is nChw16c), the marked graph computes what the cpu-only
// compile does (BUILD-011), and the cpu reference kernel of fused_post_ops_internal honours the
// layout attributes (inputs blocked by hand here).

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

// Layout attribute values (src/ops/schemas/nn_fused_internal.h).
constexpr int64_t kNhwc = 1;
constexpr int64_t kBlocked = 16;  // nChw16c
constexpr std::string_view kSrc = "src_layout", kDst = "dst_layout", kRes = "residual_layout";

// Runs the standard pipeline on `g` (verifying after every pass).
void lower(ir::Graph& g, std::vector<std::string> backends) {
  passes::PassContext ctx;
  ctx.backends = std::move(backends);
  ctx.verify_after_each = true;
  Status s = passes::run_pipeline(g, passes::kStandardPipeline, ctx);
  ASSERT_TRUE(s.is_ok()) << s.message();
}

// Int attribute `name` of the live node named `node` (0 when absent, -1 when no such node).
int64_t layout_attr(const ir::Graph& g, const std::string& node, std::string_view name) {
  for (ir::NodeId id : g.node_ids()) {
    const ir::Node& n = g.node(id);
    if (n.name != node) continue;
    auto it = n.attrs.find(std::string(name));
    if (it == n.attrs.end()) return 0;
    const auto* v = std::get_if<int64_t>(&it->second);
    return v == nullptr ? 0 : *v;
  }
  ADD_FAILURE() << "no node '" << node << "'";
  return -1;
}

std::string op_of(const ir::Graph& g, const std::string& node) {
  for (ir::NodeId id : g.node_ids()) {
    if (g.node(id).name == node) return g.node(id).op;
  }
  return "";
}

ir::ValueId conv(ir::Graph& g, const std::string& name, ir::ValueId x, int64_t cin, int64_t cout,
                 int64_t k, int64_t group, uint32_t seed) {
  // Weights in [-1/8, 1/8] (powers of two apart from the grid): activations stay O(1) over
  // the chain, so the comparison measures the kernels, not cancellation.
  Tensor wt = grid_tensor({cout, cin / group, k, k}, seed);
  for (int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] *= 0.0625F;
  const ir::ValueId w = g.add_constant(name + "_w", std::move(wt));
  const ir::ValueId b = g.add_constant(name + "_b", grid_tensor({cout}, seed + 100));
  const int64_t p = k / 2;
  return g
      .node(*g.create_node("conv", name, {x, w, b}, 1,
                           {{"pads", ints{p, p, p, p}}, {"group", group}}))
      .outputs[0];
}

ir::ValueId unary(ir::Graph& g, const std::string& op, const std::string& name, ir::ValueId x) {
  return g.node(*g.create_node(op, name, {x}, 1)).outputs[0];
}

// x[1,16,10,10] -> c1 (1x1, 32) -> relu = a; a -> dw (3x3 depthwise) -> relu -> c3 (1x1, 32)
// -> + a (residual) = c; c -> c4 (3x3, 32) -> out4; c -> max_pool -> out_pool; and a C = 24
// branch: x -> e1 (1x1, 24) -> e2 (1x1, 32) -> out_e.
// Marked edges: a (c1 -> dw as X, c1 -> c3 as R) and dw -> c3. Not marked: c (read by a pool),
// out4 (graph output), e1 -> e2 (C = 24).
ir::Graph chain() {
  ir::Graph g("layout_chain");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 16, 10, 10}});
  const ir::ValueId a = unary(g, "relu", "r1", conv(g, "c1", x, 16, 32, 1, 1, 1));
  const ir::ValueId d = unary(g, "relu", "r2", conv(g, "dw", a, 32, 32, 3, 32, 2));
  const ir::ValueId c3 = conv(g, "c3", d, 32, 32, 1, 1, 3);
  const ir::ValueId c = g.node(*g.create_node("add", "add3", {c3, a}, 1)).outputs[0];
  const ir::ValueId out4 = conv(g, "c4", c, 32, 32, 3, 1, 4);
  const ir::ValueId pool =
      g.node(*g.create_node("max_pool", "pool", {c}, 1, {{"kernel_shape", ints{2, 2}}})).outputs[0];
  const ir::ValueId e2 = conv(g, "e2", conv(g, "e1", x, 16, 24, 1, 1, 5), 24, 32, 1, 1, 6);
  g.add_output(out4);
  g.add_output(pool);
  g.add_output(e2);
  return g;
}

TEST(OnednnLayout, PatternMarksExactlyTheInnerConvEdges) {
  ir::Graph g = chain();
  lower(g, {"onednn", "cpu"});
  const auto src = kSrc;
  const auto dst = kDst;
  const auto res = kRes;
  for (const char* n : {"c1", "dw", "c3"}) {
    EXPECT_EQ(op_of(g, n), "fused_post_ops_internal") << n;
  }
  // The layout oneDNN picks on this CPU (nhwc for its brgemm convs on AVX-512, nChw16c for
  // its older jit convs).
  const int64_t l = layout_attr(g, "c1", dst);
  if (l == 0 && !__builtin_cpu_supports("avx512f")) {
    // Without AVX-512 oneDNN's convs pick nChw8c, a layout frame does not carry: the pattern
    // must then leave every edge plain.
    for (const char* n : {"c1", "dw", "c3", "c4", "e1", "e2"}) {
      for (std::string_view a : {src, dst, res}) EXPECT_EQ(layout_attr(g, n, a), 0) << n << a;
    }
    GTEST_SKIP() << "oneDNN picks nChw8c on this CPU (no AVX-512): checked that no edge is "
                    "marked";
  }
  ASSERT_TRUE(l == kNhwc || l == kBlocked) << l;
  // a = relu(c1): read by dw (X) and by c3 (R) only.
  EXPECT_EQ(layout_attr(g, "dw", src), l);
  EXPECT_EQ(layout_attr(g, "c3", res), l);
  // dw -> c3.
  EXPECT_EQ(layout_attr(g, "dw", dst), l);
  EXPECT_EQ(layout_attr(g, "c3", src), l);
  // c3's output is read by the pool too; c4's is a graph output; x is a graph input.
  EXPECT_EQ(layout_attr(g, "c3", dst), 0);
  EXPECT_EQ(layout_attr(g, "c4", src), 0);
  EXPECT_EQ(layout_attr(g, "c4", dst), 0);
  EXPECT_EQ(layout_attr(g, "c1", src), 0);
  // C = 24: nChw16c cannot hold it (plain); nhwc can.
  const int64_t l24 = l == kNhwc ? kNhwc : 0;
  EXPECT_EQ(layout_attr(g, "e1", dst), l24);
  EXPECT_EQ(layout_attr(g, "e2", src), l24);
  EXPECT_EQ(layout_attr(g, "e2", dst), 0);
  EXPECT_EQ(op_of(g, "e1"), l24 != 0 ? "fused_post_ops_internal" : "conv");
}

TEST(OnednnLayout, NothingMarkedWithCpuOnly) {
  ir::Graph g = chain();
  lower(g, {"cpu"});
  EXPECT_EQ(op_of(g, "c1"), "conv");
  EXPECT_EQ(layout_attr(g, "c1", kDst), 0);
}

TEST(OnednnLayout, BlockedChainMatchesCpu) {
  const ir::Graph g = chain();
  runtime::CompileOptions ref = uncached({"cpu"});
  Result<runtime::Executable> slow = runtime::compile(g, ref);
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  const runtime::TensorMap inputs{{"x", grid_tensor({1, 16, 10, 10}, 9)}};
  Result<runtime::TensorMap> e = slow->run(inputs);
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  for (int threads : {1, 2}) {
    runtime::CompileOptions on = uncached({"onednn", "cpu"});
    on.num_threads = threads;
    Result<runtime::Executable> fast = runtime::compile(g, on);
    ASSERT_TRUE(fast.is_ok()) << fast.status().message();
    for (const char* n : {"c1", "dw", "c3"}) {
      const runtime::Placement p = placement_of(*fast, n);
      EXPECT_EQ(p.backend, "onednn") << n;
      EXPECT_EQ(p.path, "kernel") << n;
    }
    Result<runtime::TensorMap> a = fast->run(inputs);
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    ASSERT_EQ(a->size(), 3u);
    for (const auto& [name, t] : *e) {
      // Five convs in a chain: the deep-network class (BUILD-011).
      const CompareResult c = compare_tensors(
          a->at(name), t, tolerance_for(DTypeCode::kFloat32, ToleranceClass::kDeepNetwork));
      EXPECT_TRUE(c.ok) << name << " (threads " << threads << "): " << c.message;
    }
  }
}

// Plain [N, C, H, W] -> nhwc (`layout` 1) or nChw16c (16), by index arithmetic independent of
// the kernels' helpers.
Tensor to_layout(const Tensor& t, int64_t layout) {
  const int64_t n = t.dim(0), c = t.dim(1), hw = t.dim(2) * t.dim(3);
  std::vector<float> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t ch = 0; ch < c; ++ch) {
      for (int64_t s = 0; s < hw; ++s) {
        const int64_t at = layout == kNhwc ? (i * hw + s) * c + ch
                                           : (((i * (c / 16)) + ch / 16) * hw + s) * 16 + ch % 16;
        out[static_cast<size_t>(at)] = t.data<float>()[(i * c + ch) * hw + s];
      }
    }
  }
  return Tensor::from_vector(t.shape(), out);
}

// One fused conv node (3x3, pads 1, + R, relu) with the layout attributes `layouts` (src, dst,
// residual), compiled for `backend` and run on (x, r) given in those layouts.
Result<Tensor> run_fused(const std::string& backend, const ints& layouts, const Tensor& x,
                         const Tensor& r, int64_t group) {
  ir::Graph g("fused_layout");
  const int64_t c = x.dim(1), m = r.dim(1);
  const ir::ValueId xv = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, x.shape()});
  const ir::ValueId rv = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, r.shape()});
  const ir::ValueId w = g.add_constant("w", grid_tensor({m, c / group, 3, 3}, 21));
  const ir::ValueId b = g.add_constant("b", grid_tensor({m}, 22));
  ir::AttrMap attrs{{"base_op", std::string("conv")},
                    {"post_ops", std::vector<std::string>{"add", "relu"}},
                    {"post_op_params", std::vector<double>{0, 0, 0, 0}},
                    {"pads", ints{1, 1, 1, 1}},
                    {"group", group},
                    {std::string(kSrc), layouts[0]},
                    {std::string(kDst), layouts[1]},
                    {std::string(kRes), layouts[2]}};
  FRAME_ASSIGN_OR_RETURN(
      ir::NodeId n, g.create_node("fused_post_ops_internal", "f", {xv, w, b, rv}, 1, attrs, {"y"}));
  g.add_output(g.node(n).outputs[0]);
  runtime::CompileOptions o = uncached({backend});
  FRAME_ASSIGN_OR_RETURN(runtime::Executable exe, runtime::compile(g, o));
  if (const runtime::Placement p = placement_of(exe, "f"); p.backend != backend) {
    return unimplemented("node f not on {}: {}", backend, fmt::join(p.rejected, "; "));
  }
  FRAME_ASSIGN_OR_RETURN(runtime::TensorMap out, exe.run({{"x", x}, {"r", r}}));
  return out.at("y");
}

// Every combination of plain / laid-out src, dst and residual, for nhwc and nChw16c, against
// the plain node on cpu, laid out by hand; on cpu (the reference kernel must honour the
// attributes, ARCH-041) and on onednn.
TEST(OnednnLayout, LayoutAttributesMatchThePlainComputation) {
  for (int64_t group : {1, 32}) {
    const Tensor x = grid_tensor({2, 32, 6, 5}, 11);
    const Tensor r = grid_tensor({2, 32, 6, 5}, 12);
    Result<Tensor> plain = run_fused("cpu", {0, 0, 0}, x, r, group);
    ASSERT_TRUE(plain.is_ok()) << plain.status().message();
    for (int64_t l : {kNhwc, kBlocked}) {
      for (int mask = 1; mask < 8; ++mask) {
        const ints layouts{mask & 1 ? l : 0, mask & 2 ? l : 0, mask & 4 ? l : 0};
        const Tensor xi = layouts[0] != 0 ? to_layout(x, l) : x;
        const Tensor ri = layouts[2] != 0 ? to_layout(r, l) : r;
        const Tensor want = layouts[1] != 0 ? to_layout(*plain, l) : *plain;
        for (const std::string backend : {"cpu", "onednn"}) {
          Result<Tensor> got = run_fused(backend, layouts, xi, ri, group);
          if (backend == "onednn" && l == kBlocked && !got.is_ok() &&
              !__builtin_cpu_supports("avx512f")) {
            // oneDNN has no jit convolution for nChw16c without AVX-512; the kernel declines
            // (the pattern never asks for it there, PatternMarksExactlyTheInnerConvEdges).
            EXPECT_NE(got.status().message().find("ref:any"), std::string::npos)
                << got.status().message();
            continue;
          }
          ASSERT_TRUE(got.is_ok())
              << backend << " layout " << l << " mask " << mask << ": " << got.status().message();
          // Grid inputs: exact sums in f32, so the op class holds on both backends (BUILD-011).
          const CompareResult c = compare_tensors(*got, want, tolerance_for(DTypeCode::kFloat32));
          EXPECT_TRUE(c.ok) << backend << " group " << group << " layout " << l << " mask " << mask
                            << ": " << c.message;
        }
      }
    }
  }
}

TEST(OnednnLayout, SchemaRejectsBadLayouts) {
  const Tensor x = grid_tensor({1, 24, 4, 4}, 1);
  // C = 24 is not a multiple of 16.
  Result<Tensor> got = run_fused("cpu", {kBlocked, 0, 0}, x, grid_tensor({1, 24, 4, 4}, 2), 1);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("src_layout"), std::string::npos) << got.status().message();
  // Only 0, 1 and 16 are layouts.
  const Tensor x32 = grid_tensor({1, 32, 4, 4}, 3);
  got = run_fused("cpu", {0, 8, 0}, x32, grid_tensor({1, 32, 4, 4}, 4), 1);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("dst_layout"), std::string::npos) << got.status().message();
}

}  // namespace
}  // namespace frame::test::linear
