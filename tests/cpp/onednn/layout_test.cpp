// Blocked activations between onednn convs (src/backends/onednn/patterns.cpp,
// keep_blocked_activations; docs/backends/onednn.md#convolution-matmul-and-gemm): the pattern
// marks exactly the conv -> conv edges (not an edge read by a pool or an add, not a graph
// output, not C = 24 when the layout is nChw16c), the marked graph computes what the cpu-only
// compile does (BUILD-011), and the cpu reference kernel of fused_post_ops_internal honours the
// layout attributes (inputs blocked by hand here).

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"
#include "ops/schemas/laid_out_internal.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

// Layout attribute values (src/ops/schemas/nn_fused_internal.h).
constexpr int64_t kNhwc = 1;
constexpr int64_t kBlocked = 16;  // nChw16c
constexpr int64_t kBlocked8 = 8;  // nChw8c (oneDNN's choice for AVX2 convs)
constexpr std::string_view kSrc = "src_layout", kDst = "dst_layout", kRes = "residual_layout";

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
// Marked edges: a (c1 -> dw as X, c1 -> c3 as R) and dw -> c3, and e1 -> e2 (C = 24) in a
// layout that holds 24 channels. Not marked: c (read by a pool whose output is a graph
// output), out4 (graph output).
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
  // its older jit convs there, nChw8c for its AVX2 convs); a max pool does not make the edges
  // next to it nhwc (elementwise nodes and global pools do, SqueezeExcitationEdgesAreNhwc).
  const int64_t l = layout_attr(g, "c1", dst);
  if (__builtin_cpu_supports("avx512f")) {
    ASSERT_TRUE(l == kNhwc || l == kBlocked) << l;
  } else {
    ASSERT_EQ(l, kBlocked8);
  }
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
  // e1 -> e2 (C = 24), away from any pool: the layout oneDNN picks on this CPU (nChw8c for
  // its AVX2 convs; on AVX-512 nhwc for brgemm, or nChw16c, which cannot hold 24 channels, so
  // nhwc where oneDNN has a fast nhwc conv for both sides, else plain).
  const int64_t l24 = !__builtin_cpu_supports("avx512f")   ? kBlocked8
                      : layout_attr(g, "e1", dst) == kNhwc ? kNhwc
                                                           : 0;
  EXPECT_EQ(layout_attr(g, "e1", dst), l24);
  EXPECT_EQ(layout_attr(g, "e2", src), l24);
  EXPECT_EQ(layout_attr(g, "e2", dst), 0);
  EXPECT_EQ(op_of(g, "e1"), l24 != 0 ? "fused_post_ops_internal" : "conv");
}

// A squeeze-excitation block on d [1,32,H,W] and the conv after it: gate = sigmoid(fc2(relu(
// fc1(global_average_pool(d))))) (fc1 32 -> 8, fc2 8 -> 32, weight seeds `seed` and seed + 1);
// scale = d * gate; c3 (1x1, 32 -> 16, seed + 2) of scale is a graph output.
void add_squeeze_excitation_head(ir::Graph& g, ir::ValueId d, uint32_t seed) {
  const ir::ValueId gp = g.node(*g.create_node("global_average_pool", "gp", {d}, 1)).outputs[0];
  const ir::ValueId f1 = unary(g, "relu", "fr", conv(g, "fc1", gp, 32, 8, 1, 1, seed));
  const ir::ValueId gate = unary(g, "sigmoid", "sg", conv(g, "fc2", f1, 8, 32, 1, 1, seed + 1));
  const ir::ValueId m = g.node(*g.create_node("mul", "scale", {d, gate}, 1)).outputs[0];
  g.add_output(conv(g, "c3", m, 32, 16, 1, 1, seed + 2));
}

// A squeeze-excitation block (x -> c1 -> relu -> dw -> relu = d; gate = sigmoid(fc2(relu(fc1(
// global_average_pool(d))))); c3(d * gate)): the SE set (d, the product) is stored nhwc, and so
// is the edge c1 -> dw next to it, whatever layout oneDNN prefers between convs on this CPU (no
// conv with one nhwc and one blocked side); the lowered graph computes what the cpu kernels do.
TEST(OnednnLayout, SqueezeExcitationEdgesAreNhwc) {
  ir::Graph g("se_block");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 16, 12, 12}});
  const ir::ValueId a = unary(g, "relu", "r1", conv(g, "c1", x, 16, 32, 1, 1, 21));
  const ir::ValueId d = unary(g, "relu", "r2", conv(g, "dw", a, 32, 32, 3, 32, 22));
  add_squeeze_excitation_head(g, d, 23);
  ir::Graph lowered_g = g;
  lower(lowered_g, {"onednn", "cpu"});
  EXPECT_EQ(layout_attr(lowered_g, "c1", kDst), kNhwc);
  EXPECT_EQ(layout_attr(lowered_g, "dw", kSrc), kNhwc);
  EXPECT_EQ(layout_attr(lowered_g, "dw", kDst), kNhwc);
  EXPECT_EQ(layout_attr(lowered_g, "c3", kSrc), kNhwc);
  EXPECT_EQ(op_of(lowered_g, "scale"), "laid_out_internal");
  expect_same_as_unfused(g, {{"x", grid_tensor({1, 16, 12, 12}, 26)}},
                         ToleranceClass::kCrossBackend, {"c1", "dw", "c3"});
}

// A conv chain two convs away from a squeeze-excitation block (x -> c0 -> relu -> c1 -> relu ->
// c2 -> relu -> dw -> relu = d; gate from global_average_pool(d); c3(d * gate)): every edge
// between the convs is tied to the gate's set through the convs (one layout on both sides of a
// conv), so all are nhwc, not only the edge next to the set, and no conv between them reorders.
TEST(OnednnLayout, EdgesTiedToASqueezeExcitationAreNhwc) {
  ir::Graph g("se_component");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 16, 12, 12}});
  const ir::ValueId a0 = unary(g, "relu", "r0", conv(g, "c0", x, 16, 32, 3, 1, 181));
  const ir::ValueId a1 = unary(g, "relu", "r1", conv(g, "c1", a0, 32, 32, 3, 1, 182));
  const ir::ValueId a2 = unary(g, "relu", "r2", conv(g, "c2", a1, 32, 32, 1, 1, 183));
  const ir::ValueId d = unary(g, "relu", "r3", conv(g, "dw", a2, 32, 32, 3, 32, 184));
  add_squeeze_excitation_head(g, d, 185);
  ir::Graph lowered = g;
  lower(lowered, {"onednn", "cpu"});
  for (const char* n : {"c0", "c1", "c2", "dw"})
    EXPECT_EQ(layout_attr(lowered, n, kDst), kNhwc) << n;
  for (const char* n : {"c1", "c2", "dw", "c3"})
    EXPECT_EQ(layout_attr(lowered, n, kSrc), kNhwc) << n;
  Result<runtime::Executable> exe = runtime::compile(g, uncached({"onednn", "cpu"}));
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  for (const char* n : {"c1", "c2", "dw", "fc1", "fc2", "scale"}) {
    EXPECT_EQ(placement_of(*exe, n).reorders_per_run, 0) << n;
  }
  expect_same_as_unfused(g, {{"x", grid_tensor({1, 16, 12, 12}, 188)}},
                         ToleranceClass::kCrossBackend, {"c0", "c1", "c2", "dw", "c3"});
}

// Placement::reorders_per_run (frame inspect's "layout reorders per run"): each conv reorders
// exactly the activations whose edge the pattern left plain, counted by hand from chain()'s
// comment above: c1 its input x, c3 its output c (read by the pool), c4 both sides, e1 its
// input, e2 its output (a graph output); dw none.
TEST(OnednnLayout, ReordersPerRunCountThePlainEdgesOfEachConv) {
  const ir::Graph g = chain();
  Result<runtime::Executable> exe = runtime::compile(g, uncached({"onednn", "cpu"}));
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  ir::Graph lowered = g;
  lower(lowered, {"onednn", "cpu"});
  const int64_t l = layout_attr(lowered, "c1", kDst);
  if (l != kNhwc && l != kBlocked8) {
    GTEST_SKIP() << "oneDNN's convs pick nChw16c on this CPU; the counts below assume a layout "
                    "that holds 24 channels (nhwc, nChw8c)";
  }
  const std::pair<const char*, int> want[] = {{"c1", 1}, {"dw", 0}, {"c3", 1},
                                              {"c4", 2}, {"e1", 1}, {"e2", 1}};
  for (const auto& [node, n] : want) {
    EXPECT_EQ(placement_of(*exe, node).reorders_per_run, n) << node;
  }
  int total = 0;
  for (const runtime::Placement& p : exe->report().placements) total += p.reorders_per_run;
  EXPECT_NE(exe->report().to_json().find(fmt::format("\"reorders_per_run\": {}", total)),
            std::string::npos);
  // With the cpu backend alone nothing is laid out, and its kernels report none.
  Result<runtime::Executable> ref = runtime::compile(g, uncached({"cpu"}));
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  for (const runtime::Placement& p : ref->report().placements) {
    EXPECT_EQ(p.reorders_per_run, 0) << p.node;
  }
}

TEST(OnednnLayout, NothingMarkedWithCpuOnly) {
  ir::Graph g = chain();
  lower(g, {"cpu"});
  EXPECT_EQ(op_of(g, "c1"), "conv");
  EXPECT_EQ(layout_attr(g, "c1", kDst), 0);
}

TEST(OnednnLayout, BlockedChainMatchesCpu) {
  // Five convs in a chain: the deep-network class (BUILD-011).
  const runtime::TensorMap inputs{{"x", grid_tensor({1, 16, 10, 10}, 9)}};
  expect_same_as_unfused(chain(), inputs, ToleranceClass::kDeepNetwork, {"c1", "dw", "c3"});
}

// x[1,32,12,12] -> c1 (1x1) -> relu = a; a -> dw (3x3 depthwise) -> relu -> c3 (1x1) -> + a ->
// relu = c -> c4 (3x3) = out. With `shared_src` c3 (then 3x3) reads a as its input X too
// (c3 = conv(a) + a), skipping dw. c3 is a's last reader and c is read by c4 only, so c3's dst and
// residual get one layout.
ir::Graph residual_block(bool shared_src) {
  ir::Graph g(shared_src ? "residual_shared_src" : "residual_block");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 32, 12, 12}});
  const ir::ValueId a = unary(g, "relu", "r1", conv(g, "c1", x, 32, 32, 1, 1, 21));
  const ir::ValueId d =
      shared_src ? a : unary(g, "relu", "r2", conv(g, "dw", a, 32, 32, 3, 32, 22));
  // 3x3 where c3 reads a twice: a 1x1 conv that wrote over its own input pixel by pixel could
  // still come out right.
  const ir::ValueId c3 = conv(g, "c3", d, 32, 32, shared_src ? 3 : 1, 1, 23);
  const ir::ValueId sum = g.node(*g.create_node("add", "add3", {c3, a}, 1)).outputs[0];
  g.add_output(conv(g, "c4", unary(g, "relu", "r3", sum), 32, 32, 3, 1, 24));
  return g;
}

// The conv with a residual sum post-op writes its output over the residual's buffer
// (KernelDef::in_place_input, memory-planning), so no copy puts the residual there: c3's output
// takes a's arena slot when the layouts agree and c3 is a's last reader, never when c3 also
// reads a as its input X (the conv would overwrite what it still reads). Both graphs compute
// what the cpu-only compile does at 1 and 2 threads.
TEST(OnednnLayout, AConvWritesOverTheResidualItAddsWhenItIsItsLastReader) {
  for (bool shared_src : {false, true}) {
    SCOPED_TRACE(shared_src ? "c3 = conv(a) + a" : "c3 = conv(dw(a)) + a");
    ir::Graph g = residual_block(shared_src);
    passes::PassContext ctx;
    ctx.backends = {"onednn", "cpu"};
    ASSERT_TRUE(passes::run_pipeline(g, passes::kStandardPipeline, ctx).is_ok());
    ir::NodeId c3 = -1;
    for (ir::NodeId id : g.node_ids()) c3 = g.node(id).name == "c3" ? id : c3;
    ASSERT_GE(c3, 0);
    const ir::Node& n = g.node(c3);
    ASSERT_EQ(n.op, "fused_post_ops_internal");
    ASSERT_GT(n.inputs.size(), ops::fused::kResidualInput);
    const ir::ValueId r = n.inputs[ops::fused::kResidualInput];
    if (layout_attr(g, "c3", kDst) != layout_attr(g, "c3", kRes)) {
      GTEST_SKIP() << "oneDNN's convs give c3 two layouts on this CPU";
    }
    const passes::BufferSlot& out = ctx.buffers.at(n.outputs[0]);
    EXPECT_EQ(out.in_place, !shared_src);
    EXPECT_EQ(out.offset == ctx.buffers.at(r).offset, !shared_src);
    const runtime::TensorMap inputs{{"x", grid_tensor({1, 32, 12, 12}, 25)}};
    expect_same_as_unfused(residual_block(shared_src), inputs, ToleranceClass::kDeepNetwork,
                           {"c1", "c3", "c4"});
  }
}

// One fused conv node (3x3, pads 1, + R, then `act`: relu or swish) with the layout attributes
// `layouts` (src, dst, residual), compiled for `backend` and run on (x, r) given in those
// layouts. `reorders`, when given, receives the node's layout reorders per run. `threads`: the
// compile's num_threads (0: every core).
Result<Tensor> run_fused(const std::string& backend, const ints& layouts, const Tensor& x,
                         const Tensor& r, int64_t group, int* reorders = nullptr,
                         const std::string& act = "relu", int threads = 0) {
  ir::Graph g("fused_layout");
  const int64_t c = x.dim(1), m = r.dim(1);
  const ir::ValueId xv = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, x.shape()});
  const ir::ValueId rv = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, r.shape()});
  const ir::ValueId w = g.add_constant("w", grid_tensor({m, c / group, 3, 3}, 21));
  const ir::ValueId b = g.add_constant("b", grid_tensor({m}, 22));
  ir::AttrMap attrs{{"base_op", std::string("conv")},
                    {"post_ops", std::vector<std::string>{"add", act}},
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
  o.num_threads = threads;
  FRAME_ASSIGN_OR_RETURN(runtime::Executable exe, runtime::compile(g, o));
  if (const runtime::Placement p = placement_of(exe, "f"); p.backend != backend) {
    return unimplemented("node f not on {}: {}", backend, fmt::join(p.rejected, "; "));
  }
  if (reorders != nullptr) *reorders = placement_of(exe, "f").reorders_per_run;
  // Into an output filled with NaN: an element the kernel leaves unwritten fails the compare.
  const Tensor& like = r;  // y has r's shape (3x3, pads 1, stride 1)
  runtime::TensorMap out{
      {"y", Tensor::from_vector(like.shape(), std::vector<float>(static_cast<size_t>(like.numel()),
                                                                 std::nanf("")))}};
  FRAME_RETURN_IF_ERROR(exe.run({{"x", x}, {"r", r}}, out));
  return out.at("y");
}

// Every combination of plain / laid-out src, dst and residual, for nhwc, nChw8c and nChw16c,
// against the plain node on cpu, laid out by hand; on cpu (the reference kernel must honour the
// attributes, ARCH-041) and on onednn.
TEST(OnednnLayout, LayoutAttributesMatchThePlainComputation) {
  for (const auto& [group, act] : std::vector<std::pair<int64_t, std::string>>{
           {1, "relu"}, {32, "relu"}, {1, "swish"}, {32, "swish"}}) {
    const Tensor x = grid_tensor({2, 32, 6, 5}, 11);
    const Tensor r = grid_tensor({2, 32, 6, 5}, 12);
    Result<Tensor> plain = run_fused("cpu", {0, 0, 0}, x, r, group, nullptr, act);
    ASSERT_TRUE(plain.is_ok()) << plain.status().message();
    for (int64_t l : {kNhwc, kBlocked8, kBlocked}) {
      for (int mask = 1; mask < 8; ++mask) {
        const ints layouts{mask & 1 ? l : 0, mask & 2 ? l : 0, mask & 4 ? l : 0};
        const Tensor xi = layouts[0] != 0 ? to_layout(x, l) : x;
        const Tensor ri = layouts[2] != 0 ? to_layout(r, l) : r;
        const Tensor want = layouts[1] != 0 ? to_layout(*plain, l) : *plain;
        for (const std::string backend : {"cpu", "onednn"}) {
          Result<Tensor> got = run_fused(backend, layouts, xi, ri, group, nullptr, act);
          if (backend == "onednn" && !got.is_ok() &&
              ((l == kBlocked && !__builtin_cpu_supports("avx512f")) ||
               (l == kBlocked8 && __builtin_cpu_supports("avx512f")))) {
            // oneDNN has no jit convolution for nChw16c without AVX-512 (nor, for some
            // geometries, for nChw8c with it); the kernel declines (the pattern asks for the
            // layout oneDNN picks, PatternMarksExactlyTheInnerConvEdges).
            EXPECT_NE(got.status().message().find("ref:any"), std::string::npos)
                << got.status().message();
            continue;
          }
          ASSERT_TRUE(got.is_ok())
              << backend << " layout " << l << " mask " << mask << ": " << got.status().message();
          // Grid inputs: exact sums in f32, so the op class holds on both backends (BUILD-011).
          const CompareResult c = compare_tensors(*got, want, tolerance_for(DTypeCode::kFloat32));
          EXPECT_TRUE(c.ok) << backend << " " << act << " group " << group << " layout " << l
                            << " mask " << mask << ": " << c.message;
        }
      }
    }
  }
}

// With src, dst and residual all nhwc the residual is copied into the output before the conv
// (the sum post-op adds onto dst), on several threads when it is large: 47 x 55 x 57 floats,
// 589,380 bytes, not a multiple of the 64-byte pieces (the last thread copies the tail). 1 and 2
// threads against the plain node on cpu, laid out by hand.
TEST(OnednnLayout, ALargeNhwcResidualIsCopiedWholeAtEveryThreadCount) {
  const Tensor x = grid_tensor({1, 47, 55, 57}, 15);
  const Tensor r = grid_tensor({1, 47, 55, 57}, 16);
  // swish, not relu: relu would turn an unwritten (NaN) residual element into 0.
  Result<Tensor> plain = run_fused("cpu", {0, 0, 0}, x, r, 1, nullptr, "swish");
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  const Tensor want = to_layout(*plain, kNhwc);
  for (int threads : {1, 2}) {
    int reorders = -1;
    Result<Tensor> got = run_fused("onednn", {kNhwc, kNhwc, kNhwc}, to_layout(x, kNhwc),
                                   to_layout(r, kNhwc), 1, &reorders, "swish", threads);
    ASSERT_TRUE(got.is_ok()) << got.status().message();
    EXPECT_EQ(reorders, 0) << "the copy path needs dst and residual in one layout";
    const CompareResult c = compare_tensors(*got, want, tolerance_for(DTypeCode::kFloat32));
    EXPECT_TRUE(c.ok) << threads << " thread(s): " << c.message;
  }
}

// A conv with 1024 input channels and more than 7x7 outputs runs on oneDNN's nChw16c conv
// whatever its layout attributes say (conv.cpp: its nhwc brgconv takes about twice as long
// there), reordering from and to them: every plain / nhwc combination of src, dst and residual
// against the plain node on cpu; with all three nhwc the node reorders all three (on AVX-512,
// where that conv exists), where a narrow conv reorders none.
TEST(OnednnLayout, WideConvRunsBlockedWhateverTheLayoutsAround) {
  const Tensor x = grid_tensor({1, 1024, 8, 8}, 13);
  const Tensor r = grid_tensor({1, 32, 8, 8}, 14);
  Result<Tensor> plain = run_fused("cpu", {0, 0, 0}, x, r, 1);
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  for (int mask = 0; mask < 8; ++mask) {
    const ints layouts{mask & 1 ? kNhwc : 0, mask & 2 ? kNhwc : 0, mask & 4 ? kNhwc : 0};
    int reorders = -1;
    Result<Tensor> got = run_fused("onednn", layouts, layouts[0] != 0 ? to_layout(x, kNhwc) : x,
                                   layouts[2] != 0 ? to_layout(r, kNhwc) : r, 1, &reorders);
    ASSERT_TRUE(got.is_ok()) << "mask " << mask << ": " << got.status().message();
    const Tensor want = layouts[1] != 0 ? to_layout(*plain, kNhwc) : *plain;
    // 9216 products per output: the deep-network class (BUILD-011).
    const CompareResult c = compare_tensors(
        *got, want, tolerance_for(DTypeCode::kFloat32, ToleranceClass::kDeepNetwork));
    EXPECT_TRUE(c.ok) << "mask " << mask << ": " << c.message;
    if (mask == 7 && __builtin_cpu_supports("avx512f")) {
      EXPECT_EQ(reorders, 3);
    }
  }
  int narrow = -1;
  const Tensor x32 = to_layout(grid_tensor({1, 32, 8, 8}, 15), kNhwc);
  ASSERT_TRUE(
      run_fused("onednn", {kNhwc, kNhwc, kNhwc}, x32, to_layout(r, kNhwc), 1, &narrow).is_ok());
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(narrow, 0);
  }
}

TEST(OnednnLayout, SchemaRejectsBadLayouts) {
  const Tensor x = grid_tensor({1, 24, 4, 4}, 1);
  // C = 24 is not a multiple of 16.
  Result<Tensor> got = run_fused("cpu", {kBlocked, 0, 0}, x, grid_tensor({1, 24, 4, 4}, 2), 1);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("src_layout"), std::string::npos) << got.status().message();
  // C = 20 is not a multiple of 8 (nChw8c).
  const Tensor x20 = grid_tensor({1, 20, 4, 4}, 5);
  got = run_fused("cpu", {0, 0, kBlocked8}, x20, grid_tensor({1, 20, 4, 4}, 6), 1);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("multiple of 8"), std::string::npos)
      << got.status().message();
  // Only 0, 1, 8 and 16 are layouts.
  const Tensor x32 = grid_tensor({1, 32, 4, 4}, 3);
  got = run_fused("cpu", {0, 4, 0}, x32, grid_tensor({1, 32, 4, 4}, 4), 1);
  ASSERT_FALSE(got.is_ok());
  EXPECT_NE(got.status().message().find("dst_layout"), std::string::npos) << got.status().message();
}

// ---- nhwc through pools and concat (keep_nhwc_through, laid_out_internal) ----

ir::ValueId node1(ir::Graph& g, const std::string& op, const std::string& name,
                  std::vector<ir::ValueId> inputs, ir::AttrMap attrs = {}) {
  return g.node(*g.create_node(op, name, std::move(inputs), 1, std::move(attrs))).outputs[0];
}

// Each node of `names` in lowered graph `g` is a laid_out_internal node stored in `layout`.
void expect_laid_out(const ir::Graph& g, std::initializer_list<const char*> names, int64_t layout) {
  for (const char* n : names) {
    EXPECT_EQ(op_of(g, n), "laid_out_internal") << n;
    EXPECT_EQ(layout_attr(g, n, "layout"), layout) << n;
  }
}

// x[1,16,12,12] -> c1 (3x3, 32) -> relu -> max_pool 2x2/2 = m [1,32,6,6];
// m -> c2 (1x1, 16), m -> c3 (3x3, 24); concat(c2, c3) = cat [1,40,6,6];
// cat -> pad 1 (spatial, zeros) -> average_pool 3x3 = ap; ap -> c4 (1x1, 8) -> global average
// pool = out_gap [1,8,1,1] (graph output); m -> c5 (1x1, 8) -> max_pool = out_pool (graph
// output). Stored in the convs' layout: m, c2, c3, cat and ap (the pad folds into the pool); plain:
// the graph input, out_pool (a graph output), c4's output read by the global pool is nhwc too (its
// [1,8,1,1] output has the same bytes either way).
ir::Graph pool_concat_net() {
  ir::Graph g("nhwc_through");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 16, 12, 12}});
  const ir::ValueId a = unary(g, "relu", "r1", conv(g, "c1", x, 16, 32, 3, 1, 31));
  const ir::ValueId m =
      node1(g, "max_pool", "mp", {a}, {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}});
  const ir::ValueId c2 = conv(g, "c2", m, 32, 16, 1, 1, 32);
  const ir::ValueId c3 = conv(g, "c3", m, 32, 24, 3, 1, 33);
  const ir::ValueId cat = node1(g, "concat", "cat", {c2, c3}, {{"axis", int64_t{1}}});
  const ir::ValueId pads =
      g.add_constant("pads", Tensor::from_vector<int64_t>({8}, {0, 0, 1, 1, 0, 0, 1, 1}));
  const ir::ValueId padded = node1(g, "pad", "pad", {cat, pads});
  const ir::ValueId ap = node1(g, "average_pool", "ap", {padded}, {{"kernel_shape", ints{3, 3}}});
  const ir::ValueId gap =
      node1(g, "global_average_pool", "gap", {conv(g, "c4", ap, 40, 8, 1, 1, 34)});
  const ir::ValueId pool = node1(g, "max_pool", "mp2", {conv(g, "c5", m, 32, 8, 1, 1, 35)},
                                 {{"kernel_shape", ints{2, 2}}});
  g.add_output(gap);
  g.add_output(pool);
  return g;
}

// The layout a set of pools and concats takes: the one oneDNN's convs pick on this CPU, nhwc
// for its AVX-512 brgemm convs, nChw8c for its AVX2 jit ones (every channel count of
// pool_concat_net is a multiple of 8).
TEST(OnednnLayout, LayoutFlowsThroughPoolsAndConcat) {
  ir::Graph g = pool_concat_net();
  lower(g, {"onednn", "cpu"});
  const int64_t want = __builtin_cpu_supports("avx512f") ? kNhwc : kBlocked8;
  expect_laid_out(g, {"mp", "cat", "ap"}, want);
  EXPECT_EQ(op_of(g, "pad"), "");  // folded into ap
  EXPECT_EQ(layout_attr(g, "ap", "count_include_pad"), 1);
  EXPECT_EQ(layout_attr(g, "c1", kDst), want);
  EXPECT_EQ(layout_attr(g, "c1", kSrc), 0);  // graph input
  for (const char* n : {"c2", "c3", "c4", "c5"}) {
    EXPECT_EQ(layout_attr(g, n, kSrc), want) << n;
  }
  EXPECT_EQ(layout_attr(g, "c2", kDst), want);
  EXPECT_EQ(layout_attr(g, "c3", kDst), want);
  // c4 -> global_average_pool (graph output of bytes equal in every order): carried through.
  EXPECT_EQ(op_of(g, "gap"), "laid_out_internal");
  // c5 -> max_pool whose output is a graph output: both plain.
  EXPECT_EQ(layout_attr(g, "c5", kDst), 0);
  EXPECT_EQ(op_of(g, "mp2"), "max_pool");
  // No reorder inside the set: the convs that read and write it and the laid-out nodes.
  Result<runtime::Executable> exe =
      runtime::compile(pool_concat_net(), uncached({"onednn", "cpu"}));
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  for (const char* n : {"c2", "c3", "c4", "mp", "cat", "ap", "gap"}) {
    EXPECT_EQ(placement_of(*exe, n).reorders_per_run, 0) << n;
    EXPECT_EQ(placement_of(*exe, n).backend, "onednn") << n;
  }
}

// Pad (H 1/0, W 0/2) then a 3x3/2 average pool with ceil_mode on [1,2,6,6]: the padded input
// keeps a last window in W that the folded pool would drop (its start lies in the pool's own
// end pads), so the pad must stay (found by a break test: the folded node wrote 3 columns into
// a 4-column output).
TEST(OnednnLayout, PadNotFoldedIntoACeilModePool) {
  ir::Graph g("pad_ceil");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 2, 6, 6}});
  const ir::ValueId pads =
      g.add_constant("pads", Tensor::from_vector<int64_t>({8}, {0, 0, 1, 0, 0, 0, 0, 2}));
  const ir::ValueId padded = node1(g, "pad", "pad", {x, pads});
  g.add_output(
      node1(g, "average_pool", "ap", {padded},
            {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}, {"ceil_mode", int64_t{1}}}));
  ir::Graph lowered = g;
  lower(lowered, {"onednn", "cpu"});
  EXPECT_EQ(op_of(lowered, "pad"), "pad");
  expect_same_as_unfused(g, {{"x", grid_tensor({1, 2, 6, 6}, 81)}}, ToleranceClass::kDeepNetwork,
                         {"ap"});
}

TEST(OnednnLayout, NhwcThroughPoolsAndConcatMatchesCpu) {
  expect_same_as_unfused(pool_concat_net(), {{"x", grid_tensor({1, 16, 12, 12}, 41)}},
                         ToleranceClass::kDeepNetwork, {"mp", "cat", "ap", "gap"});
}

// x[1,16,10,10] -> c1 (3x3, 32) = a; squeeze-excitation: a -> global average pool -> f1 (1x1,
// 8) -> relu -> f2 (1x1, 32) -> sigmoid = gate [1,32,1,1]; se = mul(a, gate); DenseNet's
// pre-activation: se -> batch_normalization -> relu -> c2 (3x3, 16) -> out (graph output).
// Stored nhwc: a, se and the batch norm's and relu's outputs.
ir::Graph squeeze_excitation_net() {
  ir::Graph g("nhwc_se");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 16, 10, 10}});
  const ir::ValueId a = conv(g, "c1", x, 16, 32, 3, 1, 71);
  const ir::ValueId squeezed = node1(g, "global_average_pool", "gap", {a});
  const ir::ValueId f1 = unary(g, "relu", "fr", conv(g, "f1", squeezed, 32, 8, 1, 1, 72));
  const ir::ValueId gate = unary(g, "sigmoid", "fs", conv(g, "f2", f1, 8, 32, 1, 1, 73));
  const ir::ValueId se = node1(g, "mul", "se", {a, gate});
  Tensor var = grid_tensor({32}, 77);
  for (int64_t i = 0; i < 32; ++i) var.data<float>()[i] = std::abs(var.data<float>()[i]) + 0.5F;
  const ir::ValueId bn =
      node1(g, "batch_normalization", "bn",
            {se, g.add_constant("scale", grid_tensor({32}, 74)),
             g.add_constant("bias", grid_tensor({32}, 75)),
             g.add_constant("mean", grid_tensor({32}, 76)), g.add_constant("var", std::move(var))});
  g.add_output(conv(g, "c2", unary(g, "relu", "br", bn), 32, 16, 3, 1, 78));
  return g;
}

TEST(OnednnLayout, NhwcFlowsThroughSqueezeExcitationAndBatchNorm) {
  ir::Graph lowered = squeeze_excitation_net();
  lower(lowered, {"onednn", "cpu"});
  if (layout_attr(lowered, "c2", kSrc) == 0 && !__builtin_cpu_supports("avx512f")) {
    GTEST_SKIP() << "oneDNN's convs do not take nhwc at speed without AVX-512 on this CPU";
  }
  for (const char* n : {"gap", "se", "bn", "br"}) {
    EXPECT_EQ(op_of(lowered, n), "laid_out_internal") << n;
  }
  EXPECT_EQ(layout_attr(lowered, "c1", kDst), kNhwc);
  EXPECT_EQ(layout_attr(lowered, "c2", kSrc), kNhwc);
  EXPECT_EQ(layout_attr(lowered, "c2", kDst), 0);  // graph output
  EXPECT_EQ(layout_attr(lowered, "f1", kSrc), 0);  // [1,32,1,1]: the same bytes either way

  expect_same_as_unfused(squeeze_excitation_net(), {{"x", grid_tensor({1, 16, 10, 10}, 79)}},
                         ToleranceClass::kDeepNetwork, {"gap", "se", "bn", "br"});
}

// Two DenseNet layers (x -> c0 = f0 [1,16,8,8]; a layer: concat(features) -> batch norm ->
// relu -> c1 (1x1, 16) -> relu -> c2 (3x3, 8) = new features; the second layer's concat also
// reads the first's output; the last concat feeds c3, a graph output): the pre-activation sets
// (concat, batch norm, relu; operands of one shape) take the convs' layout, nChw8c on AVX2 and
// nhwc with AVX-512, and so does the c1 -> c2 edge between them (an elementwise set that fits
// the blocked layout does not make its neighbours nhwc): no reorder between the convs.
// An fp16 model's stem: the input rounded through float16 (cast + cast, fused into one plain
// elementwise node) feeds the first conv. That edge stays plain (3 channels, made by a node that
// writes NCHW) and ties nothing, so the convs after it keep their blocked layout: it had made
// every edge of ResNet-18 in float16 nhwc, 8% slower than its f32 form at 2 threads on AVX2.
TEST(OnednnLayout, AStemFedByAPlainNodeLeavesTheConvsLayout) {
  ir::Graph g("fp16_stem");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 3, 12, 12}});
  const ir::ValueId h = node1(g, "cast", "to_f16", {x}, {{"to", int64_t{10}}});
  const ir::ValueId f = node1(g, "cast", "to_f32", {h}, {{"to", int64_t{1}}});
  const ir::ValueId a0 = unary(g, "relu", "r0", conv(g, "c0", f, 3, 16, 3, 1, 191));
  const ir::ValueId a1 = unary(g, "relu", "r1", conv(g, "c1", a0, 16, 16, 3, 1, 192));
  g.add_output(conv(g, "c2", a1, 16, 8, 1, 1, 193));
  ir::Graph lowered = g;
  lower(lowered, {"onednn", "cpu"});
  const int64_t want = __builtin_cpu_supports("avx512f") ? kNhwc : kBlocked8;
  EXPECT_EQ(layout_attr(lowered, "c0", kSrc), 0);  // plain
  EXPECT_EQ(layout_attr(lowered, "c0", kDst), want);
  EXPECT_EQ(layout_attr(lowered, "c1", kSrc), want);
  EXPECT_EQ(layout_attr(lowered, "c1", kDst), want);
  EXPECT_EQ(layout_attr(lowered, "c2", kSrc), want);
  expect_same_as_unfused(g, {{"x", grid_tensor({1, 3, 12, 12}, 194)}},
                         ToleranceClass::kCrossBackend, {"c0", "c1", "c2"});
}

TEST(OnednnLayout, PreActivationSetsTakeTheConvsLayout) {
  ir::Graph g("dense_layers");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 8, 8, 8}});
  std::vector<ir::ValueId> features{conv(g, "c0", x, 8, 16, 3, 1, 111)};
  int64_t channels = 16;
  for (int layer = 1; layer <= 2; ++layer) {
    const std::string l = std::to_string(layer);
    const ir::ValueId cat = features.size() == 1
                                ? features[0]
                                : node1(g, "concat", "cat" + l, features, {{"axis", int64_t{1}}});
    Tensor var = grid_tensor({channels}, 112 + layer);
    for (int64_t i = 0; i < channels; ++i) {
      var.data<float>()[i] = std::abs(var.data<float>()[i]) + 0.5F;
    }
    const ir::ValueId bn =
        node1(g, "batch_normalization", "bn" + l,
              {cat, g.add_constant("s" + l, grid_tensor({channels}, 120 + layer)),
               g.add_constant("b" + l, grid_tensor({channels}, 130 + layer)),
               g.add_constant("m" + l, grid_tensor({channels}, 140 + layer)),
               g.add_constant("v" + l, std::move(var))});
    const ir::ValueId r = unary(g, "relu", "r" + l, bn);
    const ir::ValueId c1 =
        unary(g, "relu", "q" + l, conv(g, "c1_" + l, r, channels, 16, 1, 1, 150 + layer));
    features.push_back(conv(g, "c2_" + l, c1, 16, 8, 3, 1, 160 + layer));
    channels += 8;
  }
  g.add_output(conv(g, "c3", node1(g, "concat", "cat3", features, {{"axis", int64_t{1}}}), channels,
                    8, 1, 1, 170));
  ir::Graph lowered = g;
  lower(lowered, {"onednn", "cpu"});
  const int64_t want = __builtin_cpu_supports("avx512f") ? kNhwc : kBlocked8;
  expect_laid_out(lowered, {"cat2", "bn1", "r1", "bn2", "r2", "cat3"}, want);
  for (const char* n : {"c1_1", "c1_2"}) {
    EXPECT_EQ(layout_attr(lowered, n, kSrc), want) << n;
    EXPECT_EQ(layout_attr(lowered, n, kDst), want) << n;
  }
  Result<runtime::Executable> exe = runtime::compile(g, uncached({"onednn", "cpu"}));
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  for (const char* n : {"c1_1", "c2_1", "c1_2", "c2_2"}) {
    EXPECT_EQ(placement_of(*exe, n).reorders_per_run, 0) << n;
  }
  expect_same_as_unfused(g, {{"x", grid_tensor({1, 8, 8, 8}, 171)}}, ToleranceClass::kDeepNetwork,
                         {"cat2", "bn1", "bn2", "cat3"});
}

// A U-Net level: x[1,8,12,12] -> c1 (3x3, 16) -> relu = skip; skip -> max_pool 2x2/2 -> c2
// (3x3, 32) -> relu -> up (conv_transpose 2x2/2, 32 -> 16, + B) -> concat(up, skip) [1,32,12,12]
// -> c3 (3x3, 8) -> out. Stored nhwc: skip, the pool's output, c2's, up's and the concat's;
// the conv_transpose becomes laid_out_internal, and only x and out are reordered.
ir::Graph unet_level() {
  ir::Graph g("nhwc_unet");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 8, 12, 12}});
  const ir::ValueId skip = unary(g, "relu", "r1", conv(g, "c1", x, 8, 16, 3, 1, 91));
  const ir::ValueId m =
      node1(g, "max_pool", "mp", {skip}, {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}});
  const ir::ValueId c2 = unary(g, "relu", "r2", conv(g, "c2", m, 16, 32, 3, 1, 92));
  Tensor wt = grid_tensor({32, 16, 2, 2}, 93);  // ONNX ConvTranspose W: [C, M / group, kH, kW]
  for (int64_t i = 0; i < wt.numel(); ++i) wt.data<float>()[i] *= 0.0625F;
  const ir::ValueId up = node1(
      g, "conv_transpose", "up",
      {c2, g.add_constant("up_w", std::move(wt)), g.add_constant("up_b", grid_tensor({16}, 94))},
      {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}});
  const ir::ValueId cat = node1(g, "concat", "cat", {up, skip}, {{"axis", int64_t{1}}});
  g.add_output(conv(g, "c3", cat, 32, 8, 3, 1, 95));
  return g;
}

TEST(OnednnLayout, LayoutFlowsThroughConvTranspose) {
  ir::Graph lowered = unet_level();
  lower(lowered, {"onednn", "cpu"});
  // The convs' layout on this CPU: nhwc with AVX-512, nChw8c on AVX2 (every C a multiple of 8).
  const int64_t want = __builtin_cpu_supports("avx512f") ? kNhwc : kBlocked8;
  expect_laid_out(lowered, {"mp", "up", "cat"}, want);
  EXPECT_EQ(layout_attr(lowered, "c1", kSrc), 0);  // graph input
  EXPECT_EQ(layout_attr(lowered, "c1", kDst), want);
  EXPECT_EQ(layout_attr(lowered, "c2", kDst), want);
  EXPECT_EQ(layout_attr(lowered, "c3", kSrc), want);
  EXPECT_EQ(layout_attr(lowered, "c3", kDst), 0);  // graph output
  // Reorders per run: at most c1's input and c3's output (the conv_transpose reads and writes
  // the layout).
  Result<runtime::Executable> exe = runtime::compile(unet_level(), uncached({"onednn", "cpu"}));
  ASSERT_TRUE(exe.is_ok()) << exe.status().message();
  int reorders = 0;
  for (const runtime::Placement& p : exe->report().placements) reorders += p.reorders_per_run;
  EXPECT_LE(reorders, 2);
  for (const char* n : {"c2", "up", "mp", "cat"}) {
    EXPECT_EQ(placement_of(*exe, n).reorders_per_run, 0) << n;
    EXPECT_EQ(placement_of(*exe, n).backend, "onednn") << n;
  }

  expect_same_as_unfused(unet_level(), {{"x", grid_tensor({1, 8, 12, 12}, 96)}},
                         ToleranceClass::kDeepNetwork, {"mp", "up", "cat"});
}

// One laid_out_internal node (base op `base`, attributes `attrs`) on inputs stored in `layout`
// (nhwc, nChw8c, nChw16c), compiled for each backend: its output must be the plain base op's on
// cpu, laid out by hand.
void check_laid_out_node(const std::string& base, const ir::AttrMap& attrs,
                         const std::vector<Tensor>& plain_inputs, int64_t layout = kNhwc,
                         bool onednn_runs_it = true) {
  auto build = [&](const std::string& op, bool nhwc) {
    ir::Graph g("laid_out_node");
    std::vector<ir::ValueId> ins;
    for (size_t i = 0; i < plain_inputs.size(); ++i) {
      ins.push_back(g.add_input(fmt::format("x{}", i),
                                ir::TensorType{DTypeCode::kFloat32, plain_inputs[i].shape()}));
    }
    ir::AttrMap a = attrs;
    if (nhwc) {
      a["base_op"] = base;
      a["layout"] = layout;
    }
    g.add_output(g.node(*g.create_node(op, "n", ins, 1, a, {"y"})).outputs[0]);
    return g;
  };
  runtime::TensorMap plain_feed, nhwc_feed;
  for (size_t i = 0; i < plain_inputs.size(); ++i) {
    plain_feed[fmt::format("x{}", i)] = plain_inputs[i];
    // Activations are stored nhwc; batch-norm parameters, one-element operands and a
    // conv_transpose's W and B as they are.
    const bool activation = ops::laid_out::activation_input(*ops::laid_out::base_kind(base), i,
                                                            plain_inputs[i].shape());
    nhwc_feed[fmt::format("x{}", i)] =
        activation ? to_layout(plain_inputs[i], layout) : plain_inputs[i];
  }
  Result<runtime::Executable> ref = runtime::compile(build(base, false), uncached({"cpu"}));
  ASSERT_TRUE(ref.is_ok()) << ref.status().message();
  Result<runtime::TensorMap> want = ref->run(plain_feed);
  ASSERT_TRUE(want.is_ok()) << want.status().message();
  const Tensor want_nhwc = to_layout(want->at("y"), layout);
  for (const std::string backend : {"cpu", "onednn"}) {
    for (int threads : {1, 2}) {
      runtime::CompileOptions o = uncached({backend});
      o.num_threads = threads;
      Result<runtime::Executable> exe = runtime::compile(build("laid_out_internal", true), o);
      ASSERT_TRUE(exe.is_ok()) << base << " in layout " << layout << " on " << backend << ": "
                               << exe.status().message();
      if (backend == "cpu" || onednn_runs_it) {
        EXPECT_EQ(placement_of(*exe, "n").backend, backend) << base << " in layout " << layout;
      }
      Result<runtime::TensorMap> got = exe->run(nhwc_feed);
      ASSERT_TRUE(got.is_ok()) << got.status().message();
      // Grid inputs: maxima, concatenation and sums of 9 taps (ap) exact or within the op class.
      const CompareResult c =
          compare_tensors(got->at("y"), want_nhwc, tolerance_for(DTypeCode::kFloat32));
      EXPECT_TRUE(c.ok) << base << " in layout " << layout << " on " << backend << " at " << threads
                        << " thread(s): " << c.message;
    }
  }
}

TEST(OnednnLayout, LaidOutNodesMatchThePlainOps) {
  const Tensor x = grid_tensor({2, 24, 7, 6}, 51);
  check_laid_out_node(
      "max_pool",
      {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}, {"pads", ints{1, 1, 1, 1}}}, {x});
  check_laid_out_node(
      "average_pool",
      {{"kernel_shape", ints{3, 3}}, {"pads", ints{1, 1, 1, 1}}, {"count_include_pad", int64_t{1}}},
      {x});
  check_laid_out_node(
      "average_pool",
      {{"kernel_shape", ints{2, 3}}, {"ceil_mode", int64_t{1}}, {"strides", ints{2, 2}}}, {x});
  check_laid_out_node("global_average_pool", {}, {x});
  check_laid_out_node("global_max_pool", {}, {x});
  check_laid_out_node("concat", {{"axis", int64_t{1}}},
                      {x, grid_tensor({2, 5, 7, 6}, 52), grid_tensor({2, 16, 7, 6}, 53)});
  // Inference batch normalization: [C] parameters, variance kept positive.
  Tensor var = grid_tensor({24}, 57);
  for (int64_t i = 0; i < 24; ++i) var.data<float>()[i] = std::abs(var.data<float>()[i]) + 0.5F;
  check_laid_out_node(
      "batch_normalization", {{"epsilon", 1e-3}},
      {x, grid_tensor({24}, 54), grid_tensor({24}, 55), grid_tensor({24}, 56), var});
  // Elementwise: a squeeze-excitation gate [N, C, 1, 1], a [1, 1, H, W] plane, a same-shape
  // operand, a one-element operand and a unary op: broadcasting over the nhwc order.
  check_laid_out_node("mul", {}, {x, grid_tensor({2, 24, 1, 1}, 58)});
  check_laid_out_node("add", {}, {grid_tensor({1, 1, 7, 6}, 59), x});
  check_laid_out_node("sub", {}, {x, grid_tensor({2, 24, 7, 6}, 60)});
  check_laid_out_node("div", {}, {x, grid_tensor({1}, 61)});
  check_laid_out_node("relu", {}, {x});
  // conv_transpose: W [C, M / group, kH, kW] and B stay plain; strided, padded, grouped, with
  // output_padding.
  check_laid_out_node("conv_transpose", {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}},
                      {x, grid_tensor({24, 16, 2, 2}, 62), grid_tensor({16}, 63)});
  check_laid_out_node("conv_transpose",
                      {{"kernel_shape", ints{3, 3}},
                       {"strides", ints{2, 2}},
                       {"pads", ints{1, 1, 1, 1}},
                       {"output_padding", ints{1, 0}},
                       {"group", int64_t{2}}},
                      {x, grid_tensor({24, 4, 3, 3}, 64)});
}

// The 2-d f32 max and average pools the onednn kernel computes with its own channels-last loop
// (pool.cpp, VecTable::pool_nhwc_rows) against the cpu kernel's plain pool: channel counts below,
// at and past a vector's lanes, windows clipped by pads (symmetric and not) and by ceil_mode,
// dilations, a 1x1 window that subsamples, and both divisors of an average.
TEST(OnednnLayout, OwnChannelsLastPoolsMatchThePlainOps) {
  const Tensor c3 = grid_tensor({2, 3, 9, 8}, 71);
  const Tensor c37 = grid_tensor({1, 37, 11, 10}, 72);
  const Tensor c16 = grid_tensor({2, 16, 6, 7}, 73);
  check_laid_out_node("max_pool", {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}}, {c3});
  check_laid_out_node("max_pool",
                      {{"kernel_shape", ints{3, 2}},
                       {"dilations", ints{2, 3}},
                       {"pads", ints{0, 1, 2, 0}},
                       {"ceil_mode", int64_t{1}},
                       {"strides", ints{2, 1}}},
                      {c37});
  check_laid_out_node(
      "max_pool",
      {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}, {"ceil_mode", int64_t{1}}}, {c37});
  check_laid_out_node("max_pool", {{"kernel_shape", ints{1, 1}}, {"strides", ints{2, 3}}}, {c16});
  check_laid_out_node("average_pool", {{"kernel_shape", ints{3, 3}}, {"pads", ints{1, 1, 1, 1}}},
                      {c37});
  check_laid_out_node("average_pool",
                      {{"kernel_shape", ints{3, 2}},
                       {"strides", ints{2, 2}},
                       {"pads", ints{1, 0, 1, 1}},
                       {"count_include_pad", int64_t{1}}},
                      {c16});
  check_laid_out_node(
      "average_pool",
      {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}, {"ceil_mode", int64_t{1}}}, {c3});
}

// The laid_out_internal kinds a channel-blocked set holds (keep_nhwc_through on convs that
// pick nChw8c / nChw16c), in both blocked layouts: the own pool loop (a block of channels per
// vector on AVX2 for nChw8c, four output pixels at a time where the windows lie inside the
// input; clipped windows, dilations, ceil_mode, both divisors), oneDNN's global pools, the
// block-wise concat, the batch normalization's block loop and same-shape elementwise ops.
TEST(OnednnLayout, BlockedLaidOutNodesMatchThePlainOps) {
  for (const int64_t layout : {kBlocked8, kBlocked}) {
    // oneDNN's global pools and deconvolution have a jit implementation for the block of the
    // CPU's vectors only (nChw16c on AVX2: reference loops, declined, so the cpu kernel runs).
    const bool native = layout == (__builtin_cpu_supports("avx512f") ? kBlocked : kBlocked8);
    const Tensor x = grid_tensor({2, 32, 9, 14}, 81);
    check_laid_out_node("max_pool", {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}}, {x},
                        layout);
    check_laid_out_node(
        "max_pool",
        {{"kernel_shape", ints{3, 3}}, {"strides", ints{2, 2}}, {"ceil_mode", int64_t{1}}}, {x},
        layout);
    check_laid_out_node("max_pool",
                        {{"kernel_shape", ints{3, 2}},
                         {"dilations", ints{2, 2}},
                         {"pads", ints{1, 1, 0, 1}},
                         {"strides", ints{1, 1}}},
                        {x}, layout);
    check_laid_out_node("average_pool",
                        {{"kernel_shape", ints{3, 3}},
                         {"strides", ints{1, 1}},
                         {"pads", ints{1, 1, 1, 1}},
                         {"count_include_pad", int64_t{1}}},
                        {x}, layout);
    check_laid_out_node(
        "average_pool",
        {{"kernel_shape", ints{3, 3}}, {"strides", ints{1, 1}}, {"pads", ints{1, 1, 1, 1}}}, {x},
        layout);
    check_laid_out_node("global_average_pool", {}, {x}, layout, native);
    check_laid_out_node("global_max_pool", {}, {x}, layout, native);
    check_laid_out_node("concat", {{"axis", int64_t{1}}},
                        {x, grid_tensor({2, 16, 9, 14}, 82), grid_tensor({2, 48, 9, 14}, 83)},
                        layout);
    Tensor var = grid_tensor({32}, 87);
    for (int64_t i = 0; i < 32; ++i) var.data<float>()[i] = std::abs(var.data<float>()[i]) + 0.5F;
    check_laid_out_node(
        "batch_normalization", {{"epsilon", 1e-3}},
        {x, grid_tensor({32}, 84), grid_tensor({32}, 85), grid_tensor({32}, 86), var}, layout);
    check_laid_out_node("add", {}, {x, grid_tensor({2, 32, 9, 14}, 88)}, layout);
    // conv_transpose: W [C, M / group, kH, kW] and B plain, M a multiple of the block.
    check_laid_out_node("conv_transpose", {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}},
                        {x, grid_tensor({32, 16, 2, 2}, 90), grid_tensor({16}, 91)}, layout,
                        native);
    check_laid_out_node("mul", {}, {x, grid_tensor({1}, 89)}, layout);
    check_laid_out_node("relu", {}, {x}, layout);
  }
}

TEST(OnednnLayout, LaidOutSchemaRejectsBadNodes) {
  ir::Graph g("bad_laid_out");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 4, 3, 3}});
  const ir::ValueId x3 = g.add_input("x3", ir::TensorType{DTypeCode::kFloat32, {1, 4, 9}});
  const auto infer = [&](std::vector<ir::ValueId> ins, ir::AttrMap attrs) {
    ir::Graph h = g;
    Result<ir::NodeId> n =
        h.create_node("laid_out_internal", "bad", std::move(ins), 1, std::move(attrs));
    if (!n.is_ok()) return n.status();
    h.add_output(h.node(*n).outputs[0]);
    return runtime::compile(h, uncached({"cpu"})).status();
  };
  const Status wrong_axis =
      infer({x, x}, {{"base_op", std::string("concat")}, {"layout", kNhwc}, {"axis", int64_t{2}}});
  EXPECT_NE(wrong_axis.message().find("channel axis"), std::string::npos) << wrong_axis.message();
  const Status rank3 =
      infer({x3}, {{"base_op", std::string("global_max_pool")}, {"layout", kNhwc}});
  EXPECT_NE(rank3.message().find("rank 4"), std::string::npos) << rank3.message();
  const Status bad_layout =
      infer({x}, {{"base_op", std::string("global_max_pool")}, {"layout", int64_t{3}}});
  EXPECT_NE(bad_layout.message().find("'layout'"), std::string::npos) << bad_layout.message();
  // Blocked layouts: C = 4 is no multiple of 8; elementwise operands of two shapes (a gate
  // would broadcast across the blocks); a conv_transpose writing 4 channels.
  const Status c4 =
      infer({x}, {{"base_op", std::string("global_max_pool")}, {"layout", kBlocked8}});
  EXPECT_NE(c4.message().find("4 channels, not a multiple"), std::string::npos) << c4.message();
  const ir::ValueId x8 = g.add_input("x8", ir::TensorType{DTypeCode::kFloat32, {1, 8, 3, 3}});
  const ir::ValueId gate8 = g.add_input("gate8", ir::TensorType{DTypeCode::kFloat32, {1, 8, 1, 1}});
  const Status gate = infer({x8, gate8}, {{"base_op", std::string("mul")}, {"layout", kBlocked8}});
  EXPECT_NE(gate.message().find("one shape"), std::string::npos) << gate.message();
  const ir::ValueId w4 = g.add_input("w4", ir::TensorType{DTypeCode::kFloat32, {8, 4, 2, 2}});
  const Status convt = infer({x8, w4}, {{"base_op", std::string("conv_transpose")},
                                        {"layout", kBlocked8},
                                        {"kernel_shape", ints{2, 2}}});
  EXPECT_NE(convt.message().find("output has 4 channels"), std::string::npos) << convt.message();
  // softmax is neither a pool, concat, batch norm nor elementwise; leaky_relu has an attribute.
  const Status bad_base = infer({x}, {{"base_op", std::string("softmax")}, {"layout", kNhwc}});
  EXPECT_NE(bad_base.message().find("'base_op'"), std::string::npos) << bad_base.message();
  const Status with_attr = infer({x}, {{"base_op", std::string("leaky_relu")}, {"layout", kNhwc}});
  EXPECT_NE(with_attr.message().find("'base_op'"), std::string::npos) << with_attr.message();
  // A conv_transpose needs its W.
  const Status no_w = infer({x}, {{"base_op", std::string("conv_transpose")}, {"layout", kNhwc}});
  EXPECT_NE(no_w.message().find("X, W and an optional B"), std::string::npos) << no_w.message();
  // An elementwise operand of rank below 4 with more than one element would broadcast along W.
  const ir::ValueId row = g.add_input("row", ir::TensorType{DTypeCode::kFloat32, {3}});
  const Status rank1 = infer({x, row}, {{"base_op", std::string("add")}, {"layout", kNhwc}});
  EXPECT_NE(rank1.message().find("one element"), std::string::npos) << rank1.message();
}

}  // namespace
}  // namespace frame::test::linear
