// Text form: golden printing, print -> parse -> print round trips, structural checks after
// parsing, and parse errors with line:column.

#include "frame/ir/text.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace frame::ir {
namespace {

TensorType type(DTypeCode d, Shape s) { return TensorType{d, std::move(s)}; }

Graph parse_ok(std::string_view text) {
  Result<Graph> g = parse_text(text);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : Graph();
}

std::string parse_error(std::string_view text) {
  Result<Graph> g = parse_text(text);
  EXPECT_FALSE(g.is_ok());
  if (g.is_ok()) return "ok";
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  return g.status().message();
}

TEST(Text, GoldenSmallGraph) {
  Graph g;
  ValueId x = g.add_input("x", type(DTypeCode::kFloat32, {1, 3}));
  ValueId w = g.add_constant("w", Tensor::from_vector<float>({3}, {0.5F, -1.0F, 2.0F}));
  NodeId a = *g.create_node("add", "add_0", {x, w}, 1, {{"alpha", 1.0}}, {"y"});
  g.value(g.node(a).outputs[0]).type = type(DTypeCode::kFloat32, {1, 3});
  NodeId r = *g.create_node("relu", "", {g.node(a).outputs[0]}, 1);
  g.add_output(g.node(r).outputs[0]);
  EXPECT_EQ(print_text(g),
            "graph main {\n"
            "  %x = graph_input() : f32[1,3]\n"
            "  %w = const tensor<f32[3]>[0.5, -1, 2]\n"
            "  %y = add(%x, %w) {alpha = 1.0} : f32[1,3] @add_0\n"
            "  %relu_0:0 = relu(%y) @relu_0\n"
            "  graph_output(%relu_0:0)\n"
            "}\n");
  PrintOptions no_data;
  no_data.constant_data = false;
  EXPECT_NE(print_text(g, no_data).find("%w = const tensor<f32[3]> <3 elements>"),
            std::string::npos);
}

TEST(Text, PrintsInTopologicalOrder) {
  Graph g;
  ValueId x = g.add_input("x", type(DTypeCode::kFloat32, {1}));
  NodeId late = *g.create_node("neg", "late", {kNoValue}, 1);
  NodeId early = *g.create_node("relu", "early", {x}, 1);
  g.node(late).inputs[0] = g.node(early).outputs[0];
  g.add_output(g.node(late).outputs[0]);
  EXPECT_EQ(print_text(g),
            "graph main {\n"
            "  %x = graph_input() : f32[1]\n"
            "  %early:0 = relu(%x) @early\n"
            "  %late:0 = neg(%early:0) @late\n"
            "  graph_output(%late:0)\n"
            "}\n");
}

// Every attr kind, a nested graph, an absent input, several dtypes, odd names and floats.
constexpr std::string_view kRich = R"(# a comment line
graph "my graph" {
  %x = graph_input() : f32[1,3]
  %"odd name, with \"quotes\"" = graph_input() : i64[]
  %untyped = graph_input()
  %b = const tensor<bool[2]>[true, false]
  %h = const tensor<f16[3]>[1, -0.5, inf]
  %bf = const tensor<bf16[2]>[0.125, -nan] : ?
  %d = const tensor<f64[2]>[0.1, 1e+300]
  %i8 = const tensor<i8[2]>[-128, 127]
  %u = const tensor<u8[0]>[]
  %y, %z = split(%x, _, %"odd name, with \"quotes\"") {alpha = 0.1, axis = -1, body = graph sub {
    %a = graph_input() : f32[1]
    %c = neg(%a) : f32[1] @neg_in_body
    graph_output(%c)
  }, e = ints[], f = floats[], fs = [1.5, -inf, nan, 3.0], is = [1, -2, 9223372036854775807], mode = "a b\n\t\\", s = strings[], ss = ["p", "", "q\x01"], t = tensor<i32[2,2]>[1, 2, 3, -4], "weird key" = 7} : f32[1,1], ? @"split/0"
  sink(%z) @sink_0
  %n = noop() @noop
  graph_output(%y, %z, %b)
}
)";

TEST(Text, RoundTripIsStable) {
  Graph g = parse_ok(kRich);
  const std::string once = print_text(g);
  Graph g2 = parse_ok(once);
  EXPECT_EQ(print_text(g2), once);
  // The canonical text re-parses to itself; the hand-written input differs only in layout.
  EXPECT_NE(once.find("%\"odd name, with \\\"quotes\\\"\" = graph_input() : i64[]"),
            std::string::npos);
}

TEST(Text, ParsedStructure) {
  Graph g = parse_ok(kRich);
  EXPECT_EQ(g.name(), "my graph");
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.value(g.inputs()[1]).name, "odd name, with \"quotes\"");
  EXPECT_EQ(*g.value(g.inputs()[1]).type, type(DTypeCode::kInt64, {}));
  EXPECT_FALSE(g.value(g.inputs()[2]).type.has_value());

  const Value& h = g.value(g.find_value("h"));
  ASSERT_TRUE(h.is_constant());
  EXPECT_EQ(h.constant->dtype(), DTypeCode::kFloat16);
  EXPECT_EQ(h.constant->data<Half>()[0].bits, 0x3c00);  // 1.0
  EXPECT_EQ(h.constant->data<Half>()[1].bits, 0xb800);  // -0.5
  EXPECT_EQ(h.constant->data<Half>()[2].bits, 0x7c00);  // +inf
  const Value& bf = g.value(g.find_value("bf"));
  EXPECT_FALSE(bf.type.has_value());                         // ": ?" overrides the tensor's type
  EXPECT_EQ(bf.constant->data<BFloat16>()[0].bits, 0x3e00);  // 0.125
  EXPECT_TRUE(std::isnan(static_cast<float>(bf.constant->data<BFloat16>()[1])));
  const Value& d = g.value(g.find_value("d"));
  EXPECT_EQ(d.constant->data<double>()[0], 0.1);
  EXPECT_EQ(d.constant->data<double>()[1], 1e300);
  EXPECT_EQ(*d.type, type(DTypeCode::kFloat64, {2}));
  const Value& i8 = g.value(g.find_value("i8"));
  EXPECT_EQ(i8.constant->data<int8_t>()[0], -128);
  EXPECT_EQ(i8.constant->data<int8_t>()[1], 127);
  EXPECT_EQ(g.value(g.find_value("u")).constant->numel(), 0);
  EXPECT_TRUE(g.value(g.find_value("b")).constant->data<bool>()[0]);

  const NodeId split = g.find_node("split/0");
  ASSERT_GE(split, 0);
  const Node& n = g.node(split);
  EXPECT_EQ(n.op, "split");
  ASSERT_EQ(n.inputs.size(), 3u);
  EXPECT_EQ(n.inputs[0], g.find_value("x"));
  EXPECT_EQ(n.inputs[1], kNoValue);
  EXPECT_EQ(n.inputs[2], g.inputs()[1]);
  ASSERT_EQ(n.outputs.size(), 2u);
  EXPECT_EQ(g.value(n.outputs[0]).name, "y");
  EXPECT_EQ(*g.value(n.outputs[0]).type, type(DTypeCode::kFloat32, {1, 1}));
  EXPECT_FALSE(g.value(n.outputs[1]).type.has_value());

  EXPECT_EQ(std::get<double>(n.attrs.at("alpha")), 0.1);
  EXPECT_EQ(std::get<int64_t>(n.attrs.at("axis")), -1);
  EXPECT_EQ(std::get<int64_t>(n.attrs.at("weird key")), 7);
  EXPECT_TRUE(std::get<std::vector<int64_t>>(n.attrs.at("e")).empty());
  EXPECT_TRUE(std::get<std::vector<double>>(n.attrs.at("f")).empty());
  EXPECT_TRUE(std::get<std::vector<std::string>>(n.attrs.at("s")).empty());
  const auto& fs = std::get<std::vector<double>>(n.attrs.at("fs"));
  ASSERT_EQ(fs.size(), 4u);
  EXPECT_EQ(fs[0], 1.5);
  EXPECT_EQ(fs[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(fs[2]));
  EXPECT_EQ(fs[3], 3.0);
  EXPECT_EQ(std::get<std::vector<int64_t>>(n.attrs.at("is")),
            (std::vector<int64_t>{1, -2, std::numeric_limits<int64_t>::max()}));
  EXPECT_EQ(std::get<std::string>(n.attrs.at("mode")), "a b\n\t\\");
  EXPECT_EQ(std::get<std::vector<std::string>>(n.attrs.at("ss")),
            (std::vector<std::string>{"p", "", "q\x01"}));
  const Tensor& t = std::get<Tensor>(n.attrs.at("t"));
  EXPECT_EQ(t.dtype(), DTypeCode::kInt32);
  EXPECT_EQ(t.shape(), (Shape{2, 2}));
  EXPECT_EQ(t.data<int32_t>()[3], -4);
  const auto& body = std::get<std::shared_ptr<const Graph>>(n.attrs.at("body"));
  ASSERT_TRUE(body);
  EXPECT_EQ(body->name(), "sub");
  EXPECT_EQ(body->num_nodes(), 1u);
  EXPECT_EQ(body->node(0).name, "neg_in_body");
  EXPECT_EQ(body->outputs().size(), 1u);

  const NodeId sink = g.find_node("sink_0");
  ASSERT_GE(sink, 0);
  EXPECT_TRUE(g.node(sink).outputs.empty());
  EXPECT_EQ(g.node(g.find_node("noop")).inputs.size(), 0u);
  ASSERT_EQ(g.outputs().size(), 3u);
  EXPECT_EQ(g.value(g.outputs()[2]).name, "b");
}

TEST(Text, AttrsPrintSortedAndFloatsMarked) {
  Graph g = parse_ok(R"(graph g {
    %x = graph_input() : f32[1]
    %y = op(%x) {zeta = 2.0, alpha = 1e20, beta = [2.0, 0.25]} @n
    graph_output(%y)
  })");
  EXPECT_NE(print_text(g).find("{alpha = 1e+20, beta = [2.0, 0.25], zeta = 2.0}"),
            std::string::npos)
      << print_text(g);
  EXPECT_EQ(attr_type_of(g.node(0).attrs.at("zeta")), AttrType::kFloat);
}

TEST(Text, FloatConstantsRoundTripBitExactly) {
  const std::vector<float> fvals = {0.1F,   1.0F / 3.0F, 3.4028235e38F,
                                    1e-45F, -0.0F,       std::numeric_limits<float>::infinity()};
  const std::vector<double> dvals = {0.1, 1.0 / 3.0, 5e-324, -2.5e-300};
  Graph g;
  g.add_constant("f", Tensor::from_vector<float>({6}, fvals));
  g.add_constant("d", Tensor::from_vector<double>({4}, dvals));
  Graph g2 = parse_ok(print_text(g));
  EXPECT_TRUE(g2.value(g2.find_value("f")).constant->bitwise_equal(*g.value(0).constant));
  EXPECT_TRUE(g2.value(g2.find_value("d")).constant->bitwise_equal(*g.value(1).constant));
}

TEST(Text, ForwardReferencesAllowCycles) {
  Graph g = parse_ok(R"(graph c {
    %a = relu(%b) : f32[1] @ra
    %b = neg(%a) : f32[1] @nb
    graph_output(%b)
  })");
  Status st = g.verify(nullptr);
  EXPECT_EQ(st.message(),
            "V1: graph 'c' is cyclic: node 'ra' (relu) is on the cycle ra -> nb -> ra");
}

TEST(Text, MissingNodeNameIsGenerated) {
  Graph g = parse_ok("graph g { %x = graph_input() : f32[1]\n %y = relu(%x)\n graph_output(%y) }");
  EXPECT_EQ(g.node(0).name, "relu_0");
  EXPECT_TRUE(g.verify(nullptr).message().find("V2") == 0);
}

TEST(TextErrors, LineAndColumn) {
  EXPECT_EQ(parse_error("graph g {\n  %x = graph_input() : f32[1]\n  %y = relu(%x,, )\n}"),
            "line 3:16: expected an input like '%x' or '_' for an absent optional input but found "
            "','");
  EXPECT_EQ(parse_error("graph g {\n  %y = relu(%nope)\n  graph_output(%y)\n}"),
            "line 2:13: undefined value '%nope' in graph 'g'");
  EXPECT_EQ(parse_error("graph g {\n  %y = Relu()\n}"),
            "line 2:8: node '<unnamed>': invalid op name 'Relu' (op names must match "
            "^[a-z][a-z0-9_]*$)");
  EXPECT_EQ(
      parse_error("graph g {\n  %x = graph_input() : f32[1]\n  %x = graph_input() : f32[1]\n}"),
      "line 3:3: duplicate value name '%x'");
  EXPECT_EQ(parse_error("graph g {\n  %w = const tensor<f32[3]>[1, 2]\n}"),
            "line 2:28: tensor<f32[3]> needs 3 elements, got 2");
  EXPECT_EQ(parse_error("graph g {\n  %w = const tensor<u8[1]>[300]\n}"),
            "line 2:28: 300 is out of range for u8");
  EXPECT_EQ(parse_error("graph g {\n  %x = graph_input() : q7[1]\n}"),
            "line 2:24: expected a dtype (f32, f64, f16, bf16, i8, i16, i32, i64, u8, bool) but "
            "found 'q7'");
  EXPECT_EQ(parse_error("graph g {\n  %y = f() {a = []}\n}"),
            "line 2:17: an empty list needs its type: ints[], floats[] or strings[]");
  EXPECT_EQ(parse_error("graph g {\n  %y = f() {a = 1, a = 2}\n}"),
            "line 2:20: duplicate attribute 'a'");
  EXPECT_EQ(parse_error("graph g {\n  %y = f() {a = \"open\n}"), "line 2:17: unterminated string");
  EXPECT_EQ(parse_error("graph g {\n  %x = graph_input() : f32[1]\n"),
            "line 3:1: expected '}' closing graph 'g' but found end of input");
  EXPECT_EQ(parse_error("graph g { graph_output() } extra"),
            "line 1:28: expected end of input after the graph but found 'extra'");
  EXPECT_EQ(parse_error("graph g { %y = f() {a = 99999999999999999999} }"),
            "line 1:25: integer out of int64 range but found '99999999999999999999'");
  EXPECT_EQ(parse_error("graph g { %y = f() : f32[1], f32[2] }"),
            "line 1:28: node has 1 outputs, more types given but found ','");
}

TEST(TextErrors, ElidedConstantDataIsRejected) {
  Graph g;
  g.add_constant("w", Tensor::from_vector<float>({2}, {1.0F, 2.0F}));
  PrintOptions o;
  o.constant_data = false;
  const std::string msg = parse_error(print_text(g, o));
  EXPECT_NE(msg.find("line 2:"), std::string::npos) << msg;
}

TEST(TextErrors, DeepNestingIsRejectedNotCrashing) {
  std::string text;
  for (int i = 0; i < 200; ++i) text += "graph g { %y = f() {b = ";
  const std::string msg = parse_error(text);
  EXPECT_NE(msg.find("nested too deeply"), std::string::npos) << msg;
}

TEST(TextErrors, EveryPrefixAndByteFlipFailsCleanly) {
  // Truncations and single-byte corruptions must give a Status, never a crash. Strided so the
  // Debug build stays fast.
  const std::string text(kRich);
  for (size_t n = 0; n < text.size(); n += 5) (void)parse_text(text.substr(0, n));
  for (size_t i = 0; i < text.size(); i += 9) {
    for (char c : {'\0', '"', '%', '{', '-'}) {
      std::string m = text;
      m[i] = c;
      (void)parse_text(m);
    }
  }
}

}  // namespace
}  // namespace frame::ir

namespace frame::ir {
namespace {

// Tensor refs (PrintOptions::tensor_ref, ParseOptions::resolve_tensor): tensors print as
// `ref "ID"`, parse back through the resolver bit for bit (NaN payload included, which the
// element form does not keep), in nested graphs too; a ref without a resolver, an unknown ID
// and a tensor of another type are errors naming the ref.
TEST(TextRefs, TensorsRoundTripThroughTheResolver) {
  Graph body("body");
  ValueId bx = body.add_input("bx", type(DTypeCode::kFloat32, {2}));
  ValueId bw = body.add_constant("bw", Tensor::from_vector<float>({2}, {5.0f, -1.0f}));
  Result<NodeId> bn = body.create_node("add", "badd", {bx, bw}, 1);
  ASSERT_TRUE(bn.is_ok());
  body.add_output(body.node(*bn).outputs[0]);

  Graph g("refs");
  ValueId x = g.add_input("x", type(DTypeCode::kFloat32, {2}));
  uint32_t nan_bits = 0x7fc01234u;  // a NaN with a payload
  float nan;
  std::memcpy(&nan, &nan_bits, 4);
  ValueId w = g.add_constant("w", Tensor::from_vector<float>({2}, {nan, 3.5f}));
  AttrMap attrs;
  attrs["body"] = std::shared_ptr<const Graph>(std::make_shared<Graph>(body));
  Result<NodeId> n = g.create_node("add", "add", {x, w}, 1);
  ASSERT_TRUE(n.is_ok());
  Result<NodeId> m = g.create_node("identity", "id", {g.node(*n).outputs[0]}, 1, attrs);
  ASSERT_TRUE(m.is_ok());
  g.add_output(g.node(*m).outputs[0]);

  std::vector<Tensor> stored;
  PrintOptions po;
  po.tensor_ref = [&](const Tensor& t) {
    stored.push_back(t);
    return "t" + std::to_string(stored.size() - 1);
  };
  const std::string text = print_text(g, po);
  EXPECT_NE(text.find("tensor<f32[2]> ref \"t0\""), std::string::npos) << text;
  EXPECT_EQ(text.find("3.5"), std::string::npos) << "elements printed: " << text;
  ASSERT_EQ(stored.size(), 2u);  // w, and bw inside the body

  ParseOptions ro;
  ro.resolve_tensor = [&](std::string_view id, const TensorType&) -> Result<Tensor> {
    const size_t k = std::stoul(std::string(id.substr(1)));
    if (id[0] != 't' || k >= stored.size()) return not_found("no tensor {}", id);
    return stored[k].clone();
  };
  Result<Graph> back = parse_text(text, ro);
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  const Tensor& w2 = *back->value(back->find_value("w")).constant;
  uint32_t bits = 0;
  std::memcpy(&bits, w2.raw_data(), 4);
  EXPECT_EQ(bits, nan_bits);
  EXPECT_EQ(w2.data<float>()[1], 3.5f);
  // Printed again with elements, both graphs read the same (the body's constant included).
  EXPECT_EQ(print_text(*back, po).size(), text.size());
  PrintOptions plain;
  plain.constant_data = false;
  EXPECT_EQ(print_text(*back, plain), print_text(g, plain));

  Result<Graph> no_resolver = parse_text(text);
  ASSERT_FALSE(no_resolver.is_ok());
  EXPECT_NE(no_resolver.status().message().find("needs a resolver"), std::string::npos);

  ParseOptions wrong;
  wrong.resolve_tensor = [](std::string_view, const TensorType&) -> Result<Tensor> {
    return Tensor::from_vector<float>({3}, {1, 2, 3});
  };
  Result<Graph> mismatch = parse_text(text, wrong);
  ASSERT_FALSE(mismatch.is_ok());
  EXPECT_NE(mismatch.status().message().find("resolved to f32[3], declared f32[2]"),
            std::string::npos)
      << mismatch.status().message();

  ParseOptions missing;
  missing.resolve_tensor = [](std::string_view id, const TensorType&) -> Result<Tensor> {
    return not_found("no tensor {}", id);
  };
  Result<Graph> unknown = parse_text(text, missing);
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.status().message().find("no tensor t"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("line "), std::string::npos)
      << unknown.status().message();
}

}  // namespace
}  // namespace frame::ir
