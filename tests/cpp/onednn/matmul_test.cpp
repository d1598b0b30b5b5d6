// onednn matmul / gemm kernels against the cpu reference kernels (BUILD-011 op class): batch
// broadcasting, 1-D operands, gemm transA/transB, alpha/beta, broadcast C; constant and
// non-constant B; placement through runtime::compile.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>

#include "backends/onednn/kernels/linear_kernels.h"
#include "cpp/onednn/linear_test_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

OpCall matmul_call(Shape a, Shape b) {
  OpCall c{"matmul"};
  c.inputs = {grid_tensor(std::move(a), 11), grid_tensor(std::move(b), 12)};
  return c;
}

TEST(OnednnMatmul, TwoD) {
  expect_onednn_matches_cpu(matmul_call({7, 13}, {13, 5}), {1});
  expect_onednn_matches_cpu(matmul_call({64, 784}, {784, 33}), {1});
}

TEST(OnednnMatmul, BatchedAndBroadcast) {
  expect_onednn_matches_cpu(matmul_call({3, 5, 6}, {3, 6, 4}), {1});
  expect_onednn_matches_cpu(matmul_call({2, 3, 5, 6}, {6, 4}), {1});
  expect_onednn_matches_cpu(matmul_call({5, 6}, {2, 3, 6, 4}), {1});
  expect_onednn_matches_cpu(matmul_call({2, 1, 5, 6}, {1, 3, 6, 4}), {1});
  // A 2-D B with batched A folds A's batch dims into M (one GEMM): attention projections.
  expect_onednn_matches_cpu(matmul_call({128, 1, 16}, {16, 24}), {1});
  expect_onednn_matches_cpu(matmul_call({3, 4, 1, 7}, {7, 5}), {1});
}

TEST(OnednnMatmul, OneDOperands) {
  expect_onednn_matches_cpu(matmul_call({6}, {6, 4}), {1});
  expect_onednn_matches_cpu(matmul_call({3, 5, 6}, {6}), {1});
  expect_onednn_matches_cpu(matmul_call({9}, {9}), {1});
  expect_onednn_matches_cpu(matmul_call({7}, {2, 7, 3}), {1});
}

OpCall gemm_call(Shape a, Shape b, std::optional<Shape> c, ir::AttrMap attrs) {
  OpCall call{"gemm"};
  call.inputs = {grid_tensor(std::move(a), 21), grid_tensor(std::move(b), 22),
                 c ? grid_tensor(*c, 23) : Tensor()};
  call.attrs = std::move(attrs);
  return call;
}

TEST(OnednnGemm, Transposes) {
  for (int64_t ta : {0, 1}) {
    for (int64_t tb : {0, 1}) {
      const Shape a = ta ? Shape{9, 5} : Shape{5, 9};
      const Shape b = tb ? Shape{7, 9} : Shape{9, 7};
      expect_onednn_matches_cpu(gemm_call(a, b, Shape{5, 7}, {{"transA", ta}, {"transB", tb}}),
                                {1});
    }
  }
}

TEST(OnednnGemm, AlphaBetaAndBroadcastC) {
  // Scales whose products stay exact, so the comparison is exact in f32.
  const ir::AttrMap ab{{"alpha", 0.5}, {"beta", 2.0}, {"transB", int64_t{1}}};
  for (const Shape& c : {Shape{5, 7}, Shape{7}, Shape{1, 7}, Shape{5, 1}, Shape{1}, Shape{}}) {
    expect_onednn_matches_cpu(gemm_call({5, 9}, {7, 9}, c, ab), {1});
  }
  expect_onednn_matches_cpu(gemm_call({5, 9}, {9, 7}, Shape{7}, {{"alpha", 1.5}}), {1});
  expect_onednn_matches_cpu(gemm_call({5, 9}, {9, 7}, Shape{7}, {{"beta", 0.0}}), {1});
  expect_onednn_matches_cpu(gemm_call({5, 9}, {9, 7}, std::nullopt, {{"alpha", 2.0}}), {1});
}

// One row of A over constant B (a classifier's batch-1 layer) runs as a matrix-vector product
// on dnnl_sgemm with the bias and a fused relu applied after it: B as stored ([K, N], or [N, K]
// with transB), alpha and beta, C a row, a scalar or absent.
TEST(OnednnGemm, OneRowOverConstantWeights) {
  const ir::AttrMap ab{{"alpha", 0.5}, {"beta", 2.0}, {"transB", int64_t{1}}};
  for (const std::optional<Shape>& c :
       {std::optional<Shape>{Shape{37}}, std::optional<Shape>{Shape{1, 37}},
        std::optional<Shape>{Shape{1}}, std::optional<Shape>{}}) {
    expect_onednn_matches_cpu(gemm_call({1, 70}, {37, 70}, c, ab), {1});
    expect_onednn_matches_cpu(gemm_call({1, 70}, {70, 37}, c, {}), {1});
  }
  expect_onednn_matches_cpu(matmul_call({1, 70}, {70, 37}), {1});
  // gemm + relu as fuse_post_ops builds it.
  OpCall fused = gemm_call({1, 70}, {37, 70}, Shape{37}, {{"transB", int64_t{1}}});
  fused.op = "fused_post_ops_internal";
  fused.attrs["base_op"] = std::string("gemm");
  fused.attrs["post_ops"] = std::vector<std::string>{"relu"};
  fused.attrs["post_op_params"] = std::vector<double>{0.0, 0.0};
  expect_onednn_matches_cpu(fused, {1});
  // ONNX Relu keeps a NaN (max(NaN, 0) is NaN in the cpu kernel): so does this path.
  fused.inputs[0].data<float>()[5] = std::numeric_limits<float>::quiet_NaN();
  fused.constant_inputs = {1};
  Result<std::vector<Tensor>> got = run_op(fused, "onednn");
  ASSERT_TRUE(got.is_ok()) << got.status().message();
  for (int64_t j = 0; j < 37; ++j) EXPECT_TRUE(std::isnan((*got)[0].data<float>()[j])) << j;
}

TEST(OnednnGemm, RunsOnOnednnThroughCompile) {
  ir::Graph g("gemm");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {4, 32}});
  const ir::ValueId w = g.add_constant("w", grid_tensor({10, 32}, 5));
  const ir::ValueId b = g.add_constant("b", grid_tensor({10}, 6));
  Result<ir::NodeId> n = g.create_node("gemm", "fc", {x, w, b}, 1, {{"transB", int64_t{1}}});
  ASSERT_TRUE(n.is_ok()) << n.status().message();
  g.add_output(g.node(*n).outputs[0]);
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  Result<runtime::Executable> fast = runtime::compile(g, on);
  ASSERT_TRUE(fast.is_ok()) << fast.status().message();
  EXPECT_EQ(placement_of(*fast, "fc").backend, "onednn");
  EXPECT_EQ(placement_of(*fast, "fc").path, "kernel");
  runtime::CompileOptions ref = uncached({"cpu"});
  Result<runtime::Executable> slow = runtime::compile(g, ref);
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  const runtime::TensorMap in{{"x", grid_tensor({4, 32}, 7)}};
  Result<runtime::TensorMap> a = fast->run(in), e = slow->run(in);
  ASSERT_TRUE(a.is_ok() && e.is_ok());
  const CompareResult c =
      compare_tensors(a->begin()->second, e->begin()->second, tolerance_for(DTypeCode::kFloat32));
  EXPECT_TRUE(c.ok) << c.message;
}

// y = act(x @ w + b) + r on f32 x [rows, 32], w [32, 16] constant, b [16], r [rows, 16]:
// the fusion pass folds bias, activation and residual into one fused matmul.
ir::Graph dense_block(int64_t rows, const Tensor& w, const Tensor& b, bool residual,
                      const char* act = "gelu") {
  ir::Graph g("dense");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {rows, 32}});
  ir::ValueId y = add_op(g, "matmul", "mm", {x, g.add_constant("w", w)});
  y = add_op(g, "add", "bias", {y, g.add_constant("b", b)});
  if (std::string_view(act) == "swish") {  // x * sigmoid(x): one swish post-op
    y = add_op(g, "mul", "act", {y, add_op(g, "sigmoid", "gate", {y})});
  } else {
    y = add_op(g, act, "act", {y});
  }
  if (residual) {
    const ir::ValueId r = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, {rows, 16}});
    y = add_op(g, "add", "res", {y, r});
  }
  g.add_output(y);
  return g;
}

// Attention's two activation matmuls: s = q @ k^T, o = softmax(s) @ v, q/k/v [2, 3, seq, 8].
ir::Graph attention(int64_t seq) {
  ir::Graph g("attention");
  const ir::TensorType t{DTypeCode::kFloat32, {2, 3, seq, 8}};
  const ir::ValueId q = g.add_input("q", t), k = g.add_input("k", t), v = g.add_input("v", t);
  const ir::ValueId kt = add_op(g, "transpose", "kt", {k}, {{"perm", ints{0, 1, 3, 2}}});
  const ir::ValueId s = add_op(g, "matmul", "qk", {q, kt});
  const ir::ValueId p = add_op(g, "softmax", "p", {s}, {{"axis", int64_t{-1}}});
  g.add_output(add_op(g, "matmul", "pv", {p, v}));
  return g;
}

// Compiles `g` with the cpu reference kernels and with onednn, shape-agnostic kernels on
// (ADR 0007, a Session's first-seen tier), and expects equal outputs on grid inputs.
void expect_shape_agnostic_matches_cpu(const ir::Graph& g) {
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  on.shape_agnostic_kernels = true;
  on.num_threads = 1;
  Result<runtime::Executable> fast = runtime::compile(g, on);
  ASSERT_TRUE(fast.is_ok()) << fast.status().message();
  EXPECT_TRUE(fast->report().shape_agnostic_kernels);
  Result<runtime::Executable> slow = runtime::compile(g, uncached({"cpu"}));
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  runtime::TensorMap in;
  uint32_t seed = 40;
  for (const auto& [name, type] : fast->input_signature()) {
    in.emplace(name, grid_tensor(type.shape, seed++));
  }
  Result<runtime::TensorMap> a = fast->run(in), e = slow->run(in);
  ASSERT_TRUE(a.is_ok() && e.is_ok());
  const CompareResult c =
      compare_tensors(a->begin()->second, e->begin()->second, tolerance_for(DTypeCode::kFloat32));
  EXPECT_TRUE(c.ok) << g.name() << ": " << c.message;
}

// A first-seen shape's matmul over constant weights runs the own loops where they take its
// post-ops (no descriptor), else takes a runtime row count: the compile for another row count
// re-uses the descriptor (and the primitive) the first one built, instead of creating
// (JIT-compiling) a new one; the full tier builds one per row count. Under 0.1 s.
TEST(OnednnMatmulShapeAgnostic, ANewRowCountReusesTheDescriptor) {
  const Tensor w = grid_tensor({32, 16}, 31), b = grid_tensor({16}, 32);
  runtime::CompileOptions on = uncached({"onednn", "cpu"});
  on.num_threads = 1;
  on.shape_agnostic_kernels = true;
  // Bias and gelu: the own loops (no descriptor built or looked up at all).
  const backends::onednn::MatmulCacheStats own = backends::onednn::matmul_cache_stats();
  for (int64_t rows : {3, 5}) {
    Result<runtime::Executable> exe = runtime::compile(dense_block(rows, w, b, false), on);
    ASSERT_TRUE(exe.is_ok()) << exe.status().message();
    EXPECT_EQ(placement_of(*exe, "mm").backend, "onednn");
  }
  EXPECT_EQ(backends::onednn::matmul_cache_stats().created, own.created);
  EXPECT_EQ(backends::onednn::matmul_cache_stats().hits, own.hits);
  // swish, which the own loops lack: a primitive with a runtime row count, built once.
  ASSERT_TRUE(runtime::compile(dense_block(3, w, b, false, "swish"), on).is_ok());
  const backends::onednn::MatmulCacheStats before = backends::onednn::matmul_cache_stats();
  for (int64_t rows : {5, 17, 64}) {
    Result<runtime::Executable> exe = runtime::compile(dense_block(rows, w, b, false, "swish"), on);
    ASSERT_TRUE(exe.is_ok()) << exe.status().message();
    EXPECT_EQ(placement_of(*exe, "mm").backend, "onednn");
  }
  EXPECT_EQ(backends::onednn::matmul_cache_stats().created, before.created);
  EXPECT_GT(backends::onednn::matmul_cache_stats().hits, before.hits);
  // Attention: every dim at run time, so another sequence length shares both matmuls' too.
  ASSERT_TRUE(runtime::compile(attention(4), on).is_ok());
  const uint64_t created = backends::onednn::matmul_cache_stats().created;
  for (int64_t seq : {9, 13}) ASSERT_TRUE(runtime::compile(attention(seq), on).is_ok());
  EXPECT_EQ(backends::onednn::matmul_cache_stats().created, created);
  // The full tier: static dims, a new descriptor per row count, built once for the fused
  // node's accepts() and prepare() (and once more for the unfused matmul the fusion pass asks
  // about).
  on.shape_agnostic_kernels = false;
  const uint64_t full_before = backends::onednn::matmul_cache_stats().created;
  ASSERT_TRUE(runtime::compile(dense_block(23, w, b, false), on).is_ok());
  const uint64_t made = backends::onednn::matmul_cache_stats().created - full_before;
  EXPECT_GE(made, 1u);
  EXPECT_LE(made, 2u);
  ASSERT_TRUE(runtime::compile(dense_block(23, w, b, false), on).is_ok());
  EXPECT_EQ(backends::onednn::matmul_cache_stats().created - full_before, made);
}

TEST(OnednnMatmulShapeAgnostic, PrepareTakesTheStateAcceptsBuilt) {
  // NodeContext::accepted_state: where prepare follows accepts at once (the interpreted tier),
  // the matmul's accepts leaves the primitive it built and prepare returns that same object.
  ir::Graph g("mm");
  const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {5, 8}});
  const ir::ValueId w = g.add_constant("w", grid_tensor({8, 3}, 41));
  const ir::NodeId id = *g.create_node("matmul", "mm", {x, w}, 1);
  g.value(g.node(id).outputs[0]).type = ir::TensorType{DTypeCode::kFloat32, {5, 3}};
  const ops::OpSchema* schema = ops::OpRegistry::global().find("matmul");
  ASSERT_NE(schema, nullptr);
  ops::NodeContext ctx = ops::make_node_context(g, g.node(id), schema);
  ctx.prefer_shape_agnostic = ctx.run_once = true;
  const ops::KernelDef* k = ops::KernelRegistry::global().find("matmul", "onednn");
  ASSERT_NE(k, nullptr);
  std::shared_ptr<void> accepted;
  ctx.accepted_state = &accepted;
  ASSERT_TRUE(k->supports(ctx).is_ok());
  ASSERT_NE(accepted, nullptr);
  const void* built = accepted.get();
  Result<std::shared_ptr<void>> prepared = k->prepare(ctx);
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().message();
  EXPECT_EQ(prepared->get(), built);
  EXPECT_EQ(accepted, nullptr);
  // Prepared for one run over constant weights: the own loops, no oneDNN primitive.
  EXPECT_EQ(
      std::static_pointer_cast<backends::onednn::LinearPrimitive>(*prepared)->implementation(),
      "frame:gemm");
  // Without the slot (a compile, a lowering pattern's check), accepts keeps nothing and packs
  // no weights (nothing would hold them); prepare builds its own and packs them.
  ctx.accepted_state = nullptr;
  const auto asked = [] {
    const backends::onednn::PackedWeightStats s = backends::onednn::packed_weight_stats();
    return s.packs + s.reuses;  // packed, or found packed while the first state holds them
  };
  const uint64_t before = asked();
  ASSERT_TRUE(k->supports(ctx).is_ok());
  EXPECT_EQ(asked(), before);
  Result<std::shared_ptr<void>> own = k->prepare(ctx);
  ASSERT_TRUE(own.is_ok());
  EXPECT_NE(own->get(), built);
  EXPECT_EQ(asked(), before + 1);
}

// One row over weights of 16 MiB or more (a classifier's batch-1 Gemm) takes the one-row gemv,
// which reads B as stored, instead of the own loops, which would pack a copy of B; smaller
// weights keep the own loops. Both match the cpu kernels, gemm with transB + bias + relu as
// fuse_post_ops builds it. About 0.6 s (the cpu reference of a 2048 x 2048 product).
TEST(OnednnMatmulShapeAgnostic, OneRowOverLargeWeightsReadsThemInPlace) {
  for (const int64_t n : {int64_t{64}, int64_t{2048}}) {
    const int64_t k = 2048;  // [2048, 2048] f32 is 16 MiB
    ir::Graph g("fc");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, k}});
    ir::ValueId y = add_op(g, "gemm", "fc",
                           {x, g.add_constant("w", grid_tensor({n, k}, 51)),
                            g.add_constant("b", grid_tensor({n}, 52))},
                           {{"transB", int64_t{1}}});
    g.add_output(add_op(g, "relu", "act", {y}));
    ASSERT_NO_FATAL_FAILURE(expect_shape_agnostic_matches_cpu(g));
    // The kernel as the first-seen tier prepares it.
    ir::Graph one("fc1");
    const ir::ValueId x1 = one.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, k}});
    const ir::ValueId w1 = one.add_constant("w", grid_tensor({n, k}, 53));
    const ir::NodeId id = *one.create_node("gemm", "fc", {x1, w1}, 1, {{"transB", int64_t{1}}});
    one.value(one.node(id).outputs[0]).type = ir::TensorType{DTypeCode::kFloat32, {1, n}};
    ops::NodeContext ctx =
        ops::make_node_context(one, one.node(id), ops::OpRegistry::global().find("gemm"));
    ctx.prefer_shape_agnostic = ctx.run_once = true;
    const ops::KernelDef* kd = ops::KernelRegistry::global().find("gemm", "onednn");
    ASSERT_NE(kd, nullptr);
    ASSERT_TRUE(kd->supports(ctx).is_ok());
    Result<std::shared_ptr<void>> prepared = kd->prepare(ctx);
    ASSERT_TRUE(prepared.is_ok()) << prepared.status().message();
    const std::string_view impl =
        std::static_pointer_cast<backends::onednn::LinearPrimitive>(*prepared)->implementation();
    EXPECT_EQ(impl, n == 64 ? "frame:gemm" : "") << n;
  }
}

// A compiled matmul over constant weights where oneDNN's matmul is its gemm-based one (AVX2,
// no AVX-512): frame's own loops over packed B (implementation "frame:gemm"), the product split
// over the threads by rows (many rows) or by columns (few rows, many columns), with a bias, a
// residual of the output's shape and an activation fused, and a plain product after them (197
// rows: ViT-S's, split over two threads in whole tiles, the last one short; and over packed
// weights past 1 MiB, each thread's rows in one product, several blocks of K and of rows,
// before the post-ops); each against the cpu kernels at 1 and 2 threads. With AVX-512 oneDNN
// keeps its brgemm matmul.
TEST(OnednnMatmul, CompiledConstantWeightsOnAGemmBasedOnednnRunOwnLoops) {
  struct Case {
    int64_t m, k, n;
  };
  uint32_t seed = 60;
  for (const Case& c : {Case{40, 72, 320}, Case{300, 40, 48}, Case{197, 64, 96}, Case{3, 17, 5},
                        Case{197, 520, 520}}) {
    ir::Graph g("dense");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {c.m, c.k}});
    const ir::ValueId r = g.add_input("r", ir::TensorType{DTypeCode::kFloat32, {c.m, c.n}});
    ir::ValueId y =
        add_op(g, "matmul", "mm", {x, g.add_constant("w", grid_tensor({c.k, c.n}, seed++))});
    y = add_op(g, "add", "bias", {y, g.add_constant("b", grid_tensor({c.n}, seed++))});
    y = add_op(g, "add", "res", {y, r});
    y = add_op(g, "tanh", "act", {y});
    g.add_output(
        add_op(g, "matmul", "mm2", {y, g.add_constant("w2", grid_tensor({c.n, 9}, seed++))}));
    runtime::TensorMap in{{"x", grid_tensor({c.m, c.k}, seed++)},
                          {"r", grid_tensor({c.m, c.n}, seed++)}};
    expect_same_as_unfused(g, in, ToleranceClass::kCrossBackend, {"mm", "mm2"});

    const ir::NodeId id = g.find_node("mm");
    const ops::NodeContext ctx =
        ops::make_node_context(g, g.node(id), ops::OpRegistry::global().find("matmul"));
    Result<std::shared_ptr<backends::onednn::LinearPrimitive>> p =
        backends::onednn::make_matmul(ctx, false, {}, true);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    if (dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core) {
      EXPECT_EQ((*p)->implementation(), "frame:gemm") << c.m << "x" << c.k << "x" << c.n;
    }
    // B given at run time: oneDNN's product, and where that is gemm-based, the bias, C (of
    // the output's shape) and the activation as own loops after it (post_after).
    ir::Graph h("two_activations");
    const ir::ValueId a = h.add_input("a", ir::TensorType{DTypeCode::kFloat32, {c.m, c.k}});
    const ir::ValueId b = h.add_input("b", ir::TensorType{DTypeCode::kFloat32, {c.k, c.n}});
    ir::ValueId z = add_op(h, "matmul", "ab", {a, b});
    z = add_op(h, "add", "bias", {z, h.add_constant("bias", grid_tensor({c.n}, seed++))});
    z = add_op(h, "relu", "act", {z});
    h.add_output(add_op(h, "gemm", "g",
                        {a, b, h.add_constant("c", grid_tensor({c.m, c.n}, seed++))},
                        {{"alpha", 0.5}}));
    h.add_output(z);
    runtime::TensorMap hin{{"a", grid_tensor({c.m, c.k}, seed++)},
                           {"b", grid_tensor({c.k, c.n}, seed++)}};
    expect_same_as_unfused(h, hin, ToleranceClass::kCrossBackend, {"ab", "g"});
  }
}

// Few rows over more than 8 MiB of constant weights (a language model's output layer) keep
// oneDNN's product on a gemm-based oneDNN (the own loops were slower with B streamed from
// memory); 128 rows take the own loops.
// Few rows over more than 8 MiB of constant weights keep oneDNN's product (a language model's
// head), except where N exceeds a K above 256 (ConvNeXt-T's last-stage [49, 768] x [768, 3072],
// which oneDNN ran at half the own loops' speed); 128 rows take the own loops whatever the
// weights.
TEST(OnednnMatmul, FewRowsOverLargeWeightsKeepOnednnsProduct) {
  if (dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core) {
    GTEST_SKIP() << "oneDNN runs its brgemm matmul with AVX-512";
  }
  // The implementation make_matmul picks for [m, k] x constant [k, n].
  const auto implementation = [](int64_t m, int64_t k, int64_t n) {
    ir::Graph g("few_rows");
    const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {m, k}});
    const ir::NodeId id =
        *g.create_node("matmul", "mm", {x, g.add_constant("w", grid_tensor({k, n}, 70))}, 1, {});
    g.value(g.node(id).outputs[0]).type = ir::TensorType{DTypeCode::kFloat32, {m, n}};
    const ops::NodeContext ctx =
        ops::make_node_context(g, g.node(id), ops::OpRegistry::global().find("matmul"));
    Result<std::shared_ptr<backends::onednn::LinearPrimitive>> p =
        backends::onednn::make_matmul(ctx, false, {}, false);
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.is_ok() ? std::string((*p)->implementation()) : std::string();
  };
  EXPECT_NE(implementation(64, 256, 8200), "frame:gemm");   // 8.4 MB, K = 256
  EXPECT_EQ(implementation(128, 256, 8200), "frame:gemm");  // enough rows
  EXPECT_EQ(implementation(49, 768, 3072), "frame:gemm");   // 9.4 MB, N > K > 256
  EXPECT_NE(implementation(49, 3072, 768), "frame:gemm");   // N < K
}

TEST(OnednnMatmulShapeAgnostic, FusedBlocksAndAttentionMatchTheReference) {
  const Tensor w = grid_tensor({32, 16}, 33), b = grid_tensor({16}, 34);
  for (int64_t rows : {1, 7, 40}) {
    expect_shape_agnostic_matches_cpu(dense_block(rows, w, b, false));
    // A residual add stays a static primitive (no runtime dims in a binary post-op).
    expect_shape_agnostic_matches_cpu(dense_block(rows, w, b, true));
  }
  for (int64_t seq : {1, 5, 19}) expect_shape_agnostic_matches_cpu(attention(seq));
}

}  // namespace
}  // namespace frame::test::linear
