// intel_gpu cast and gather beyond what the op database's numpy references pin down: cast's
// saturation, truncation, NaN handling and double rounding (the contract of ops::ew::CastOp,
// which numpy leaves undefined), and gather's index checks at prepare. Expected values are
// computed by hand.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "cpp/intel_gpu/intel_gpu_test_util.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::test {
namespace {

// ONNX TensorProto.DataType of the cast targets used here.
constexpr int64_t kOnnxF16 = 10, kOnnxF32 = 1, kOnnxI8 = 3, kOnnxU8 = 2, kOnnxI32 = 6, kOnnxI64 = 7,
                  kOnnxU64 = 13, kOnnxBool = 9;

Result<Tensor> cast_on_gpu(Tensor in, int64_t to) {
  OpCall call;
  call.op = "cast";
  call.inputs.push_back(std::move(in));
  call.attrs.emplace("to", ir::AttrValue(to));
  FRAME_ASSIGN_OR_RETURN(std::vector<Tensor> out, run_op(call, "intel_gpu"));
  return out.at(0);
}

template <typename T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}

constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(IntelGpuCast, FloatToIntegerTruncatesSaturatesAndMapsNanToZero) {
  REQUIRE_INTEL_GPU();
  const std::vector<float> x = {kNan,   kInf,    -kInf, 300.7f, -300.2f,
                                127.9f, -128.9f, -0.5f, 5.99f,  -5.99f};
  Result<Tensor> i8 = cast_on_gpu(Tensor::from_vector<float>({10}, x), kOnnxI8);
  ASSERT_TRUE(i8.is_ok()) << i8.status().to_string();
  EXPECT_EQ(values_of<int8_t>(*i8),
            (std::vector<int8_t>{0, 127, -128, 127, -128, 127, -128, 0, 5, -5}));

  Result<Tensor> u8 =
      cast_on_gpu(Tensor::from_vector<float>({5}, {-1.5f, 255.9f, 1e10f, kNan, 7.5f}), kOnnxU8);
  ASSERT_TRUE(u8.is_ok()) << u8.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(*u8), (std::vector<uint8_t>{0, 255, 255, 0, 7}));

  // 2147483520 is the largest float below 2^31; -2^31 is the limit itself.
  Result<Tensor> i32 = cast_on_gpu(
      Tensor::from_vector<float>({4}, {3e9f, -3e9f, 2147483520.0f, -2147483648.0f}), kOnnxI32);
  ASSERT_TRUE(i32.is_ok()) << i32.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*i32),
            (std::vector<int32_t>{INT32_MAX, INT32_MIN, 2147483520, INT32_MIN}));

  Result<Tensor> u64 = cast_on_gpu(
      Tensor::from_vector<float>({3}, {2e19f, -3.0f, 9223372036854775808.0f}), kOnnxU64);
  ASSERT_TRUE(u64.is_ok()) << u64.status().to_string();
  EXPECT_EQ(values_of<uint64_t>(*u64), (std::vector<uint64_t>{UINT64_MAX, 0, uint64_t{1} << 63}));
}

TEST(IntelGpuCast, DoubleToInt64SaturatesAtTheLimits) {
  REQUIRE_INTEL_GPU();
  const std::vector<double> x = {1e19, -1e19, 9.2e18, std::nan("")};
  Result<Tensor> i64 = cast_on_gpu(Tensor::from_vector<double>({4}, x), kOnnxI64);
  if (!i64.is_ok() && i64.status().code() == StatusCode::kUnimplemented) {
    GTEST_SKIP() << i64.status().message();  // a device without cl_khr_fp64
  }
  ASSERT_TRUE(i64.is_ok()) << i64.status().to_string();
  EXPECT_EQ(values_of<int64_t>(*i64),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN, 9200000000000000000, 0}));
}

// f64 -> f16 goes through float (the cpu's compute type): 1 + 2^-11 + 2^-40 becomes the tie
// 1 + 2^-11 in float, which rounds to even (1.0, 0x3C00); a direct rounding would give
// 1 + 2^-10 (0x3C01).
TEST(IntelGpuCast, DoubleToHalfRoundsThroughFloat) {
  REQUIRE_INTEL_GPU();
  const double x = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  Result<Tensor> h = cast_on_gpu(Tensor::from_vector<double>({1}, {x}), kOnnxF16);
  if (!h.is_ok() && h.status().code() == StatusCode::kUnimplemented) {
    GTEST_SKIP() << h.status().message();
  }
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->data<Half>()[0].bits, 0x3C00);
}

TEST(IntelGpuCast, IntegerToFloatRoundsToNearestEvenAndToBoolIsNonZero) {
  REQUIRE_INTEL_GPU();
  Result<Tensor> f = cast_on_gpu(Tensor::from_vector<int64_t>({2}, {16777217, 16777219}), kOnnxF32);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(values_of<float>(*f), (std::vector<float>{16777216.0f, 16777220.0f}));

  Result<Tensor> b =
      cast_on_gpu(Tensor::from_vector<float>({4}, {kNan, -0.0f, 0.25f, -kInf}), kOnnxBool);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(values_of<bool>(*b), (std::vector<bool>{true, false, true, true}));
}

OpCall gather_call(std::vector<int64_t> indices, bool constant) {
  OpCall call;
  call.op = "gather";
  call.inputs.push_back(Tensor::from_vector<int32_t>({3, 2}, {10, 11, 20, 21, 30, 31}));
  const auto n = static_cast<int64_t>(indices.size());
  call.inputs.push_back(Tensor::from_vector<int64_t>({n}, indices));
  if (constant) call.constant_inputs = {1};
  return call;
}

TEST(IntelGpuGather, NegativeIndicesCountFromTheEnd) {
  REQUIRE_INTEL_GPU();
  Result<std::vector<Tensor>> out = run_op(gather_call({-1, 0, -3}, true), "intel_gpu");
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<int32_t>(out->at(0)), (std::vector<int32_t>{30, 31, 10, 11, 10, 11}));
}

TEST(IntelGpuGather, OutOfRangeIndexIsAnErrorAtPrepare) {
  REQUIRE_INTEL_GPU();
  Result<std::vector<Tensor>> out = run_op(gather_call({0, 3}, true), "intel_gpu");
  ASSERT_FALSE(out.is_ok());
  EXPECT_NE(out.status().message().find("value 3 at 1 out of range [-3, 2]"), std::string::npos)
      << out.status().message();
}

TEST(IntelGpuGather, ComputedIndicesRunOnTheDevice) {
  REQUIRE_INTEL_GPU();
  for (bool grouped : {false, true}) {
    Result<std::vector<Tensor>> out =
        grouped ? run_op_in_device_group(gather_call({-1, 0, -3, 2}, false), "intel_gpu")
                : run_op(gather_call({-1, 0, -3, 2}, false), "intel_gpu");
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    EXPECT_EQ(values_of<int32_t>(out->at(0)),
              (std::vector<int32_t>{30, 31, 10, 11, 10, 11, 30, 31}));
  }
}

// An out-of-range index found on the device is the cpu kernel's error (the first bad position,
// whichever work-item found it), alone and inside a device group.
TEST(IntelGpuGather, ComputedOutOfRangeIndexIsTheCpuError) {
  REQUIRE_INTEL_GPU();
  std::vector<int64_t> idx(1000, 1);
  idx[700] = 9;
  idx[300] = -4;  // the first bad one: position 300
  idx[301] = 3;
  Result<std::vector<Tensor>> cpu = run_op(gather_call(idx, false), "cpu");
  ASSERT_FALSE(cpu.is_ok());
  EXPECT_NE(cpu.status().message().find("value -4 at 300 out of range [-3, 2]"), std::string::npos)
      << cpu.status().message();
  // The harness prefixes its stage ("kernel: ", "group run: "); the node's message follows.
  const std::string c = cpu.status().message();
  const std::string want = c.substr(c.find("node '"));
  for (bool grouped : {false, true}) {
    Result<std::vector<Tensor>> gpu =
        grouped ? run_op_in_device_group(gather_call(idx, false), "intel_gpu")
                : run_op(gather_call(idx, false), "intel_gpu");
    ASSERT_FALSE(gpu.is_ok());
    const std::string m = gpu.status().message();
    EXPECT_EQ(m.substr(m.find("node '")), want);
  }
}

// After a run in which two gathers both found a bad index (the first in node order is
// reported), the next run of the same executable is right: every flag starts each run at zero.
TEST(IntelGpuGather, ARunAfterBadIndicesIsRight) {
  REQUIRE_INTEL_GPU();
  ir::Graph g("g");
  const ir::ValueId data =
      g.add_constant("data", Tensor::from_vector<int32_t>({3, 2}, {10, 11, 20, 21, 30, 31}));
  const ir::ValueId i1 = g.add_input("i1", ir::TensorType{DTypeCode::kInt64, {2}});
  const ir::ValueId i2 = g.add_input("i2", ir::TensorType{DTypeCode::kInt64, {2}});
  const ir::ValueId g1 =
      g.node(*g.create_node("gather", "g1", {data, i1}, 1, {}, {"a"})).outputs[0];
  const ir::ValueId g2 =
      g.node(*g.create_node("gather", "g2", {data, i2}, 1, {}, {"b"})).outputs[0];
  g.add_output(
      g.node(*g.create_node("concat", "c", {g1, g2}, 1, {{"axis", int64_t{0}}}, {"y"})).outputs[0]);
  runtime::CompileOptions o = runtime::test::strict_gpu_options();
  Result<runtime::Executable> exe = runtime::compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  Result<runtime::TensorMap> bad = exe->run({{"i1", Tensor::from_vector<int64_t>({2}, {1, 3})},
                                             {"i2", Tensor::from_vector<int64_t>({2}, {-4, 0})}});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("node 'g1' (gather): input 1 (indices) value 3 at 1 "
                                        "out of range [-3, 2]"),
            std::string::npos)
      << bad.status().message();
  for (int run = 0; run < 2; ++run) {
    Result<runtime::TensorMap> good = exe->run({{"i1", Tensor::from_vector<int64_t>({2}, {2, -3})},
                                                {"i2", Tensor::from_vector<int64_t>({2}, {0, 1})}});
    ASSERT_TRUE(good.is_ok()) << good.status().to_string();
    EXPECT_EQ(values_of<int32_t>(good->at("y")),
              (std::vector<int32_t>{30, 31, 10, 11, 10, 11, 20, 21}));
  }
}

// GatherElements with computed indices: values against np.take_along_axis worked by hand, and
// an out-of-range index is the cpu kernel's error.
TEST(IntelGpuGather, GatherElementsWithComputedIndices) {
  REQUIRE_INTEL_GPU();
  OpCall call;
  call.op = "gather_elements";
  call.inputs.push_back(Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  call.inputs.push_back(Tensor::from_vector<int64_t>({2, 2}, {2, -3, 0, 1}));
  call.attrs["axis"] = int64_t{1};
  Result<std::vector<Tensor>> out = run_op_in_device_group(call, "intel_gpu");
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<int32_t>(out->at(0)), (std::vector<int32_t>{3, 1, 4, 5}));
  call.inputs[1] = Tensor::from_vector<int64_t>({2, 2}, {0, 1, 3, 0});
  Result<std::vector<Tensor>> cpu = run_op(call, "cpu");
  Result<std::vector<Tensor>> gpu = run_op_in_device_group(call, "intel_gpu");
  ASSERT_FALSE(cpu.is_ok());
  ASSERT_FALSE(gpu.is_ok());
  const std::string c = cpu.status().message(), g = gpu.status().message();
  EXPECT_EQ(g.substr(g.find("node '")), c.substr(c.find("node '")));
}

// GatherND with computed index tuples: values worked by hand, and a bad index is the cpu
// kernel's error naming its value and data dim.
TEST(IntelGpuGather, GatherNdWithComputedIndices) {
  REQUIRE_INTEL_GPU();
  OpCall call;
  call.op = "gather_nd";
  call.inputs.push_back(Tensor::from_vector<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}));
  call.inputs.push_back(Tensor::from_vector<int64_t>({2, 2}, {1, -1, 0, 1}));
  Result<std::vector<Tensor>> out = run_op_in_device_group(call, "intel_gpu");
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(values_of<int32_t>(out->at(0)), (std::vector<int32_t>{6, 2}));
  call.inputs[1] = Tensor::from_vector<int64_t>({2, 2}, {1, 0, 0, 3});
  Result<std::vector<Tensor>> cpu = run_op(call, "cpu");
  Result<std::vector<Tensor>> gpu = run_op_in_device_group(call, "intel_gpu");
  ASSERT_FALSE(cpu.is_ok());
  ASSERT_FALSE(gpu.is_ok());
  const std::string c = cpu.status().message(), g = gpu.status().message();
  EXPECT_NE(c.find("value 3 out of range [-3, 2] for data dim 1"), std::string::npos) << c;
  EXPECT_EQ(g.substr(g.find("node '")), c.substr(c.find("node '")));
}

// A cubic resize whose exclude_outside renormalisation leaves an axis no taps (the in-range
// weights sum to 0 with cubic_coeff_a 4): that output is the empty sum, 0, as on cpu, and the
// kernel does not read past its table (it once looped on a zero tap count).
TEST(IntelGpuResize, AnAxisWithoutTapsGivesTheCpuResult) {
  REQUIRE_INTEL_GPU();
  OpCall call;
  call.op = "resize";
  call.inputs.push_back(Tensor::from_vector<float>({1, 1, 1, 3}, {1, 2, 3}));
  call.inputs.emplace_back();  // roi
  call.inputs.push_back(Tensor::from_vector<float>({4}, {1, 1, 2, 1}));
  call.constant_inputs = {2};
  call.attrs["mode"] = std::string("cubic");
  call.attrs["coordinate_transformation_mode"] = std::string("asymmetric");
  call.attrs["cubic_coeff_a"] = 4.0;
  call.attrs["exclude_outside"] = int64_t{1};
  Result<std::vector<Tensor>> cpu = run_op(call, "cpu");
  Result<std::vector<Tensor>> gpu = run_op_in_device_group(call, "intel_gpu");
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string();
  EXPECT_EQ(values_of<float>(gpu->at(0)), values_of<float>(cpu->at(0)));
  EXPECT_EQ(values_of<float>(cpu->at(0)), (std::vector<float>{1, 2, 3, 0, 0, 0}));
}

}  // namespace
}  // namespace frame::test
