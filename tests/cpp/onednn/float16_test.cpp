// float16-widening (src/passes/float16_widening.cpp; docs/architecture/compiler-passes.md):
// an f16 graph compiled for {onednn, cpu} runs its convs, pool, add and gemm on onednn's f32
// kernels with one cast at each graph edge, f16 weights converted once at compile time, and
// computes what the cpu-only compile (the cpu kernels in f16, no widening) does within the
// BUILD-011 f16 deep-network class; a value an f16-only reader needs is cast back; cpu alone
// is left untouched. Cost: under 1 s on 2 cores.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cpp/onednn/linear_test_util.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;

Tensor to_f16(const Tensor& t) {
  std::vector<Half> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = Half(t.data<float>()[i]);
  return Tensor::from_vector<Half>(t.shape(), v);
}

// x f16[1,8,12,12] -> conv 3x3 (8->16) -> relu -> max_pool 2x2 = p; p -> conv 1x1 (16->16)
// -> + p -> global_average_pool -> flatten -> gemm (16->10) = y; and p -> sigmoid = s.
ir::Graph f16_graph() {
  ir::Graph g("f16");
  const ir::ValueId x = g.add_input("x", {DTypeCode::kFloat16, {1, 8, 12, 12}});
  auto weight = [&](const std::string& name, Shape s, uint32_t seed, float scale) {
    Tensor t = grid_tensor(std::move(s), seed);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= scale;
    return g.add_constant(name, to_f16(t));
  };
  const ir::ValueId c1 = add_op(
      g, "conv", "c1", {x, weight("w1", {16, 8, 3, 3}, 1, 0.0625F), weight("b1", {16}, 2, 1)},
      {{"pads", ints{1, 1, 1, 1}}});
  const ir::ValueId r1 = add_op(g, "relu", "r1", {c1});
  const ir::ValueId p =
      add_op(g, "max_pool", "p", {r1}, {{"kernel_shape", ints{2, 2}}, {"strides", ints{2, 2}}});
  const ir::ValueId c2 = add_op(
      g, "conv", "c2", {p, weight("w2", {16, 16, 1, 1}, 3, 0.125F), weight("b2", {16}, 4, 1)});
  const ir::ValueId sum = add_op(g, "add", "sum", {c2, p});
  const ir::ValueId gap = add_op(g, "global_average_pool", "gap", {sum});
  const ir::ValueId flat = add_op(g, "flatten", "flat", {gap});
  const ir::ValueId y =
      add_op(g, "gemm", "fc", {flat, weight("wf", {10, 16}, 5, 0.25F), weight("bf", {10}, 6, 1)},
             {{"transB", int64_t{1}}});
  const ir::ValueId s = add_op(g, "sigmoid", "s", {p});
  g.add_output(y);
  g.add_output(s);
  return g;
}

TEST(OnednnFloat16, WidenedGraphRunsOnOnednnAndMatchesTheCpuF16Run) {
  const ir::Graph g = f16_graph();
  Tensor xf = grid_tensor({1, 8, 12, 12}, 7);
  const runtime::TensorMap inputs{{"x", to_f16(xf)}};

  Result<runtime::Executable> cpu = runtime::compile(g, uncached({"cpu"}));
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  for (const runtime::Placement& pl : cpu->report().placements) {
    EXPECT_NE(pl.op, "cast") << "cpu runs f16 itself: nothing to widen, at " << pl.node;
  }
  Result<runtime::TensorMap> want = cpu->run(inputs);
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();

  Result<runtime::Executable> fast = runtime::compile(g, uncached({"onednn", "cpu"}));
  ASSERT_TRUE(fast.is_ok()) << fast.status().to_string();
  std::map<std::string, int> on_cpu;
  int casts = 0;
  for (const runtime::Placement& pl : fast->report().placements) {
    if (pl.op == "cast") ++casts;
    if (pl.backend == "cpu" && pl.op != "cast" && pl.op != "flatten") ++on_cpu[pl.op];
  }
  EXPECT_TRUE(on_cpu.empty()) << "ops left on the cpu kernels: " << on_cpu.size();
  // Casts: x in, and fc's output back to f16; s's cast back is fused with the sigmoid into
  // one onednn elementwise kernel. p feeds only widened nodes, so it is never cast back.
  EXPECT_EQ(casts, 2);
  EXPECT_EQ(placement_of(*fast, "fused_s:0/to_f16_2").backend, "onednn");
  for (const runtime::Placement& pl : fast->report().placements) {
    EXPECT_EQ(pl.node.find("p:0/to_f16"), std::string::npos) << pl.node;
  }
  Result<runtime::TensorMap> got = fast->run(inputs);
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  for (const char* name : {"fc:0", "s:0"}) {
    const Tensor& a = got->at(name);
    EXPECT_EQ(a.dtype(), DTypeCode::kFloat16) << name;
    CompareResult c = compare_tensors(
        a, want->at(name), tolerance_for(DTypeCode::kFloat16, ToleranceClass::kDeepNetwork));
    EXPECT_TRUE(c.ok) << name << ": " << c.message;
  }
}

}  // namespace
}  // namespace frame::test::linear
