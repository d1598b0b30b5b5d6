// onednn normalization kernels (batch_normalization, instance_normalization,
// layer_normalization, lrn) against the cpu reference kernel on shape families the op database
// lacks: large channel counts, non-constant and constant statistics, parameters in another
// dtype, layer_norm over several trailing axes with broadcast Scale and the Mean/InvStdDev
// outputs; plus placement and declines (M10).

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "nn_test_util.h"

namespace frame::test::onednn {
namespace {

OpCall bn_call(Shape x, uint32_t seed, DTypeCode dt = DTypeCode::kFloat32) {
  const int64_t c = x[1];
  OpCall call;
  call.op = "batch_normalization";
  call.inputs = {random_tensor(x, seed, 2.0, dt), random_tensor({c}, seed + 1),
                 random_tensor({c}, seed + 2), random_tensor({c}, seed + 3),
                 uniform_tensor({c}, seed + 4, 0.2f, 3.0f)};
  call.attrs = {{"epsilon", 1e-3}};
  return call;
}

TEST(OnednnNorm, BatchNormNonConstantStatsMatchesCpu) {
  expect_matches_cpu(bn_call({2, 256, 13, 13}, 1));
  expect_matches_cpu(bn_call({4, 7}, 2));
  expect_matches_cpu(bn_call({1, 3, 5, 4, 3}, 3));
  expect_matches_cpu(bn_call({1, 1000, 1, 1}, 4));
}

TEST(OnednnNorm, BatchNormConstantStatsMatchesCpu) {
  OpCall c = bn_call({2, 64, 9, 11}, 10);
  c.constant_inputs = {1, 2, 3, 4};
  expect_matches_cpu(c);
}

TEST(OnednnNorm, BatchNormBf16MatchesCpu) {
  FRAME_SKIP_WITHOUT_ONEDNN_BF16();
  // bf16 data with f32 statistics (passed as they are) and with bf16 statistics (converted
  // per run, or at prepare time when constant).
  expect_matches_cpu(bn_call({2, 32, 7, 7}, 20, DTypeCode::kBFloat16));
  OpCall c = bn_call({2, 32, 7, 7}, 21, DTypeCode::kBFloat16);
  for (size_t i = 1; i < 5; ++i) {
    std::vector<BFloat16> v;
    for (int64_t k = 0; k < c.inputs[i].numel(); ++k) {
      v.emplace_back(c.inputs[i].data<float>()[k]);
    }
    c.inputs[i] = Tensor::from_vector<BFloat16>(c.inputs[i].shape(), v);
  }
  expect_matches_cpu(c);
  c.constant_inputs = {1, 2, 3, 4};
  expect_matches_cpu(c);
}

OpCall in_call(Shape x, uint32_t seed) {
  OpCall call;
  call.op = "instance_normalization";
  call.inputs = {random_tensor(x, seed, 3.0), random_tensor({x[1]}, seed + 1),
                 random_tensor({x[1]}, seed + 2)};
  call.attrs = {{"epsilon", 1e-5}};
  return call;
}

TEST(OnednnNorm, InstanceNormMatchesCpu) {
  expect_matches_cpu(in_call({3, 7, 11, 13}, 30));
  expect_matches_cpu(in_call({1, 256, 14, 14}, 31));
  expect_matches_cpu(in_call({2, 5, 37}, 32));
  OpCall c = in_call({4, 16, 6, 5, 3}, 33);
  c.constant_inputs = {1, 2};
  expect_matches_cpu(c);
}

OpCall ln_call(Shape x, int64_t axis, Shape scale, bool bias, uint32_t seed) {
  OpCall call;
  call.op = "layer_normalization";
  call.inputs = {random_tensor(x, seed, 2.0), random_tensor(scale, seed + 1)};
  if (bias) call.inputs.push_back(random_tensor(scale, seed + 2));
  call.attrs = {{"axis", axis}, {"epsilon", 1e-5}};
  return call;
}

TEST(OnednnNorm, LayerNormMatchesCpu) {
  expect_matches_cpu(ln_call({128, 768}, -1, {768}, true, 40));
  expect_matches_cpu(ln_call({2, 17, 33}, -1, {33}, false, 41));
  // Several trailing axes.
  expect_matches_cpu(ln_call({4, 6, 5, 7}, 1, {6, 5, 7}, true, 42));
  expect_matches_cpu(ln_call({3, 9, 10}, -2, {9, 10}, true, 43));
}

TEST(OnednnNorm, LayerNormBroadcastScaleMatchesCpu) {
  // Scale [1, 7] and B [7] broadcast over the normalised shape [5, 7]: gathered per run, or
  // expanded at prepare time when constant.
  OpCall c = ln_call({3, 5, 7}, 1, {1, 7}, true, 50);
  c.inputs[2] = random_tensor({7}, 53);
  expect_matches_cpu(c);
  c.constant_inputs = {1, 2};
  expect_matches_cpu(c);
}

TEST(OnednnNorm, LayerNormStatsOutputsMatchCpu) {
  OpCall c = ln_call({8, 3, 20}, 1, {3, 20}, true, 60);
  c.num_outputs = 3;
  expect_matches_cpu(c);
  c.num_outputs = 2;
  expect_matches_cpu(c);
}

OpCall lrn_call(Shape x, int64_t size, double alpha, double beta, double bias, uint32_t seed) {
  OpCall call;
  call.op = "lrn";
  call.inputs = {random_tensor(x, seed, 2.0)};
  call.attrs = {{"size", size}, {"alpha", alpha}, {"beta", beta}, {"bias", bias}};
  return call;
}

TEST(OnednnNorm, LrnMatchesCpu) {
  expect_matches_cpu(lrn_call({2, 32, 7, 9}, 5, 1e-4, 0.75, 1.0, 70));
  expect_matches_cpu(lrn_call({1, 96, 13, 13}, 5, 1e-2, 0.75, 2.0, 71));
  expect_matches_cpu(lrn_call({3, 6, 11}, 3, 0.3, 0.5, 1.5, 72));
}

TEST(OnednnNorm, RunsOnOnednnWhenCompiled) {
  OpCall bn = bn_call({1, 32, 8, 8}, 80);
  bn.constant_inputs = {1, 2, 3, 4};
  expect_runs_on_onednn(bn);
  OpCall ln = ln_call({16, 64}, -1, {64}, true, 81);
  ln.constant_inputs = {1, 2};
  expect_runs_on_onednn(ln);
  OpCall in = in_call({2, 8, 6, 6}, 82);
  in.constant_inputs = {1, 2};
  expect_runs_on_onednn(in);
  expect_runs_on_onednn(lrn_call({1, 16, 5, 5}, 3, 1e-3, 0.75, 1.0, 83));
}

TEST(OnednnNorm, ConcurrentRunsAgreeWithCpu) {
  FRAME_SKIP_WITHOUT_ONEDNN_BF16();
  // Executable::run is re-entrant: the prepared state is shared read-only, per-run parameter
  // staging and oneDNN scratchpads are per thread. The bf16 Scale [1, 7] (a graph input) is
  // broadcast and converted per run into the staging buffer.
  OpCall c = ln_call({64, 5, 7}, 1, {1, 7}, true, 85);
  c.inputs[2] = random_tensor({7}, 86);
  std::vector<BFloat16> sb;
  for (int64_t k = 0; k < 7; ++k) sb.emplace_back(c.inputs[1].data<float>()[k]);
  c.inputs[1] = Tensor::from_vector<BFloat16>({1, 7}, sb);
  c.inputs[2] = Tensor::from_vector<BFloat16>({7}, sb);
  // Scale and B share X's dtype (type variable T).
  c.inputs[0] = random_tensor({64, 5, 7}, 87, 2.0, DTypeCode::kBFloat16);
  Result<runtime::Executable> exe = compile_on_onednn(c);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  EXPECT_EQ(placement_of(*exe, c.node_name).backend, "onednn");
  Result<std::vector<Tensor>> want = run_op(c, "cpu");
  ASSERT_TRUE(want.is_ok()) << want.status().to_string();
  const runtime::TensorMap in = graph_inputs(c);
  std::vector<int> bad(4, 0);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < bad.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) {
        Result<runtime::TensorMap> out = exe->run(in);
        const bool ok = out.is_ok() && compare_tensors(out->at("out0"), (*want)[0],
                                                       tolerance_for(DTypeCode::kBFloat16,
                                                                     ToleranceClass::kCrossBackend))
                                           .ok;
        bad[t] += ok ? 0 : 1;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (size_t t = 0; t < bad.size(); ++t) EXPECT_EQ(bad[t], 0) << "thread " << t;
}

TEST(OnednnNorm, DeclinedNodesFallBackToCpu) {
  OpCall lrn = lrn_call({1, 8, 4, 4}, 4, 1e-3, 0.75, 1.0, 90);
  expect_declined(lrn, "even size 4");
  expect_falls_back_to_cpu(lrn, "even size 4");

  OpCall bn = bn_call({4, 3, 5}, 91);
  bn.attrs["training_mode"] = int64_t{1};
  bn.num_outputs = 3;
  expect_declined(bn, "training_mode=1");
  expect_falls_back_to_cpu(bn, "training_mode=1");
}

TEST(OnednnNorm, LayerNormBf16StashDeclined) {
  OpCall ln = ln_call({4, 10}, -1, {10}, true, 95);
  ln.attrs["stash_type"] = int64_t{16};
  ln.num_outputs = 3;
  expect_declined(ln, "stash_type=16");
  expect_falls_back_to_cpu(ln, "stash_type=16");
  // Without the statistics outputs stash_type does not matter.
  ln.num_outputs = 1;
  expect_matches_cpu(ln);
}

}  // namespace
}  // namespace frame::test::onednn
