// Error paths and shape inference of the loss ops that the op database (value cases only)
// cannot express: a target outside [0, C) that is not ignore_index is rejected, one equal to
// an out-of-range ignore_index is not; bad target/weight shapes and reductions are rejected.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/op_runner.h"

namespace frame::test {
namespace {

Tensor f32(const Shape& shape, std::vector<float> v) {
  Tensor t = Tensor::empty(DTypeCode::kFloat32, shape).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

Tensor i64(const Shape& shape, std::vector<int64_t> v) {
  Tensor t = Tensor::empty(DTypeCode::kInt64, shape).value();
  for (size_t i = 0; i < v.size(); ++i) t.data<int64_t>()[i] = v[i];
  return t;
}

OpCall nll(std::vector<int64_t> target, ir::AttrMap attrs) {
  OpCall c;
  c.op = "negative_log_likelihood_loss";
  c.inputs = {f32({2, 3}, {-1, -2, -3, -4, -5, -6}), i64({2}, std::move(target))};
  c.constant_inputs = {1};
  c.attrs = std::move(attrs);
  return c;
}

TEST(LossOps, TargetOutsideClassesIsAnError) {
  for (const char* op : {"negative_log_likelihood_loss", "softmax_cross_entropy_loss"}) {
    OpCall c = nll({0, 3}, {{"reduction", std::string("sum")}});
    c.op = op;
    Result<std::vector<Tensor>> r = run_op(c);
    ASSERT_FALSE(r.is_ok()) << op;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("value 3"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find(op), std::string::npos) << r.status().message();
  }
}

TEST(LossOps, OutOfRangeIgnoreIndexIsSkipped) {
  // Hand values: only row 0 (class 2, -3) counts; mean divides by one non-ignored position.
  for (int64_t ii : {int64_t{7}, int64_t{-5}}) {
    Result<std::vector<Tensor>> r = run_op(nll({2, ii}, {{"ignore_index", ii}}));
    ASSERT_TRUE(r.is_ok()) << r.status().to_string();
    EXPECT_FLOAT_EQ((*r)[0].data<float>()[0], 3.0f);
  }
}

TEST(LossOps, ShapeInferenceRejectsBadOperands) {
  OpCall bad_target = nll({0, 1}, {});
  bad_target.inputs[1] = i64({3}, {0, 1, 2});
  EXPECT_FALSE(run_op(bad_target).is_ok());
  OpCall bad_weight = nll({0, 1}, {});
  bad_weight.inputs.push_back(f32({2}, {1, 1}));
  EXPECT_FALSE(run_op(bad_weight).is_ok());
  EXPECT_FALSE(run_op(nll({0, 1}, {{"reduction", std::string("avg")}})).is_ok());
}

}  // namespace
}  // namespace frame::test
