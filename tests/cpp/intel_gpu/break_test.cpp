// Edge cases of the intel_gpu backend's limits (docs/backends/intel-gpu.md): outputs beyond the
// 32-bit index range are declined (cpu runs the node) rather than failing the compilation,
// fusion leaves out ops the fused kernel cannot generate, fused folds of hundreds of inputs
// build, a device group larger than the device's largest buffer spreads over several buffers,
// and a damaged on-disk program cache is rebuilt rather than handed to the driver.

#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "cpp/intel_gpu/intel_gpu_test_util.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

#ifdef FRAME_HAVE_INTEL_GPU
#include "backends/intel_gpu/opencl.h"
#endif

namespace frame::runtime {
namespace {

using test::gpu_options;
using test::strict_gpu_options;

const Placement* placement_of(const Executable& exe, const std::string& node) {
  for (const Placement& p : exe.report().placements) {
    if (p.node == node) return &p;
  }
  return nullptr;
}

// expand of a 1-element bool to 2^31 + 64 elements: every input is small, the output is past
// the kernels' 32-bit indices. The node must be declined (cpu runs it), not fail the whole
// compilation at prepare. Only compiled: running would hold 2 GiB.
TEST(IntelGpuBreak, OutputBeyond32BitIndicesIsDeclinedNotAnError) {
  REQUIRE_INTEL_GPU();
  ir::Graph g("wide_expand");
  const int64_t n = int64_t{INT_MAX} + 65;
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kBool, {1}});
  ir::ValueId shape = g.add_constant("shape", Tensor::from_vector<int64_t>({1}, {n}));
  auto e = g.create_node("expand", "e", {x, shape}, 1, {}, {"e"});
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  g.add_output(g.node(*e).outputs[0]);
  auto exe = compile(g, gpu_options());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const Placement* p = placement_of(*exe, "e");
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->backend, "cpu");
  ASSERT_EQ(p->rejected.size(), 1U);
  EXPECT_NE(p->rejected[0].find("output 0 has 2147483712 elements"), std::string::npos)
      << p->rejected[0];
}

// relu -> clip -> neg and relu -> cast (f32 to f32) -> neg: every node has an intel_gpu kernel,
// but the fused kernel has no formula for clip or cast. operator-fusion used to fuse each chain
// into one group, which intel_gpu then declined as a whole: the chain ran on cpu, and --strict
// failed although no node needs cpu. Members the preferred backend cannot fuse stay unfused.
TEST(IntelGpuBreak, FusionKeepsOutMembersTheFusedKernelCannotGenerate) {
  REQUIRE_INTEL_GPU();
  CompileOptions o = strict_gpu_options();
  ir::Graph g("clip_chain");
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {5}});
  ir::ValueId lo = g.add_constant("lo", Tensor::from_vector<float>({}, {0.25F}));
  ir::ValueId hi = g.add_constant("hi", Tensor::from_vector<float>({}, {1.5F}));
  auto r = g.create_node("relu", "r", {x}, 1, {}, {"r"});
  auto c = g.create_node("clip", "c", {g.node(*r).outputs[0], lo, hi}, 1, {}, {"c"});
  auto n = g.create_node("neg", "n", {g.node(*c).outputs[0]}, 1, {}, {"y"});
  auto k = g.create_node("cast", "k", {g.node(*r).outputs[0]}, 1, {{"to", int64_t{1}}},
                         {"k"});  // ONNX FLOAT
  ASSERT_TRUE(k.is_ok()) << k.status().to_string();
  auto m = g.create_node("neg", "m", {g.node(*k).outputs[0]}, 1, {}, {"z"});
  g.add_output(g.node(*n).outputs[0]);
  g.add_output(g.node(*m).outputs[0]);
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  for (const Placement& p : exe->report().placements) EXPECT_EQ(p.backend, "intel_gpu") << p.node;
  const std::vector<float> xs = {-1.0F, 0.1F, 0.5F, 1.0F, 3.0F};
  auto out = exe->run({{"x", Tensor::from_vector<float>({5}, xs)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const std::vector<float> y = {-0.25F, -0.25F, -0.5F, -1.0F, -1.5F};
  const std::vector<float> z = {-0.0F, -0.1F, -0.5F, -1.0F, -3.0F};
  for (size_t i = 0; i < xs.size(); ++i) {
    EXPECT_EQ(out->at("y").data<float>()[i], y[i]) << i;
    EXPECT_EQ(out->at("z").data<float>()[i], z[i]) << i;
  }
}

// relu(sum(x0, ..., x299)) fused: the generated left fold nested one call per input, and the
// OpenCL compiler refused the program (bracket nesting level exceeded maximum of 256), which
// failed the whole compilation although cpu runs it.
// About 16 s on a cold PoCL cache (a 300-input kernel): its own `slow` entry.
TEST(IntelGpuBreakSlow, FusedVariadicFoldOfManyInputsBuilds) {
  REQUIRE_INTEL_GPU();
  CompileOptions o = gpu_options();
  o.strict = true;
  ir::Graph g("wide_sum");
  const size_t n = 300;
  std::vector<ir::ValueId> xs;
  TensorMap feeds;
  std::vector<double> expected(3, 0.0);
  for (size_t k = 0; k < n; ++k) {
    const std::string name = "x" + std::to_string(k);
    xs.push_back(g.add_input(name, ir::TensorType{DTypeCode::kFloat32, {3}}));
    const std::vector<float> v = {0.5F * static_cast<float>(k % 7), -0.25F,
                                  static_cast<float>(k % 3) - 1.0F};
    for (size_t i = 0; i < 3; ++i) expected[i] += v[i];
    feeds.emplace(name, Tensor::from_vector<float>({3}, v));
  }
  auto s = g.create_node("sum", "s", xs, 1, {}, {"s"});
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  auto r = g.create_node("relu", "r", {g.node(*s).outputs[0]}, 1, {}, {"y"});
  g.add_output(g.node(*r).outputs[0]);
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_EQ(exe->report().placements.size(), 1U);
  EXPECT_EQ(exe->report().placements[0].op, "fused_elementwise_internal");
  EXPECT_EQ(exe->report().placements[0].backend, "intel_gpu");
  auto out = exe->run(feeds);
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(out->at("y").data<float>()[i], std::max(expected[i], 0.0), 1e-3) << i;
  }
}

#ifdef FRAME_HAVE_INTEL_GPU
// x -> a = relu(x), b = neg(x), c = exp(x), d = a + b, y = d + c; a, b and y are outputs. Five
// values of 64 MiB are alive together at some point, so one buffer for the group would exceed
// a device whose CL_DEVICE_MAX_MEM_ALLOC_SIZE is 256 MiB (PoCL with POCL_MEMORY_LIMIT=1, the
// ctest intel_gpu_group_over_max_alloc), although every single value fits.
TEST(IntelGpuBreak, GroupLargerThanTheLargestBufferSpreadsOverSeveral) {
  REQUIRE_INTEL_GPU();
  const int64_t n = int64_t{16} << 20;
  const size_t value_bytes = static_cast<size_t>(n) * sizeof(float);
  const size_t max_alloc = backends::intel_gpu::selected_device()->max_alloc;
  if (max_alloc >= 5 * value_bytes) {
    GTEST_SKIP() << "the device's largest buffer (" << max_alloc
                 << " bytes) holds the whole group; run by the ctest "
                    "intel_gpu_group_over_max_alloc (POCL_MEMORY_LIMIT=1)";
  }
  CompileOptions o = gpu_options();
  o.strict = true;
  o.disabled_passes = {"operator-fusion"};
  ir::Graph g("wide_group");
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {n}});
  auto a = g.create_node("relu", "a", {x}, 1, {}, {"a"});
  auto b = g.create_node("neg", "b", {x}, 1, {}, {"b"});
  auto c = g.create_node("exp", "c", {x}, 1, {}, {"c"});
  auto d = g.create_node("add", "d", {g.node(*a).outputs[0], g.node(*b).outputs[0]}, 1, {}, {"d"});
  auto y = g.create_node("add", "y", {g.node(*d).outputs[0], g.node(*c).outputs[0]}, 1, {}, {"y"});
  g.add_output(g.node(*y).outputs[0]);
  g.add_output(g.node(*a).outputs[0]);
  g.add_output(g.node(*b).outputs[0]);
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  ASSERT_EQ(exe->report().device_groups.size(), 1U);
  EXPECT_GT(exe->report().device_groups[0].device_bytes, max_alloc);
  std::vector<float> xs(static_cast<size_t>(n));
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i % 1000) * 0.004F - 2.0F;
  auto out = exe->run({{"x", Tensor::from_vector<float>({n}, xs)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  for (size_t i = 0; i < xs.size(); i += 4099) {
    const double v = xs[i];
    const double relu = std::max(v, 0.0);
    ASSERT_NEAR(out->at("a").data<float>()[i], relu, 0.0) << i;
    ASSERT_NEAR(out->at("b").data<float>()[i], -v, 0.0) << i;
    ASSERT_NEAR(out->at("y").data<float>()[i], relu - v + std::exp(v), 1e-5 * std::exp(v) + 1e-6)
        << i;
  }
}

// Run by the ctests intel_gpu_disk_cache_damaged_{setup,check}: the setup fills a fresh
// FRAME_OPENCL_CACHE_DIR; the check cuts every stored program binary in half (as a full disk
// or a crash while writing could leave it) and then compiles the same graph: the damaged files
// must be rebuilt from source (PoCL aborts when handed a truncated binary) and rewritten.
TEST(IntelGpuBreak, DamagedDiskCacheIsRebuilt) {
  const char* phase = std::getenv("FRAME_TEST_OPENCL_DISK_CACHE");
  const char* dir = std::getenv("FRAME_OPENCL_CACHE_DIR");
  if (phase == nullptr || dir == nullptr) {
    GTEST_SKIP() << "run by the ctests intel_gpu_disk_cache_damaged_setup/_check";
  }
  std::vector<std::filesystem::path> files;
  if (std::string(phase) == "damage") {
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      if (e.path().extension() != ".clbin") continue;
      files.push_back(e.path());
      std::filesystem::resize_file(e.path(), std::filesystem::file_size(e.path()) / 2);
    }
    ASSERT_FALSE(files.empty()) << "the setup test stored no program in " << dir;
  }
  // Probes the device only after the files are damaged (nothing is loaded before).
  REQUIRE_INTEL_GPU();
  CompileOptions o = gpu_options();
  o.strict = true;
  o.disabled_passes = {"operator-fusion"};
  ir::Graph g("cached");
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {3}});
  auto t = g.create_node("tanh", "t", {x}, 1, {}, {"t"});
  auto s = g.create_node("softmax", "s", {g.node(*t).outputs[0]}, 1, {}, {"y"});
  g.add_output(g.node(*s).outputs[0]);
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  auto out = exe->run({{"x", Tensor::from_vector<float>({3}, {-1.0F, 0.5F, 2.0F})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const double t0 = std::tanh(-1.0);
  const double t1 = std::tanh(0.5);
  const double t2 = std::tanh(2.0);
  const double sum = std::exp(t0) + std::exp(t1) + std::exp(t2);
  EXPECT_NEAR(out->at("y").data<float>()[0], std::exp(t0) / sum, 1e-6);
  EXPECT_NEAR(out->at("y").data<float>()[2], std::exp(t2) / sum, 1e-6);
  if (std::string(phase) == "damage") {
    EXPECT_EQ(backends::intel_gpu::programs_loaded(), 0U) << "a damaged binary was loaded";
    EXPECT_GE(backends::intel_gpu::programs_built(), files.size());
  }
}
#endif

}  // namespace
}  // namespace frame::runtime
