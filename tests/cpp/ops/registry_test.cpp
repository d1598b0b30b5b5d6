// Registry tests: registration faults are fatal (ARCH-040, M9 variadic rules), V4 schema
// checks, the self-check (ARCH-041), ARCH-044 static-shape errors, and the JSON dump.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>

#include "common/graph_builder.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {
namespace {

using test::copy_kernel;

using ir::AttrType;

Result<std::vector<ir::TensorType>> same_as_input0(const NodeContext& ctx) {
  return std::vector<ir::TensorType>{ctx.input_types.at(0)};
}

// A shape function whose output dim depends on an input value: it must refuse (ARCH-044)
// unless that input is a constant.
Result<std::vector<ir::TensorType>> value_dependent(const NodeContext& ctx) {
  const Tensor* n = ctx.constant_input(1);
  if (n == nullptr) {
    return ctx.error("input 1 (n) must be a constant (ARCH-044: output shape must be static)");
  }
  return std::vector<ir::TensorType>{{ctx.input_types[0].dtype, {n->element_as_int64(0)}}};
}

// Registered once for this binary; has a cpu kernel so the self-check stays clean.
FRAME_REGISTER_OP(registry_test_op)
    .doc("Test op: Y = X.")
    .input("X", "input", kFloatDTypes, "T")
    .optional_input("bias", "optional", kFloatDTypes, "T")
    .output("Y", "output", kFloatDTypes, "T")
    .attr("alpha", AttrType::kFloat, "a float", 0.5)
    .required_attr("mode", AttrType::kString, "a string")
    .traits({OpTrait::kFusable})
    .shape_infer(same_as_input0);
FRAME_REGISTER_KERNEL(registry_test_op, "cpu", copy_kernel).dtypes(kFloatDTypes);

FRAME_REGISTER_OP(registry_test_variadic)
    .doc("Test op with a variadic group.")
    .input("first", "fixed")
    .variadic_input("rest", "variadic", 2)
    .output("Y", "output")
    .shape_infer(same_as_input0);
FRAME_REGISTER_KERNEL(registry_test_variadic, "cpu", copy_kernel);

FRAME_REGISTER_OP(registry_test_value_dependent)
    .doc("Output length = value of input 1.")
    .input("X", "data")
    .input("n", "length", {DTypeCode::kInt64})
    .shape_determining()
    .output("Y", "output")
    .shape_infer(value_dependent);
FRAME_REGISTER_KERNEL(registry_test_value_dependent, "cpu", copy_kernel);

Result<std::vector<ir::TensorType>> noop_shape(const NodeContext& ctx) {
  return same_as_input0(ctx);
}

// Registers op `name` with a shape function as if declared at file:line; the death tests
// below expect it to be fatal.
void register_test_op(std::string name, const char* file, int line) {
  [[maybe_unused]] OpRegistration r =
      OpSchemaBuilder(std::move(name), file, line).shape_infer(noop_shape);
}

// ---- ARCH-040 / M9: fatal registration faults (death tests) ----
TEST(RegistryDeathTest, IllegalNameIsFatal) {
  EXPECT_DEATH(register_test_op("Bad-Name", "file.cpp", 7),
               "fatal registration error: op 'Bad-Name': illegal name \\(ARCH-040: must match "
               "\\^\\[a-z\\]\\[a-z0-9_\\]\\*\\$\\) \\(registered at file.cpp:7\\)");
  EXPECT_DEATH(register_test_op("9lives", "f", 1), "illegal name");
  EXPECT_DEATH(register_test_op("", "f", 1), "illegal name");
}

TEST(RegistryDeathTest, DuplicateNameIsFatal) {
  EXPECT_DEATH(
      register_test_op("registry_test_op", "dup.cpp", 3),
      "op 'registry_test_op': duplicate name \\(ARCH-040: first registered at .*registry_test"
      ".cpp:[0-9]+\\) \\(registered at dup.cpp:3\\)");
}

TEST(RegistryDeathTest, ReservedNamesAreFatal) {
  EXPECT_DEATH(register_test_op("graph_input", "f", 1), "op 'graph_input': reserved name");
  EXPECT_DEATH(register_test_op("graph_output", "f", 1), "op 'graph_output': reserved name");
}

TEST(RegistryDeathTest, MissingShapeFunctionIsFatal) {
  EXPECT_DEATH({ [[maybe_unused]] OpRegistration r = OpSchemaBuilder("no_shape_fn", "f", 1); },
               "no shape function \\(ARCH-041");
}

TEST(RegistryDeathTest, VariadicMisuseIsFatal) {
  EXPECT_DEATH(
      {
        OpSchemaBuilder("two_groups", "f", 1).variadic_input("a", "", 0).variadic_input("b", "", 0);
      },
      "second variadic input group 'b'");
  EXPECT_DEATH(
      { OpSchemaBuilder("input_after", "f", 1).variadic_input("a", "", 0).input("x", ""); },
      "input 'x' declared after the variadic input group 'a'");
  EXPECT_DEATH({ OpSchemaBuilder("neg_min", "f", 1).variadic_input("a", "", -1); },
               "min_count -1 \\(M9: min_count must be >= 0\\)");
  EXPECT_DEATH(
      {
        OpSchemaBuilder("opt_then_var", "f", 1).optional_input("o", "").variadic_input("a", "", 1);
      },
      "combined with optional input 'o'");
}

TEST(RegistryDeathTest, DuplicateKernelIsFatal) {
  EXPECT_DEATH(
      {
        [[maybe_unused]] KernelRegistration r =
            KernelBuilder("registry_test_op", "cpu", copy_kernel, "k.cpp", 9);
      },
      "kernel 'registry_test_op@cpu': duplicate \\(op, backend\\) pair");
}

TEST(Registry, VariadicQueries) {
  const OpSchema* v = OpRegistry::global().find("registry_test_variadic");
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->has_variadic_inputs());
  EXPECT_EQ(v->min_input_count(), 3);
  EXPECT_EQ(v->max_input_count(), -1);
  const OpSchema* t = OpRegistry::global().find("registry_test_op");
  EXPECT_FALSE(t->has_variadic_inputs());
  EXPECT_EQ(t->min_input_count(), 1);
  EXPECT_EQ(t->max_input_count(), 2);
}

// ---- V4 schema checks through make_op_query (messages have no "V4: " prefix) ----
ir::Node make_node(std::string op, int n_in, ir::AttrMap attrs, int n_out = 1) {
  ir::Node n;
  n.name = "n0";
  n.op = std::move(op);
  for (int i = 0; i < n_in; ++i) n.inputs.push_back(i);
  for (int i = 0; i < n_out; ++i) n.outputs.push_back(100 + i);
  n.attrs = std::move(attrs);
  return n;
}

TEST(Registry, CheckSchemaMessages) {
  ir::OpQuery q = make_op_query();
  EXPECT_TRUE(q.op_registered("registry_test_op"));
  EXPECT_FALSE(q.op_registered("no_such_op"));
  ir::AttrMap ok{{"mode", std::string("x")}};
  EXPECT_TRUE(q.check_schema(make_node("registry_test_op", 1, ok)).is_ok());
  EXPECT_TRUE(q.check_schema(make_node("registry_test_op", 2, ok)).is_ok());
  EXPECT_EQ(q.check_schema(make_node("registry_test_op", 3, ok)).message(),
            "node 'n0' (registry_test_op): expects 1 to 2 inputs, got 3");
  EXPECT_EQ(q.check_schema(make_node("registry_test_op", 1, {})).message(),
            "node 'n0' (registry_test_op): required attribute 'mode' (string) is missing");
  EXPECT_EQ(q.check_schema(make_node("registry_test_op", 1, {{"mode", int64_t{1}}})).message(),
            "node 'n0' (registry_test_op): attribute 'mode' expects type string, got int");
  ir::AttrMap extra = ok;
  extra["beta"] = 1.0;
  EXPECT_EQ(q.check_schema(make_node("registry_test_op", 1, extra)).message(),
            "node 'n0' (registry_test_op): undeclared attribute 'beta'");
  EXPECT_EQ(q.check_schema(make_node("registry_test_op", 1, ok, 2)).message(),
            "node 'n0' (registry_test_op): expects 1 output, got 2");
  EXPECT_EQ(q.check_schema(make_node("registry_test_variadic", 2, {})).message(),
            "node 'n0' (registry_test_variadic): expects at least 3 inputs, got 2");
  EXPECT_TRUE(q.check_schema(make_node("registry_test_variadic", 5, {})).is_ok());
  ir::Node absent = make_node("registry_test_op", 1, ok);
  absent.inputs[0] = ir::kNoValue;
  EXPECT_EQ(q.check_schema(absent).message(),
            "node 'n0' (registry_test_op): input 0 (X) is required but absent");
}

TEST(Registry, AttrFallsBackToSchemaDefault) {
  const OpSchema* s = OpRegistry::global().find("registry_test_op");
  ir::AttrMap attrs{{"mode", std::string("m")}};
  NodeContext ctx;
  ctx.op = "registry_test_op";
  ctx.attrs = &attrs;
  ctx.schema = s;
  ASSERT_NE(ctx.attr<double>("alpha"), nullptr);
  EXPECT_EQ(*ctx.attr<double>("alpha"), 0.5);
  EXPECT_EQ(ctx.attr<int64_t>("alpha"), nullptr);  // wrong type
  EXPECT_EQ(*ctx.attr<std::string>("mode"), "m");
  EXPECT_EQ(ctx.attr_or<int64_t>("missing", 7), 7);
}

TEST(Registry, InputTypeChecks) {
  const OpSchema* s = OpRegistry::global().find("registry_test_op");
  NodeContext ctx;
  ctx.op = "registry_test_op";
  ctx.node_name = "n0";
  ctx.schema = s;
  ctx.input_types = {{DTypeCode::kFloat32, {2}}, {DTypeCode::kFloat64, {2}}};
  ctx.input_present = {true, true};
  ctx.input_constants = {nullptr, nullptr};
  EXPECT_EQ(s->check_input_types(ctx).message(),
            "node 'n0' (registry_test_op): input 1 (bias) has dtype f64, expected f32 like "
            "input 0 (X)");
  ctx.input_types = {{DTypeCode::kInt32, {2}}};
  ctx.input_present = {true};
  ctx.input_constants = {nullptr};
  EXPECT_EQ(s->check_input_types(ctx).message(),
            "node 'n0' (registry_test_op): input 0 (X) has dtype i32, expected one of "
            "{f32, f64, f16, bf16}");
}

// ARCH-044: a dim that depends on a non-constant input is an error, never an unknown dim.
TEST(Registry, ShapeInferenceRejectsNonStaticDims) {
  const OpSchema* s = OpRegistry::global().find("registry_test_value_dependent");
  NodeContext ctx;
  ctx.op = s->name();
  ctx.node_name = "vd";
  ctx.schema = s;
  ctx.input_types = {{DTypeCode::kFloat32, {4}}, {DTypeCode::kInt64, {1}}};
  ctx.input_present = {true, true};
  ctx.input_constants = {nullptr, nullptr};
  Result<std::vector<ir::TensorType>> r = s->infer(ctx);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().message(),
            "node 'vd' (registry_test_value_dependent): input 1 (n) must be a constant "
            "(ARCH-044: output shape must be static)");
  Tensor n = Tensor::from_vector<int64_t>({1}, {3});
  ctx.input_constants[1] = &n;
  r = s->infer(ctx);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ((*r)[0].shape, (Shape{3}));
}

TEST(Registry, KernelSupportsChecksDType) {
  const KernelDef* k = KernelRegistry::global().find("registry_test_op", "cpu");
  ASSERT_NE(k, nullptr);
  NodeContext ctx;
  ctx.input_types = {{DTypeCode::kInt8, {2}}};
  ctx.input_present = {true};
  EXPECT_EQ(k->supports(ctx).message(),
            "kernel registry_test_op@cpu does not support dtype i8 on input 0 (supports {f32, "
            "f64, f16, bf16})");
  EXPECT_EQ(KernelRegistry::global().find("registry_test_op", "cuda"), nullptr);
}

// ARCH-041: every registered op (builtins and these test ops) has a shape function and a cpu
// kernel, and every kernel names a registered op.
TEST(Registry, SelfCheckPasses) {
  std::vector<std::string> problems = registry_self_check();
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_TRUE(problems.empty()) << all;
}

TEST(Registry, JsonEntryMatchesGolden) {
  nlohmann::json all = nlohmann::json::parse(OpRegistry::global().to_json());
  nlohmann::json entry;
  for (const auto& op : all) {
    if (op["name"] == "registry_test_op") entry = op;
  }
  ASSERT_FALSE(entry.is_null());
  entry.erase("registered_at");  // path depends on the checkout
  std::ifstream f(std::string(FRAME_SOURCE_DIR) + "/tests/cpp/ops/golden/registry_test_op.json");
  ASSERT_TRUE(f.good());
  nlohmann::json golden = nlohmann::json::parse(f);
  EXPECT_EQ(entry, golden) << entry.dump(2);
  nlohmann::json kernels = nlohmann::json::parse(KernelRegistry::global().to_json());
  bool found = false;
  for (const auto& k : kernels) {
    if (k["op"] == "registry_test_op") {
      found = true;
      EXPECT_EQ(k["backend"], "cpu");
      EXPECT_EQ(k["dtypes"], "{f32, f64, f16, bf16}");
    }
  }
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace frame::ops

// ADR 0006: the JSON dump names the inputs whose values decide output shapes. ONNX Reshape's
// `shape` input decides the output shape; its `data` input does not.
TEST(Registry, JsonMarksShapeDeterminingInputs) {
  using frame::ops::OpRegistry;
  nlohmann::json all = nlohmann::json::parse(OpRegistry::global().to_json());
  nlohmann::json reshape;
  for (const auto& op : all) {
    if (op["name"] == "reshape") reshape = op;
  }
  ASSERT_FALSE(reshape.is_null());
  ASSERT_EQ(reshape["inputs"].size(), 2u);
  EXPECT_EQ(reshape["inputs"][0]["shape_determining"], false);
  EXPECT_EQ(reshape["inputs"][1]["shape_determining"], true);
}
