// onednn pooling kernels (max_pool, average_pool, global pools) against the cpu reference
// kernel on shape families the op database lacks: odd spatial sizes, ceil_mode,
// count_include_pad, dilated max pooling, asymmetric and auto pads, large channel counts;
// plus placement (runs on onednn, path "kernel") and declines (falls back to cpu, M10).

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "nn_test_util.h"

namespace frame::test::onednn {
namespace {

using Ints = std::vector<int64_t>;

OpCall pool_call(std::string op, Tensor x, ir::AttrMap attrs) {
  OpCall c;
  c.op = std::move(op);
  c.inputs = {std::move(x)};
  c.attrs = std::move(attrs);
  return c;
}

struct PoolCase {
  std::string name;
  Shape x;
  ir::AttrMap attrs;
};

std::vector<PoolCase> window_cases() {
  return {
      {"odd_k3s2p1",
       {1, 3, 17, 23},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"resnet_stem",
       {1, 64, 112, 112},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"ceil_no_pads",
       {2, 5, 15, 14},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}}},
      {"ceil_past_pads",
       {1, 4, 14, 14},
       {{"kernel_shape", Ints{3, 3}},
        {"strides", Ints{2, 2}},
        {"pads", Ints{1, 1, 1, 1}},
        {"ceil_mode", int64_t{1}}}},
      {"asym_pads",
       {1, 6, 11, 9},
       {{"kernel_shape", Ints{2, 3}}, {"strides", Ints{1, 2}}, {"pads", Ints{0, 2, 1, 1}}}},
      {"same_upper",
       {1, 3, 10, 7},
       {{"kernel_shape", Ints{3, 2}},
        {"strides", Ints{2, 2}},
        {"auto_pad", std::string("SAME_UPPER")}}},
      {"same_lower",
       {1, 3, 10, 7},
       {{"kernel_shape", Ints{3, 2}},
        {"strides", Ints{2, 2}},
        {"auto_pad", std::string("SAME_LOWER")}}},
      {"valid",
       {1, 3, 10, 7},
       {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{3, 1}}, {"auto_pad", std::string("VALID")}}},
      {"large_channels",
       {1, 1024, 9, 9},
       {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}}},
      {"1d", {2, 7, 31}, {{"kernel_shape", Ints{5}}, {"strides", Ints{2}}, {"pads", Ints{2, 1}}}},
      {"3d_ceil",
       {1, 3, 7, 9, 8},
       {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{2, 2, 3}}, {"ceil_mode", int64_t{1}}}},
  };
}

TEST(OnednnPool, MaxPoolMatchesCpu) {
  uint32_t seed = 1;
  for (const PoolCase& pc : window_cases()) {
    SCOPED_TRACE(pc.name);
    expect_matches_cpu(pool_call("max_pool", random_tensor(pc.x, seed++), pc.attrs));
  }
}

TEST(OnednnPool, DilatedMaxPoolMatchesCpu) {
  expect_matches_cpu(pool_call(
      "max_pool", random_tensor({1, 8, 19, 21}, 11),
      {{"kernel_shape", Ints{3, 3}}, {"dilations", Ints{2, 3}}, {"pads", Ints{2, 3, 2, 3}}}));
  expect_matches_cpu(pool_call("max_pool", random_tensor({2, 4, 16, 17}, 12),
                               {{"kernel_shape", Ints{2, 2}},
                                {"dilations", Ints{2, 2}},
                                {"strides", Ints{2, 2}},
                                {"ceil_mode", int64_t{1}}}));
}

TEST(OnednnPool, MaxPoolBf16AndInt8MatchCpu) {
  FRAME_SKIP_WITHOUT_ONEDNN_BF16();
  const ir::AttrMap a{
      {"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  expect_matches_cpu(
      pool_call("max_pool", random_tensor({1, 16, 15, 15}, 13, 1.0, DTypeCode::kBFloat16), a));
  std::vector<int8_t> v(2 * 16 * 15);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int8_t>((i * 37) % 256 - 128);
  expect_matches_cpu(pool_call("max_pool", Tensor::from_vector<int8_t>({2, 16, 15}, v),
                               {{"kernel_shape", Ints{4}}, {"pads", Ints{1, 2}}}));
}

TEST(OnednnPool, AveragePoolMatchesCpu) {
  uint32_t seed = 100;
  for (const PoolCase& pc : window_cases()) {
    for (int64_t inc : {0, 1}) {
      ir::AttrMap a = pc.attrs;
      a["count_include_pad"] = inc;
      OpCall c = pool_call("average_pool", random_tensor(pc.x, seed++), a);
      SCOPED_TRACE(pc.name + " count_include_pad=" + std::to_string(inc));
      Result<KernelSupport> sup = kernel_supports(c, "onednn");
      ASSERT_TRUE(sup.is_ok());
      // ceil_past_pads with count_include_pad=1 is the one declined family (tested below).
      if (pc.name == "ceil_past_pads" && inc == 1) {
        EXPECT_FALSE(sup->supported);
        continue;
      }
      expect_matches_cpu(c);
    }
  }
}

TEST(OnednnPool, GlobalPoolsMatchCpu) {
  for (const std::string op : {"global_average_pool", "global_max_pool"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu(pool_call(op, random_tensor({1, 2048, 7, 7}, 21), {}));
    expect_matches_cpu(pool_call(op, random_tensor({3, 5, 13, 11}, 22), {}));
    expect_matches_cpu(pool_call(op, random_tensor({2, 3, 29}, 23), {}));
    expect_matches_cpu(pool_call(op, random_tensor({1, 4, 3, 5, 6}, 24), {}));
  }
}

TEST(OnednnPool, InterpretedGlobalPoolsAreRowReductions) {
  // The interpreted tier (NodeContext::prefer_shape_agnostic) pools a plain f32 tensor by rows
  // (reduce_rows) instead of creating a primitive per size. By hand first: planes {1,2,3,4}
  // and {-5,0,7,2}: means 2.5 and 1, maxima 4 and 7.
  const Tensor x = Tensor::from_vector<float>({1, 2, 2, 2}, {1, 2, 3, 4, -5, 0, 7, 2});
  for (const auto& [op, want] :
       {std::pair<std::string, std::vector<float>>{"global_average_pool", {2.5f, 1.0f}},
        {"global_max_pool", {4.0f, 7.0f}}}) {
    OpCall c = pool_call(op, x, {});
    c.prefer_shape_agnostic = true;
    auto r = run_op(c, "onednn");
    ASSERT_TRUE(r.is_ok()) << op << ": " << r.status().to_string();
    ASSERT_EQ((*r)[0].shape(), (Shape{1, 2, 1, 1})) << op;
    const float* y = (*r)[0].data<float>();
    EXPECT_EQ(std::vector<float>(y, y + 2), want) << op;
  }
  // Against the cpu kernel: ranks 3 to 5, rows split over threads, a tail of odd row lengths.
  for (const std::string op : {"global_average_pool", "global_max_pool"}) {
    for (const Shape& s :
         {Shape{1, 960, 33, 17}, Shape{3, 5, 13, 11}, Shape{2, 3, 29}, Shape{1, 4, 3, 5, 6}}) {
      for (int threads : {1, 2}) {
        OpCall c = pool_call(op, random_tensor(s, 26), {});
        c.prefer_shape_agnostic = true;
        c.num_threads = threads;
        SCOPED_TRACE(op + " " + shape_to_string(s) + " threads " + std::to_string(threads));
        expect_matches_cpu(c);
      }
    }
  }
}

TEST(OnednnPool, GlobalPoolsBf16MatchCpu) {
  FRAME_SKIP_WITHOUT_ONEDNN_BF16();
  for (const std::string op : {"global_average_pool", "global_max_pool"}) {
    SCOPED_TRACE(op);
    expect_matches_cpu(
        pool_call(op, random_tensor({1, 8, 5, 5}, 25, 1.0, DTypeCode::kBFloat16), {}));
  }
}

TEST(OnednnPool, RunsOnOnednnWhenCompiled) {
  expect_runs_on_onednn(pool_call(
      "max_pool", random_tensor({1, 16, 28, 28}, 31),
      {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}));
  expect_runs_on_onednn(pool_call("average_pool", random_tensor({1, 16, 28, 28}, 32),
                                  {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}));
  expect_runs_on_onednn(pool_call("global_average_pool", random_tensor({2, 32, 7, 7}, 33), {}));
}

TEST(OnednnPool, MaxPoolWithIndicesFallsBackToCpu) {
  OpCall c = pool_call("max_pool", random_tensor({1, 4, 9, 9}, 41),
                       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}});
  c.num_outputs = 2;
  expect_declined(c, "max_pool with an Indices output");
  expect_falls_back_to_cpu(c, "max_pool with an Indices output");
}

TEST(OnednnPool, IncludePadCeilPastPadsFallsBackToCpu) {
  // Width 14, kernel 3, stride 2, pads 1+1, ceil_mode: the last window reaches past the end
  // pad, and ONNX does not count those taps.
  OpCall c = pool_call("average_pool", random_tensor({1, 4, 13, 14}, 42),
                       {{"kernel_shape", Ints{3, 3}},
                        {"strides", Ints{2, 2}},
                        {"pads", Ints{1, 1, 1, 1}},
                        {"ceil_mode", int64_t{1}},
                        {"count_include_pad", int64_t{1}}});
  expect_declined(c, "count_include_pad=1");
  expect_falls_back_to_cpu(c, "count_include_pad=1");
}

TEST(OnednnPool, WindowInPaddingFallsBackToCpu) {
  // Pads of 2 with a 2-wide kernel: the first and last windows hold no input element.
  OpCall c = pool_call("max_pool", random_tensor({1, 4, 9, 9}, 43),
                       {{"kernel_shape", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}});
  expect_declined(c, "wholly in the padding");
  expect_falls_back_to_cpu(c, "wholly in the padding");
}

TEST(OnednnPool, UndeclaredDtypeFallsBackToCpu) {
  std::vector<double> v(2 * 3 * 6 * 6, 0.5);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 7) - 3.0;
  OpCall c = pool_call("max_pool", Tensor::from_vector<double>({2, 3, 6, 6}, v),
                       {{"kernel_shape", Ints{2, 2}}});
  expect_declined(c, "does not support dtype f64");
  expect_falls_back_to_cpu(c, "does not support dtype f64");
}

}  // namespace
}  // namespace frame::test::onednn
