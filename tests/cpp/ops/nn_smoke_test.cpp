// Reductions, linear algebra and NN ops beyond the op database: shape-inference error
// messages, decompositions with hand-made inputs (the generic decomposition test cannot build
// valid NCHW / axis inputs), multi-threaded kernels against the single-threaded result, and
// training-mode dropout statistics.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"
#include "cpp/ops/graph_runner.h"
#include "frame/ops/op_registry.h"

namespace frame::test {
namespace {

Tensor randn(const Shape& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (float& x : v) x = n(rng);
  return Tensor::from_vector<float>(shape, v);
}

std::string error_of(OpCall call) {
  Result<std::vector<Tensor>> r = run_op(call);
  return r.is_ok() ? std::string("<ok>") : r.status().message();
}

TEST(NnShapeErrors, ConvNamesNodeInputAndRanks) {
  OpCall c{"conv", {randn({1, 3, 5, 5}, 1), randn({2, 3, 3}, 2)}};
  c.node_name = "conv_3";
  EXPECT_NE(error_of(c).find("node 'conv_3' (conv): input 1 (W) expects rank 4, got rank 3"),
            std::string::npos)
      << error_of(c);
  c.inputs[1] = randn({2, 2, 3, 3}, 2);
  EXPECT_NE(error_of(c).find("channel mismatch"), std::string::npos) << error_of(c);
  c.inputs = {randn({1, 1, 2, 2}, 1), randn({1, 1, 3, 3}, 2)};
  EXPECT_NE(error_of(c).find("non-positive output size"), std::string::npos) << error_of(c);
  c.attrs["auto_pad"] = std::string("SIDEWAYS");
  EXPECT_NE(error_of(c).find("auto_pad"), std::string::npos) << error_of(c);
}

TEST(NnShapeErrors, NonConstantShapeOperandsAreRejected) {
  OpCall r{"reduce_sum", {randn({2, 3}, 1), Tensor::from_vector<int64_t>({1}, {1})}};
  EXPECT_NE(error_of(r).find("ARCH-044"), std::string::npos) << error_of(r);
  r.constant_inputs = {1};
  EXPECT_EQ(error_of(r), "<ok>");
  OpCall k{"top_k", {randn({2, 3}, 1), Tensor::from_vector<int64_t>({1}, {2})}};
  k.num_outputs = 2;
  EXPECT_NE(error_of(k).find("ARCH-044"), std::string::npos) << error_of(k);
  k.constant_inputs = {1};
  EXPECT_EQ(error_of(k), "<ok>");
}

TEST(NnShapeErrors, MatmulGemmEinsum) {
  EXPECT_NE(error_of({"matmul", {randn({2, 3}, 1), randn({4, 5}, 2)}}).find("inner dims differ"),
            std::string::npos);
  EXPECT_NE(error_of({"gemm", {randn({2, 3}, 1), randn({3, 4}, 2), randn({3, 4}, 3)}})
                .find("input 2 (C)"),
            std::string::npos);
  OpCall e{"einsum", {randn({2, 3}, 1), randn({4, 5}, 2)}};
  e.attrs["equation"] = std::string("ij,jk->ik");
  EXPECT_NE(error_of(e).find("subscript 'j'"), std::string::npos) << error_of(e);
  e.attrs["equation"] = std::string("ij->iz");
  e.inputs.pop_back();
  EXPECT_NE(error_of(e).find("output subscript 'z'"), std::string::npos) << error_of(e);
}

TEST(NnShapeErrors, LayerNormParamsVaryingOverOuterDimsAreRejected) {
  // [1, 1, 5] over X [2, 3, 5] is accepted (op database case leading_ones_params); [2, 1, 5]
  // would scale each outer slice differently and [1, 1, 1, 5] would raise Y's rank.
  OpCall ln{"layer_normalization", {randn({2, 3, 5}, 1), randn({1, 1, 5}, 2)}};
  EXPECT_EQ(error_of(ln), "<ok>");
  ln.inputs[1] = randn({2, 1, 5}, 2);
  EXPECT_NE(error_of(ln).find("input 1 (Scale) [2,1,5] does not broadcast to the normalised "
                              "shape [5]"),
            std::string::npos)
      << error_of(ln);
  ln.inputs[1] = randn({1, 1, 1, 5}, 2);
  EXPECT_NE(error_of(ln).find("input 1 (Scale)"), std::string::npos) << error_of(ln);
}

void expect_decomposition_matches(const OpCall& call) {
  SCOPED_TRACE(call.op);
  const ops::OpSchema* schema = ops::OpRegistry::global().find(call.op);
  ASSERT_NE(schema, nullptr);
  ASSERT_NE(schema->decompose_fn(), nullptr);
  ops::NodeContext ctx;
  ctx.op = call.op;
  ctx.node_name = "n";
  ctx.attrs = &call.attrs;
  ctx.schema = schema;
  ctx.num_outputs = call.num_outputs;
  for (const Tensor& t : call.inputs) {
    ctx.input_types.push_back({t.dtype(), t.shape()});
    ctx.input_present.push_back(true);
    ctx.input_constants.push_back(nullptr);
  }
  Result<std::vector<ir::TensorType>> own = schema->infer(ctx);
  ASSERT_TRUE(own.is_ok()) << own.status().to_string();
  Result<ir::Graph> g = schema->decompose_fn()(ctx);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const ir::OpQuery query = ops::make_op_query();
  ASSERT_TRUE(g->verify(query).is_ok()) << g->verify(query).to_string();
  ASSERT_EQ(g->outputs().size(), own->size());
  for (size_t k = 0; k < own->size(); ++k) {
    EXPECT_EQ(*g->value(g->outputs()[k]).type, (*own)[k]) << "output " << k;
  }
  Result<std::vector<Tensor>> direct = run_op(call);
  ASSERT_TRUE(direct.is_ok()) << direct.status().to_string();
  Result<std::vector<Tensor>> via = run_graph(*g, call.inputs);
  ASSERT_TRUE(via.is_ok()) << via.status().to_string();
  for (size_t k = 0; k < direct->size(); ++k) {
    // The micro-graph rounds to f32 after every node; the kernel accumulates in double.
    CompareResult r = compare_tensors((*via)[k], (*direct)[k], Tolerance{1e-4, 1e-5});
    EXPECT_TRUE(r.ok) << "output " << k << ": " << r.message;
  }
}

TEST(NnDecomposition, CompositesWithRealisticInputs) {
  expect_decomposition_matches(
      {"instance_normalization", {randn({2, 3, 4, 5}, 1), randn({3}, 2), randn({3}, 3)}});
  OpCall ln{"layer_normalization", {randn({2, 3, 5}, 4), randn({3, 5}, 5), randn({5}, 6)}};
  ln.attrs["axis"] = int64_t{1};
  ln.num_outputs = 3;
  expect_decomposition_matches(ln);
  OpCall ls{"log_softmax", {randn({2, 3, 4}, 7)}};
  ls.attrs = {{"axis", int64_t{1}}, {"legacy_flatten", int64_t{1}}};
  expect_decomposition_matches(ls);
  OpCall l2{"reduce_l2", {randn({3, 4, 5}, 8)}};
  l2.attrs = {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}};
  expect_decomposition_matches(l2);
  OpCall lse{"reduce_log_sum_exp", {randn({3, 4, 5}, 9)}};
  lse.attrs = {{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t{0}}};
  expect_decomposition_matches(lse);
}

// OpenMP splits must not change any value: every row is computed the same way.
TEST(NnThreads, ParallelKernelsMatchSerial) {
  std::vector<OpCall> calls = {
      {"conv",
       {randn({2, 4, 9, 9}, 1), randn({6, 2, 3, 3}, 2), randn({6}, 3)},
       {{"group", int64_t{2}}, {"pads", std::vector<int64_t>{1, 1, 1, 1}}}},
      {"conv_transpose",
       {randn({2, 4, 5, 5}, 4), randn({4, 3, 3, 3}, 5)},
       {{"strides", std::vector<int64_t>{2, 2}}}},
      {"matmul", {randn({3, 17, 9}, 6), randn({9, 11}, 7)}},
      {"gemm", {randn({17, 9}, 8), randn({11, 9}, 9)}, {{"transB", int64_t{1}}}},
      {"reduce_sum", {randn({5, 6, 7}, 10)}, {{"axes", std::vector<int64_t>{1}}}},
      {"max_pool", {randn({2, 3, 8, 8}, 11)}, {{"kernel_shape", std::vector<int64_t>{3, 3}}}},
      {"average_pool", {randn({2, 3, 8, 8}, 12)}, {{"kernel_shape", std::vector<int64_t>{2, 2}}}},
      {"softmax", {randn({4, 5, 6}, 13)}, {{"axis", int64_t{1}}}},
      {"layer_normalization", {randn({4, 9}, 14), randn({9}, 15)}},
      {"einsum", {randn({4, 5}, 16), randn({5, 6}, 17)}, {{"equation", std::string("ij,jk")}}},
  };
  for (OpCall& c : calls) {
    SCOPED_TRACE(c.op);
    Result<std::vector<Tensor>> one = run_op(c);
    ASSERT_TRUE(one.is_ok()) << one.status().to_string();
    c.num_threads = 4;
    Result<std::vector<Tensor>> four = run_op(c);
    ASSERT_TRUE(four.is_ok()) << four.status().to_string();
    EXPECT_TRUE((*one)[0].bitwise_equal((*four)[0]));
  }
}

TEST(NnDropout, TrainingModeScalesKeptElementsAndSeedRepeats) {
  const Tensor x = Tensor::from_vector<float>({4000}, std::vector<float>(4000, 1.5f));
  OpCall c{"dropout",
           {x, Tensor::scalar<float>(0.25f), Tensor::scalar<bool>(true)},
           {{"seed", int64_t{42}}}};
  c.num_outputs = 2;
  Result<std::vector<Tensor>> a = run_op(c);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  int64_t kept = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const bool k = (*a)[1].data<bool>()[i];
    kept += k ? 1 : 0;
    EXPECT_EQ((*a)[0].data<float>()[i], k ? 2.0f : 0.0f);
  }
  EXPECT_NEAR(static_cast<double>(kept) / 4000.0, 0.75, 0.05);
  Result<std::vector<Tensor>> b = run_op(c);
  ASSERT_TRUE(b.is_ok());
  EXPECT_TRUE((*a)[1].bitwise_equal((*b)[1]));
}

}  // namespace
}  // namespace frame::test
