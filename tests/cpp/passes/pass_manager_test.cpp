// Pass manager: the pass table, pipeline parsing, unknown names, skipping, timing, printing
// the IR after a pass, and verification after each pass.

#include <gtest/gtest.h>

#include "cpp/passes/pass_test_util.h"
#include "frame/passes/pass.h"

namespace frame::passes {
namespace {

constexpr std::string_view kSmall = R"(graph main {
  %x = graph_input() : f32[2]
  %y = relu(%x) @r
  graph_output(%y)
}
)";

TEST(PassManager, KnowsEveryPassOfTheStandardPipelineInOrder) {
  const std::vector<std::string> expected = {"shape-inference",
                                             "constant-folding",
                                             "cse",
                                             "dce",
                                             "float16-widening",
                                             "decomposition",
                                             "operator-fusion",
                                             "backend-lowering",
                                             "memory-planning"};
  EXPECT_EQ(pass_names(), expected);
  std::string joined;
  for (const std::string& n : expected) joined += (joined.empty() ? "" : ",") + n;
  EXPECT_EQ(joined, kStandardPipeline);
  for (const std::string& n : expected) {
    Result<std::unique_ptr<Pass>> p = make_pass(n);
    ASSERT_TRUE(p.is_ok()) << n;
    EXPECT_EQ((*p)->name(), n);
  }
}

TEST(PassManager, UnknownPassListsTheKnownOnes) {
  Result<std::unique_ptr<Pass>> p = make_pass("constant-fold");
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("'constant-fold'"), std::string::npos);
  EXPECT_NE(p.status().message().find("constant-folding"), std::string::npos);
  EXPECT_NE(p.status().message().find("memory-planning"), std::string::npos);

  ir::Graph g = test::parse_graph(kSmall);
  const std::string before = ir::print_text(g);
  PassContext ctx;
  Status s = run_pipeline(g, "shape-inference, nope", ctx);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("'nope'"), std::string::npos);
  // Names are checked before any pass runs: the graph is untouched.
  EXPECT_EQ(ir::print_text(g), before);
  EXPECT_TRUE(ctx.pass_times_ms.empty());
  EXPECT_EQ(run_pipeline(g, "dce", ctx, {"typo"}).code(), StatusCode::kNotFound);
}

TEST(PassManager, TimesEachPassInOrderAndSkips) {
  ir::Graph g = test::parse_graph(kSmall);
  PassContext ctx;
  ctx.verify_after_each = true;
  ASSERT_TRUE(run_pipeline(g, " shape-inference ,cse,,dce", ctx, {"cse"}).is_ok());
  ASSERT_EQ(ctx.pass_times_ms.size(), 2u);
  EXPECT_EQ(ctx.pass_times_ms[0].first, "shape-inference");
  EXPECT_EQ(ctx.pass_times_ms[1].first, "dce");
  EXPECT_GE(ctx.pass_times_ms[0].second, 0.0);
}

TEST(PassManager, PrintsIrAfterRequestedPasses) {
  ir::Graph g = test::parse_graph(kSmall);
  PassContext ctx;
  ctx.print_ir_after = {"shape-inference"};
  testing::internal::CaptureStderr();
  ASSERT_TRUE(run_pipeline(g, "shape-inference,dce", ctx).is_ok());
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "// IR after shape-inference\n"
            "graph main {\n"
            "  %x = graph_input() : f32[2]\n"
            "  %y = relu(%x) : f32[2] @r\n"
            "  graph_output(%y)\n"
            "}\n");
  ctx.print_ir_after = {"all"};
  testing::internal::CaptureStderr();
  ASSERT_TRUE(run_pipeline(g, "cse,dce", ctx).is_ok());
  const std::string all = testing::internal::GetCapturedStderr();
  EXPECT_NE(all.find("// IR after cse\n"), std::string::npos);
  EXPECT_NE(all.find("// IR after dce\n"), std::string::npos);
}

TEST(PassManager, VerifiesAfterEachPassWhenAsked) {
  // Without shape inference the node output has no type: V2 fails after the first pass.
  ir::Graph g = test::parse_graph(kSmall);
  PassContext ctx;
  ctx.verify_after_each = true;
  Status s = run_pipeline(g, "cse", ctx);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("after pass 'cse'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("V2: "), std::string::npos) << s.message();
  ctx.verify_after_each = false;
  EXPECT_TRUE(run_pipeline(g, "cse", ctx).is_ok());
}

TEST(PassManager, PassErrorsNameThePass) {
  ir::Graph g = test::one_op_graph("no_such_op", "n", "f32[2]");
  PassContext ctx;
  Status s = run_pipeline(g, "shape-inference", ctx);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(),
            "pass 'shape-inference': node 'n' (no_such_op): op 'no_such_op' is not registered");
}

}  // namespace
}  // namespace frame::passes
