// backend-lowering: placement reports (golden) for the preferred backend, for a backend
// without kernels (decomposition rejected, cpu fallback taken), and strict mode.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "cpp/passes/fusion_test_util.h"
#include "frame/passes/pass.h"

namespace frame::passes {
namespace {

using ir::TensorType;

ir::Graph relu_gelu() {
  ir::Graph g;
  ir::ValueId x = g.add_input("x", TensorType{DTypeCode::kFloat32, {4}});
  auto r = g.create_node("relu", "r", {x}, 1, {}, {"r"});
  auto ge = g.create_node("gelu", "ge", {g.node(*r).outputs[0]}, 1, {}, {"ge"});
  g.add_output(g.node(*ge).outputs[0]);
  EXPECT_TRUE(test::infer_types(g).is_ok());
  return g;
}

Result<std::string> lower(ir::Graph& g, std::vector<std::string> backends, bool strict) {
  PassContext ctx;
  ctx.backends = std::move(backends);
  ctx.strict = strict;
  auto p = make_pass("backend-lowering");
  if (!p.is_ok()) return p.status();
  FRAME_RETURN_IF_ERROR((*p)->run(g, ctx));
  std::string out;
  for (const auto& [id, pl] : ctx.placements) {
    out += fmt::format("{} ({}): {} via {}\n", g.node(id).name, g.node(id).op, pl.backend, pl.path);
    for (const std::string& r : pl.rejected) out += "  rejected " + r + "\n";
  }
  return out;
}

TEST(Lowering, PreferredBackendKernels) {
  ir::Graph g = relu_gelu();
  auto r = lower(g, {"cpu"}, false);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r,
            "r (relu): cpu via kernel\n"
            "ge (gelu): cpu via kernel\n");
}

TEST(Lowering, BackendWithoutKernelsFallsBackToCpu) {
  ir::Graph g = relu_gelu();
  auto r = lower(g, {"nowhere"}, false);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(*r,
            "r (relu): cpu via cpu-fallback\n"
            "  rejected nowhere: no kernel for op 'relu'\n"
            "  rejected decomposition: op 'relu' has no decomposition\n"
            "ge (gelu): cpu via cpu-fallback\n"
            "  rejected nowhere: no kernel for op 'gelu'\n"
            "  rejected decomposition: micro-graph node 'mul_0' (mul) would need the cpu "
            "fallback\n");
}

TEST(Lowering, StrictModeRejectsFallback) {
  ir::Graph g = relu_gelu();
  auto r = lower(g, {"nowhere"}, true);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "node 'r' (relu): strict mode forbids fallback 'cpu-fallback' (backends: "
            "nowhere; "
            "rejected: nowhere: no kernel for op 'relu'; decomposition: op 'relu' has no "
            "decomposition)");
}

}  // namespace
}  // namespace frame::passes
