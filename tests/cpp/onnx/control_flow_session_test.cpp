// Control flow through onnx::open_session (ADR 0006 decisions 3 and 5): which inputs a session
// binds for If, Loop and Scan, loops unrolled at import for zero iterations, deep nesting, and
// the messages of malformed control-flow nodes. Expected values are computed by hand from each
// model's ONNX semantics (the comments show the arithmetic), never from frame.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "model_builder.h"

namespace frame::onnx {
namespace {

using namespace testing;  // NOLINT(google-build-using-namespace)
using runtime::TensorMap;

constexpr int32_t kF32 = ::onnx::TensorProto::FLOAT;
constexpr int32_t kI64 = ::onnx::TensorProto::INT64;
constexpr int32_t kBool = ::onnx::TensorProto::BOOL;

// A value info with an element type and no shape (body values typed by the importer).
::onnx::ValueInfoProto untyped(const std::string& name, int32_t elem) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  v.mutable_type()->mutable_tensor_type()->set_elem_type(elem);
  return v;
}

// A graph (a body, or a model graph to copy nodes from).
::onnx::GraphProto graph(const std::string& name, const std::vector<::onnx::NodeProto>& nodes,
                         const std::vector<::onnx::ValueInfoProto>& inputs,
                         const std::vector<::onnx::ValueInfoProto>& outputs,
                         const std::vector<::onnx::TensorProto>& inits = {}) {
  ::onnx::GraphProto g;
  g.set_name(name);
  for (const auto& n : nodes) *g.add_node() = n;
  for (const auto& v : inputs) *g.add_input() = v;
  for (const auto& v : outputs) *g.add_output() = v;
  for (const auto& t : inits) *g.add_initializer() = t;
  return g;
}

runtime::SessionOptions cpu_options() {
  runtime::SessionOptions o;
  o.compile.backends = {"cpu"};
  o.compile.num_threads = 1;
  return o;
}

void expect_values(const Result<TensorMap>& out, const std::string& name, const Shape& shape,
                   const std::vector<float>& want) {
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  const Tensor& t = out->at(name);
  ASSERT_EQ(t.shape(), shape) << name;
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << name;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(t.data<float>()[i], want[i]) << name << i;
}

// ---- F4: nested bodies -------------------------------------------------------------------

// Level d: o_d = If(c, then: level d-1, else: -x) + one; level 0 is Identity(x). Every level
// captures c, x and one from the top graph, so o_D = x + D when c is true.
std::string nested_if_chain(int depth) {
  ::onnx::GraphProto inner =
      graph("l0", {node("Identity", {"x"}, {"o0"})}, {}, {untyped("o0", kF32)});
  for (int d = 1; d <= depth; ++d) {
    const std::string s = std::to_string(d);
    ::onnx::GraphProto els =
        graph("e" + s, {node("Neg", {"x"}, {"n" + s})}, {}, {untyped("n" + s, kF32)});
    inner = graph("l" + s,
                  {node("If", {"c"}, {"r" + s}, "if" + s,
                        {attr_g("then_branch", inner), attr_g("else_branch", els)}),
                   node("Add", {"r" + s, "one"}, {"o" + s})},
                  {}, {untyped("o" + s, kF32)});
  }
  ModelBuilder m(17);
  m.input("c", {}, kBool).input("x", {2, 3});
  m.init(float_tensor("one", {}, {1.0f}));
  for (const auto& n : inner.node()) m.add(n);
  m.output(inner.output(0).name());
  return m.bytes();
}

TEST(ControlFlowSession, SixteenNestedIfsOpenAndRunAndSeventeenAreRefusedAtOnce) {
  // Classifying the inputs walks each body once: 16 levels that each capture three outer
  // values open at once (the walk used to repeat each body per captured value and level).
  Result<runtime::Session> s = open_session_from_bytes(nested_if_chain(16), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  const Tensor x = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  // c true: every level takes its then branch and adds 1: x + 16.
  expect_values(s->run({{"c", Tensor::scalar<bool>(true)}, {"x", x}}), "o16", {2, 3},
                {16, 17, 18, 19, 20, 21});
  // c false: the top level takes its else branch: -x + 1.
  expect_values(s->run({{"c", Tensor::scalar<bool>(false)}, {"x", x}}), "o16", {2, 3},
                {1, 0, -1, -2, -3, -4});
  // One level more is refused by the load's first walk, before any conversion or analysis.
  Result<runtime::Session> deep = open_session_from_bytes(nested_if_chain(17), cpu_options());
  expect_error(deep.status(), {"nested deeper than 16 levels"});
  expect_error(load_from_bytes(nested_if_chain(17)).status(), {"nested deeper than 16 levels"});
}

// ---- F5: If on a symbolic dim --------------------------------------------------------------

TEST(ControlFlowSession, IfWhoseBranchesAgreeOnlyForSomeSizesBindsItsCondition) {
  // y = If(c, then: x[0:1], else: -x), x: f32[N,3]. At N = 1 both branches are f32[1,3], at
  // N = 2 they differ, so c decides the output shape and the session binds it.
  ModelBuilder m(17);
  m.input("c", {}, kBool).input("x", {-1, 3}).output("y");
  m.init(int64_tensor("s0", {1}, {0})).init(int64_tensor("s1", {1}, {1}));
  m.add(node(
      "If", {"c"}, {"y"}, "if",
      {attr_g("then_branch", graph("th", {node("Slice", {"x", "s0", "s1", "s0"}, {"t"})}, {},
                                   {untyped("t", kF32)})),
       attr_g("else_branch", graph("el", {node("Neg", {"x"}, {"e"})}, {}, {untyped("e", kF32)}))}));
  Result<runtime::Session> s = open_session_from_bytes(m.bytes(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->shape_determining_inputs(), std::vector<std::string>{"c"});
  const Tensor x2 = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  const Tensor x1 = Tensor::from_vector<float>({1, 3}, {0, 1, 2});
  const Tensor yes = Tensor::scalar<bool>(true);
  const Tensor no = Tensor::scalar<bool>(false);
  expect_values(s->run({{"c", yes}, {"x", x2}}), "y", {1, 3}, {0, 1, 2});
  expect_values(s->run({{"c", no}, {"x", x2}}), "y", {2, 3}, {-0.0f, -1, -2, -3, -4, -5});
  expect_values(s->run({{"c", yes}, {"x", x1}}), "y", {1, 3}, {0, 1, 2});
  expect_values(s->run({{"c", no}, {"x", x1}}), "y", {1, 3}, {-0.0f, -1, -2});
}

// ---- F6: loops unrolled at import ----------------------------------------------------------

// ONNX test_loop11: y' = y + table[i:i+1] per iteration, scan output y' per iteration;
// trip_count and cond are graph inputs.
std::string loop11_model() {
  ::onnx::GraphProto body = graph(
      "body",
      {node("Identity", {"cond_in"}, {"cond_out"}), node("Add", {"i", "one"}, {"end"}),
       node("Unsqueeze", {"i", "zero"}, {"start1"}), node("Unsqueeze", {"end", "zero"}, {"end1"}),
       node("Slice", {"table", "start1", "end1", "zero"}, {"t"}),
       node("Add", {"y_in", "t"}, {"y_out"}), node("Identity", {"y_out"}, {"scan_out"})},
      {value_info("i", kI64, {}), value_info("cond_in", kBool, {}), untyped("y_in", kF32)},
      {value_info("cond_out", kBool, {}), untyped("y_out", kF32), untyped("scan_out", kF32)},
      {float_tensor("table", {5}, {1, 2, 3, 4, 5}), int64_tensor("one", {}, {1}),
       int64_tensor("zero", {1}, {0})});
  ModelBuilder m(13);
  m.input("trip_count", {}, kI64).input("cond", {}, kBool).input("y", {1});
  m.output("res_y").output("res_scan");
  m.add(node("Loop", {"trip_count", "cond", "y"}, {"res_y", "res_scan"}, "loop",
             {attr_g("body", body)}));
  return m.bytes();
}

TEST(ControlFlowSession, UnrolledLoopRunsZeroIterations) {
  Result<runtime::Session> s = open_session_from_bytes(loop11_model(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->shape_determining_inputs(), (std::vector<std::string>{"trip_count", "cond"}));
  const Tensor y = Tensor::from_vector<float>({1}, {-2});
  auto run = [&](int64_t m, bool c) {
    return s->run(
        {{"trip_count", Tensor::scalar<int64_t>(m)}, {"cond", Tensor::scalar<bool>(c)}, {"y", y}});
  };
  // 5 iterations: -2 + 1 = -1, + 2 = 1, + 3 = 4, + 4 = 8, + 5 = 13.
  Result<TensorMap> five = run(5, true);
  expect_values(five, "res_y", {1}, {13});
  expect_values(five, "res_scan", {5, 1}, {-1, 1, 4, 8, 13});
  // Zero iterations (M = 0, M < 0, cond false): y unchanged, an empty f32[0,1] scan output.
  for (const auto& [m, c] :
       std::vector<std::pair<int64_t, bool>>{{0, true}, {-1, true}, {5, false}}) {
    SCOPED_TRACE(::testing::Message() << "M = " << m << ", cond = " << c);
    Result<TensorMap> none = run(m, c);
    expect_values(none, "res_y", {1}, {-2});
    expect_values(none, "res_scan", {0, 1}, {});
  }
}

// v' = v + sum(w) per iteration, w = v for i < 2, else x[0:1] (an If whose branches differ in
// shape, so the body is static only for a known i and the loop is unrolled). cond, when
// `with_cond`, is a graph input.
std::string unroll_if_model(bool with_cond) {
  ::onnx::GraphProto then_b =
      graph("ith", {node("Identity", {"v_in"}, {"t"})}, {}, {untyped("t", kF32)});
  ::onnx::GraphProto else_b =
      graph("iel", {node("Slice", {"x", "s0", "s1"}, {"e"})}, {}, {untyped("e", kF32)});
  ::onnx::GraphProto body =
      graph("body",
            {node("Less", {"i", "two"}, {"lt"}),
             node("If", {"lt"}, {"w"}, "pick",
                  {attr_g("then_branch", then_b), attr_g("else_branch", else_b)}),
             node("ReduceSum", {"w"}, {"ws"}, "sum", {attr_i("keepdims", 0)}),
             node("Add", {"v_in", "ws"}, {"v_out"}), node("Identity", {"c_in"}, {"c_out"})},
            {value_info("i", kI64, {}), value_info("c_in", kBool, {}), untyped("v_in", kF32)},
            {value_info("c_out", kBool, {}), untyped("v_out", kF32)});
  ModelBuilder m(17);
  m.input("M", {}, kI64);
  if (with_cond) m.input("cond", {}, kBool);
  m.input("v0", {2, 3}).input("x", {2, 3}).output("y");
  m.init(int64_tensor("two", {}, {2})).init(int64_tensor("s0", {1}, {0}));
  m.init(int64_tensor("s1", {1}, {1}));
  m.add(node("Loop", {"M", with_cond ? "cond" : "", "v0"}, {"y"}, "loop", {attr_g("body", body)}));
  return m.bytes();
}

TEST(ControlFlowSession, UnrolledLoopWithAConditionInputBindsBoth) {
  const Tensor v0 = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  for (bool with_cond : {false, true}) {
    SCOPED_TRACE(with_cond ? "cond input" : "cond omitted");
    Result<runtime::Session> s = open_session_from_bytes(unroll_if_model(with_cond), cpu_options());
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    const std::vector<std::string> want =
        with_cond ? std::vector<std::string>{"M", "cond"} : std::vector<std::string>{"M"};
    EXPECT_EQ(s->shape_determining_inputs(), want);
    auto run = [&](int64_t m) {
      TensorMap in = {{"M", Tensor::scalar<int64_t>(m)}, {"v0", v0}, {"x", x}};
      if (with_cond) in["cond"] = Tensor::scalar<bool>(true);
      return s->run(in);
    };
    // i = 0: v + sum(v) = v + 15; i = 1: v + 105 (sum of 15..20); i = 2, 3: + 6 (1 + 2 + 3).
    expect_values(run(4), "y", {2, 3}, {132, 133, 134, 135, 136, 137});
    expect_values(run(0), "y", {2, 3}, {0, 1, 2, 3, 4, 5});
    expect_values(run(-3), "y", {2, 3}, {0, 1, 2, 3, 4, 5});
    // Over the unroll limit: the error names it, not the If inside the body.
    expect_error(run(300).status(),
                 {"at most 256 iterations (the unroll limit)", "the trip count M is 300"});
  }
}

// ---- F8: Scan-8 sequence_lens as a graph input ---------------------------------------------

TEST(ControlFlowSession, Scan8SequenceLensInputIsBoundAndChecked) {
  // s' = s + a per step; o = s'. B = 2 rows, T = 4 steps of f32[3].
  ::onnx::GraphProto body =
      graph("body", {node("Add", {"s", "a"}, {"s_out"}), node("Identity", {"s_out"}, {"o"})},
            {untyped("s", kF32), untyped("a", kF32)}, {untyped("s_out", kF32), untyped("o", kF32)});
  ModelBuilder m(8);
  m.input("L", {-1}, kI64).input("s0", {-1, 3}).input("A", {-1, 4, 3});
  m.output("y").output("o");
  m.add(node("Scan", {"L", "s0", "A"}, {"y", "o"}, "scan",
             {attr_g("body", body), attr_i("num_scan_inputs", 1)}));
  Result<runtime::Session> s = open_session_from_bytes(m.bytes(), cpu_options());
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->shape_determining_inputs(), std::vector<std::string>{"L"});
  const Tensor s0 = Tensor::from_vector<float>({2, 3}, {0, 1, 2, 3, 4, 5});
  std::vector<float> a(24);
  for (size_t k = 0; k < a.size(); ++k) a[k] = static_cast<float>(k);
  const Tensor A = Tensor::from_vector<float>({2, 4, 3}, a);
  // Row 0 sums A[0] columns: 0+3+6+9 = 18, 22, 26; row 1: 12+15+18+21 = 66, 70, 74.
  Result<TensorMap> out =
      s->run({{"L", Tensor::from_vector<int64_t>({2}, {4, 4})}, {"s0", s0}, {"A", A}});
  expect_values(out, "y", {2, 3}, {18, 23, 28, 69, 74, 79});
  Result<TensorMap> bad =
      s->run({{"L", Tensor::from_vector<int64_t>({2}, {3, 4})}, {"s0", s0}, {"A", A}});
  expect_error(bad.status(), {"input 0 (sequence_lens)", "2 rows of length 4, got [3,4]"});
}

// ---- F9: malformed control-flow nodes ------------------------------------------------------

// s' = s + a * b; o = s' (Scan-9+, two scan inputs of f32[4,3]).
Status scan_status(std::vector<::onnx::AttributeProto> attrs) {
  ::onnx::GraphProto body =
      graph("body",
            {node("Mul", {"a", "b"}, {"ab"}), node("Add", {"s", "ab"}, {"s_out"}),
             node("Identity", {"s_out"}, {"o"})},
            {untyped("s", kF32), untyped("a", kF32), untyped("b", kF32)},
            {untyped("s_out", kF32), untyped("o", kF32)});
  attrs.push_back(attr_g("body", body));
  ModelBuilder m(17);
  m.input("s0", {3}).input("A", {4, 3}).input("B", {4, 3}).output("y").output("o");
  m.add(node("Scan", {"s0", "A", "B"}, {"y", "o"}, "scan", std::move(attrs)));
  return load_from_bytes(m.bytes()).status();
}

TEST(ControlFlowSession, ScanAttributesAreValidated) {
  expect_error(scan_status({attr_i("num_scan_inputs", 0)}),
               {"attribute 'num_scan_inputs' is 0, expected at least 1"});
  expect_error(scan_status({attr_i("num_scan_inputs", 2), attr_ints("scan_input_axes", {-3, 0})}),
               {"attribute 'scan_input_axes' entry 0 is -3, expected -2..1 for scan input 0 "
                "(node input 1, f32[4,3])"});
  expect_error(
      scan_status({attr_i("num_scan_inputs", 2), attr_ints("scan_input_directions", {2, 0})}),
      {"attribute 'scan_input_directions' entry 0 is 2, expected 0 (forward) or 1 (reverse)"});
  expect_error(scan_status({attr_i("num_scan_inputs", 2), attr_ints("scan_input_directions", {1})}),
               {"attribute 'scan_input_directions' has 1 entries, expected 2"});
  expect_error(
      scan_status({attr_i("num_scan_inputs", 2), attr_ints("scan_output_directions", {0, 1})}),
      {"attribute 'scan_output_directions' has 2 entries, expected 1"});
}

TEST(ControlFlowSession, IfBranchWithTooManyOutputsIsRejectedWhateverTheCondition) {
  ModelBuilder m(17);
  m.input("c", {}, kBool).input("x", {2, 3}).output("y");
  m.add(node(
      "If", {"c"}, {"y"}, "if",
      {attr_g("then_branch", graph("th", {node("Neg", {"x"}, {"t"}), node("Neg", {"x"}, {"t2"})},
                                   {}, {untyped("t", kF32), untyped("t2", kF32)})),
       attr_g("else_branch", graph("el", {node("Abs", {"x"}, {"e"})}, {}, {untyped("e", kF32)}))}));
  for (bool c : {true, false}) {
    LoadOptions o;
    o.constant_inputs["c"] = Tensor::scalar<bool>(c);
    expect_error(load_from_bytes(m.bytes(), o).status(),
                 {"branch 'then_branch' has 2 outputs, the node has 1"});
  }
  expect_error(load_from_bytes(m.bytes()).status(),
               {"branch 'then_branch' has 2 outputs, the node has 1"});
}

TEST(ControlFlowSession, LoopWithTripCountInt64MaxAndScanOutputs) {
  ::onnx::GraphProto body =
      graph("body",
            {node("Add", {"v_in", "x"}, {"v_out"}), node("Identity", {"c_in"}, {"c_out"}),
             node("Mul", {"v_in", "v_in"}, {"sc"})},
            {value_info("i", kI64, {}), value_info("c_in", kBool, {}), untyped("v_in", kF32)},
            {value_info("c_out", kBool, {}), untyped("v_out", kF32), untyped("sc", kF32)});
  ModelBuilder m(17);
  m.input("M", {}, kI64).input("v0", {2}).input("x", {2}).output("y").output("s");
  m.init(int64_tensor("M", {}, {std::numeric_limits<int64_t>::max()}));
  m.add(node("Loop", {"M", "", "v0"}, {"y", "s"}, "loop", {attr_g("body", body)}));
  const Status st = load_from_bytes(m.bytes()).status();
  expect_error(st, {"input 0 (M) is 9223372036854775807", "never stops"});
  EXPECT_EQ(st.message().find("M omitted"), std::string::npos) << st.message();
}

TEST(ControlFlowSession, UnsupportedOpInABodyIsReportedAtOpen) {
  ::onnx::GraphProto body =
      graph("b",
            {node("NoSuchOp", {"v_in"}, {"d"}, "bad"), node("Identity", {"v_in"}, {"v_out"}),
             node("Identity", {"c_in"}, {"c_out"})},
            {value_info("i", kI64, {}), value_info("c_in", kBool, {}), untyped("v_in", kF32)},
            {value_info("c_out", kBool, {}), untyped("v_out", kF32)});
  ModelBuilder m(17);
  m.input("M", {}, kI64).input("x", {2, 3}).output("y");
  m.add(node("Loop", {"M", "", "x"}, {"y"}, "loop", {attr_g("body", body)}));
  expect_error(open_session_from_bytes(m.bytes(), cpu_options()).status(),
               {"body 'body' of node 'loop' (Loop): ai.onnx::NoSuchOp (opset 17) at node 'bad'"});
}

}  // namespace
}  // namespace frame::onnx
