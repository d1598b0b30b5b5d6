// The fallback chain (M10) end to end with a test-only backend: "test_backend" has kernels for
// add, mul and hard_sigmoid only. add runs on its kernel, hard_swish through its decomposition
// (mul + hard_sigmoid, both on test_backend), sigmoid on the cpu fallback; strict mode turns
// the fallbacks into errors.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "frame/ops/kernel_registry.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

std::atomic<int> g_add_calls{0};
std::atomic<int> g_mul_calls{0};
std::atomic<int> g_hard_sigmoid_calls{0};

// f32 only; same shapes or a scalar second operand (all this test needs).
template <typename F>
Status binary_f32(ops::KernelContext& ctx, F f) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  float* o = ctx.output(0).data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    o[i] = f(a.data<float>()[i], b.data<float>()[b.numel() == 1 ? 0 : i]);
  }
  return Status();
}

Status test_add(ops::KernelContext& ctx) {
  ++g_add_calls;
  return binary_f32(ctx, [](float x, float y) { return x + y; });
}
Status test_mul(ops::KernelContext& ctx) {
  ++g_mul_calls;
  return binary_f32(ctx, [](float x, float y) { return x * y; });
}
Status test_hard_sigmoid(ops::KernelContext& ctx) {
  ++g_hard_sigmoid_calls;
  const auto alpha = static_cast<float>(ctx.node->attr_or<double>("alpha", 0.2));
  const auto beta = static_cast<float>(ctx.node->attr_or<double>("beta", 0.5));
  const Tensor& x = ctx.input(0);
  for (int64_t i = 0; i < x.numel(); ++i) {
    ctx.output(0).data<float>()[i] =
        std::min(1.0F, std::max(0.0F, alpha * x.data<float>()[i] + beta));
  }
  return Status();
}

FRAME_REGISTER_KERNEL(add, "test_backend", test_add).dtypes({DTypeCode::kFloat32});
FRAME_REGISTER_KERNEL(mul, "test_backend", test_mul).dtypes({DTypeCode::kFloat32});
FRAME_REGISTER_KERNEL(hard_sigmoid, "test_backend", test_hard_sigmoid)
    .dtypes({DTypeCode::kFloat32});

ir::Graph chain_graph() {
  ir::Graph g("fallback");
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {5}});
  ir::ValueId y = g.add_input("y", ir::TensorType{DTypeCode::kFloat32, {5}});
  auto a = g.create_node("add", "a", {x, y}, 1, {}, {"a"});
  auto h = g.create_node("hard_swish", "h", {g.node(*a).outputs[0]}, 1, {}, {"h"});
  auto s = g.create_node("sigmoid", "s", {g.node(*h).outputs[0]}, 1, {}, {"s"});
  g.add_output(g.node(*s).outputs[0]);
  return g;
}

CompileOptions test_backend_options() {
  CompileOptions o;
  o.backends = {"test_backend"};
  // The decomposition pass would inline hard_swish at compile time; without it the runtime's
  // own decomposition link of the chain is exercised.
  o.disabled_passes = {"decomposition"};
  o.use_cache = false;
  return o;
}

TEST(Fallback, AllThreeLinksOfTheChain) {
  auto exe = compile(chain_graph(), test_backend_options());
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
  std::string placements;
  for (const Placement& p : exe->report().placements) {
    placements += fmt::format("{} ({}): {} via {}\n", p.node, p.op, p.backend, p.path);
    for (const std::string& r : p.rejected) placements += "  rejected " + r + "\n";
  }
  EXPECT_EQ(placements,
            "a (add): test_backend via kernel\n"
            "h (hard_swish): test_backend via decomposition\n"
            "  rejected test_backend: no kernel for op 'hard_swish'\n"
            "s (sigmoid): cpu via cpu-fallback\n"
            "  rejected test_backend: no kernel for op 'sigmoid'\n"
            "  rejected decomposition: op 'sigmoid' has no decomposition\n");

  const std::vector<float> xs = {-4.0F, -1.0F, 0.0F, 0.5F, 3.0F};
  const std::vector<float> ys = {1.0F, -0.5F, 0.25F, 0.5F, 1.0F};
  const int add0 = g_add_calls, mul0 = g_mul_calls, hs0 = g_hard_sigmoid_calls;
  auto out = exe->run(
      {{"x", Tensor::from_vector<float>({5}, xs)}, {"y", Tensor::from_vector<float>({5}, ys)}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(g_add_calls - add0, 1);
  EXPECT_GE(g_mul_calls - mul0, 1);
  EXPECT_GE(g_hard_sigmoid_calls - hs0, 1);
  const Tensor& s = out->at("s");
  for (size_t i = 0; i < xs.size(); ++i) {
    const double a = static_cast<double>(xs[i]) + ys[i];
    const double hs = a * std::min(1.0, std::max(0.0, a / 6.0 + 0.5));
    EXPECT_NEAR(s.data<float>()[i], 1.0 / (1.0 + std::exp(-hs)), 1e-6) << i;
  }
}

TEST(Fallback, StrictModeMakesFallbackAnError) {
  CompileOptions o = test_backend_options();
  o.strict = true;
  auto exe = compile(chain_graph(), o);
  ASSERT_FALSE(exe.is_ok());
  EXPECT_EQ(exe.status().message(),
            "pass 'backend-lowering': node 'h' (hard_swish): strict mode forbids fallback "
            "'decomposition' (backends: "
            "test_backend; rejected: test_backend: no kernel for op 'hard_swish')");
}

TEST(Fallback, TestBackendIsFoundAsAPerKernelBackend) {
  const Backend* b = find_backend("test_backend");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->granularity(), Backend::Granularity::kPerKernel);
  EXPECT_EQ(find_backend("no_such_backend"), nullptr);
  const auto names = backend_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "test_backend"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
}

}  // namespace
}  // namespace frame::runtime
