// Error paths of grid_sample, roi_align and tf_idf_vectorizer that the op database (value
// cases only) cannot express, and two hand-computed values: a roi batch index outside [0, N)
// is rejected at run time; bad shapes, modes and pool layouts are rejected by shape inference.

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "common/op_runner.h"

namespace frame::test {
namespace {

template <typename T>
Tensor make(DTypeCode d, const Shape& shape, std::vector<T> v) {
  Tensor t = Tensor::empty(d, shape).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<T>()[i] = v[i];
  return t;
}

OpCall roi(std::vector<int64_t> batch_indices) {
  OpCall c;
  c.op = "roi_align";
  c.inputs = {make<float>(DTypeCode::kFloat32, {1, 1, 2, 2}, {1, 2, 3, 4}),
              make<float>(DTypeCode::kFloat32, {1, 4}, {0, 0, 1, 1}),
              make<int64_t>(DTypeCode::kInt64, {1}, std::move(batch_indices))};
  c.constant_inputs = {};
  return c;
}

TEST(SamplingOps, RoiAlignBatchIndexOutsideBatchIsAnError) {
  Result<std::vector<Tensor>> r = run_op(roi({1}));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("batch_indices"), std::string::npos) << r.status().message();
}

TEST(SamplingOps, RoiAlignHandValue) {
  // half_pixel: roi (0, 0, 1, 1) -> (-0.5, -0.5) size 1, one bin, one sample at (0, 0) -> X[0,0].
  OpCall c = roi({0});
  c.attrs = {{"sampling_ratio", int64_t{1}}};
  Result<std::vector<Tensor>> r = run_op(c);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_FLOAT_EQ((*r)[0].data<float>()[0], 1.0F);
}

TEST(SamplingOps, GridSampleRejectsBadGridAndModes) {
  OpCall c;
  c.op = "grid_sample";
  c.inputs = {make<float>(DTypeCode::kFloat32, {1, 1, 2, 2}, {1, 2, 3, 4}),
              make<float>(DTypeCode::kFloat32, {1, 1, 1, 2}, {0, 0})};
  // Hand value: the centre of a 2x2 image is the mean of its pixels.
  Result<std::vector<Tensor>> ok = run_op(c);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_FLOAT_EQ((*ok)[0].data<float>()[0], 2.5F);
  OpCall bad_grid = c;
  bad_grid.inputs[1] = make<float>(DTypeCode::kFloat32, {1, 1, 1, 3}, {0, 0, 0});
  EXPECT_FALSE(run_op(bad_grid).is_ok());
  OpCall bad_mode = c;
  bad_mode.attrs = {{"mode", std::string("area")}};
  EXPECT_FALSE(run_op(bad_mode).is_ok());
  OpCall bad_pad = c;
  bad_pad.attrs = {{"padding_mode", std::string("wrap")}};
  EXPECT_FALSE(run_op(bad_pad).is_ok());
}

TEST(SamplingOps, GridSampleFarOutsideAndNanCoordinatesReadPadding) {
  // Found by the onnx_run fuzzer (tests/fuzz/regressions/onnx_run): a grid value of 1.5e29
  // made the tap index cast undefined. Hand values on the image [[1, 2], [3, 4]]:
  // zeros padding reads 0 for any far-outside or NaN point, in every mode.
  const float inf_like = 1.5e29F, nan = std::numeric_limits<float>::quiet_NaN();
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    OpCall c;
    c.op = "grid_sample";
    c.inputs = {
        make<float>(DTypeCode::kFloat32, {1, 1, 2, 2}, {1, 2, 3, 4}),
        make<float>(DTypeCode::kFloat32, {1, 1, 3, 2}, {inf_like, 0, -inf_like, 0, nan, nan})};
    c.attrs = {{"mode", std::string(mode)}};
    Result<std::vector<Tensor>> r = run_op(c);
    ASSERT_TRUE(r.is_ok()) << mode << ": " << r.status().to_string();
    for (int i = 0; i < 3; ++i) EXPECT_EQ((*r)[0].data<float>()[i], 0.0F) << mode << " " << i;
  }
  // Border padding clamps x to the last column; y = 0 is row 0.5: (2 + 4) / 2.
  OpCall border;
  border.op = "grid_sample";
  border.inputs = {make<float>(DTypeCode::kFloat32, {1, 1, 2, 2}, {1, 2, 3, 4}),
                   make<float>(DTypeCode::kFloat32, {1, 1, 1, 2}, {inf_like, 0})};
  border.attrs = {{"padding_mode", std::string("border")}};
  Result<std::vector<Tensor>> b = run_op(border);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_FLOAT_EQ((*b)[0].data<float>()[0], 3.0F);
  // Reflection of a far point keeps only a few bits of its phase: any bilinear mix of pixels.
  border.attrs = {{"padding_mode", std::string("reflection")}};
  Result<std::vector<Tensor>> rf = run_op(border);
  ASSERT_TRUE(rf.is_ok()) << rf.status().to_string();
  EXPECT_GE((*rf)[0].data<float>()[0], 1.0F);
  EXPECT_LE((*rf)[0].data<float>()[0], 4.0F);
}

TEST(SamplingOps, GridSampleOfAnEmptyImageReadsZeros) {
  // Found by the onnx_run fuzzer: an image of width 0 with border or reflection padding
  // clamped the tap into [0, -1] and read before the buffer. No pixel exists: every point is 0.
  for (const char* pad : {"zeros", "border", "reflection"}) {
    OpCall c;
    c.op = "grid_sample";
    c.inputs = {make<float>(DTypeCode::kFloat32, {1, 1, 2, 0}, {}),
                make<float>(DTypeCode::kFloat32, {1, 1, 2, 2}, {0, 0, 0.5F, -0.5F})};
    c.attrs = {{"padding_mode", std::string(pad)}};
    Result<std::vector<Tensor>> r = run_op(c);
    ASSERT_TRUE(r.is_ok()) << pad << ": " << r.status().to_string();
    ASSERT_EQ((*r)[0].shape(), Shape({1, 1, 1, 2}));
    EXPECT_EQ((*r)[0].data<float>()[0], 0.0F) << pad;
    EXPECT_EQ((*r)[0].data<float>()[1], 0.0F) << pad;
  }
}

ir::AttrMap tf_idf_attrs(std::vector<int64_t> counts, std::vector<int64_t> indexes) {
  return {{"mode", std::string("TF")},
          {"min_gram_length", int64_t{1}},
          {"max_gram_length", int64_t{2}},
          {"max_skip_count", int64_t{0}},
          {"pool_int64s", std::vector<int64_t>{1, 2, 3, 4, 5}},
          {"ngram_counts", std::move(counts)},
          {"ngram_indexes", std::move(indexes)}};
}

TEST(SamplingOps, TfIdfRejectsInconsistentPools) {
  OpCall c;
  c.op = "tf_idf_vectorizer";
  c.inputs = {make<int32_t>(DTypeCode::kInt32, {4}, {1, 2, 3, 4})};
  c.constant_inputs = {};
  // Pool: 1-grams {1}, 2-grams (2, 3), (4, 5); X = 1 2 3 4 -> counts 1, 1, 0.
  c.attrs = tf_idf_attrs({0, 1}, {0, 1, 2});
  Result<std::vector<Tensor>> ok = run_op(c);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  ASSERT_EQ((*ok)[0].numel(), 3);
  EXPECT_EQ((*ok)[0].data<float>()[0], 1.0F);
  EXPECT_EQ((*ok)[0].data<float>()[1], 1.0F);
  EXPECT_EQ((*ok)[0].data<float>()[2], 0.0F);
  OpCall odd = c;  // the 2-gram group holds 3 values
  odd.attrs = tf_idf_attrs({0, 2}, {0, 1, 2});
  EXPECT_FALSE(run_op(odd).is_ok());
  OpCall short_indexes = c;
  short_indexes.attrs = tf_idf_attrs({0, 1}, {0, 1});
  EXPECT_FALSE(run_op(short_indexes).is_ok());
  OpCall repeated = c;
  repeated.attrs = tf_idf_attrs({0, 1}, {0, 1, 1});
  Result<std::vector<Tensor>> r = run_op(repeated);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("repeats"), std::string::npos) << r.status().message();
  OpCall strings = c;
  strings.attrs["pool_strings"] = std::vector<std::string>{"a"};
  EXPECT_FALSE(run_op(strings).is_ok());
}

TEST(SamplingOps, ThreadedPlanesMatchOneThread) {
  // Planes and rois split across threads must give the one-thread values bit for bit.
  std::vector<float> xv(2 * 3 * 5 * 6), gv(2 * 4 * 3 * 2), rv{0, 0, 4, 3, 1, 1, 5, 4, 2, 0, 3, 4};
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>((i * 37) % 11) - 5.0F;
  for (size_t i = 0; i < gv.size(); ++i) gv[i] = static_cast<float>((i * 13) % 9) / 4.0F - 1.0F;
  OpCall gs;
  gs.op = "grid_sample";
  gs.inputs = {make<float>(DTypeCode::kFloat32, {2, 3, 5, 6}, xv),
               make<float>(DTypeCode::kFloat32, {2, 4, 3, 2}, gv)};
  gs.attrs = {{"mode", std::string("bicubic")}, {"padding_mode", std::string("reflection")}};
  OpCall ra;
  ra.op = "roi_align";
  ra.inputs = {gs.inputs[0], make<float>(DTypeCode::kFloat32, {3, 4}, rv),
               make<int64_t>(DTypeCode::kInt64, {3}, {0, 1, 1})};
  ra.attrs = {{"output_height", int64_t{2}}, {"output_width", int64_t{3}}};
  for (OpCall* c : {&gs, &ra}) {
    Result<std::vector<Tensor>> one = run_op(*c);
    c->num_threads = 3;
    Result<std::vector<Tensor>> three = run_op(*c);
    ASSERT_TRUE(one.is_ok() && three.is_ok()) << c->op;
    ASSERT_EQ((*one)[0].numel(), (*three)[0].numel());
    for (int64_t i = 0; i < (*one)[0].numel(); ++i) {
      EXPECT_EQ((*one)[0].data<float>()[i], (*three)[0].data<float>()[i]) << c->op << " " << i;
    }
  }
}

}  // namespace
}  // namespace frame::test
