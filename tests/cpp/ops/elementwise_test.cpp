// Elementwise family checks the op database cannot express: fp16 rounding across a chain of
// ops, integer division by zero as an error, the multi-threaded and general broadcast loops,
// and that the X-macro lists, the registries and the declared traits agree.

#include "frame/ops/elementwise.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::test {
namespace {

Tensor run1(const std::string& op, std::vector<Tensor> inputs, int threads = 1) {
  OpCall call;
  call.op = op;
  call.inputs = std::move(inputs);
  call.num_threads = threads;
  Result<std::vector<Tensor>> r = run_op(call);
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return r.is_ok() ? (*r)[0] : Tensor();
}

// Two fp16 adds round after each op like numpy: 2048 + 1 is a tie that rounds to 2048 (even),
// twice; a float chain would give 2050 (representable in fp16). Likewise 1 + 2^-11 + 2^-11.
TEST(ElementwiseFp16, ChainRoundsAfterEveryOp) {
  const std::vector<Half> a = {Half(2048.0f), Half(1.0f)};
  const std::vector<Half> b = {Half(1.0f), Half(0.00048828125f)};
  Tensor ta = Tensor::from_vector<Half>({2}, a);
  Tensor tb = Tensor::from_vector<Half>({2}, b);
  Tensor once = run1("add", {ta, tb});
  Tensor twice = run1("add", {once, tb});
  ASSERT_EQ(twice.dtype(), DTypeCode::kFloat16);
  EXPECT_EQ(static_cast<float>(twice.data<Half>()[0]), 2048.0f);  // numpy: float16 2048.0
  EXPECT_EQ(static_cast<float>(twice.data<Half>()[1]), 1.0f);     // numpy: float16 1.0
}

TEST(ElementwiseErrors, IntegerDivisionByZeroIsAnErrorNamingNodeAndInput) {
  for (const char* op : {"div", "mod"}) {
    OpCall call;
    call.op = op;
    call.node_name = "my_div";
    call.inputs = {Tensor::from_vector<int32_t>({3}, {1, 2, 3}),
                   Tensor::from_vector<int32_t>({3}, {1, 0, 1})};
    Result<std::vector<Tensor>> r = run_op(call);
    ASSERT_FALSE(r.is_ok()) << op;
    EXPECT_NE(r.status().message().find("my_div"), std::string::npos) << r.status().message();
    EXPECT_NE(r.status().message().find("input 1"), std::string::npos) << r.status().message();
  }
  // Floating division by zero is IEEE (inf), not an error.
  Tensor f = run1(
      "div", {Tensor::from_vector<float>({1}, {1.0f}), Tensor::from_vector<float>({1}, {0.0f})});
  EXPECT_TRUE(std::isinf(f.data<float>()[0]));
}

// (4,1,3) + (1,5,1) cannot collapse: exercises the odometer path against a hand loop.
TEST(ElementwiseBroadcast, GeneralPathMatchesHandLoop) {
  std::vector<float> av(12), bv(5);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = 100.0f * static_cast<float>(i);
  Tensor c = run1("add", {Tensor::from_vector<float>({4, 1, 3}, av),
                          Tensor::from_vector<float>({1, 5, 1}, bv)});
  ASSERT_EQ(c.shape(), (Shape{4, 5, 3}));
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 5; ++j) {
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(c.data<float>()[(i * 5 + j) * 3 + k], av[i * 3 + k] + bv[j]);
      }
    }
  }
}

// Large enough for the OpenMP path; results must not depend on the thread count.
TEST(ElementwiseBroadcast, ThreadedEqualsSingleThreaded) {
  const int64_t rows = 300, cols = 257;
  std::vector<float> av(rows * cols), bv(cols);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i % 1000) * 0.5f;
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = static_cast<float>(i);
  Tensor a = Tensor::from_vector<float>({rows, cols}, av);
  Tensor b = Tensor::from_vector<float>({cols}, bv);
  for (const char* op : {"mul", "sub"}) {
    Tensor one = run1(op, {a, b}, 1);
    Tensor four = run1(op, {a, b}, 4);
    EXPECT_TRUE(one.bitwise_equal(four)) << op;
  }
  Tensor s = run1("mul", {a, b}, 4);
  EXPECT_EQ(s.data<float>()[5 * cols + 7], av[5 * cols + 7] * bv[7]);
  Tensor big = Tensor::from_vector<float>({rows * cols}, av);
  Tensor r = run1("relu", {run1("neg", {big}, 4)}, 4);
  EXPECT_EQ(r.data<float>()[0], 0.0f);
  EXPECT_EQ(r.data<float>()[rows * cols - 1], 0.0f);
}

// Every X-macro entry is registered with its declared traits and a cpu kernel for its dtypes.
TEST(ElementwiseLists, RegistryMatchesLists) {
  auto check = [](const char* name, DTypeSet dtypes, uint32_t traits) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(name);
    ASSERT_NE(s, nullptr) << name;
    for (ops::OpTrait t : {ops::OpTrait::kElementwise, ops::OpTrait::kFusable,
                           ops::OpTrait::kHasSideEffect, ops::OpTrait::kCommutative}) {
      EXPECT_EQ(s->has_trait(t), (traits & ops::ew::trait_bit(t)) != 0)
          << name << " trait " << ops::op_trait_name(t);
    }
    const ops::KernelDef* k = ops::KernelRegistry::global().find(name, "cpu");
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(k->dtypes & dtypes, dtypes) << name;
    const ops::ArgSpec* in0 = s->input_spec(0);
    ASSERT_NE(in0, nullptr);
    EXPECT_EQ(in0->dtypes, dtypes) << name;
  };
  using namespace ops::ew;  // NOLINT(build/namespaces): the lists name kFusableTraits etc.
#define FRAME_EW_CHECK(name, F, types, traits, doc) check(#name, types, traits);
  FRAME_EW_UNARY_OPS(FRAME_EW_CHECK)
  FRAME_EW_BINARY_OPS(FRAME_EW_CHECK)
  FRAME_EW_VARIADIC_OPS(FRAME_EW_CHECK)
#undef FRAME_EW_CHECK
}

TEST(ElementwiseShapes, BadBroadcastAndBadCastAreErrors) {
  OpCall call;
  call.op = "add";
  call.node_name = "bad_add";
  call.inputs = {Tensor::from_vector<float>({2, 3}, std::vector<float>(6)),
                 Tensor::from_vector<float>({4}, std::vector<float>(4))};
  Result<std::vector<Tensor>> r = run_op(call);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("bad_add"), std::string::npos) << r.status().message();

  OpCall cast;
  cast.op = "cast";
  cast.inputs = {Tensor::from_vector<float>({1}, {1.0f})};
  cast.attrs = {{"to", int64_t{8}}};  // ONNX STRING
  Result<std::vector<Tensor>> c = run_op(cast);
  ASSERT_FALSE(c.is_ok());
  EXPECT_NE(c.status().message().find("8"), std::string::npos) << c.status().message();

  OpCall prelu;
  prelu.op = "prelu";
  prelu.inputs = {Tensor::from_vector<float>({2, 3}, std::vector<float>(6)),
                  Tensor::from_vector<float>({2, 1, 3}, std::vector<float>(6))};
  EXPECT_FALSE(run_op(prelu).is_ok());  // slope must broadcast unidirectionally to X
}

}  // namespace
}  // namespace frame::test
