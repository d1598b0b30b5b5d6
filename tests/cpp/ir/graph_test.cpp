// Graph construction, naming, topological order and mutation (replace/remove/compact).

#include "frame/ir/graph.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "common/graph_builder.h"

namespace frame::ir {
namespace {

using test::f32;

NodeId must(Result<NodeId> r) {
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? *r : -1;
}

TEST(OpNameCharset, AcceptsLowerSnakeCase) {
  EXPECT_TRUE(matches_op_name_charset("add"));
  EXPECT_TRUE(matches_op_name_charset("conv2d"));
  EXPECT_TRUE(matches_op_name_charset("batch_norm_"));
  EXPECT_TRUE(matches_op_name_charset("a"));
}

TEST(OpNameCharset, RejectsEverythingElse) {
  EXPECT_FALSE(matches_op_name_charset(""));
  EXPECT_FALSE(matches_op_name_charset("Add"));
  EXPECT_FALSE(matches_op_name_charset("_add"));
  EXPECT_FALSE(matches_op_name_charset("2add"));
  EXPECT_FALSE(matches_op_name_charset("add-1"));
  EXPECT_FALSE(matches_op_name_charset("add.v2"));
  EXPECT_FALSE(matches_op_name_charset("add "));
  EXPECT_FALSE(matches_op_name_charset("mAtmul"));
}

TEST(CreateNode, RejectsIllegalOpNameNamingTheOp) {
  Graph g;
  Result<NodeId> r = g.create_node("MatMul", "mm", {}, 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "node 'mm': invalid op name 'MatMul' (op names must match ^[a-z][a-z0-9_]*$)");
  EXPECT_EQ(g.num_node_slots(), 0u);
  EXPECT_EQ(g.num_values(), 0u);
}

TEST(CreateNode, RejectsReservedNames) {
  Graph g;
  for (std::string_view op : {kGraphInputOp, kGraphOutputMarker}) {
    Result<NodeId> r = g.create_node(op, "", {}, 1);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(std::string(op)), std::string::npos);
    EXPECT_NE(r.status().message().find("reserved"), std::string::npos);
  }
}

TEST(CreateNode, RejectsOutOfRangeInput) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  Result<NodeId> r = g.create_node("add", "a", {x, 5}, 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "node 'a' (add): input 1 has invalid value id 5 (graph has 1 values)");
}

TEST(CreateNode, GeneratesNamesAndOutputNames) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  NodeId a = must(g.create_node("relu", "", {x}, 1));
  NodeId b = must(g.create_node("relu", "", {x}, 2));
  EXPECT_EQ(g.node(a).name, "relu_0");
  EXPECT_EQ(g.node(b).name, "relu_1");
  EXPECT_EQ(g.value(g.node(a).outputs[0]).name, "relu_0:0");
  EXPECT_EQ(g.value(g.node(b).outputs[1]).name, "relu_1:1");
  EXPECT_EQ(g.value(g.node(b).outputs[1]).producer, b);
  EXPECT_EQ(g.value(g.node(b).outputs[1]).producer_output, 1);
  EXPECT_EQ(g.find_node("relu_1"), b);
  EXPECT_EQ(g.find_value("relu_1:1"), g.node(b).outputs[1]);
}

TEST(CreateNode, UsesGivenOutputNames) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  NodeId n = must(g.create_node("split", "s", {x}, 2, {{"axis", int64_t{0}}}, {"lo", "hi"}));
  EXPECT_EQ(g.value(g.node(n).outputs[0]).name, "lo");
  EXPECT_EQ(g.value(g.node(n).outputs[1]).name, "hi");
  EXPECT_EQ(std::get<int64_t>(g.node(n).attrs.at("axis")), 0);
}

TEST(CreateNode, RejectsDuplicateNodeName) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  must(g.create_node("relu", "r", {x}, 1));
  Result<NodeId> r = g.create_node("neg", "r", {x}, 1);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(), "node 'r' (neg): duplicate node name");
}

TEST(CreateNode, RejectsDuplicateValueName) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  Result<NodeId> r = g.create_node("relu", "r", {x}, 1, {}, {"x"});
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "node 'r' (relu): output 0 name 'x' is already used by another value");
  Result<NodeId> r2 = g.create_node("split", "s", {x}, 2, {}, {"y", "y"});
  ASSERT_FALSE(r2.is_ok());
  EXPECT_EQ(g.num_node_slots(), 0u);
}

TEST(CreateNode, GeneratedOutputNameAvoidsClash) {
  Graph g;
  ValueId x = g.add_input("r:0", f32({2}));
  NodeId n = must(g.create_node("relu", "r", {x}, 1));
  EXPECT_NE(g.value(g.node(n).outputs[0]).name, "r:0");
  EXPECT_EQ(g.find_value("r:0"), x);
}

TEST(Graph, UniqueNames) {
  Graph g;
  g.add_input("x", f32({1}));
  EXPECT_EQ(g.unique_value_name("y"), "y");
  std::string n = g.unique_value_name("x");
  EXPECT_NE(n, "x");
  EXPECT_EQ(n.rfind("x_", 0), 0u);
  EXPECT_EQ(g.find_value(n), kNoValue);
  std::string a = g.unique_node_name("add");
  EXPECT_EQ(g.find_node(a), -1);
}

TEST(TopologicalOrder, StableForInsertionOrderedGraph) {
  Graph g;
  ValueId x = g.add_input("x", f32({1}));
  NodeId a = must(g.create_node("relu", "a", {x}, 1));
  NodeId b = must(g.create_node("neg", "b", {x}, 1));
  NodeId c = must(g.create_node("add", "c", {g.node(a).outputs[0], g.node(b).outputs[0]}, 1));
  Result<std::vector<NodeId>> order = g.topological_order();
  ASSERT_TRUE(order.is_ok());
  EXPECT_EQ(*order, (std::vector<NodeId>{a, b, c}));
}

TEST(TopologicalOrder, ReordersAndKeepsTiesInInsertionOrder) {
  Graph g;
  ValueId x = g.add_input("x", f32({1}));
  // c consumes a value produced later; d and e are independent ties.
  NodeId c = must(g.create_node("neg", "c", {kNoValue}, 1));
  NodeId d = must(g.create_node("relu", "d", {x}, 1));
  NodeId a = must(g.create_node("relu", "a", {x}, 1));
  NodeId e = must(g.create_node("relu", "e", {x}, 1));
  g.node(c).inputs[0] = g.node(a).outputs[0];
  Result<std::vector<NodeId>> order = g.topological_order();
  ASSERT_TRUE(order.is_ok());
  // Ready at start: d, a, e (c waits for a). Smallest id first: d, a; then c (id 0) is ready.
  EXPECT_EQ(*order, (std::vector<NodeId>{d, a, c, e}));
}

TEST(TopologicalOrder, ReportsNodeOnCycle) {
  Graph g;
  ValueId x = g.add_input("x", f32({1}));
  NodeId a = must(g.create_node("add", "a", {x, kNoValue}, 1));
  NodeId b = must(g.create_node("relu", "b", {g.node(a).outputs[0]}, 1));
  NodeId c = must(g.create_node("neg", "c", {g.node(b).outputs[0]}, 1));
  must(g.create_node("exp", "tail", {g.node(c).outputs[0]}, 1));
  g.node(a).inputs[1] = g.node(c).outputs[0];
  Result<std::vector<NodeId>> order = g.topological_order();
  ASSERT_FALSE(order.is_ok());
  EXPECT_EQ(order.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(order.status().message(),
            "graph 'main' is cyclic: node 'a' (add) is on the cycle a -> b -> c -> a");
}

TEST(TopologicalOrder, SelfLoop) {
  Graph g;
  NodeId a = must(g.create_node("relu", "a", {kNoValue}, 1));
  g.node(a).inputs[0] = g.node(a).outputs[0];
  Result<std::vector<NodeId>> order = g.topological_order();
  ASSERT_FALSE(order.is_ok());
  EXPECT_EQ(order.status().message(),
            "graph 'main' is cyclic: node 'a' (relu) is on the cycle a -> a");
}

TEST(Graph, UseListsCountRepeatedUses) {
  Graph g;
  ValueId x = g.add_input("x", f32({1}));
  NodeId m = must(g.create_node("mul", "m", {x, x}, 1));
  NodeId r = must(g.create_node("relu", "r", {g.node(m).outputs[0]}, 1));
  auto uses = g.use_lists();
  ASSERT_EQ(uses.size(), g.num_values());
  EXPECT_EQ(uses[static_cast<size_t>(x)], (std::vector<NodeId>{m, m}));
  EXPECT_EQ(uses[static_cast<size_t>(g.node(m).outputs[0])], (std::vector<NodeId>{r}));
  EXPECT_TRUE(uses[static_cast<size_t>(g.node(r).outputs[0])].empty());
}

TEST(Graph, ReplaceRemoveCompact) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  ValueId unused = g.add_constant("unused", Tensor::from_vector<float>({1}, {3.0F}));
  ValueId w = g.add_constant("w", Tensor::from_vector<float>({2}, {1.0F, 2.0F}));
  NodeId a = must(g.create_node("relu", "a", {x}, 1));
  NodeId b = must(g.create_node("relu", "b", {x}, 1));  // duplicate of a, to be removed
  NodeId c = must(g.create_node("add", "c", {g.node(b).outputs[0], w}, 1));
  g.add_output(g.node(b).outputs[0]);
  g.add_output(g.node(c).outputs[0]);
  for (NodeId n : {a, b, c}) g.value(g.node(n).outputs[0]).type = f32({2});

  const ValueId b_out = g.node(b).outputs[0];
  g.replace_all_uses(b_out, g.node(a).outputs[0]);
  EXPECT_EQ(g.node(c).inputs[0], g.node(a).outputs[0]);
  EXPECT_EQ(g.outputs()[0], g.node(a).outputs[0]);
  EXPECT_TRUE(g.is_output(g.node(a).outputs[0]));
  EXPECT_FALSE(g.is_output(b_out));

  g.remove_node(b);
  EXPECT_TRUE(g.node(b).dead);
  EXPECT_EQ(g.num_nodes(), 2u);
  EXPECT_EQ(g.node_ids(), (std::vector<NodeId>{a, c}));
  EXPECT_EQ(g.find_node("b"), -1);
  EXPECT_EQ(g.find_value("b:0"), kNoValue);
  EXPECT_TRUE(g.verify(nullptr).is_ok()) << g.verify(nullptr).to_string();

  g.compact();
  // Kept: x, w, a:0, c:0. Dropped: the unused constant and b's dangling output.
  ASSERT_EQ(g.num_values(), 4u);
  ASSERT_EQ(g.num_node_slots(), 2u);
  (void)unused;
  EXPECT_EQ(g.value(0).name, "x");
  EXPECT_EQ(g.value(1).name, "w");
  EXPECT_EQ(g.value(2).name, "a:0");
  EXPECT_EQ(g.value(3).name, "c:0");
  EXPECT_EQ(g.node(0).name, "a");
  EXPECT_EQ(g.node(1).name, "c");
  EXPECT_EQ(g.node(1).id, 1);
  EXPECT_EQ(g.node(1).inputs, (std::vector<ValueId>{2, 1}));
  EXPECT_EQ(g.value(3).producer, 1);
  EXPECT_EQ(g.inputs(), (std::vector<ValueId>{0}));
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{2, 3}));
  EXPECT_EQ(g.find_value("c:0"), 3);
  EXPECT_EQ(g.find_node("c"), 1);
  EXPECT_TRUE(g.verify(nullptr).is_ok()) << g.verify(nullptr).to_string();
}

TEST(Graph, RemovedNodeNamesCanBeReused) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  NodeId a = must(g.create_node("relu", "a", {x}, 1, {}, {"y"}));
  g.remove_node(a);
  NodeId a2 = must(g.create_node("neg", "a", {x}, 1, {}, {"y"}));
  EXPECT_EQ(g.find_node("a"), a2);
  EXPECT_EQ(g.find_value("y"), g.node(a2).outputs[0]);
}

TEST(Graph, CompactKeepsUnusedGraphInputsAndLiveOutputs) {
  Graph g;
  ValueId x = g.add_input("x", f32({2}));
  g.add_input("unused_input", f32({2}));
  must(g.create_node("split", "s", {x}, 2));
  g.add_output(g.find_value("s:0"));
  g.compact();
  EXPECT_EQ(g.num_values(), 4u);  // both inputs and both split outputs
  EXPECT_EQ(g.inputs().size(), 2u);
}

// The name indexes against a plain map over thousands of names: values added, renamed (the old
// name then free for another), nodes removed and names taken again, through growth of the
// index and in a copy of the graph (the interpreted tier copies graphs per shape).
TEST(Graph, NameIndexesMatchAMapThroughRenamesRemovalsAndCopies) {
  Graph g;
  std::map<std::string, ValueId> values;
  std::map<std::string, NodeId> nodes;
  const ValueId x = g.add_input("x", f32({2}));
  values["x"] = x;
  for (int i = 0; i < 3000; ++i) {
    const std::string n = "n" + std::to_string(i), v = "v" + std::to_string(i);
    const NodeId id = must(g.create_node("relu", n, {x}, 1, {}, {v}));
    nodes[n] = id;
    values[v] = g.node(id).outputs[0];
    // Renamed, the value 30 back (later entries of the index may sit beyond its entry in a
    // probe sequence): "v<i - 30>" is free again, "r<i - 30>" names the value.
    const std::string back = "v" + std::to_string(i - 30);
    if (i % 3 == 1 && values.count(back) != 0) {
      const std::string r = "r" + std::to_string(i - 30);
      g.rename_value(values[back], r);
      values[r] = values[back];
      values.erase(back);
    }
    // Removed, the node 40 back (its index entries sit among later ones): the node's name and
    // its outputs' names are free again.
    const std::string old = "n" + std::to_string(i - 40);
    if (i % 5 == 2 && nodes.count(old) != 0) {
      const NodeId gone = nodes[old];
      for (ValueId out : g.node(gone).outputs) values.erase(g.value(out).name);
      g.remove_node(gone);
      nodes.erase(old);
    }
    if (i % 7 == 3) {  // a constant takes the name a rename or a removal freed, if any
      const std::string again = "v" + std::to_string(i - 45);
      if (values.count(again) == 0) values[again] = g.add_constant(again, Tensor::scalar(1.0F));
    }
  }
  const Graph copy = g;
  for (const Graph* h : {static_cast<const Graph*>(&g), &copy}) {
    for (const auto& [name, id] : values) ASSERT_EQ(h->find_value(name), id) << name;
    for (const auto& [name, id] : nodes) ASSERT_EQ(h->find_node(name), id) << name;
    for (int i = 0; i < 3000; ++i) {
      const std::string n = "n" + std::to_string(i), v = "v" + std::to_string(i);
      if (nodes.count(n) == 0) {
        EXPECT_EQ(h->find_node(n), -1) << n;
      }
      if (values.count(v) == 0) {
        EXPECT_EQ(h->find_value(v), kNoValue) << v;
      }
    }
    EXPECT_EQ(h->find_value("absent"), kNoValue);
  }
}

}  // namespace
}  // namespace frame::ir
