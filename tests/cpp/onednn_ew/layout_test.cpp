// Layout kernels of the `onednn` backend (src/backends/onednn/kernels/layout.cpp) against the
// cpu reference kernels, bit for bit: tiled transposes of several ranks and element sizes,
// slices with positive and negative steps, concat and split along every axis, 1 and 2 threads.

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "cpp/onednn_ew/ew_test_util.h"

namespace frame::test {
namespace {

TEST(LayoutOnednn, TransposeEveryPermutationKind) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  const std::vector<Case> cases = {
      {{67, 45}, {1, 0}},                // 2-D, partial blocks
      {{2, 3, 40, 70}, {0, 2, 3, 1}},    // NCHW -> NHWC
      {{2, 40, 70, 3}, {0, 3, 1, 2}},    // NHWC -> NCHW
      {{4, 8, 16, 32}, {0, 2, 1, 3}},    // last axis kept: row copies
      {{5, 6, 7}, {2, 1, 0}},            // full reversal
      {{1, 300, 1, 200}, {3, 1, 0, 2}},  // size-1 dims
      {{8, 128, 64}, {1, 0, 2}},         // attention-style head split
      {{46, 4, 16}, {1, 0, 2}},          // short rows (16): the row odometer
      {{3, 5, 7, 6}, {2, 0, 1, 3}},      // three outer dims carrying; 2 threads split mid-way
  };
  for (DTypeCode dt : {DTypeCode::kFloat32, DTypeCode::kUInt8, DTypeCode::kInt64}) {
    for (const Case& c : cases) {
      for (int threads : {1, 2}) {
        OpCall call{"transpose", {make(dt, c.shape)}, {{"perm", c.perm}}};
        call.num_threads = threads;
        expect_identical(call, fmt::format("{} {} perm {} threads {}", dtype_name(dt), c.shape,
                                           c.perm, threads));
      }
    }
  }
  expect_identical({"transpose", {make(DTypeCode::kFloat32, {3, 4, 5})}}, "default perm");
}

TEST(LayoutOnednn, SliceWithStepsAndNegativeIndices) {
  struct Case {
    Shape shape;
    std::vector<int64_t> starts, ends, axes, steps;
  };
  const std::vector<Case> cases = {
      {{20, 300}, {2, 5}, {18, 290}, {0, 1}, {1, 1}},
      {{20, 300}, {0}, {300}, {1}, {3}},
      {{20, 300}, {-1}, {-21}, {0}, {-2}},
      {{4, 5, 6, 7}, {1, 0}, {3, 7}, {1, 3}, {1, 2}},
      {{4, 5, 6, 7}, {0}, {100}, {-1}, {1}},
      {{10, 10}, {5}, {5}, {0}, {1}},  // empty
  };
  for (const Case& c : cases) {
    auto ints = [](const std::vector<int64_t>& v) {
      return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
    };
    OpCall call{"slice",
                {make(DTypeCode::kFloat32, c.shape), ints(c.starts), ints(c.ends), ints(c.axes),
                 ints(c.steps)}};
    call.constant_inputs = {1, 2, 3, 4};
    call.num_threads = 2;
    expect_identical(call, fmt::format("{} starts {} ends {} axes {} steps {}", c.shape, c.starts,
                                       c.ends, c.axes, c.steps));
  }
}

TEST(LayoutOnednn, ConcatAlongEveryAxis) {
  for (int64_t axis : {0, 1, 2, -1}) {
    std::vector<Tensor> ins;
    for (int64_t k : {3, 1, 0, 50}) {
      Shape s = {6, 7, 8};
      s[static_cast<size_t>(axis < 0 ? axis + 3 : axis)] = k;
      ins.push_back(make(DTypeCode::kFloat32, s));
    }
    OpCall call{"concat", ins, {{"axis", axis}}};
    call.num_threads = 2;
    expect_identical(call, fmt::format("concat axis {}", axis));
  }
  OpCall big{"concat",
             {make(DTypeCode::kUInt8, {512, 1000}), make(DTypeCode::kUInt8, {512, 777})},
             {{"axis", int64_t{1}}}};
  big.num_threads = 2;
  expect_identical(big, "concat u8 large");
}

TEST(LayoutOnednn, SplitBySizesAndByCount) {
  OpCall sizes{
      "split",
      {make(DTypeCode::kFloat32, {9, 100, 5}), Tensor::from_vector<int64_t>({3}, {10, 0, 90})},
      {{"axis", int64_t{1}}}};
  sizes.constant_inputs = {1};
  sizes.num_outputs = 3;
  sizes.num_threads = 2;
  expect_identical(sizes, "split sizes");
  OpCall count{"split", {make(DTypeCode::kInt64, {10, 6000})}, {{"axis", int64_t{-1}}}};
  count.num_outputs = 4;
  count.num_threads = 2;
  expect_identical(count, "split equal");
  OpCall n{"split",
           {make(DTypeCode::kFloat32, {7, 3})},
           {{"axis", int64_t{0}}, {"num_outputs", int64_t{3}}}};
  n.num_outputs = 3;
  expect_identical(n, "split num_outputs");
}

}  // namespace
}  // namespace frame::test
