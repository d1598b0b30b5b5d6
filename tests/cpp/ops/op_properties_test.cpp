// Property tests derived from op traits over the whole registry (op spec §2):
//  - kCommutative: swapping the inputs gives a bitwise equal result;
//  - kElementwise: output 0 has the broadcast shape of the inputs;
//  - no kHasSideEffect: two runs on the same inputs are bitwise equal (deterministic).
// Inputs are synthesized from each schema: required inputs only, dtypes picked from the allowed
// sets honouring type variables, broadcastable shapes, integer values in [1, 3] (no zero
// divisors, valid as small shape-like operands, passed as constants).
//
// Skip list: an op is skipped (GTEST_SKIP, reason printed) when no synthesized input set passes
// its schema check and shape inference. That covers ops needing structured operands that a
// generic generator cannot invent: specific ranks (conv, pooling, matmul pairs), index or shape
// tensors with meaningful values (gather, reshape, slice), subgraph attributes, or required
// attributes other than those in `required_attrs` below (e.g. fused_elementwise_internal needs
// its body graph). Ops of the elementwise family, and every user-facing op that declares
// kElementwise, are never allowed to skip (OpPropertiesCoverage.ElementwiseFamilyIsCovered,
// OpPropertiesCoverage.EveryElementwiseOpIsCovered).

#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/op_runner.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/op_registry.h"

namespace frame::test {
namespace {

// Required attributes the generator supplies (value valid for the op).
ir::AttrMap required_attrs(const std::string& op) {
  if (op == "bit_shift") return {{"direction", std::string("LEFT")}};
  if (op == "cast") return {{"to", int64_t{1}}};
  return {};
}

constexpr DTypeCode kPreference[] = {DTypeCode::kFloat32,  DTypeCode::kFloat64, DTypeCode::kInt64,
                                     DTypeCode::kInt32,    DTypeCode::kBool,    DTypeCode::kFloat16,
                                     DTypeCode::kBFloat16, DTypeCode::kInt8,    DTypeCode::kInt16,
                                     DTypeCode::kUInt8};

Tensor synth_tensor(DTypeCode d, const Shape& shape, std::mt19937& rng) {
  Tensor t = Tensor::empty(d, shape).value();
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::uniform_int_distribution<int> small(1, 3);
  static_cast<void>(dispatch_dtype(d, [&]<typename T>() {
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        t.data<T>()[i] = small(rng) != 2;
      } else if constexpr (kIsFloating<T>) {
        t.data<T>()[i] = from_compute<T>(static_cast<compute_t<T>>(u(rng)));
      } else {
        t.data<T>()[i] = static_cast<T>(small(rng));
      }
    }
  }));
  return t;
}

// Shape sets tried in order; the first whose inputs pass shape inference is used.
std::vector<std::vector<Shape>> shape_attempts(size_t n) {
  std::vector<std::vector<Shape>> out;
  std::vector<Shape> bcast;  // (2,3), (3,), (), (2,3), ...: all broadcastable to (2,3)
  const Shape pattern[] = {{2, 3}, {3}, {}};
  for (size_t i = 0; i < n; ++i) bcast.push_back(pattern[i % 3]);
  out.push_back(bcast);
  for (const Shape& s : {Shape{2, 3}, Shape{3, 3}, Shape{1, 2, 4, 4}, Shape{4}}) {
    out.emplace_back(n, s);
  }
  return out;
}

struct Synthesized {
  OpCall call;
  std::vector<ir::TensorType> types;
};

// Input count: required fixed inputs plus the variadic minimum (at least 2 for commutative
// variadic ops so there is something to swap).
std::optional<Synthesized> synthesize(const ops::OpSchema& s, std::string* why) {
  size_t n = 0;
  for (const ops::ArgSpec& a : s.inputs()) n += a.optional ? 0 : 1;
  if (s.has_variadic_inputs()) {
    n += static_cast<size_t>(
        std::max(s.variadic_min_count(), s.has_trait(ops::OpTrait::kCommutative) ? 2 : 1));
  }
  // dtype per input: first preferred dtype allowed, shared by inputs with the same type_var.
  std::vector<DTypeCode> dtypes;
  for (size_t i = 0; i < n; ++i) {
    const ops::ArgSpec* spec = s.input_spec(i);
    std::optional<DTypeCode> pick;
    if (!spec->type_var.empty()) {
      for (size_t j = 0; j < i; ++j) {
        if (s.input_spec(j)->type_var == spec->type_var) pick = dtypes[j];
      }
    }
    for (DTypeCode d : kPreference) {
      if (!pick && spec->dtypes.contains(d)) pick = d;
    }
    if (!pick) {
      *why = "no dtype";
      return std::nullopt;
    }
    dtypes.push_back(*pick);
  }
  std::mt19937 rng(1234);
  for (const std::vector<Shape>& shapes : shape_attempts(n)) {
    Synthesized out;
    out.call.op = s.name();
    out.call.attrs = required_attrs(s.name());
    out.call.num_outputs = static_cast<size_t>(s.min_output_count());
    for (size_t i = 0; i < n; ++i) {
      out.call.inputs.push_back(synth_tensor(dtypes[i], shapes[i], rng));
      if (is_integral(dtypes[i])) out.call.constant_inputs.push_back(i);
    }
    Result<std::vector<Tensor>> r = run_op(out.call);
    if (r.is_ok()) {
      for (const Tensor& t : *r) out.types.push_back({t.dtype(), t.shape()});
      return out;
    }
    *why = r.status().to_string();
  }
  return std::nullopt;
}

// Registered ops whose traits select them for a property (so no test is instantiated only
// to be skipped for lacking the trait).
std::vector<std::string> ops_where(bool (*pred)(const ops::OpSchema&)) {
  std::vector<std::string> names;
  for (const ops::OpSchema* s : ops::OpRegistry::global().list()) {
    if (pred(*s)) names.push_back(s->name());
  }
  return names;
}

class OpProperties : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    schema_ = ops::OpRegistry::global().find(GetParam());
    ASSERT_NE(schema_, nullptr);
  }
  // Synthesizes inputs; on failure `why_` holds the last rejection (for the skip message).
  bool synth(Synthesized* out) {
    std::optional<Synthesized> s = synthesize(*schema_, &why_);
    if (!s) return false;
    *out = std::move(*s);
    return true;
  }
  std::string why_;
  const ops::OpSchema* schema_ = nullptr;
};
class DeterministicOps : public OpProperties {};
class ElementwiseOps : public OpProperties {};
class CommutativeOps : public OpProperties {};

TEST_P(DeterministicOps, SameResultTwice) {
  Synthesized s;
  if (!synth(&s)) GTEST_SKIP() << "generic inputs rejected (skip list at the top): " << why_;
  Result<std::vector<Tensor>> a = run_op(s.call);
  Result<std::vector<Tensor>> b = run_op(s.call);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  for (size_t k = 0; k < a->size(); ++k) {
    EXPECT_TRUE((*a)[k].bitwise_equal((*b)[k])) << "output " << k << " differs between runs";
  }
}

TEST_P(ElementwiseOps, KeepsBroadcastShape) {
  Synthesized s;
  if (!synth(&s)) GTEST_SKIP() << "generic inputs rejected (skip list at the top): " << why_;
  Shape expected;
  for (const Tensor& t : s.call.inputs) {
    if (!t.defined()) continue;
    Result<Shape> b = broadcast_shapes(expected, t.shape());
    ASSERT_TRUE(b.is_ok());
    expected = *b;
  }
  EXPECT_EQ(s.types[0].shape, expected);
}

TEST_P(CommutativeOps, InputsSwap) {
  Synthesized s;
  if (!synth(&s)) GTEST_SKIP() << "generic inputs rejected (skip list at the top): " << why_;
  ASSERT_GE(s.call.inputs.size(), 2u);
  OpCall swapped = s.call;
  std::reverse(swapped.inputs.begin(), swapped.inputs.end());
  swapped.constant_inputs.clear();
  Result<std::vector<Tensor>> a = run_op(s.call);
  Result<std::vector<Tensor>> b = run_op(swapped);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  for (size_t k = 0; k < a->size(); ++k) {
    EXPECT_TRUE((*a)[k].bitwise_equal((*b)[k])) << "output " << k << " changes when swapped";
  }
}

auto param_name = [](const auto& info) { return info.param; };
INSTANTIATE_TEST_SUITE_P(Registry, DeterministicOps,
                         ::testing::ValuesIn(ops_where([](const ops::OpSchema& s) {
                           return !s.has_trait(ops::OpTrait::kHasSideEffect);
                         })),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Registry, ElementwiseOps,
                         ::testing::ValuesIn(ops_where([](const ops::OpSchema& s) {
                           return s.has_trait(ops::OpTrait::kElementwise);
                         })),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Registry, CommutativeOps,
                         ::testing::ValuesIn(ops_where([](const ops::OpSchema& s) {
                           return s.has_trait(ops::OpTrait::kCommutative);
                         })),
                         param_name);

// Every user-facing op that declares kElementwise, wherever it was registered (the lists of
// include/frame/ops/elementwise.h, another schema file, a test or a plugin), must get generic
// inputs, so an op added outside the lists is checked instead of skipped. Ops made by passes
// (`_internal`, PY-021) carry structured attributes (a fused group's body) and are exempt.
TEST(OpPropertiesCoverage, EveryElementwiseOpIsCovered) {
  int checked = 0;
  for (const ops::OpSchema* s : ops::OpRegistry::global().list()) {
    if (!s->has_trait(ops::OpTrait::kElementwise) || s->name().ends_with("_internal")) continue;
    std::string why;
    EXPECT_TRUE(synthesize(*s, &why).has_value())
        << s->name() << " declares kElementwise but gets no generic inputs: " << why
        << " (give its required attributes in required_attrs() above)";
    ++checked;
  }
  EXPECT_GT(checked, 50);
}

// The elementwise family must be fully covered by the generic generator.
TEST(OpPropertiesCoverage, ElementwiseFamilyIsCovered) {
  std::vector<std::string> names = {"clip", "cast", "pow", "prelu", "where"};
#define FRAME_EW_NAME(name, F, types, traits, doc) names.push_back(#name);
  FRAME_EW_UNARY_OPS(FRAME_EW_NAME)
  FRAME_EW_BINARY_OPS(FRAME_EW_NAME)
  FRAME_EW_VARIADIC_OPS(FRAME_EW_NAME)
#undef FRAME_EW_NAME
  for (const std::string& op : names) {
    const ops::OpSchema* s = ops::OpRegistry::global().find(op);
    ASSERT_NE(s, nullptr) << op;
    std::string why;
    EXPECT_TRUE(synthesize(*s, &why).has_value()) << op << ": " << why;
  }
}

}  // namespace
}  // namespace frame::test
