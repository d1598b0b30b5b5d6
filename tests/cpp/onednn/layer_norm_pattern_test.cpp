// The onednn lowering pattern fuse_layer_norm (src/backends/onednn/layer_norm_pattern.cpp): the
// LayerNormalization torch exports below opset 17 becomes one layer_normalization node. Each
// rewritten graph is checked against the same graph compiled for cpu alone (the unfused
// reduce_mean, sub, pow, add, sqrt, div, mul cpu kernels: an independent reference), and the
// cases where it must not fire leave the reductions in place.

#include <gtest/gtest.h>

#include "cpp/onednn/linear_test_util.h"
#include "frame/passes/pass.h"

namespace frame::test::linear {
namespace {

using ints = std::vector<int64_t>;
using ir::ValueId;

struct Variant {
  bool scale = true, shift = true;
  bool mul_square = false;      // d * d instead of pow(d, 2)
  int64_t axis = -1;            // reduced axis of both means
  bool d_is_output = false;     // d also a graph output
  bool residual_after = false;  // y + x after the shift
};

// x [2, 5, 16] -> the decomposed LayerNormalization of torch's opset-14 export.
ir::Graph decomposed(const Variant& v) {
  ir::Graph g("layer_norm");
  const ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {2, 5, 16}});
  const ir::AttrMap mean{{"axes", ints{v.axis}}, {"keepdims", int64_t{1}}};
  const ValueId m = add_op(g, "reduce_mean", "mean", {x}, mean);
  const ValueId d = add_op(g, "sub", "sub", {x, m});
  const ValueId sq =
      v.mul_square ? add_op(g, "mul", "square", {d, d})
                   : add_op(g, "pow", "square", {d, g.add_constant("two", Tensor::scalar(2.0F))});
  const ValueId var = add_op(g, "reduce_mean", "var", {sq}, mean);
  const ValueId s =
      add_op(g, "sqrt", "sqrt",
             {add_op(g, "add", "add_eps", {var, g.add_constant("eps", Tensor::scalar(1e-5F))})});
  ValueId y = add_op(g, "div", "div", {d, s});
  if (v.scale) y = add_op(g, "mul", "scale", {y, g.add_constant("gamma", grid_tensor({16}, 2))});
  if (v.shift) y = add_op(g, "add", "shift", {y, g.add_constant("beta", grid_tensor({16}, 3))});
  if (v.residual_after) y = add_op(g, "add", "residual", {y, x});
  g.add_output(y);
  if (v.d_is_output) g.add_output(d);
  return g;
}

TEST(OnednnLayerNormPattern, TorchsDecomposedLayerNormBecomesOneNode) {
  for (const Variant& v :
       {Variant{}, Variant{.scale = false, .shift = false}, Variant{.shift = false},
        Variant{.scale = false}, Variant{.mul_square = true}}) {
    const ir::Graph g = decomposed(v);
    const ir::Graph low = lowered(g, {"onednn", "cpu"});
    EXPECT_EQ(count_op(low, "layer_normalization"), 1)
        << v.scale << v.shift << v.mul_square << v.residual_after;
    EXPECT_EQ(count_op(low, "reduce_mean"), 0);
    expect_same_as_unfused(g, {{"x", grid_tensor({2, 5, 16}, 1)}});
  }
}

TEST(OnednnLayerNormPattern, DoesNotFireWhereTheChainDiffers) {
  // Means over another axis; d read by a graph output too; a residual add after the shift,
  // which operator-fusion puts into the same group as div, mul and add (a group is taken whole).
  for (const Variant& v :
       {Variant{.axis = 1}, Variant{.d_is_output = true}, Variant{.residual_after = true}}) {
    const ir::Graph g = decomposed(v);
    EXPECT_EQ(count_op(lowered(g, {"onednn", "cpu"}), "layer_normalization"), 0) << v.axis;
    expect_same_as_unfused(g, {{"x", grid_tensor({2, 5, 16}, 1)}});
  }
  EXPECT_EQ(count_op(lowered(decomposed(Variant{}), {"cpu"}), "layer_normalization"), 0);
}

}  // namespace
}  // namespace frame::test::linear
