// Graph::verify V1–V4 with golden messages (docs/architecture/ir-design.md §4). V3/V4 use a
// hand-written OpQuery so these tests do not depend on the op registry.

#include <gtest/gtest.h>

#include <set>

#include "common/graph_builder.h"
#include "frame/ir/graph.h"

namespace frame::ir {
namespace {

using test::f32;

// x -> relu "r" -> add "s"(r, w) -> output; every value typed. Valid under V1/V2.
struct Fixture {
  Graph g;
  ValueId x, w, r_out, s_out;
  NodeId r, s;
  Fixture() {
    x = g.add_input("x", f32({2}));
    w = g.add_constant("w", Tensor::from_vector<float>({2}, {1.0F, 2.0F}));
    r = *g.create_node("relu", "r", {x}, 1);
    r_out = g.node(r).outputs[0];
    s = *g.create_node("add", "s", {r_out, w}, 1);
    s_out = g.node(s).outputs[0];
    g.value(r_out).type = f32({2});
    g.value(s_out).type = f32({2});
    g.add_output(s_out);
  }
};

std::string verify_message(const Graph& g, const OpQuery* q = nullptr) {
  Status st = g.verify(q);
  if (st.is_ok()) return "ok";
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  return st.message();
}

TEST(Verify, ValidGraphPasses) {
  Fixture f;
  EXPECT_EQ(verify_message(f.g), "ok");
}

TEST(VerifyV1, InvalidInputId) {
  Fixture f;
  f.g.node(f.s).inputs[1] = 42;
  EXPECT_EQ(verify_message(f.g),
            "V1: node 's' (add): input 1 has invalid value id 42 (graph has 4 values)");
}

TEST(VerifyV1, AbsentOptionalInputIsFine) {
  Fixture f;
  f.g.node(f.s).inputs.push_back(kNoValue);
  EXPECT_EQ(verify_message(f.g), "ok");
}

TEST(VerifyV1, InputFromRemovedNode) {
  Fixture f;
  f.g.remove_node(f.r);
  EXPECT_EQ(verify_message(f.g),
            "V1: node 's' (add): input 0 refers to value 'r:0' which no node produces");
}

TEST(VerifyV1, ValueProducedTwice) {
  Fixture f;
  f.g.node(f.s).outputs[0] = f.r_out;
  EXPECT_EQ(verify_message(f.g),
            "V1: value 'r:0' is produced twice: by node 'r' (relu) output 0 and by node 's' (add) "
            "output 0");
}

TEST(VerifyV1, NodeOutputThatIsAGraphInput) {
  Fixture f;
  f.g.node(f.s).outputs[0] = f.x;
  EXPECT_EQ(verify_message(f.g), "V1: node 's' (add): output 0 value 'x' is also a graph input");
}

TEST(VerifyV1, DuplicateValueName) {
  Fixture f;
  f.g.value(f.s_out).name = "x";
  EXPECT_EQ(verify_message(f.g),
            "V1: duplicate value name 'x': graph input and node 's' (add) output 0");
}

TEST(VerifyV1, DuplicateNodeName) {
  Fixture f;
  f.g.node(f.s).name = "r";
  EXPECT_EQ(verify_message(f.g), "V1: duplicate node name 'r': ops relu and add");
}

TEST(VerifyV1, Cycle) {
  Fixture f;
  f.g.node(f.r).inputs[0] = f.s_out;
  EXPECT_EQ(verify_message(f.g),
            "V1: graph 'main' is cyclic: node 'r' (relu) is on the cycle r -> s -> r");
}

TEST(VerifyV1, OutputNotProduced) {
  Fixture f;
  f.g.set_outputs({f.s_out});
  f.g.remove_node(f.s);
  EXPECT_EQ(verify_message(f.g), "V1: graph output 0 refers to value 's:0' which no node produces");
}

TEST(VerifyV1, OutputInvalidId) {
  Fixture f;
  f.g.set_outputs({f.s_out, 99});
  EXPECT_EQ(verify_message(f.g), "V1: graph output 1 has invalid value id 99 (graph has 4 values)");
}

TEST(VerifyV1, NoOutputs) {
  Fixture f;
  f.g.set_outputs({});
  EXPECT_EQ(verify_message(f.g), "V1: graph 'main' has no outputs");
}

TEST(VerifyV1, StructureIsCheckedBeforeTypes) {
  Fixture f;
  f.g.value(f.r_out).type.reset();  // V2 violation
  f.g.set_outputs({});              // V1 violation wins
  EXPECT_EQ(verify_message(f.g), "V1: graph 'main' has no outputs");
}

TEST(VerifyV2, MissingOutputType) {
  Fixture f;
  f.g.value(f.s_out).type.reset();
  EXPECT_EQ(verify_message(f.g), "V2: node 's' (add): output 0 value 's:0' has no type");
}

TEST(VerifyV2, MissingInputType) {
  Fixture f;
  f.g.value(f.x).type.reset();
  EXPECT_EQ(verify_message(f.g), "V2: graph input 'x' has no type");
}

TEST(VerifyV2, ConstantTypeMismatch) {
  Fixture f;
  f.g.value(f.w).type = f32({3});
  EXPECT_EQ(verify_message(f.g), "V2: constant 'w' has type f32[3] but its tensor is f32[2]");
}

TEST(VerifyV2, NegativeDim) {
  Fixture f;
  f.g.value(f.r_out).type = f32({-1, 2});
  EXPECT_EQ(verify_message(f.g),
            "V2: node 'r' (relu): output 0 value 'r:0' has negative dim -1 in type f32[-1,2]");
}

OpQuery make_query(std::set<std::string> registered,
                   std::function<Status(const Node&)> check = nullptr) {
  OpQuery q;
  q.op_registered = [registered](std::string_view op) {
    return registered.count(std::string(op)) != 0;
  };
  q.check_schema = check ? std::move(check) : [](const Node&) { return Status(); };
  return q;
}

TEST(VerifyV3, UnregisteredOp) {
  Fixture f;
  OpQuery q = make_query({"relu"});
  EXPECT_EQ(verify_message(f.g, &q), "V3: node 's' (add): op 'add' is not registered");
  // Without a query only V1/V2 run.
  EXPECT_EQ(verify_message(f.g), "ok");
}

TEST(VerifyV3, TypesAreCheckedFirst) {
  Fixture f;
  f.g.value(f.s_out).type.reset();
  OpQuery q = make_query({});
  EXPECT_EQ(verify_message(f.g, &q), "V2: node 's' (add): output 0 value 's:0' has no type");
}

TEST(VerifyV4, SchemaErrorGetsPrefixExactlyOnce) {
  Fixture f;
  OpQuery q = make_query({"relu", "add"}, [](const Node& n) {
    if (n.op == "add") {
      return invalid_argument("node '{}' ({}): expects 2 inputs, got {}", n.name, n.op,
                              n.inputs.size() + 1);
    }
    return Status();
  });
  const std::string msg = verify_message(f.g, &q);
  EXPECT_EQ(msg, "V4: node 's' (add): expects 2 inputs, got 3");
  EXPECT_EQ(msg.find("V4: "), 0u);
  EXPECT_EQ(msg.find("V4: ", 1), std::string::npos);
}

TEST(VerifyV4, PrefixNotDoubledWhenQueryAddsIt) {
  Fixture f;
  OpQuery q = make_query({"relu", "add"}, [](const Node& n) {
    return invalid_argument("V4: node '{}' ({}): bad attr", n.name, n.op);
  });
  const std::string msg = verify_message(f.g, &q);
  EXPECT_EQ(msg, "V4: node 'r' (relu): bad attr");
  EXPECT_EQ(msg.find("V4: ", 1), std::string::npos);
}

TEST(VerifyV4, CodeIsInvalidArgumentWhateverTheQueryReturned) {
  Fixture f;
  OpQuery q = make_query({"relu", "add"}, [](const Node&) {
    return Status(StatusCode::kNotFound, "attr 'axis' missing");
  });
  Status st = f.g.verify(q);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.message(), "V4: attr 'axis' missing");
}

TEST(VerifyV4, V3RunsOverAllNodesBeforeV4) {
  Fixture f;
  OpQuery q = make_query({"relu"}, [](const Node&) { return invalid_argument("schema"); });
  EXPECT_EQ(verify_message(f.g, &q), "V3: node 's' (add): op 'add' is not registered");
}

}  // namespace
}  // namespace frame::ir
