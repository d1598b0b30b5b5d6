// onednn matmul / gemm kernels against the cpu reference kernels (BUILD-011 op class): batch
// broadcasting, 1-D operands, gemm transA/transB, alpha/beta, broadcast C; constant and
// non-constant B; placement through runtime::compile.

#include <gtest/gtest.h>

#include "cpp/onednn/linear_test_util.h"

namespace frame::test::linear {
namespace {

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

}  // namespace
}  // namespace frame::test::linear
