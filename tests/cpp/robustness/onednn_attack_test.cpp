// Adversarial cases for the onednn backend, its lowering patterns and the runtime features
// that came with it (run into caller buffers, profiling, concurrency). Every result is compared
// with an independent reference: the same graph compiled with backends={"cpu"}, or values
// computed here by hand.

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "common/tolerance.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

using ints = std::vector<int64_t>;
using test::compare_tensors;
using test::CompareResult;
using test::tolerance_for;
using test::ToleranceClass;

// Deterministic values in about [-2, 2], different per `seed`.
Tensor grid(const Shape& s, int seed) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[static_cast<size_t>(i)] = static_cast<float>(std::sin(0.37 * static_cast<double>(i) + seed) *
                                                   (1.5 + 0.5 * std::cos(seed)));
  }
  return Tensor::from_vector<float>(s, v);
}

Result<Executable> compile_with(const ir::Graph& g, std::vector<std::string> backends) {
  CompileOptions o;
  o.backends = std::move(backends);
  o.use_cache = false;
  return compile(g, o);
}

// Compiles `g` with the default backends and with {"cpu"}, runs both on `in` and compares
// every output (BUILD-011 cross-backend class).
void expect_default_matches_cpu(const ir::Graph& g, const TensorMap& in) {
  CompileOptions fast_opts;
  fast_opts.use_cache = false;
  Result<Executable> fast = compile(g, fast_opts);
  ASSERT_TRUE(fast.is_ok()) << fast.status().message();
  Result<Executable> slow = compile_with(g, {"cpu"});
  ASSERT_TRUE(slow.is_ok()) << slow.status().message();
  Result<TensorMap> a = fast->run(in), e = slow->run(in);
  ASSERT_TRUE(a.is_ok()) << a.status().message();
  ASSERT_TRUE(e.is_ok()) << e.status().message();
  for (const auto& [name, t] : *e) {
    ASSERT_EQ(a->count(name), 1u) << name;
    const CompareResult c = compare_tensors(
        a->at(name), t, tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
}

ir::ValueId scalar_constant(ir::Graph& g, const std::string& name, float v) {
  return g.add_constant(name, Tensor::from_vector<float>({}, {v}));
}

// conv -> clip(min=1, max=-1): oneDNN rejects an eltwise_clip post-op whose alpha exceeds its
// beta by throwing dnnl::error; the lowering pattern's support check let it escape and
// terminate the process. The clip must stay a separate node (or the fused node be declined)
// and the result match the cpu reference.
TEST(OnednnAttack, ConvClipWithMinAboveMax) {
  ir::Graph g("conv_clip");
  const ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {1, 2, 5, 5}});
  const ir::ValueId w = g.add_constant("w", grid({3, 2, 3, 3}, 1));
  const ir::NodeId c = *g.create_node("conv", "c0", {x, w}, 1, {{"pads", ints{1, 1, 1, 1}}});
  const ir::ValueId lo = scalar_constant(g, "lo", 1.0F), hi = scalar_constant(g, "hi", -1.0F);
  const ir::NodeId k = *g.create_node("clip", "k0", {g.node(c).outputs[0], lo, hi}, 1);
  g.add_output(g.node(k).outputs[0]);
  expect_default_matches_cpu(g, {{"x", grid({1, 2, 5, 5}, 2)}});
}

TEST(OnednnAttack, MatmulClipWithMinAboveMax) {
  ir::Graph g("mm_clip");
  const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {4, 6}});
  const ir::ValueId b = g.add_constant("b", grid({6, 5}, 3));
  const ir::NodeId m = *g.create_node("matmul", "m0", {a, b}, 1);
  const ir::ValueId lo = scalar_constant(g, "lo", 0.5F), hi = scalar_constant(g, "hi", -0.5F);
  const ir::NodeId k = *g.create_node("clip", "k0", {g.node(m).outputs[0], lo, hi}, 1);
  g.add_output(g.node(k).outputs[0]);
  expect_default_matches_cpu(g, {{"a", grid({4, 6}, 4)}});
}

// gemm with a tiny beta: y = A*B + 1e-39*C is about A*B, but the kernel computed
// beta * ((alpha / beta) * A*B + C) with alpha / beta = 1e39 overflowing f32 to inf.
TEST(OnednnAttack, GemmWithTinyBetaStaysFinite) {
  for (double beta : {1e-39, 1e-30}) {
    ir::Graph g("gemm_beta");
    const ir::ValueId a = g.add_input("a", ir::TensorType{DTypeCode::kFloat32, {4, 5}});
    const ir::ValueId b = g.add_constant("b", grid({5, 3}, 5));
    const ir::ValueId cc = g.add_constant("c", grid({3}, 6));
    const ir::NodeId n = *g.create_node("gemm", "g0", {a, b, cc}, 1, {{"beta", beta}});
    g.add_output(g.node(n).outputs[0]);
    // A large A*B: with beta = 1e-30 the scaled accumulator (1e30 * A*B) overflows too.
    Tensor in = grid({4, 5}, 7);
    for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] *= 1e9F;
    SCOPED_TRACE(beta);
    expect_default_matches_cpu(g, {{"a", in}});
  }
}

}  // namespace
}  // namespace frame::runtime
