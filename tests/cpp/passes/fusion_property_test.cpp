// Property test: random elementwise DAGs with broadcasting, compiled with and without fusion
// and under every memory-planning setting, equal the plain cpu reference run; fusion never
// breaks the graph (it verifies after the pass, so no cycle was created).

#include <gtest/gtest.h>

#include "common/tolerance.h"
#include "cpp/passes/fusion_test_util.h"
#include "frame/ir/text.h"
#include "frame/passes/pass.h"
#include "frame/runtime/compile.h"

namespace frame::passes {
namespace {

void check_dag(test::RandomDag& d, int& fused_total, int threads) {
  SCOPED_TRACE(ir::print_text(d.graph));
  auto expected = test::reference_run(d.graph, d.inputs);
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  for (bool fuse : {true, false}) {
    for (bool inplace : {true, false}) {
      for (bool reuse : {true, false}) {
        runtime::CompileOptions o;
        o.use_cache = false;
        o.allow_inplace = inplace;
        o.reuse_buffers = reuse;
        o.num_threads = threads;
        if (!fuse) o.disabled_passes = {"operator-fusion"};
        auto exe = runtime::compile(d.graph, o);
        ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
        const ir::OpQuery q = ops::make_op_query();
        ASSERT_TRUE(exe->compiled_graph().verify(q).is_ok());
        if (fuse) fused_total += static_cast<int>(exe->report().fused_groups.size());
        auto got = exe->run(d.inputs);
        ASSERT_TRUE(got.is_ok()) << got.status().to_string();
        for (const auto& [name, want] : *expected) {
          SCOPED_TRACE(
              fmt::format("output {} fuse={} inplace={} reuse={}", name, fuse, inplace, reuse));
          ASSERT_EQ(got->count(name), 1U);
          const auto r =
              test::compare_tensors(got->at(name), want, test::tolerance_for(DTypeCode::kFloat32));
          EXPECT_TRUE(r.ok) << r.message;
        }
      }
    }
  }
}

// Outputs of 3 * 37 * 41 = 4551 elements: several fused blocks, and broadcast gathers that
// start in the middle of a row.
TEST(FusionProperty, LargeRandomDagsSpanSeveralBlocks) {
  int fused_total = 0;
  for (uint32_t seed = 500; seed < 510; ++seed) {
    test::RandomDag d = test::random_elementwise_dag(seed, 10, {3, 37, 41});
    check_dag(d, fused_total, 1);
  }
  EXPECT_GT(fused_total, 3);
}

TEST(FusionProperty, RandomDagsMatchTheCpuReference) {
  ASSERT_FALSE(test::fusable_f32_ops(1).empty());
  ASSERT_FALSE(test::fusable_f32_ops(2).empty());
  int fused_total = 0;
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    test::RandomDag d = test::random_elementwise_dag(seed, 4 + static_cast<int>(seed % 9));
    check_dag(d, fused_total, 1);
  }
  EXPECT_GT(fused_total, 10);  // the property is about fused graphs: make sure there were some
}

TEST(FusionProperty, FusionPassAloneKeepsRandomGraphsValid) {
  for (uint32_t seed = 100; seed < 160; ++seed) {
    test::RandomDag d = test::random_elementwise_dag(seed, 12);
    PassContext ctx;
    auto pass = make_pass("operator-fusion");
    ASSERT_TRUE(pass.is_ok());
    ASSERT_TRUE((*pass)->run(d.graph, ctx).is_ok());
    const ir::OpQuery q = ops::make_op_query();
    EXPECT_TRUE(d.graph.verify(q).is_ok()) << ir::print_text(d.graph);
    EXPECT_TRUE(d.graph.topological_order().is_ok());
  }
}

}  // namespace
}  // namespace frame::passes
