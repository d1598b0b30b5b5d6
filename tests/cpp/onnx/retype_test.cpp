// Re-typing a generic import (ADR 0007 stage B): a session's later input shapes re-type the
// graph imported at its first shapes instead of importing the ONNX model again. The expected
// graph at every shape is the one a full import gives (an independent path through every
// converter), compared in a canonical text form that ignores the names of internal values.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "frame/ir/text.h"
#include "frame/onnx/onnx.h"
#include "frame/ops/op_registry.h"
#include "model_builder.h"
#include "onnx/onnx_internal.h"

namespace frame::onnx {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)

// A graph input with symbolic dims named `syms` ("" for a fixed dim from `fixed`).
::onnx::ValueInfoProto symbolic_input(const std::string& name, int32_t elem,
                                      const std::vector<std::string>& syms,
                                      const std::vector<int64_t>& fixed) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  for (size_t i = 0; i < syms.size(); ++i) {
    auto* d = tt->mutable_shape()->add_dim();
    if (syms[i].empty()) {
      d->set_dim_value(fixed[i]);
    } else {
      d->set_dim_param(syms[i]);
    }
  }
  return v;
}

// x f32 [N, S, 8], ids i64 [N, S]: the shape arithmetic of a PyTorch attention export (Shape ->
// Gather -> Unsqueeze -> Concat -> Reshape), a position Range from a dim, a ConstantOfShape
// mask, an Expand to a computed shape, a Slice with computed ends, Flatten and plain math.
::onnx::ModelProto attention_like() {
  ModelBuilder m(13);
  *m.model.mutable_graph()->add_input() =
      symbolic_input("x", ::onnx::TensorProto::FLOAT, {"N", "S", ""}, {0, 0, 8});
  *m.model.mutable_graph()->add_input() =
      symbolic_input("ids", ::onnx::TensorProto::INT64, {"N", "S"}, {});
  m.output("y").output("pos").output("flat").output("masked").output("ids_out",
                                                                     ::onnx::TensorProto::INT64);
  m.init(int64_tensor("zero", {}, {0}))
      .init(int64_tensor("one", {}, {1}))
      .init(int64_tensor("axes0", {1}, {0}))
      .init(int64_tensor("two", {1}, {2}))
      .init(int64_tensor("four", {1}, {4}))
      .init(int64_tensor("shape_tail", {1}, {-1}));
  ::onnx::AttributeProto to_float = attr_i("to", ::onnx::TensorProto::FLOAT);
  m.add(node("Shape", {"x"}, {"s"}, "shape"));
  m.add(node("Gather", {"s", "zero"}, {"b"}, "gather_b", {attr_i("axis", 0)}));
  m.add(node("Gather", {"s", "one"}, {"t"}, "gather_t", {attr_i("axis", 0)}));
  m.add(node("Unsqueeze", {"b", "axes0"}, {"b1"}, "unsq_b"));
  m.add(node("Unsqueeze", {"t", "axes0"}, {"t1"}, "unsq_t"));
  m.add(node("Concat", {"b1", "t1", "two", "four"}, {"target"}, "concat", {attr_i("axis", 0)}));
  m.add(node("Reshape", {"x", "target"}, {"r"}, "reshape"));
  m.add(node("Transpose", {"r"}, {"q"}, "transpose", {attr_ints("perm", {0, 2, 1, 3})}));
  m.add(node("Transpose", {"r"}, {"k"}, "transpose_k", {attr_ints("perm", {0, 2, 3, 1})}));
  m.add(node("MatMul", {"q", "k"}, {"scores"}, "matmul"));
  m.add(node("Softmax", {"scores"}, {"p"}, "softmax", {attr_i("axis", -1)}));
  m.add(node("MatMul", {"p", "q"}, {"ctx"}, "matmul_v"));
  m.add(node("Transpose", {"ctx"}, {"ctx_t"}, "transpose_back", {attr_ints("perm", {0, 2, 1, 3})}));
  m.add(node("Concat", {"b1", "t1", "shape_tail"}, {"merge"}, "concat_merge", {attr_i("axis", 0)}));
  m.add(node("Reshape", {"ctx_t", "merge"}, {"y"}, "reshape_back"));
  // Positions 0..S-1 as floats, plus one.
  m.add(node("Range", {"zero", "t", "one"}, {"range"}, "range"));
  m.add(node("Cast", {"range"}, {"rangef"}, "cast", {to_float}));
  m.add(node("Shape", {"rangef"}, {"rs"}, "shape_range"));
  m.add(node("ConstantOfShape", {"rs"}, {"ones"}, "ones",
             {attr_t("value", float_tensor("v", {1}, {1.0f}))}));
  m.add(node("Add", {"rangef", "ones"}, {"pos"}, "add_pos"));
  // Flatten (its converter reads the input's rank), Slices whose end is S - 1, an Expand.
  m.add(node("Flatten", {"x"}, {"flat"}, "flatten", {attr_i("axis", 2)}));
  m.add(node("Sub", {"t1", "axes0"}, {"t_minus"}, "sub"));
  m.add(node("Slice", {"pos", "axes0", "t_minus", "axes0"}, {"pos_head"}, "slice_pos"));
  m.add(node("Slice", {"x", "axes0", "t_minus", "one_axis"}, {"x_head"}, "slice_x"));
  m.init(int64_tensor("one_axis", {1}, {1}));
  m.add(node("Transpose", {"x_head"}, {"x_head_t"}, "transpose_head",
             {attr_ints("perm", {0, 2, 1})}));
  m.add(node("Shape", {"x_head_t"}, {"ss"}, "shape_head"));
  m.add(node("Expand", {"pos_head", "ss"}, {"expanded"}, "expand"));
  m.add(node("Mul", {"expanded", "x_head_t"}, {"masked"}, "mul"));
  m.add(node("Add", {"ids", "ids"}, {"ids_out"}, "add_ids"));
  return m.model;
}

// x f32 [1, 3, H, W]: conv, ReLU, a Resize to twice the input's size computed from its shape.
::onnx::ModelProto conv_resize() {
  ModelBuilder m(13);
  *m.model.mutable_graph()->add_input() =
      symbolic_input("x", ::onnx::TensorProto::FLOAT, {"", "", "H", "W"}, {1, 3, 0, 0});
  m.output("y");
  std::vector<float> w(4 * 3 * 3 * 3);
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.01f * static_cast<float>(i % 7) - 0.02f;
  m.init(float_tensor("w", {4, 3, 3, 3}, w))
      .init(int64_tensor("starts", {1}, {2}))
      .init(int64_tensor("ends", {1}, {4}))
      .init(int64_tensor("twice", {1}, {2}))
      .init(int64_tensor("nc", {2}, {1, 4}));
  m.add(node("Conv", {"x", "w"}, {"c"}, "conv", {attr_ints("pads", {1, 1, 1, 1})}));
  m.add(node("Relu", {"c"}, {"a"}, "relu"));
  m.add(node("Shape", {"x"}, {"s"}, "shape"));
  m.add(node("Slice", {"s", "starts", "ends"}, {"hw"}, "slice"));
  m.add(node("Mul", {"hw", "twice"}, {"hw2"}, "mul"));
  m.add(node("Concat", {"nc", "hw2"}, {"sizes"}, "concat", {attr_i("axis", 0)}));
  m.add(node("Resize", {"a", "", "", "sizes"}, {"y"}, "resize", {attr_s("mode", "nearest")}));
  return m.model;
}

// The graph's text with every internal value and node renamed by topological position, so two
// imports compare equal when they hold the same nodes, attributes, types and constant values.
std::string canonical(ir::Graph g) {
  Result<std::vector<ir::NodeId>> order = g.topological_order();
  EXPECT_TRUE(order.is_ok()) << order.status().message();
  if (!order.is_ok()) return "";
  int values = 0;
  int nodes = 0;
  auto rename = [&](ir::ValueId v) {
    if (v == ir::kNoValue) return;
    const ir::Value& val = g.value(v);
    if (val.is_graph_input || g.is_output(v) || val.name.rfind("canon", 0) == 0) return;
    g.rename_value(v, "canon" + std::to_string(values++));
  };
  for (ir::NodeId id : *order) {
    for (ir::ValueId v : g.node(id).inputs) rename(v);
    for (ir::ValueId v : g.node(id).outputs) rename(v);
    g.node(id).name = "node" + std::to_string(nodes++);
  }
  return ir::print_text(g);
}

struct Case {
  const char* what;
  ::onnx::ModelProto model;
  std::vector<std::map<std::string, Shape>> shapes;  // the first is the generic import's
};

TEST(OnnxRetype, EveryShapeGivesTheGraphOfAFullImport) {
  std::vector<Case> cases;
  cases.push_back({"attention_like",
                   attention_like(),
                   {{{"x", {2, 5, 8}}, {"ids", {2, 5}}},
                    {{"x", {1, 1, 8}}, {"ids", {1, 1}}},
                    {{"x", {3, 17, 8}}, {"ids", {3, 17}}},
                    {{"x", {8, 64, 8}}, {"ids", {8, 64}}},
                    {{"x", {2, 5, 8}}, {"ids", {2, 5}}}}});
  cases.push_back({"conv_resize",
                   conv_resize(),
                   {{{"x", {1, 3, 16, 16}}},
                    {{"x", {1, 3, 7, 30}}},
                    {{"x", {1, 3, 1, 1}}},
                    {{"x", {1, 3, 33, 9}}}}});
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    detail::ImportMemo memo;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      LoadOptions lo;
      lo.input_shapes = c.shapes[i];
      lo.verify = false;
      Result<ir::Graph> via_memo = detail::import_model(c.model, lo, "", nullptr, &memo);
      ASSERT_TRUE(via_memo.is_ok()) << via_memo.status().message();
      lo.verify = true;
      Result<ir::Graph> full = detail::import_model(c.model, lo, "");
      ASSERT_TRUE(full.is_ok()) << full.status().message();
      EXPECT_EQ(canonical(std::move(*via_memo)), canonical(std::move(*full))) << "shape set " << i;
      // The first import converts every node and keeps the generic import; the others re-type.
      EXPECT_EQ(memo.full.load(), 1U);
      EXPECT_EQ(memo.retyped.load(), i);
    }
    ASSERT_NE(memo.generic, nullptr);
    EXPECT_GT(memo.generic->replayed, 0U);   // shape arithmetic replayed in place
    EXPECT_GT(memo.generic->shapes_of, 0U);  // Shape's constant recomputed in place
    EXPECT_LT(memo.generic->replayed + memo.generic->reconverted + memo.generic->shapes_of,
              memo.generic->records.size());
  }
}

TEST(OnnxRetype, AShapeTheModelRejectsGetsTheFullImportsError) {
  const ::onnx::ModelProto model = attention_like();
  detail::ImportMemo memo;
  LoadOptions lo;
  lo.verify = false;
  lo.input_shapes = {{"x", {2, 5, 8}}, {"ids", {2, 5}}};
  ASSERT_TRUE(detail::import_model(model, lo, "", nullptr, &memo).is_ok());
  // ids [2, 6] against x [2, 5, 8]: fine for the import (they never meet); x [2, 5, 8] with a
  // rank-2 given shape is not: both paths give the full import's error.
  lo.input_shapes = {{"x", {2, 5}}, {"ids", {2, 5}}};
  Result<ir::Graph> via_memo = detail::import_model(model, lo, "", nullptr, &memo);
  Result<ir::Graph> full = detail::import_model(model, lo, "");
  ASSERT_FALSE(full.is_ok());
  ASSERT_FALSE(via_memo.is_ok());
  EXPECT_EQ(via_memo.status().message(), full.status().message());
  EXPECT_EQ(memo.retyped.load(), 0U);
}

TEST(OnnxRetype, BoundInputValuesAreReTypedToo) {
  // A shape-determining input bound by value (ADR 0006) is a shape-derived constant: a later
  // import binding other values (and shapes) re-types, and gives a full import's graph; one
  // that binds another set of inputs imports in full.
  const ::onnx::ModelProto model = attention_like();
  auto ids = [](int64_t n, int64_t s, int64_t v) {
    return Tensor::from_vector<int64_t>({n, s},
                                        std::vector<int64_t>(static_cast<size_t>(n * s), v));
  };
  detail::ImportMemo memo;
  LoadOptions lo;
  lo.verify = false;
  lo.input_shapes = {{"x", {2, 5, 8}}};
  lo.constant_inputs = {{"ids", ids(2, 5, 1)}};
  ASSERT_TRUE(detail::import_model(model, lo, "", nullptr, &memo).is_ok());
  ASSERT_NE(memo.generic, nullptr);
  for (const auto& [n, s, v] : {std::tuple{3, 7, 2}, std::tuple{1, 1, -4}, std::tuple{2, 5, 1}}) {
    lo.input_shapes = {{"x", {n, s, 8}}};
    lo.constant_inputs = {{"ids", ids(n, s, v)}};
    lo.verify = false;
    Result<ir::Graph> via_memo = detail::import_model(model, lo, "", nullptr, &memo);
    ASSERT_TRUE(via_memo.is_ok()) << via_memo.status().message();
    lo.verify = true;
    Result<ir::Graph> full = detail::import_model(model, lo, "");
    ASSERT_TRUE(full.is_ok()) << full.status().message();
    EXPECT_EQ(canonical(std::move(*via_memo)), canonical(std::move(*full))) << n << "x" << s;
  }
  EXPECT_EQ(memo.retyped.load(), 3U);
  // ids fed as a graph input instead: another set of bound inputs, so a full import.
  lo.verify = false;
  lo.input_shapes = {{"x", {2, 5, 8}}, {"ids", {2, 5}}};
  lo.constant_inputs.clear();
  ASSERT_TRUE(detail::import_model(model, lo, "", nullptr, &memo).is_ok());
  EXPECT_EQ(memo.retyped.load(), 3U);
  EXPECT_EQ(memo.full.load(), 2U);
}

// What the interpreted tier's fusions do to a re-typed graph, on a small scale: node `name` is
// removed and an equal node appended in its place (its readers and the graph outputs rewired
// to the new outputs, typed by the op's shape function at `g`'s shapes).
void replace_with_appended(ir::Graph& g, const std::string& name) {
  const ir::NodeId id = g.find_node(name);
  ASSERT_GE(id, 0) << name;
  const ir::Node old = g.node(id);
  g.remove_node(id);
  Result<ir::NodeId> made = g.create_node(old.op, old.name + "_appended", old.inputs,
                                          static_cast<int>(old.outputs.size()), old.attrs);
  ASSERT_TRUE(made.is_ok()) << made.status().message();
  const ir::Node& n = g.node(*made);
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  ASSERT_NE(schema, nullptr);
  ops::NodeContext ctx;
  ops::fill_node_context(g, n, schema, ctx);
  Result<std::vector<ir::TensorType>> types = schema->infer(ctx);
  ASSERT_TRUE(types.is_ok()) << types.status().message();
  for (size_t k = 0; k < old.outputs.size(); ++k) {
    g.value(n.outputs[k]).type = (*types)[k];
    g.replace_all_uses(old.outputs[k], n.outputs[k]);
  }
}

// The graph a full import gives at `shapes`, with the same nodes replaced.
std::string expected_replaced(const ::onnx::ModelProto& model,
                              const std::map<std::string, Shape>& shapes,
                              const std::vector<std::string>& replaced) {
  LoadOptions lo;
  lo.input_shapes = shapes;
  lo.compact = false;
  Result<ir::Graph> full = detail::import_model(model, lo, "");
  EXPECT_TRUE(full.is_ok()) << full.status().message();
  if (!full.is_ok()) return "";
  for (const std::string& name : replaced) replace_with_appended(*full, name);
  return canonical(std::move(*full));
}

// An interpreted run's import options (no verification, no compaction) at attention_like's
// first shapes.
LoadOptions interpreted_load_options() {
  LoadOptions lo;
  lo.verify = false;
  lo.compact = false;
  lo.input_shapes = {{"x", {2, 5, 8}}, {"ids", {2, 5}}};
  return lo;
}

TEST(OnnxRetype, AGraphWithRemovedAndAppendedNodesIsReTypedInPlace) {
  // A re-typed graph whose nodes were since replaced (removed, equals appended: what the
  // interpreted tier's fusions do) is re-typed in place at the next shapes, keeping the
  // replacement: the graph a full import gives with the same replacement. "transpose_head" is
  // still read by a Shape (its type is needed although it is removed); "softmax" only by the
  // next MatMul.
  const ::onnx::ModelProto model = attention_like();
  const std::vector<std::string> replaced = {"softmax", "transpose_head"};
  detail::ImportMemo memo;
  LoadOptions lo = interpreted_load_options();
  Result<ir::Graph> g = detail::import_model(model, lo, "", nullptr, &memo);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  for (const std::string& name : replaced) replace_with_appended(*g, name);
  ir::Graph spare = std::move(*g);
  const std::vector<std::pair<int64_t, int64_t>> keys = {{3, 17}, {1, 1}, {8, 64}, {2, 5}};
  for (const auto& [n, s] : keys) {
    lo.input_shapes = {{"x", {n, s, 8}}, {"ids", {n, s}}};
    bool in_place = false;
    Result<ir::Graph> again =
        detail::import_model(model, lo, "", nullptr, &memo, &spare, true, &in_place);
    ASSERT_TRUE(again.is_ok()) << again.status().message();
    EXPECT_TRUE(in_place) << n << "x" << s;
    EXPECT_EQ(canonical(*again), expected_replaced(model, lo.input_shapes, replaced))
        << n << "x" << s;
    spare = std::move(*again);
  }
  EXPECT_EQ(memo.in_place.load(), keys.size());
  EXPECT_EQ(memo.full.load(), 1U);
}

TEST(OnnxRetype, AnAppendedNodeReadingALaterNodeStopsTheInPlacePath) {
  // x f32[N, 4] -> relu, sigmoid, abs (three outputs, in that order). An appended node reading
  // abs's output, which an earlier node (sigmoid) now reads, would be typed before abs is
  // re-typed at the new shapes: the in-place path stops and the graph is re-typed in full (the
  // template's, without the appended node: the session then fuses again).
  ModelBuilder m(13);
  m.input("x", {-1, 4}).output("u").output("v").output("w");
  m.add(node("Relu", {"x"}, {"u"}, "relu"));
  m.add(node("Sigmoid", {"x"}, {"v"}, "sigmoid"));
  m.add(node("Abs", {"x"}, {"w"}, "abs"));
  detail::ImportMemo memo;
  LoadOptions lo;
  lo.verify = false;
  lo.compact = false;
  lo.input_shapes = {{"x", {2, 4}}};
  Result<ir::Graph> g = detail::import_model(m.model, lo, "", nullptr, &memo);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const ir::NodeId abs = g->find_node("abs");
  const ir::NodeId sigmoid = g->find_node("sigmoid");
  ASSERT_GE(abs, 0);
  ASSERT_GE(sigmoid, 0);
  Result<ir::NodeId> late = g->create_node("relu", "late", {g->node(abs).outputs[0]}, 1);
  ASSERT_TRUE(late.is_ok()) << late.status().message();
  g->value(g->node(*late).outputs[0]).type = ir::TensorType{DTypeCode::kFloat32, {2, 4}};
  g->node(sigmoid).inputs[0] = g->node(*late).outputs[0];
  lo.input_shapes = {{"x", {5, 4}}};
  bool in_place = true;
  Result<ir::Graph> again =
      detail::import_model(m.model, lo, "", nullptr, &memo, &*g, true, &in_place);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  EXPECT_FALSE(in_place);
  LoadOptions full = lo;
  Result<ir::Graph> expected = detail::import_model(m.model, full, "");
  ASSERT_TRUE(expected.is_ok()) << expected.status().message();
  EXPECT_EQ(canonical(std::move(*again)), canonical(std::move(*expected)));
}

TEST(OnnxRetype, AGraphNotDerivedFromTheGenericImportIsReTypedInFull) {
  // Storage holding another graph (another model's; this model's with a node reading a new
  // constant, as a re-typing that folded a node leaves it) is overwritten: a plain re-typing,
  // not in place, still the full import's graph.
  const ::onnx::ModelProto model = attention_like();
  detail::ImportMemo memo;
  LoadOptions lo = interpreted_load_options();
  Result<ir::Graph> first = detail::import_model(model, lo, "", nullptr, &memo);
  ASSERT_TRUE(first.is_ok()) << first.status().message();
  ir::Graph rewired = *first;
  const ir::NodeId add = rewired.find_node("add_ids");
  ASSERT_GE(add, 0);
  rewired.node(add).inputs[1] =
      rewired.add_constant("stand_in", Tensor::from_vector<int64_t>({1}, {2}));
  LoadOptions other;
  other.input_shapes = {{"x", {1, 3, 6, 6}}};
  other.compact = false;
  Result<ir::Graph> foreign = detail::import_model(conv_resize(), other, "");
  ASSERT_TRUE(foreign.is_ok()) << foreign.status().message();
  for (ir::Graph* spare : {&rewired, &*foreign}) {
    lo.input_shapes = {{"x", {3, 4, 8}}, {"ids", {3, 4}}};
    bool in_place = true;
    Result<ir::Graph> g =
        detail::import_model(model, lo, "", nullptr, &memo, spare, true, &in_place);
    ASSERT_TRUE(g.is_ok()) << g.status().message();
    EXPECT_FALSE(in_place);
    EXPECT_EQ(canonical(std::move(*g)), expected_replaced(model, lo.input_shapes, {}));
  }
  EXPECT_EQ(memo.in_place.load(), 0U);
  EXPECT_EQ(memo.retyped.load(), 2U);
}

}  // namespace
}  // namespace frame::onnx
