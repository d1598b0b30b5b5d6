// Proves every builtin op of the operator library is registered with a shape function and a
// cpu kernel after linking libframe.so (static registration survives linking; ARCH-041).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::ops {
namespace {

// The op set of the operator-library issue (ONNX names in snake case).
const std::vector<std::string> kBuiltinOps = {
    // unary elementwise
    "abs", "neg", "exp", "log", "sqrt", "reciprocal", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "sigmoid", "relu", "leaky_relu",
    "elu", "selu", "celu", "softplus", "softsign", "hard_sigmoid", "hard_swish", "gelu", "mish",
    "floor", "ceil", "round", "sign", "not", "is_nan", "is_inf", "clip", "cast", "identity",
    // binary / n-ary
    "add", "sub", "mul", "div", "pow", "mod", "min", "max", "sum", "mean", "equal", "less",
    "less_equal", "greater", "greater_equal", "and", "or", "xor", "bit_shift", "prelu", "where",
    // reductions
    "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_l1",
    "reduce_l2", "reduce_log_sum", "reduce_log_sum_exp", "reduce_sum_square", "arg_max", "arg_min",
    "cumsum", "top_k",
    // linear algebra and NN
    "matmul", "gemm", "conv", "conv_transpose", "max_pool", "average_pool", "global_average_pool",
    "global_max_pool", "batch_normalization", "instance_normalization", "layer_normalization",
    "softmax", "log_softmax", "lrn", "dropout", "einsum",
    // data movement
    "reshape", "transpose", "concat", "split", "slice", "gather", "gather_elements", "gather_nd",
    "scatter_elements", "scatter_nd", "expand", "squeeze", "unsqueeze", "flatten", "pad", "tile",
    "shape", "size", "constant", "constant_of_shape", "range", "one_hot", "depth_to_space",
    "space_to_depth", "resize", "trilu",
    // side effects / randomness
    "random_uniform", "random_normal", "random_uniform_like", "random_normal_like", "bernoulli",
    "print"};

TEST(Builtins, EveryOpIsRegisteredWithShapeFunctionAndCpuKernel) {
  std::vector<std::string> missing;
  for (const std::string& name : kBuiltinOps) {
    const OpSchema* s = OpRegistry::global().find(name);
    if (s == nullptr) {
      missing.push_back(name + " (no schema)");
    } else if (s->shape_fn() == nullptr) {
      missing.push_back(name + " (no shape function)");
    } else if (KernelRegistry::global().find(name, "cpu") == nullptr) {
      missing.push_back(name + " (no cpu kernel)");
    }
  }
  std::string all;
  for (const auto& m : missing) all += m + "\n";
  EXPECT_TRUE(missing.empty()) << all;
}

TEST(Builtins, SideEffectOpsCarryTheTrait) {
  for (const char* name : {"random_uniform", "random_normal", "random_uniform_like",
                           "random_normal_like", "bernoulli", "print"}) {
    const OpSchema* s = OpRegistry::global().find(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_TRUE(s->has_trait(OpTrait::kHasSideEffect)) << name;
  }
}

// The composites named by the operator-library issue carry a decomposition.
TEST(Builtins, CompositesHaveDecompositions) {
  for (const char* name :
       {"gelu", "layer_normalization", "hard_swish", "mish", "softplus", "log_softmax", "reduce_l2",
        "reduce_log_sum_exp", "instance_normalization"}) {
    const OpSchema* s = OpRegistry::global().find(name);
    ASSERT_NE(s, nullptr) << name;
    EXPECT_NE(s->decompose_fn(), nullptr) << name;
  }
}

}  // namespace
}  // namespace frame::ops
