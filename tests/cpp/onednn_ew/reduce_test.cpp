// fp32 reductions on the `onednn` backend (src/backends/onednn/kernels/reduce.cpp) against the
// cpu reference kernels (BUILD-011 op tolerance): last-axis rows, leading and middle axes,
// every axis, keepdims, noop_with_empty_axes, an empty reduced dim, NaN/inf, odd sizes, 1 and 2
// threads; an axis pattern the kernel does not cover falls back (declined).

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "common/tolerance.h"
#include "cpp/onednn_ew/ew_test_util.h"

namespace frame {
namespace {

using test::expect_matches_cpu;
using test::OpCall;
using test::run_op;

Tensor random_tensor(const Shape& shape, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector<float>(shape, v);
}

const std::vector<std::string> kOps = {
    "reduce_sum", "reduce_mean", "reduce_prod",       "reduce_max",     "reduce_min",
    "reduce_l1",  "reduce_l2",   "reduce_sum_square", "reduce_log_sum", "reduce_log_sum_exp"};

struct AxesCase {
  Shape shape;
  std::vector<int64_t> axes;
};

TEST(ReduceOnednn, EveryOpOverEveryAxisPattern) {
  const std::vector<AxesCase> cases = {
      {{37, 1001}, {1}},         // contiguous rows, tail
      {{1001, 37}, {0}},         // leading axis, columns
      {{6, 77, 1100}, {1}},      // middle axis, column blocks past kReduceBlock
      {{4, 5, 6}, {0, 1, 2}},    // everything
      {{3, 1, 5, 7}, {1, 2}},    // a size-1 dim among the reduced
      {{2, 3, 4, 5}, {-1, -2}},  // negative axes
      {{100003}, {0}},           // one long row
      {{1}, {0}},
  };
  for (const std::string& op : kOps) {
    const bool positive = op == "reduce_log_sum" || op == "reduce_prod";
    for (const AxesCase& c : cases) {
      for (int64_t keep : {0, 1}) {
        for (int threads : {1, 2}) {
          OpCall call{op,
                      {positive ? random_tensor(c.shape, 0.97f, 1.03f, 3)
                                : random_tensor(c.shape, -2.0f, 2.0f, 3),
                       Tensor::from_vector<int64_t>({static_cast<int64_t>(c.axes.size())}, c.axes)},
                      {{"keepdims", keep}}};
          call.constant_inputs = {1};
          call.num_threads = threads;
          expect_matches_cpu(call, fmt::format("{} {} axes {} keep {} threads {}", op, c.shape,
                                               c.axes, keep, threads));
        }
      }
    }
  }
}

TEST(ReduceOnednn, AxesAttributeNoopAndEmptyReduction) {
  for (const std::string& op : kOps) {
    // Axes as an attribute (opset <= 17) and the default (all axes).
    expect_matches_cpu(
        {op, {random_tensor({9, 10}, 0.5f, 1.5f, 1)}, {{"axes", std::vector<int64_t>{0}}}},
        op + " attr axes");
    expect_matches_cpu({op, {random_tensor({9, 10}, 0.5f, 1.5f, 1)}}, op + " all axes");
    // noop_with_empty_axes: each element reduced on its own.
    expect_matches_cpu(
        {op, {random_tensor({9, 10}, 0.5f, 1.5f, 1)}, {{"noop_with_empty_axes", int64_t{1}}}},
        op + " noop");
    // An empty reduced dim gives the identity (sum 0, max -inf, mean NaN, ...).
    OpCall empty{op,
                 {Tensor::from_vector<float>({3, 0}, {}), Tensor::from_vector<int64_t>({1}, {1})}};
    empty.constant_inputs = {1};
    expect_matches_cpu(empty, op + " empty");
  }
}

TEST(ReduceOnednn, NaNAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> v(4 * 33, 1.0f);
  v[5] = nan;        // row 0
  v[33 + 7] = inf;   // row 1
  v[66 + 8] = -inf;  // row 2
  v[99 + 1] = -inf;  // row 3: all -inf
  for (int i = 99; i < 132; ++i) v[static_cast<size_t>(i)] = -inf;
  const Tensor x = Tensor::from_vector<float>({4, 33}, v);
  for (const std::string& op : kOps) {
    OpCall call{op, {x, Tensor::from_vector<int64_t>({1}, {1})}};
    call.constant_inputs = {1};
    expect_matches_cpu(call, op + " rows");
    OpCall cols{op, {x, Tensor::from_vector<int64_t>({1}, {0})}};
    cols.constant_inputs = {1};
    expect_matches_cpu(cols, op + " columns");
  }
}

TEST(ReduceOnednn, SplitAxesAndOtherDtypesAreDeclined) {
  OpCall split{
      "reduce_sum",
      {random_tensor({3, 4, 5}, -1.0f, 1.0f, 2), Tensor::from_vector<int64_t>({2}, {0, 2})}};
  split.constant_inputs = {1};
  auto r = run_op(split, "onednn");
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnimplemented) << r.status().to_string();
  OpCall ints{"reduce_sum", {Tensor::from_vector<int32_t>({2}, {1, 2})}};
  EXPECT_FALSE(run_op(ints, "onednn").is_ok());
}

}  // namespace
}  // namespace frame
