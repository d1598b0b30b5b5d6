// The oneDNN GPU engine path of intel_gpu (src/backends/intel_gpu/kernels/onednn_gpu.h,
// docs/backends/intel-gpu.md "What runs where on Intel and non-Intel devices"). No Intel GPU
// is reachable in CI, so these tests check what can be checked on PoCL: the path is not taken
// on a non-Intel device, and forcing it (FRAME_INTEL_GPU_ONEDNN=force) on a device oneDNN
// refuses is a clean decline (our own kernel then computes the right values).

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "cpp/intel_gpu/intel_gpu_test_util.h"
#include "frame/ops/op_registry.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

#ifdef FRAME_HAVE_INTEL_GPU
#include "backends/intel_gpu/kernels/onednn_gpu.h"
#include "backends/intel_gpu/opencl.h"
#endif

namespace frame::runtime {
namespace {

#ifdef FRAME_HAVE_INTEL_GPU

using backends::intel_gpu::kOnednnEnv;
using backends::intel_gpu::onednn_gpu_launch;

// Sets (or unsets, nullopt) FRAME_INTEL_GPU_ONEDNN for one test and restores it after.
class ScopedOnednnEnv {
 public:
  explicit ScopedOnednnEnv(std::optional<std::string> value) {
    if (const char* old = std::getenv(kOnednnEnv)) old_ = old;
    if (value) {
      setenv(kOnednnEnv, value->c_str(), 1);
    } else {
      unsetenv(kOnednnEnv);
    }
  }
  ~ScopedOnednnEnv() {
    if (old_) {
      setenv(kOnednnEnv, old_->c_str(), 1);
    } else {
      unsetenv(kOnednnEnv);
    }
  }
  ScopedOnednnEnv(const ScopedOnednnEnv&) = delete;
  ScopedOnednnEnv& operator=(const ScopedOnednnEnv&) = delete;

 private:
  std::optional<std::string> old_;
};

// A device that is not an Intel GPU (PoCL in CI); skips elsewhere.
#define REQUIRE_NON_INTEL_GPU_DEVICE()                                                 \
  do {                                                                                 \
    const backends::intel_gpu::Device* d = backends::intel_gpu::selected_device();     \
    if (d == nullptr) GTEST_SKIP() << backends::intel_gpu::unavailable_reason();       \
    if (d->is_gpu && d->is_intel) GTEST_SKIP() << "the OpenCL device is an Intel GPU"; \
  } while (0)

// conv: x [1, 1, 3, 3], w [1, 1, 2, 2], bias [1], strides 1, no pads -> y [1, 1, 2, 2].
struct ConvNode {
  ir::AttrMap attrs;
  ops::NodeContext ctx;
  ConvNode() {
    ctx.op = "conv";
    ctx.node_name = "c";
    ctx.schema = ops::OpRegistry::global().find("conv");
    ctx.attrs = &attrs;
    ctx.input_types = {{DTypeCode::kFloat32, {1, 1, 3, 3}},
                       {DTypeCode::kFloat32, {1, 1, 2, 2}},
                       {DTypeCode::kFloat32, {1}}};
    ctx.input_present = {true, true, true};
    ctx.input_constants = {nullptr, nullptr, nullptr};
  }
};

ops::NodeContext matmul_node() {
  ops::NodeContext ctx;
  ctx.op = "matmul";
  ctx.node_name = "mm";
  ctx.schema = ops::OpRegistry::global().find("matmul");
  ctx.input_types = {{DTypeCode::kFloat32, {2, 1, 2, 3}}, {DTypeCode::kFloat32, {3, 3, 4}}};
  ctx.input_present = {true, true};
  ctx.input_constants = {nullptr, nullptr};
  return ctx;
}

TEST(IntelGpuOnednn, NotTakenOnANonIntelDevice) {
  REQUIRE_NON_INTEL_GPU_DEVICE();
  const ScopedOnednnEnv env(std::nullopt);
  ConvNode conv;
  auto c = onednn_gpu_launch(conv.ctx);
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  EXPECT_EQ(*c, nullptr);
  auto m = onednn_gpu_launch(matmul_node());
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  EXPECT_EQ(*m, nullptr);
}

// Forced on PoCL: oneDNN's OpenCL engine takes Intel GPUs only, so it declines with its own
// message (kUnimplemented, naming the device), never a crash. Should a oneDNN build accept the
// device, the Launch must describe the node's output.
TEST(IntelGpuOnednn, ForcedOnANonIntelDeviceIsACleanDecline) {
  REQUIRE_NON_INTEL_GPU_DEVICE();
  const ScopedOnednnEnv env("force");
  ConvNode conv;
  auto c = onednn_gpu_launch(conv.ctx);
  if (c.is_ok()) {
    ASSERT_NE(*c, nullptr);
    EXPECT_EQ((*c)->out_elems, 4U);
    EXPECT_EQ((*c)->out_bytes, 16U);
    EXPECT_TRUE((*c)->custom);
    return;
  }
  std::printf("forced on '%s': %s\n", backends::intel_gpu::selected_device()->device_name.c_str(),
              c.status().message().c_str());
  EXPECT_EQ(c.status().code(), StatusCode::kUnimplemented) << c.status().to_string();
  const std::string& dev = backends::intel_gpu::selected_device()->device_name;
  EXPECT_NE(c.status().message().find("oneDNN has no GPU engine for the OpenCL device"),
            std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find(dev), std::string::npos) << c.status().message();
  // The engine's refusal is remembered: matmul declines alike.
  auto m = onednn_gpu_launch(matmul_node());
  ASSERT_FALSE(m.is_ok());
  EXPECT_EQ(m.status().code(), StatusCode::kUnimplemented);
}

// Forced, the conv kernel still computes the convolution (through our own kernel after the
// decline). y[i][j] = sum_{a,b} x[i+a][j+b] * w[a][b] + bias, by hand.
TEST(IntelGpuOnednn, ForcedConvStillComputesTheConvolution) {
  REQUIRE_NON_INTEL_GPU_DEVICE();
  const ScopedOnednnEnv env("force");
  ir::Graph g("conv");
  ir::ValueId x = g.add_input("x", {DTypeCode::kFloat32, {1, 1, 3, 3}});
  ir::ValueId w = g.add_input("w", {DTypeCode::kFloat32, {1, 1, 2, 2}});
  ir::ValueId b = g.add_input("b", {DTypeCode::kFloat32, {1}});
  auto c = g.create_node("conv", "c", {x, w, b}, 1, {}, {"y"});
  ASSERT_TRUE(c.is_ok()) << c.status().to_string();
  g.add_output(g.node(*c).outputs[0]);
  CompileOptions o = test::strict_gpu_options();
  auto exe = compile(g, o);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  const std::vector<float> xv = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<float> wv = {1, -1, 0.5F, 2};
  auto out = exe->run({{"x", Tensor::from_vector<float>({1, 1, 3, 3}, xv)},
                       {"w", Tensor::from_vector<float>({1, 1, 2, 2}, wv)},
                       {"b", Tensor::from_vector<float>({1}, {0.25F})}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  // (1 - 2 + 2 + 10) + 0.25, (2 - 3 + 2.5 + 12) + 0.25, (4 - 5 + 3.5 + 16) + 0.25, ...
  const std::vector<float> want = {11.25F, 13.75F, 18.75F, 21.25F};
  const Tensor& y = out->at("y");
  ASSERT_EQ(y.numel(), 4);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_FLOAT_EQ(y.data<float>()[i], want[i]) << i;
}

#else

TEST(IntelGpuOnednn, NotBuilt) { GTEST_SKIP() << "intel_gpu is not in this build"; }

#endif

}  // namespace
}  // namespace frame::runtime
