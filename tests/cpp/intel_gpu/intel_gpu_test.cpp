// The intel_gpu backend (docs/backends/intel-gpu.md) on whatever OpenCL device this machine
// has (PoCL on the CPU in CI): formula coverage of the elementwise lists, device selection,
// fused groups generated per body and cached by fingerprint, backend boundaries with cpu
// nodes, concurrent runs. Per-op values against cpu are the op database's (OpDb.*@intel_gpu).

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cpp/intel_gpu/intel_gpu_test_util.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

#ifdef FRAME_HAVE_INTEL_GPU
#include "backends/intel_gpu/opencl.h"
#endif

namespace frame::runtime {
namespace {

using test::gpu_options;

// Every list entry accepting a float dtype has a kernel for all its float dtypes (a formula
// missing from ew_formulas.cpp leaves the op without one).
TEST(IntelGpu, EveryFloatOpOfTheElementwiseListsHasAKernel) {
  if (find_backend("intel_gpu") == nullptr) GTEST_SKIP() << "intel_gpu is not in this build";
  const DTypeSet floats{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16,
                        DTypeCode::kBFloat16};
  std::vector<std::string> missing;
  auto check = [&](const char* op, DTypeSet types) {
    const DTypeSet want = types & floats;
    if (want.mask == 0) return;
    const ops::KernelDef* k = ops::KernelRegistry::global().find(op, "intel_gpu");
    if (k == nullptr || (k->dtypes & want) != want) missing.emplace_back(op);
  };
#define FRAME_TEST_CHECK(name, F, types, traits, doc) check(#name, types);
  FRAME_EW_UNARY_OPS(FRAME_TEST_CHECK)
  FRAME_EW_BINARY_OPS(FRAME_TEST_CHECK)
#undef FRAME_TEST_CHECK
  // The variadic folds round after every step on cpu: generated where that is a no-op.
  const DTypeSet fold_types{DTypeCode::kFloat32, DTypeCode::kFloat64};
#define FRAME_TEST_CHECK(name, F, types, traits, doc) check(#name, types& fold_types);
  FRAME_EW_VARIADIC_OPS(FRAME_TEST_CHECK)
#undef FRAME_TEST_CHECK
  // A formula is optional (docs/architecture/op-registration.md: an elementwise op is three
  // places): a list op without one has no intel_gpu kernel and reaches cpu through the
  // fallback chain. Today every builtin list op has one; report any that lacks it.
  if (!missing.empty()) {
    std::printf("list ops without an OpenCL formula (ew_formulas.cpp), run on cpu: %s\n",
                ::testing::PrintToString(missing).c_str());
  }
  EXPECT_NE(ops::KernelRegistry::global().find("fused_elementwise_internal", "intel_gpu"), nullptr);
}

// y = sigmoid(x * w + b) - relu(x), w and b broadcast along the last axis of x [2, 3].
ir::Graph chain_graph() {
  ir::Graph g("chain");
  const ir::TensorType xt{DTypeCode::kFloat32, {2, 3}};
  const ir::TensorType vt{DTypeCode::kFloat32, {3}};
  ir::ValueId x = g.add_input("x", xt);
  ir::ValueId w = g.add_input("w", vt);
  ir::ValueId b = g.add_input("b", vt);
  auto m = g.create_node("mul", "m", {x, w}, 1, {}, {"m"});
  auto a = g.create_node("add", "a", {g.node(*m).outputs[0], b}, 1, {}, {"a"});
  auto s = g.create_node("sigmoid", "s", {g.node(*a).outputs[0]}, 1, {}, {"s"});
  auto r = g.create_node("relu", "r", {x}, 1, {}, {"r"});
  auto y = g.create_node("sub", "y", {g.node(*s).outputs[0], g.node(*r).outputs[0]}, 1, {}, {"y"});
  g.add_output(g.node(*y).outputs[0]);
  return g;
}

const std::vector<float> kX = {-1.5F, 0.0F, 2.0F, 0.5F, -3.0F, 1.25F};
const std::vector<float> kW = {0.5F, -2.0F, 1.0F};
const std::vector<float> kB = {0.1F, 0.2F, -0.3F};

double expected_chain(size_t i) {
  const double x = kX[i];
  const double z = x * kW[i % 3] + kB[i % 3];
  return 1.0 / (1.0 + std::exp(-z)) - std::max(x, 0.0);
}

TensorMap chain_inputs() {
  return {{"x", Tensor::from_vector<float>({2, 3}, kX)},
          {"w", Tensor::from_vector<float>({3}, kW)},
          {"b", Tensor::from_vector<float>({3}, kB)}};
}

TEST(IntelGpu, FusedGroupRunsAsOneGeneratedKernel) {
  REQUIRE_INTEL_GPU();
  CompileOptions o = gpu_options();
  o.strict = true;  // every node on an intel_gpu kernel
  auto exe = compile(chain_graph(), o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_EQ(exe->report().placements.size(), 1U);
  EXPECT_EQ(exe->report().placements[0].op, "fused_elementwise_internal");
  EXPECT_EQ(exe->report().placements[0].backend, "intel_gpu");
  ASSERT_EQ(exe->report().fused_groups.size(), 1U);
  EXPECT_EQ(exe->report().fused_groups[0].size(), 5U);
  auto out = exe->run(chain_inputs());
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (size_t i = 0; i < kX.size(); ++i) {
    EXPECT_NEAR(out->at("y").data<float>()[i], expected_chain(i), 1e-6) << i;
  }
}

TEST(IntelGpu, FusedGroupInF64WithAttributes) {
  REQUIRE_INTEL_GPU();
  // y = elu(x, alpha = 0.25) * x - 0.5: alpha becomes a double literal of the generated body.
  ir::Graph g("f64");
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat64, {5}});
  ir::ValueId h = g.add_constant("h", Tensor::from_vector<double>({}, {0.5}));
  auto e = g.create_node("elu", "e", {x}, 1, {{"alpha", 0.25}}, {"e"});
  auto m = g.create_node("mul", "m", {g.node(*e).outputs[0], x}, 1, {}, {"m"});
  auto y = g.create_node("sub", "y", {g.node(*m).outputs[0], h}, 1, {}, {"y"});
  g.add_output(g.node(*y).outputs[0]);
  CompileOptions o = gpu_options();
  o.strict = true;
  auto exe = compile(g, o);
  if (!exe.is_ok() && exe.status().message().find("cl_khr_fp64") != std::string::npos) {
    GTEST_SKIP() << exe.status().message();
  }
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_EQ(exe->report().placements.size(), 1U);
  EXPECT_EQ(exe->report().placements[0].backend, "intel_gpu");
  const std::vector<double> xs = {-3.0, -0.5, 0.0, 0.125, 2.0};
  auto out = exe->run({{"x", Tensor::from_vector<double>({5}, xs)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (size_t i = 0; i < xs.size(); ++i) {
    const double elu = xs[i] < 0 ? 0.25 * std::expm1(xs[i]) : xs[i];
    EXPECT_NEAR(out->at("y").data<double>()[i], elu * xs[i] - 0.5, 1e-14) << i;
  }
}

TEST(IntelGpu, FusedGroupWithVariadicNodes) {
  REQUIRE_INTEL_GPU();
  // y = max(x * x, w, 0.25) - mean(x, w): folds of three and two inputs inside one body.
  ir::Graph g("variadic");
  const ir::TensorType t{DTypeCode::kFloat32, {4}};
  ir::ValueId x = g.add_input("x", t);
  ir::ValueId w = g.add_input("w", t);
  ir::ValueId q = g.add_constant("q", Tensor::from_vector<float>({}, {0.25F}));
  auto sq = g.create_node("mul", "sq", {x, x}, 1, {}, {"sq"});
  auto mx = g.create_node("max", "mx", {g.node(*sq).outputs[0], w, q}, 1, {}, {"mx"});
  auto mn = g.create_node("mean", "mn", {x, w}, 1, {}, {"mn"});
  auto y =
      g.create_node("sub", "y", {g.node(*mx).outputs[0], g.node(*mn).outputs[0]}, 1, {}, {"y"});
  g.add_output(g.node(*y).outputs[0]);
  CompileOptions o = gpu_options();
  o.strict = true;
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_EQ(exe->report().placements.size(), 1U);
  EXPECT_EQ(exe->report().placements[0].backend, "intel_gpu");
  const std::vector<float> xs = {-2.0F, 0.25F, std::nanf(""), 0.75F};
  const std::vector<float> ws = {1.0F, -3.0F, 0.5F, 0.125F};
  auto out = exe->run(
      {{"x", Tensor::from_vector<float>({4}, xs)}, {"w", Tensor::from_vector<float>({4}, ws)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const float* got = out->at("y").data<float>();
  const double expect[] = {4.0 - (-0.5), 0.25 - (-1.375), 0.0, 0.5625 - 0.4375};
  for (size_t i : {0U, 1U, 3U}) EXPECT_NEAR(got[i], expect[i], 1e-6) << i;
  EXPECT_TRUE(std::isnan(got[2])) << "a NaN operand of max gives NaN (numpy.maximum)";
}

#ifdef FRAME_HAVE_INTEL_GPU
// Run twice by ctest (intel_gpu_disk_cache_write, then _read) with FRAME_OPENCL_CACHE_DIR set
// to a fresh directory: the first process builds and stores the programs, the second loads
// them instead of building.
TEST(IntelGpu, DiskCacheWritesThenLoads) {
  REQUIRE_INTEL_GPU();
  const char* phase = std::getenv("FRAME_TEST_OPENCL_DISK_CACHE");
  const char* dir = std::getenv("FRAME_OPENCL_CACHE_DIR");
  if (phase == nullptr || dir == nullptr) {
    GTEST_SKIP() << "run by the ctests intel_gpu_disk_cache_write/_read";
  }
  auto exe = compile(chain_graph(), gpu_options());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  auto out = exe->run(chain_inputs());
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_NEAR(out->at("y").data<float>()[1], expected_chain(1), 1e-6);
  if (std::string(phase) == "write") {
    EXPECT_GE(backends::intel_gpu::programs_built(), 1U);
    EXPECT_EQ(backends::intel_gpu::programs_loaded(), 0U);
    size_t files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      files += e.path().extension() == ".clbin" ? 1 : 0;
    }
    EXPECT_EQ(files, backends::intel_gpu::programs_built());
  } else {
    EXPECT_EQ(backends::intel_gpu::programs_built(), 0U);
    EXPECT_GE(backends::intel_gpu::programs_loaded(), 1U);
  }
}

TEST(IntelGpu, EqualFusedBodiesAreBuiltOnce) {
  REQUIRE_INTEL_GPU();
  auto first = compile(chain_graph(), gpu_options());
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  const size_t built = backends::intel_gpu::programs_built();
  auto second = compile(chain_graph(), gpu_options());
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  EXPECT_EQ(backends::intel_gpu::programs_built(), built) << "same body fingerprint: no rebuild";
  auto out = second->run(chain_inputs());
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_NEAR(out->at("y").data<float>()[4], expected_chain(4), 1e-6);
}
#endif

TEST(IntelGpu, UnfusedNodesAndCpuNodesExchangeValuesAtBoundaries) {
  REQUIRE_INTEL_GPU();
  CompileOptions o = gpu_options();
  o.disabled_passes = {"operator-fusion"};
  // cumsum has no intel_gpu kernel: x -> mul (gpu) -> cumsum (cpu) -> add (gpu) -> y.
  ir::Graph g("boundary");
  const ir::TensorType t{DTypeCode::kFloat32, {4}};
  ir::ValueId x = g.add_input("x", t);
  ir::ValueId axis = g.add_constant("axis", Tensor::from_vector<int64_t>({}, {0}));
  auto m = g.create_node("mul", "m", {x, x}, 1, {}, {"m"});
  auto c = g.create_node("cumsum", "c", {g.node(*m).outputs[0], axis}, 1, {}, {"c"});
  auto a = g.create_node("add", "a", {g.node(*c).outputs[0], x}, 1, {}, {"y"});
  g.add_output(g.node(*a).outputs[0]);
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  std::string placed;
  for (const Placement& p : exe->report().placements) placed += p.node + ":" + p.backend + " ";
  EXPECT_EQ(placed, "m:intel_gpu c:cpu a:intel_gpu ");
  const std::vector<float> xs = {-2.0F, -0.5F, 0.75F, 3.0F};
  auto out = exe->run({{"x", Tensor::from_vector<float>({4}, xs)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  double running = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    running += static_cast<double>(xs[i]) * xs[i];
    EXPECT_NEAR(out->at("y").data<float>()[i], running + xs[i], 1e-5) << i;
  }
  // Two device groups; copies exactly at the cpu node's boundary and the graph's.
  const std::vector<DeviceGroupReport>& dg = exe->report().device_groups;
  ASSERT_EQ(dg.size(), 2U);
  EXPECT_EQ(dg[0].nodes, std::vector<std::string>{"m"});
  EXPECT_EQ(dg[0].copies_in, std::vector<std::string>{"x"});
  EXPECT_EQ(dg[0].copies_out, std::vector<std::string>{"m"});
  EXPECT_EQ(dg[1].nodes, std::vector<std::string>{"a"});
  EXPECT_EQ(dg[1].copies_in, (std::vector<std::string>{"c", "x"}));
  EXPECT_EQ(dg[1].copies_out, std::vector<std::string>{"y"});
  EXPECT_EQ(dg[1].bytes_in, 2 * 4 * sizeof(float));
}

// x -> relu -> exp -> neg -> tanh -> y, also reading the exp value as a second output: one
// device group, one copy in, two copies out, intermediates never copied; the constant of
// the add is uploaded once per run slot and counted as such.
TEST(IntelGpu, ConsecutiveNodesStayInDeviceMemory) {
  REQUIRE_INTEL_GPU();
  CompileOptions o = gpu_options();
  o.strict = true;
  o.disabled_passes = {"operator-fusion"};
  ir::Graph g("resident");
  const int64_t n = 1000;
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {n}});
  ir::ValueId k = g.add_constant("k", Tensor::from_vector<float>({1}, {0.25F}));
  auto r = g.create_node("relu", "r", {x}, 1, {}, {"r"});
  auto e = g.create_node("exp", "e", {g.node(*r).outputs[0]}, 1, {}, {"e"});
  auto ng = g.create_node("neg", "ng", {g.node(*e).outputs[0]}, 1, {}, {"ng"});
  auto a = g.create_node("add", "a", {g.node(*ng).outputs[0], k}, 1, {}, {"a"});
  auto t = g.create_node("tanh", "t", {g.node(*a).outputs[0]}, 1, {}, {"y"});
  g.add_output(g.node(*t).outputs[0]);
  g.add_output(g.node(*e).outputs[0]);
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const std::vector<DeviceGroupReport>& dg = exe->report().device_groups;
  ASSERT_EQ(dg.size(), 1U);
  EXPECT_EQ(dg[0].nodes.size(), 5U);
  EXPECT_EQ(dg[0].copies_in, std::vector<std::string>{"x"});
  EXPECT_EQ(dg[0].copies_out, (std::vector<std::string>{"e", "y"}));
  EXPECT_EQ(dg[0].constants, 1U);
  EXPECT_EQ(dg[0].constant_bytes, sizeof(float));
  // Six values of 4,000 bytes with short lifetimes: x, r, e (alive to the end), ng, a, y. At
  // most four are alive at once (e, the node's input and output, the constant is tiny), so
  // a plan reusing memory needs well under the six values' sum.
  EXPECT_LT(dg[0].device_bytes, 5 * n * sizeof(float));
  EXPECT_GE(dg[0].device_bytes, 3 * n * sizeof(float));
  for (int run = 0; run < 3; ++run) {  // later runs reuse the uploaded constant
    std::vector<float> xs(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) xs[static_cast<size_t>(i)] = 0.01F * (i % 97) - 0.3F + run;
    auto out = exe->run({{"x", Tensor::from_vector<float>({n}, xs)}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    for (int64_t i = 0; i < n; ++i) {
      const double ex = std::exp(std::max(static_cast<double>(xs[static_cast<size_t>(i)]), 0.0));
      ASSERT_NEAR(out->at("e").data<float>()[i], ex, 1e-5 * ex) << i;
      ASSERT_NEAR(out->at("y").data<float>()[i], std::tanh(-ex + 0.25), 1e-5) << i;
    }
  }
}

// y = (x + c) - c in a fused f16 / bf16 body: the cpu stores the sum in the storage type
// before subtracting (per-op rounding), so y is x rounded to the spacing of the storage type
// at c (1 for f16 at 1024, 2 for bf16 at 256), ties to even, not x. Expected values by hand.
template <typename H>
void check_rounding_body(DTypeCode dt, float c, const std::vector<float>& xs,
                         const std::vector<float>& want) {
  ir::Graph g("round");
  const auto n = static_cast<int64_t>(xs.size());
  ir::ValueId x = g.add_input("x", ir::TensorType{dt, {n}});
  ir::ValueId cv = g.add_constant("c", Tensor::from_vector<H>({1}, {H(c)}));
  auto a = g.create_node("add", "a", {x, cv}, 1, {}, {"a"});
  auto s = g.create_node("sub", "s", {g.node(*a).outputs[0], cv}, 1, {}, {"y"});
  g.add_output(g.node(*s).outputs[0]);
  CompileOptions o = gpu_options();
  o.strict = true;
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_EQ(exe->report().placements.size(), 1U);
  EXPECT_EQ(exe->report().placements[0].op, "fused_elementwise_internal");
  std::vector<H> in;
  for (float v : xs) in.emplace_back(v);
  auto out = exe->run({{"x", Tensor::from_vector<H>({n}, in)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(static_cast<float>(out->at("y").template data<H>()[i]), want[i]) << "x = " << xs[i];
  }
}

TEST(IntelGpu, FusedF16BodyRoundsEveryIntermediate) {
  REQUIRE_INTEL_GPU();
  // 1024 + x in f16 (spacing 1): .25 -> 1024, .5 -> 1024 (tie, even), .75 -> 1025,
  // 1.5 -> 1026 (tie, even), 2.5 -> 1026 (tie, even), -0.75 -> 1023.
  check_rounding_body<Half>(DTypeCode::kFloat16, 1024.0F, {0.25F, 0.5F, 0.75F, 1.5F, 2.5F, -0.75F},
                            {0.0F, 0.0F, 1.0F, 2.0F, 2.0F, -1.0F});
}

TEST(IntelGpu, FusedBf16BodyRoundsEveryIntermediate) {
  REQUIRE_INTEL_GPU();
  // 256 + x in bf16 (spacing 2): .5 -> 256, 1 -> 256 (tie, even), 1.5 -> 258, 3 -> 260
  // (tie, even), 2.5 -> 258.
  check_rounding_body<BFloat16>(DTypeCode::kBFloat16, 256.0F, {0.5F, 1.0F, 1.5F, 3.0F, 2.5F},
                                {0.0F, 0.0F, 2.0F, 4.0F, 2.0F});
}

TEST(IntelGpu, ConcurrentRunsOfOneExecutable) {
  REQUIRE_INTEL_GPU();
  auto exe = compile(chain_graph(), gpu_options());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  std::vector<std::thread> threads;
  std::vector<int> bad(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 20; ++r) {
        auto out = exe->run(chain_inputs());
        if (!out.is_ok()) {
          ++bad[static_cast<size_t>(t)];
          continue;
        }
        for (size_t i = 0; i < kX.size(); ++i) {
          if (std::fabs(out->at("y").data<float>()[i] - expected_chain(i)) > 1e-6) {
            ++bad[static_cast<size_t>(t)];
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad, std::vector<int>(4, 0));
}

}  // namespace
}  // namespace frame::runtime
