// register_op_with_kernels: registration after start-up (Python's frame.register_op, plugins)
// applies the ARCH-040/041 rules of FRAME_REGISTER_OP as errors, all or nothing.
#include <gtest/gtest.h>

#include <cstring>

#include "common/graph_builder.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {
namespace {

using test::copy_kernel;

Result<std::vector<ir::TensorType>> same_type(const NodeContext& ctx) {
  return std::vector<ir::TensorType>{ctx.input_types.at(0)};
}

OpSchema schema(const std::string& name, bool with_shape_fn = true) {
  OpSchemaBuilder b(name, "runtime.py", 1);
  b.doc("test").input("X", "x").output("Y", "y");
  if (with_shape_fn) b.shape_infer(same_type);
  return b.build();
}

KernelDef kernel(const std::string& op, const std::string& backend, KernelFn fn = copy_kernel) {
  KernelDef k;
  k.op = op;
  k.backend = backend;
  k.fn = fn;
  k.file = "runtime.py";
  k.line = 2;
  return k;
}

TEST(RuntimeRegistration, RegistersOpAndKernelsTogether) {
  const std::string name = "runtime_reg_ok";
  ASSERT_TRUE(register_op_with_kernels(schema(name), {kernel(name, "cpu")}).is_ok());
  ASSERT_NE(OpRegistry::global().find(name), nullptr);
  EXPECT_EQ(OpRegistry::global().find(name)->file(), "runtime.py");
  EXPECT_NE(KernelRegistry::global().find(name, "cpu"), nullptr);
  // A second registration of the same name is an error, not an abort.
  Status again = register_op_with_kernels(schema(name), {kernel(name, "cpu")});
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("op 'runtime_reg_ok': duplicate name (ARCH-040: first "
                                 "registered at runtime.py:1)"),
            std::string::npos)
      << again.message();
}

TEST(RuntimeRegistration, ExistingOpLeavesItsNewKernelsUnregistered) {
  Status s = register_op_with_kernels(schema("relu"), {kernel("relu", "runtime_reg_backend")});
  EXPECT_EQ(s.code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(KernelRegistry::global().find("relu", "runtime_reg_backend"), nullptr);
}

TEST(RuntimeRegistration, ExistingKernelLeavesTheOpUnregistered) {
  Status s = register_op_with_kernels(
      schema("runtime_reg_k"), {kernel("runtime_reg_k", "cpu"), kernel("runtime_reg_k", "cpu")});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("backend 'cpu' listed twice"), std::string::npos) << s.message();
  EXPECT_EQ(OpRegistry::global().find("runtime_reg_k"), nullptr);
  EXPECT_EQ(KernelRegistry::global().find("runtime_reg_k", "cpu"), nullptr);
}

TEST(RuntimeRegistration, RuleViolationsAreInvalidArgument) {
  struct Case {
    OpSchema schema;
    std::vector<KernelDef> kernels;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({schema("Bad-Name"), {}, "op 'Bad-Name': illegal name (ARCH-040"});
  cases.push_back({schema("graph_input"), {}, "op 'graph_input': reserved name (ARCH-040"});
  cases.push_back({schema("runtime_reg_noshape", false), {}, "no shape function (ARCH-041"});
  cases.push_back({schema("runtime_reg_a"),
                   {kernel("runtime_reg_b", "cpu")},
                   "op 'runtime_reg_a': kernel for backend 'cpu' names op 'runtime_reg_b'"});
  cases.push_back({schema("runtime_reg_c"), {kernel("runtime_reg_c", "")}, "empty backend name"});
  cases.push_back({schema("runtime_reg_d"),
                   {kernel("runtime_reg_d", "cpu", nullptr)},
                   "kernel 'runtime_reg_d@cpu': null kernel function"});
  for (Case& c : cases) {
    const std::string name = c.schema.name();
    Status s = register_op_with_kernels(std::move(c.schema), std::move(c.kernels));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << name;
    EXPECT_NE(s.message().find(c.message), std::string::npos) << s.message();
    if (name != "graph_input") {
      EXPECT_EQ(OpRegistry::global().find(name), nullptr) << name;
    }
  }
}

}  // namespace
}  // namespace frame::ops
