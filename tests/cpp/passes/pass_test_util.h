#pragma once
/// \file
/// Helpers of the pass tests: parse a text-IR graph, run a pipeline with verification after
/// every pass, and compare the printed result with a hand-reviewed golden file in
/// tests/cpp/passes/golden/. FRAME_UPDATE_GOLDENS=1 rewrites the files instead; every rewrite
/// must be reviewed by hand before it is committed.

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include "frame/ir/graph.h"
#include "frame/ir/text.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/pass.h"

namespace frame::test {

/// ONNX shape sub-graph: the reshape target is computed from x's shape. Propagating the values
/// of shape -> gather -> concat makes reshape's shape static.
inline constexpr std::string_view kShapeSubgraph = R"(graph main {
  %x = graph_input() : f32[2,3,4]
  %i0 = const tensor<i64[1]>[0]
  %m1 = const tensor<i64[1]>[-1]
  %s = shape(%x) @shape_0
  %d0 = gather(%s, %i0) {axis = 0} @gather_0
  %t = concat(%d0, %m1) {axis = 0} @concat_0
  %y = reshape(%x, %t) @reshape_0
  graph_output(%y)
}
)";

/// Parses `text`; a parse error fails the test and yields an empty graph.
inline ir::Graph parse_graph(std::string_view text) {
  Result<ir::Graph> g = ir::parse_text(text);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : ir::Graph();
}

/// Parses `%y = <op>(%x) @<name>` over one graph input `%x` of type `type` ("f32[3]").
inline ir::Graph one_op_graph(std::string_view op, std::string_view name, std::string_view type) {
  const std::string text = "graph main {\n  %x = graph_input() : " + std::string(type) +
                           "\n  %y = " + std::string(op) + "(%x) @" + std::string(name) +
                           "\n  graph_output(%y)\n}\n";
  return parse_graph(text);
}

/// Runs `pipeline` with verification after every pass.
inline Status run_verified(ir::Graph& g, std::string_view pipeline, passes::PassContext ctx = {}) {
  ctx.verify_after_each = true;
  return passes::run_pipeline(g, pipeline, ctx);
}

/// Expects print_text(g) to equal tests/cpp/passes/golden/<name>.txt.
inline void expect_golden(const ir::Graph& g, std::string_view name) {
  const std::string path =
      std::string(FRAME_SOURCE_DIR) + "/tests/cpp/passes/golden/" + std::string(name) + ".txt";
  const std::string actual = ir::print_text(g);
  if (const char* update = std::getenv("FRAME_UPDATE_GOLDENS"); update && *update == '1') {
    std::ofstream(path) << actual;
    return;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << "missing golden file " << path;
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden " << path;
}

/// Verifies `g` against the op registry (V1-V4).
inline void expect_verifies(const ir::Graph& g) {
  Status s = g.verify(ops::make_op_query());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

}  // namespace frame::test
