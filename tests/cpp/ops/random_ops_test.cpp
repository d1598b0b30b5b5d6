// Statistical and seeding tests of the random ops (random_uniform, random_normal, the *_like
// forms, bernoulli), the print op's stderr line, and the ARCH-044 rejections of the data-dependent
// and constant-operand ops. Bounds are loose (about 5 standard errors on 100k samples) so they
// hold for any correct generator.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "common/op_runner.h"

namespace frame {
namespace {

using test::OpCall;
using test::run_op;

constexpr int64_t kSamples = 100000;

Tensor run_one(OpCall call) {
  Result<std::vector<Tensor>> r = run_op(call);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  if (!r.is_ok()) return Tensor();
  return (*r)[0];
}

struct Stats {
  double mean = 0, std = 0, min = 0, max = 0;
};
Stats stats_of(const Tensor& t) {
  Stats s{0, 0, INFINITY, -INFINITY};
  double sq = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.element_as_double(i);
    s.mean += v;
    sq += v * v;
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
  }
  s.mean /= static_cast<double>(t.numel());
  s.std = std::sqrt(sq / static_cast<double>(t.numel()) - s.mean * s.mean);
  return s;
}

OpCall uniform(double low, double high, int64_t dtype = 1) {
  OpCall c;
  c.op = "random_uniform";
  c.attrs = {
      {"low", low}, {"high", high}, {"dtype", dtype}, {"shape", std::vector<int64_t>{kSamples}}};
  return c;
}

OpCall normal(double mean, double scale, int64_t dtype = 1) {
  OpCall c;
  c.op = "random_normal";
  c.attrs = {{"mean", mean},
             {"scale", scale},
             {"dtype", dtype},
             {"shape", std::vector<int64_t>{kSamples}}};
  return c;
}

TEST(RandomOps, UniformStatistics) {
  Tensor t = run_one(uniform(-2.0, 3.0));
  ASSERT_EQ(t.numel(), kSamples);
  Stats s = stats_of(t);
  EXPECT_NEAR(s.mean, 0.5, 0.03);                   // (low + high) / 2
  EXPECT_NEAR(s.std, 5.0 / std::sqrt(12.0), 0.03);  // (high - low) / sqrt(12)
  EXPECT_GE(s.min, -2.0);
  EXPECT_LT(s.max, 3.0);
}

TEST(RandomOps, NormalStatistics) {
  for (int64_t dtype : {1, 11, 10}) {  // f32, f64, f16
    Tensor t = run_one(normal(1.0, 2.0, dtype));
    Stats s = stats_of(t);
    EXPECT_NEAR(s.mean, 1.0, 0.05) << "dtype " << dtype;
    EXPECT_NEAR(s.std, 2.0, 0.05) << "dtype " << dtype;
    // About 68% within one standard deviation.
    int64_t inside = 0;
    for (int64_t i = 0; i < t.numel(); ++i) inside += std::fabs(t.element_as_double(i) - 1) < 2;
    EXPECT_NEAR(static_cast<double>(inside) / kSamples, 0.6827, 0.01);
  }
}

TEST(RandomOps, SeedGivesFixedStream) {
  OpCall a = uniform(0, 1);
  a.attrs["seed"] = 42.0;
  Tensor x = run_one(a), y = run_one(a);
  EXPECT_TRUE(x.bitwise_equal(y));
  a.num_threads = 4;  // the stream does not depend on the thread split
  EXPECT_TRUE(run_one(a).bitwise_equal(x));
  a.attrs["seed"] = 43.0;
  EXPECT_FALSE(run_one(a).bitwise_equal(x));

  OpCall n = normal(0, 1);
  n.attrs["seed"] = 7.0;
  EXPECT_TRUE(run_one(n).bitwise_equal(run_one(n)));
}

TEST(RandomOps, UnseededCallsDiffer) {
  EXPECT_FALSE(run_one(uniform(0, 1)).bitwise_equal(run_one(uniform(0, 1))));
  EXPECT_FALSE(run_one(normal(0, 1)).bitwise_equal(run_one(normal(0, 1))));
}

TEST(RandomOps, LikeFormsFollowInput) {
  OpCall c;
  c.op = "random_uniform_like";
  c.inputs = {Tensor::zeros(DTypeCode::kFloat64, {300, 400}).value()};
  c.attrs = {{"low", 10.0}, {"high", 11.0}};
  Tensor t = run_one(c);
  EXPECT_EQ(t.dtype(), DTypeCode::kFloat64);
  EXPECT_EQ(t.shape(), (Shape{300, 400}));
  EXPECT_NEAR(stats_of(t).mean, 10.5, 0.01);

  c.op = "random_normal_like";
  c.attrs = {{"mean", -3.0}, {"scale", 0.5}, {"dtype", int64_t{1}}};
  t = run_one(c);
  EXPECT_EQ(t.dtype(), DTypeCode::kFloat32);
  EXPECT_NEAR(stats_of(t).mean, -3.0, 0.02);
  EXPECT_NEAR(stats_of(t).std, 0.5, 0.02);
}

TEST(RandomOps, BernoulliRate) {
  OpCall c;
  c.op = "bernoulli";
  Tensor p = Tensor::empty(DTypeCode::kFloat32, {kSamples}).value();
  for (int64_t i = 0; i < kSamples; ++i) p.data<float>()[i] = 0.3f;
  c.inputs = {p};
  c.attrs = {{"dtype", int64_t{9}}};  // bool
  Tensor t = run_one(c);
  ASSERT_EQ(t.dtype(), DTypeCode::kBool);
  EXPECT_NEAR(stats_of(t).mean, 0.3, 0.01);
}

TEST(RandomOps, RandomOpsHaveSideEffects) {
  for (const char* op : {"random_uniform", "random_normal", "random_uniform_like",
                         "random_normal_like", "bernoulli", "print"}) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(op);
    ASSERT_NE(s, nullptr) << op;
    EXPECT_TRUE(s->has_trait(ops::OpTrait::kHasSideEffect)) << op;
    EXPECT_FALSE(s->has_trait(ops::OpTrait::kElementwise)) << op;
  }
}

TEST(PrintOp, WritesOneLineAndPassesThrough) {
  OpCall c;
  c.op = "print";
  c.node_name = "dbg";
  c.inputs = {Tensor::from_vector<float>({2, 2}, {1.0f, -3.0f, 2.0f, 4.0f})};
  testing::internal::CaptureStderr();
  Tensor t = run_one(c);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(t.bitwise_equal(c.inputs[0]));
  EXPECT_NE(err.find("'dbg'"), std::string::npos) << err;
  EXPECT_NE(err.find("f32[2,2]"), std::string::npos) << err;
  EXPECT_NE(err.find("min=-3"), std::string::npos) << err;
  EXPECT_NE(err.find("max=4"), std::string::npos) << err;
  EXPECT_NE(err.find("mean=1"), std::string::npos) << err;
  EXPECT_EQ(err.find('\n'), err.size() - 1) << err;
}

// ARCH-044: output shapes that depend on non-constant values are rejected by shape inference.
TEST(DataDependentShapes, RejectNonConstantOperands) {
  struct Item {
    OpCall call;
    std::string needle;
  };
  std::vector<Item> items;
  OpCall r;
  r.op = "reshape";
  r.inputs = {Tensor::zeros(DTypeCode::kFloat32, {2, 3}).value(),
              Tensor::from_vector<int64_t>({2}, {3, 2})};
  items.push_back({r, "input 1 (shape) must be a constant"});
  OpCall nz;
  nz.op = "non_zero";
  nz.inputs = {Tensor::zeros(DTypeCode::kFloat32, {4}).value()};
  items.push_back({nz, "input 0 (X) must be a constant"});
  OpCall u;
  u.op = "unique";
  u.inputs = {Tensor::zeros(DTypeCode::kInt32, {4}).value()};
  items.push_back({u, "input 0 (X) must be a constant"});
  OpCall rg;
  rg.op = "range";
  rg.inputs = {Tensor::scalar<float>(0), Tensor::scalar<float>(3), Tensor::scalar<float>(1)};
  items.push_back({rg, "must be a constant"});
  for (const Item& it : items) {
    Result<std::vector<Tensor>> got = run_op(it.call);
    ASSERT_FALSE(got.is_ok()) << it.call.op;
    EXPECT_NE(got.status().message().find(it.needle), std::string::npos) << got.status().message();
    EXPECT_NE(got.status().message().find("ARCH-044"), std::string::npos) << got.status().message();
  }
}

// A float range whose length overflows says so (too many elements, delta too small); a bound
// that is not finite names the input.
TEST(RangeErrors, TooManyElementsAndNonFiniteBoundsSayWhy) {
  auto range = [](float start, float limit, float delta) {
    OpCall rg;
    rg.op = "range";
    rg.inputs = {Tensor::scalar<float>(start), Tensor::scalar<float>(limit),
                 Tensor::scalar<float>(delta)};
    rg.constant_inputs = {0, 1, 2};
    return run_op(rg);
  };
  // 1 / 1e-30 = 1e30 elements (float 1e-30 is 1.0000000031710769e-30).
  Result<std::vector<Tensor>> r = range(0.0F, 1.0F, 1e-30F);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("has 1e+30 elements, more than 9e18 (delta too small"),
            std::string::npos)
      << r.status().message();
  r = range(0.0F, INFINITY, 1.0F);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("input 1 (limit) is inf, not finite"), std::string::npos)
      << r.status().message();
  // A span the wrong way is empty however small delta is, not an error.
  r = range(0.0F, -1.0F, 1e-30F);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].numel(), 0);
}

TEST(DataMovementErrors, BadIndicesAreErrorsNotCrashes) {
  OpCall g;
  g.op = "gather";
  g.inputs = {Tensor::zeros(DTypeCode::kFloat32, {3, 2}).value(),
              Tensor::from_vector<int64_t>({2}, {0, 3})};
  Result<std::vector<Tensor>> r = run_op(g);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("out of range"), std::string::npos) << r.status().message();

  OpCall s;
  s.op = "slice";
  s.inputs = {Tensor::zeros(DTypeCode::kFloat32, {3}).value(),
              Tensor::from_vector<int64_t>({1}, {0}), Tensor::from_vector<int64_t>({1}, {3}),
              Tensor::from_vector<int64_t>({1}, {0}), Tensor::from_vector<int64_t>({1}, {0})};
  s.constant_inputs = {1, 2, 3, 4};
  r = run_op(s);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("zero step"), std::string::npos) << r.status().message();
}

// The OpenMP paths (above kParallelThreshold elements) checked against the index definition.
TEST(DataMovementThreads, LargeCopiesMatchIndexFormula) {
  const int64_t r = 300, c = 257;
  std::vector<float> v(static_cast<size_t>(r * c));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  OpCall t;
  t.op = "transpose";
  t.inputs = {Tensor::from_vector<float>({r, c}, v)};
  t.num_threads = 4;
  Tensor out = run_one(t);
  ASSERT_EQ(out.shape(), (Shape{c, r}));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      ASSERT_EQ(out.data<float>()[j * r + i], static_cast<float>(i * c + j));
    }
  }
  OpCall k;
  k.op = "concat";
  k.inputs = {t.inputs[0], t.inputs[0]};
  k.attrs = {{"axis", int64_t{1}}};
  k.num_threads = 4;
  out = run_one(k);
  ASSERT_EQ(out.shape(), (Shape{r, 2 * c}));
  for (int64_t i = 0; i < r; ++i) {
    for (int64_t j = 0; j < 2 * c; ++j) {
      ASSERT_EQ(out.data<float>()[i * 2 * c + j], static_cast<float>(i * c + j % c));
    }
  }
}

}  // namespace
}  // namespace frame
