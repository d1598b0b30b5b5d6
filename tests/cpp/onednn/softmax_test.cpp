// onednn softmax and log_softmax against the cpu reference kernel on shape families the op
// database lacks: a non-last axis, axis 0, the opset < 13 flattened form, a BERT-sized
// vocabulary row, large magnitudes, bf16; plus placement (runs on onednn, path "kernel").

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "nn_test_util.h"

namespace frame::test::onednn {
namespace {

OpCall softmax_call(std::string op, Tensor x, int64_t axis, bool legacy = false) {
  OpCall c;
  c.op = std::move(op);
  c.inputs = {std::move(x)};
  c.attrs = {{"axis", axis}};
  if (legacy) c.attrs["legacy_flatten"] = int64_t{1};
  return c;
}

class OnednnSoftmax : public ::testing::TestWithParam<std::string> {};

TEST_P(OnednnSoftmax, NonLastAxisMatchesCpu) {
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({2, 37, 5}, 1, 3.0), 1));
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({6, 4, 3, 2}, 2, 3.0), 0));
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({3, 8, 17, 9}, 3, 3.0), -2));
}

TEST_P(OnednnSoftmax, LastAxisMatchesCpu) {
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({32, 30522}, 4, 2.0), -1));
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({4, 12, 128, 128}, 5, 4.0), -1));
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({7, 1}, 6), 1));
  // Large magnitudes: the max is subtracted before exp.
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({5, 33}, 7, 500.0), -1));
}

TEST_P(OnednnSoftmax, LegacyFlattenMatchesCpu) {
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({3, 4, 5}, 8, 2.0), 1, true));
  expect_matches_cpu(softmax_call(GetParam(), random_tensor({2, 3, 4, 5}, 9, 2.0), 2, true));
}

TEST_P(OnednnSoftmax, Bf16MatchesCpu) {
  FRAME_SKIP_WITHOUT_ONEDNN_BF16();
  expect_matches_cpu(
      softmax_call(GetParam(), random_tensor({16, 100}, 10, 2.0, DTypeCode::kBFloat16), -1));
  expect_matches_cpu(
      softmax_call(GetParam(), random_tensor({4, 10, 6}, 11, 2.0, DTypeCode::kBFloat16), 1));
}

TEST_P(OnednnSoftmax, RunsOnOnednnWhenCompiled) {
  expect_runs_on_onednn(softmax_call(GetParam(), random_tensor({8, 50}, 12, 2.0), -1));
}

TEST_P(OnednnSoftmax, UndeclaredDtypeDeclined) {
  std::vector<double> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i % 5) * 0.7 - 1.0;
  OpCall c = softmax_call(GetParam(), Tensor::from_vector<double>({4, 6}, v), -1);
  expect_declined(c, "does not support dtype f64");
  // softmax has no decomposition, so the node itself runs on cpu (log_softmax would be
  // decomposed by the decomposition pass instead).
  if (GetParam() == "softmax") expect_falls_back_to_cpu(c, "does not support dtype f64");
}

// f32 log_softmax within 4 ulp of the float64 formula (computed here, independently of
// both kernels), also on a softmax over a non-last axis. oneDNN 2.6's softmax_log was 3.5e-6
// (~15 ulp) off at -2.83 on this case, which the cross-backend tolerance let through.
TEST(OnednnLogSoftmax, F32WithinFourUlpOfFloat64) {
  for (const auto& [shape, axis] : std::vector<std::pair<Shape, int64_t>>{
           {{64, 10}, 1}, {{3, 1000}, -1}, {{2, 9, 70}, 1}, {{1, 5, 3}, 2}}) {
    Tensor x = random_tensor(shape, 21, 0.3);
    float* xp = x.data<float>();
    for (int64_t i = 0; i < x.numel(); i += shape.back()) xp[i] += 2.5f;  // values near -0.15
    Result<std::vector<Tensor>> got = run_op(softmax_call("log_softmax", x, axis), "onednn");
    ASSERT_TRUE(got.is_ok()) << got.status().to_string();
    const float* yp = (*got)[0].data<float>();
    const int64_t a = axis < 0 ? axis + static_cast<int64_t>(shape.size()) : axis;
    int64_t outer = 1, n = shape[static_cast<size_t>(a)], inner = 1;
    for (int64_t d = 0; d < a; ++d) outer *= shape[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(a) + 1; d < shape.size(); ++d) inner *= shape[d];
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) {
        auto at = [&](int64_t j) { return (o * n + j) * inner + i; };
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(xp[at(j)]));
        for (int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(xp[at(j)]) - m);
        for (int64_t j = 0; j < n; ++j) {
          const double want = static_cast<double>(xp[at(j)]) - m - std::log(sum);
          const double ulp = std::nextafter(std::fabs(static_cast<float>(want)), 1e30f) -
                             std::fabs(static_cast<float>(want));
          ASSERT_LE(std::fabs(yp[at(j)] - want), 4 * ulp)
              << "shape " << shape_to_string(shape) << " axis " << axis << " at " << at(j);
        }
      }
    }
  }
}

// An f32 softmax over the last axis prepared for a first-seen shape (prefer_shape_agnostic,
// ADR 0007) runs the vector row loop instead of a oneDNN primitive: every row length around the
// vector width (whole vectors, a masked tail, a tail alone), large magnitudes, a row holding a
// NaN (all NaN, ONNX's formula) and an empty input, against the float64 formula computed here.
TEST(OnednnSoftmaxRows, ShapeAgnosticMatchesFloat64) {
  for (int64_t n : {1, 7, 15, 16, 17, 33, 64, 197, 1000}) {
    for (double scale : {1.0, 300.0}) {
      OpCall c =
          softmax_call("softmax", random_tensor({5, n}, static_cast<uint32_t>(n), scale), -1);
      c.prefer_shape_agnostic = true;
      const bool nan_row = n == 17;
      if (nan_row) c.inputs[0].data<float>()[2 * n + 5] = std::nanf("");
      Result<std::vector<Tensor>> got = run_op(c, "onednn");
      ASSERT_TRUE(got.is_ok()) << got.status().to_string();
      const float* xp = c.inputs[0].data<float>();
      const float* yp = (*got)[0].data<float>();
      for (int64_t r = 0; r < 5; ++r) {
        double m = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j) m = std::max(m, static_cast<double>(xp[r * n + j]));
        for (int64_t j = 0; j < n; ++j) sum += std::exp(static_cast<double>(xp[r * n + j]) - m);
        for (int64_t j = 0; j < n; ++j) {
          const float y = yp[r * n + j];
          if (nan_row && r == 2) {
            ASSERT_TRUE(std::isnan(y)) << "n " << n << " at " << j;
            continue;
          }
          const double want = std::exp(static_cast<double>(xp[r * n + j]) - m) / sum;
          ASSERT_NEAR(y, want, 1e-6 * want + 1e-9)
              << "n " << n << " scale " << scale << " row " << r << " at " << j;
        }
      }
    }
  }
  OpCall empty = softmax_call("softmax", Tensor::zeros(DTypeCode::kFloat32, {0, 9}).value(), -1);
  empty.prefer_shape_agnostic = true;
  Result<std::vector<Tensor>> got = run_op(empty, "onednn");
  ASSERT_TRUE(got.is_ok()) << got.status().to_string();
  EXPECT_EQ((*got)[0].numel(), 0);
}

INSTANTIATE_TEST_SUITE_P(Ops, OnednnSoftmax, ::testing::Values("softmax", "log_softmax"));

}  // namespace
}  // namespace frame::test::onednn
