// `frame viz` drawing model (tools/cli/viz_graph.h) on graphs built here: every expected
// node, cluster, edge and label line follows from the graph's construction.
#include "viz_graph.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace frame::cli::viz {
namespace {

using Kind = DrawnNode::Kind;

const DrawnNode* find_node(const DrawnGraph& d, const std::string& id) {
  for (const DrawnNode& n : d.nodes) {
    if (n.id == id) return &n;
  }
  return nullptr;
}

bool has_edge(const DrawnGraph& d, const std::string& from, const std::string& to,
              const std::string& label) {
  return std::any_of(d.edges.begin(), d.edges.end(), [&](const DrawnEdge& e) {
    return e.from == from && e.to == to && e.label == label;
  });
}

bool has_line(const DrawnNode& n, const std::string& line) {
  return std::find(n.lines.begin(), n.lines.end(), line) != n.lines.end();
}

ir::TensorType f32(Shape s) { return ir::TensorType{DTypeCode::kFloat32, std::move(s)}; }

ir::NodeId add(ir::Graph& g, const std::string& op, const std::string& name,
               std::vector<ir::ValueId> inputs, const ir::TensorType& out, ir::AttrMap attrs = {}) {
  Result<ir::NodeId> n = g.create_node(op, name, std::move(inputs), 1, std::move(attrs));
  EXPECT_TRUE(n.is_ok()) << n.status().to_string();
  g.value(g.node(*n).outputs[0]).type = out;
  return *n;
}

// x[2,3] @ W[3,4] (onednn kernel) -> relu (cpu fallback) -> y.
TEST(VizGraph, PlainNodesFallbackAndConstants) {
  StagedGraph s;
  s.stage = "final";
  ir::Graph& g = s.graph;
  const ir::ValueId x = g.add_input("x", f32({2, 3}));
  const ir::ValueId w = g.add_constant("W", *Tensor::zeros(DTypeCode::kFloat32, {3, 4}));
  const ir::ValueId k = g.add_constant("k", Tensor::from_vector<float>({2}, {0.5F, 2.0F}));
  const ir::NodeId mm = add(g, "matmul", "mm", {x, w}, f32({2, 4}));
  const ir::NodeId r = add(g, "relu", "r", {g.node(mm).outputs[0], k}, f32({2, 4}));
  g.add_output(g.node(r).outputs[0]);
  s.import_constants = {"W"};  // k was made by a pass
  s.placed = true;
  s.placements[mm] = {"onednn", "kernel", {}};
  s.placements[r] = {"cpu", "cpu-fallback", {"onednn: no kernel for op 'relu'"}};
  s.node_counts = {{"import", 3}, {"constant-folding", 2}};

  const DrawnGraph d = build_drawing(s, "m.onnx", {"onednn", "cpu"});
  ASSERT_EQ(d.nodes.size(), 4U);  // input, mm, r, output
  EXPECT_TRUE(d.clusters.empty());
  EXPECT_EQ(d.fallbacks, 1U);
  const DrawnNode* in = find_node(d, "input0");
  const DrawnNode* n_mm = find_node(d, "n" + std::to_string(mm));
  const DrawnNode* n_r = find_node(d, "n" + std::to_string(r));
  const DrawnNode* out = find_node(d, "output0");
  ASSERT_TRUE(in && n_mm && n_r && out);
  EXPECT_EQ(in->kind, Kind::kInput);
  EXPECT_EQ(out->kind, Kind::kOutput);
  EXPECT_EQ(in->lines, (std::vector<std::string>{"input x", "f32[2,3]"}));
  EXPECT_EQ(n_mm->lines, (std::vector<std::string>{"mm", "matmul [onednn]", "const W f32[3,4]"}));
  EXPECT_FALSE(n_mm->fallback);
  EXPECT_TRUE(n_r->fallback);
  EXPECT_TRUE(has_line(*n_r, "folded const k f32[2] = [0.5, 2]"));
  EXPECT_TRUE(has_line(*n_r, "fallback: cpu-fallback on cpu"));
  EXPECT_TRUE(has_line(*n_r, "rejected onednn: no kernel for op 'relu'"));
  EXPECT_NE(n_mm->fill, n_r->fill);  // coloured by backend
  ASSERT_EQ(d.edges.size(), 3U);     // constants are labels, not edges
  EXPECT_TRUE(has_edge(d, "input0", n_mm->id, "f32[2,3]"));
  EXPECT_TRUE(has_edge(d, n_mm->id, n_r->id, "f32[2,4]"));
  EXPECT_TRUE(has_edge(d, n_r->id, "output0", "f32[2,4]"));
  ASSERT_EQ(d.legend.size(), 2U);
  EXPECT_EQ(d.legend[0], std::make_pair(std::string("onednn"), n_mm->fill));
  EXPECT_EQ(d.legend[1], std::make_pair(std::string("cpu"), n_r->fill));
  const std::string title = fmt::format("{}", fmt::join(d.title, "\n"));
  EXPECT_NE(title.find("constant-folding folded away 1 node(s)"), std::string::npos) << title;
}

// A conv with post-ops add (residual R, input 3) and relu: base and post-ops in one cluster,
// the residual edge into the add.
TEST(VizGraph, PostOpsClusterRoutesTheResidualToTheAdd) {
  StagedGraph s;
  s.stage = "backend-lowering";
  ir::Graph& g = s.graph;
  const ir::ValueId x = g.add_input("x", f32({1, 2, 4, 4}));
  const ir::ValueId res = g.add_input("res", f32({1, 2, 4, 4}));
  const ir::ValueId w = g.add_constant("w", *Tensor::zeros(DTypeCode::kFloat32, {2, 2, 3, 3}));
  ir::AttrMap attrs{{"base_op", std::string("conv")},
                    {"post_ops", std::vector<std::string>{"add", "relu"}}};
  const ir::NodeId f = add(g, "fused_post_ops_internal", "conv1", {x, w, ir::kNoValue, res},
                           f32({1, 2, 4, 4}), std::move(attrs));
  g.add_output(g.node(f).outputs[0]);
  s.import_constants = {"w"};
  s.placed = true;
  s.placements[f] = {"onednn", "kernel", {}};

  const DrawnGraph d = build_drawing(s, "m.onnx", {"onednn", "cpu"});
  ASSERT_EQ(d.clusters.size(), 1U);
  EXPECT_EQ(d.clusters[0].lines,
            (std::vector<std::string>{"conv1", "fused_post_ops_internal [onednn]"}));
  ASSERT_EQ(d.nodes.size(), 6U);  // 2 inputs, conv, add, relu, output
  const std::string base = "n" + std::to_string(f) + "_base";
  const std::string post_add = "n" + std::to_string(f) + "_post0";
  const std::string post_relu = "n" + std::to_string(f) + "_post1";
  ASSERT_TRUE(find_node(d, base) && find_node(d, post_add) && find_node(d, post_relu));
  EXPECT_EQ(find_node(d, base)->lines, (std::vector<std::string>{"conv", "const w f32[2,2,3,3]"}));
  EXPECT_EQ(find_node(d, post_add)->cluster, 0);
  const std::string t = "f32[1,2,4,4]";
  EXPECT_TRUE(has_edge(d, "input0", base, t));
  EXPECT_TRUE(has_edge(d, "input1", post_add, t));
  EXPECT_TRUE(has_edge(d, base, post_add, t));
  EXPECT_TRUE(has_edge(d, post_add, post_relu, t));
  EXPECT_TRUE(has_edge(d, post_relu, "output0", t));
  EXPECT_EQ(d.edges.size(), 5U);
}

// A fused elementwise group before lowering: its body's nodes in a cluster, not placed yet.
TEST(VizGraph, ElementwiseGroupShowsItsBody) {
  StagedGraph s;
  s.stage = "operator-fusion";
  ir::Graph& g = s.graph;
  const ir::ValueId a = g.add_input("a", f32({8}));
  const ir::ValueId b = g.add_input("b", f32({8}));
  auto body = std::make_shared<ir::Graph>("fused_body");
  const ir::ValueId in0 = body->add_input("in0", f32({8}));
  const ir::ValueId in1 = body->add_input("in1", f32({8}));
  const ir::NodeId sum = add(*body, "add", "sum", {in0, in1}, f32({8}));
  const ir::NodeId act = add(*body, "sigmoid", "act", {body->node(sum).outputs[0]}, f32({8}));
  body->add_output(body->node(act).outputs[0]);
  ir::AttrMap attrs{{"body", std::shared_ptr<const ir::Graph>(body)}};
  const ir::NodeId f =
      add(g, "fused_elementwise_internal", "fused_act", {a, b}, f32({8}), std::move(attrs));
  g.add_output(g.node(f).outputs[0]);

  const DrawnGraph d = build_drawing(s, "m.onnx", {"cpu"});
  ASSERT_EQ(d.clusters.size(), 1U);
  ASSERT_EQ(d.nodes.size(), 5U);  // a, b, add, sigmoid, output
  const std::string n_sum = "n" + std::to_string(f) + "_b" + std::to_string(sum);
  const std::string n_act = "n" + std::to_string(f) + "_b" + std::to_string(act);
  ASSERT_TRUE(find_node(d, n_sum) && find_node(d, n_act));
  EXPECT_EQ(find_node(d, n_sum)->lines, std::vector<std::string>{"add"});
  EXPECT_EQ(find_node(d, n_act)->cluster, 0);
  EXPECT_TRUE(has_edge(d, "input0", n_sum, "f32[8]"));
  EXPECT_TRUE(has_edge(d, "input1", n_sum, "f32[8]"));
  EXPECT_TRUE(has_edge(d, n_sum, n_act, "f32[8]"));
  EXPECT_TRUE(has_edge(d, n_act, "output0", "f32[8]"));
  EXPECT_EQ(d.fallbacks, 0U);
  ASSERT_EQ(d.legend.size(), 1U);
  EXPECT_EQ(d.legend[0].first, "not placed yet");
  EXPECT_EQ(find_node(d, n_sum)->fill, d.legend[0].second);
}

TEST(VizGraph, StagesAndFormats) {
  const std::vector<std::string> stages = stage_names();
  ASSERT_EQ(stages.size(), 11U);  // import, the 9 passes of the standard pipeline, final
  EXPECT_EQ(stages.front(), "import");
  EXPECT_EQ(stages[2], "constant-folding");
  EXPECT_EQ(stages.back(), "final");

  ir::Graph g;
  const ir::ValueId x = g.add_input("x", f32({3}));
  add(g, "relu", "r", {x}, f32({3}));
  g.add_output(g.node(0).outputs[0]);
  Result<StagedGraph> bad = run_to_stage(g, "fusion", {"cpu"});
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("unknown stage 'fusion'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("operator-fusion"), std::string::npos);
  Result<StagedGraph> imported = run_to_stage(g, "import", {"cpu"});
  ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
  EXPECT_FALSE(imported->placed);
  EXPECT_EQ(imported->node_counts.size(), 1U);
  Result<StagedGraph> lowered = run_to_stage(g, "backend-lowering", {"cpu"});
  ASSERT_TRUE(lowered.is_ok()) << lowered.status().to_string();
  EXPECT_TRUE(lowered->placed);
  EXPECT_EQ(lowered->placements.size(), 1U);
  EXPECT_EQ(lowered->node_counts.back().first, "backend-lowering");

  EXPECT_EQ(*format_for("a/b.SVG"), Format::kSvg);
  EXPECT_EQ(*format_for("g.png"), Format::kPng);
  EXPECT_EQ(*format_for("g.dot"), Format::kDot);
  Result<Format> jpg = format_for("g.jpg");
  ASSERT_FALSE(jpg.is_ok());
  EXPECT_NE(jpg.status().message().find("unknown format '.jpg'"), std::string::npos);
  EXPECT_FALSE(format_for("dir.svg/graph").is_ok());
}

}  // namespace
}  // namespace frame::cli::viz
