// onednn lowering pattern fuse_layer_norm (docs/backends/onednn.md#lowering-patterns), anchored
// at reduce_mean: the LayerNormalization torch exports below opset 17,
//
//   m = ReduceMean(x, last axis)  d = x - m  v = ReduceMean(d ^ 2 | d * d)  s = Sqrt(v + eps)
//   y = d / s  [y = y * gamma]  [y = y + beta]
//
// -> one layer_normalization node (ONNX LayerNormalization 17, axis -1), run by oneDNN's
// layer_normalization primitive instead of six to eight kernels that each read the tensor. The
// steps after v may be plain nodes or fused_elementwise_internal groups (operator-fusion runs
// first), each group taken whole. eps is a one-element f32 constant, gamma and beta f32
// constants of shape [D] (or [1, ..., D]), D the last dim; d is read only by the square and the
// division, every other intermediate only by the next step, and none is a graph output. Fires
// only when the onednn kernel takes the node.

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/onednn/pattern_util.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::onednn {
namespace {

using ir::Graph;
using ir::NodeId;
using ir::ValueId;

// Whether `n` is an f32 reduce_mean of exactly the last axis that keeps dims.
bool mean_of_last_axis(const Graph& g, const ir::Node& n) {
  if (n.op != "reduce_mean" || n.outputs.size() != 1 || n.inputs.empty()) return false;
  const std::optional<ir::TensorType>& xt = g.value(n.inputs[0]).type;
  const std::optional<ir::TensorType>& yt = g.value(n.outputs[0]).type;
  if (!xt || !yt || xt->dtype != DTypeCode::kFloat32 || xt->shape.empty() ||
      yt->shape.size() != xt->shape.size()) {
    return false;
  }
  const ops::NodeContext ctx = ops::make_node_context(g, n, ops::OpRegistry::global().find(n.op));
  const Tensor* axes = n.inputs.size() > 1 ? constant_of(g, n.inputs[1]) : nullptr;
  if (n.inputs.size() > 1 && n.inputs[1] != ir::kNoValue && axes == nullptr) return false;
  Result<std::vector<bool>> reduced =
      ops::nn::resolve_reduce_axes(ctx, static_cast<int64_t>(xt->shape.size()), axes);
  if (!reduced.is_ok()) return false;
  for (size_t i = 0; i < reduced->size(); ++i) {
    if ((*reduced)[i] != (i + 1 == reduced->size())) return false;
  }
  return true;
}

// The live nodes reading `v` (one entry per node), or nullopt when `v` is a graph output.
std::optional<std::vector<NodeId>> readers(const Graph& g, ValueId v) {
  if (g.is_output(v)) return std::nullopt;
  std::vector<NodeId> out;
  for (NodeId id : g.node_ids()) {
    const std::vector<ValueId>& in = g.node(id).inputs;
    if (std::find(in.begin(), in.end(), v) != in.end()) out.push_back(id);
  }
  return out;
}

// The value of a one-element f32 constant `v`.
std::optional<float> scalar_of(const Graph& g, ValueId v) {
  const Tensor* t = constant_of(g, v);
  if (t == nullptr || t->numel() != 1 || t->dtype() != DTypeCode::kFloat32) return std::nullopt;
  return t->data<float>()[0];
}

// Whether `v` is an f32 constant of d elements shaped [d] or [1, ..., 1, d].
bool last_axis_constant(const Graph& g, ValueId v, int64_t d) {
  const Tensor* t = constant_of(g, v);
  if (t == nullptr || t->dtype() != DTypeCode::kFloat32 || t->numel() != d || t->shape().empty() ||
      t->shape().back() != d) {
    return false;
  }
  return true;
}

// The other operand of binary node `n` whose one operand is `cur`, or kNoValue.
ValueId other_operand(const ir::Node& n, ValueId cur) {
  if (n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return ir::kNoValue;
  if (n.inputs[0] == cur) return n.inputs[1];
  if (n.inputs[1] == cur) return n.inputs[0];
  return ir::kNoValue;
}

Result<bool> fuse_layer_norm(Graph& g, NodeId id) {
  const ir::Node m1 = g.node(id);
  if (!mean_of_last_axis(g, m1)) return false;
  const ValueId x = m1.inputs[0];
  const Shape shape = g.value(x).type->shape;
  const int64_t dim = shape.back();
  // d = x - m, read by the square and the division only.
  const std::optional<NodeId> sub_id = sole_user(g, m1.outputs[0]);
  if (!sub_id) return false;
  const ir::Node sub = g.node(*sub_id);
  if (sub.op != "sub" || sub.inputs.size() != 2 || sub.inputs[0] != x ||
      sub.inputs[1] != m1.outputs[0] || g.value(sub.outputs[0]).type != g.value(x).type) {
    return false;
  }
  const ValueId d = sub.outputs[0];
  const std::optional<std::vector<NodeId>> d_readers = readers(g, d);
  if (!d_readers || d_readers->size() != 2) return false;
  // The square: pow(d, 2) or mul(d, d).
  NodeId sq_id = -1;
  for (NodeId r : *d_readers) {
    const ir::Node& n = g.node(r);
    const bool pow2 = n.op == "pow" && n.inputs.size() == 2 && n.inputs[0] == d &&
                      scalar_of(g, n.inputs[1]) == 2.0F;
    const bool mul_dd =
        n.op == "mul" && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == d;
    if (pow2 || mul_dd) sq_id = r;
  }
  if (sq_id < 0) return false;
  const std::optional<NodeId> m2_id = sole_user(g, g.node(sq_id).outputs[0]);
  if (!m2_id || !mean_of_last_axis(g, g.node(*m2_id)) ||
      g.node(*m2_id).inputs[0] != g.node(sq_id).outputs[0]) {
    return false;
  }
  // From the variance on: add eps, sqrt, divide d, then optionally scale and shift, through
  // plain nodes or whole fused groups.
  std::vector<NodeId> removed{id, *sub_id, sq_id, *m2_id};
  std::vector<ir::Node> steps;
  ValueId cur = g.node(*m2_id).outputs[0];
  ValueId out = ir::kNoValue;
  NodeId div_node = -1;
  float eps = 0.0F;
  ValueId gamma = ir::kNoValue, beta = ir::kNoValue;
  constexpr int kMaxSteps = 5;  // add, sqrt, div, mul, add
  int taken = 0;
  while (taken < kMaxSteps) {
    const std::optional<NodeId> u = sole_user(g, cur);
    // Past the division, a reader that is not a step ends the chain; before it, no fusion.
    if (!u) break;
    const ir::Node& un = g.node(*u);
    std::vector<ir::Node> body;
    if (un.op == "fused_elementwise_internal") {
      std::optional<std::vector<ir::Node>> b = body_chain(un, cur);
      if (!b) break;
      body = std::move(*b);
    } else {
      body.push_back(un);
    }
    // Every node of `body` must be the next step, in order.
    bool ok = true;
    for (const ir::Node& n : body) {
      const ValueId o = other_operand(n, cur);
      switch (taken) {
        case 0: {  // v + eps
          const std::optional<float> e = scalar_of(g, o);
          ok = n.op == "add" && e.has_value();
          if (ok) eps = *e;
          break;
        }
        case 1:  // sqrt
          ok = n.op == "sqrt" && n.inputs.size() == 1 && n.inputs[0] == cur;
          break;
        case 2:  // d / s
          ok = n.op == "div" && n.inputs.size() == 2 && n.inputs[0] == d && n.inputs[1] == cur;
          break;
        case 3:  // * gamma, or straight to + beta
          if (n.op == "mul" && last_axis_constant(g, o, dim)) {
            gamma = o;
          } else if (n.op == "add" && last_axis_constant(g, o, dim)) {
            beta = o;
            ++taken;
          } else {
            ok = false;
          }
          break;
        default:  // + beta
          ok = n.op == "add" && beta == ir::kNoValue && last_axis_constant(g, o, dim);
          if (ok) beta = o;
          break;
      }
      if (!ok) break;
      ++taken;
    }
    if (!ok) {
      if (taken < 3 || un.op == "fused_elementwise_internal") return false;
      break;  // a plain node after the division that is not a step: the chain ends before it
    }
    if (taken >= 3 && div_node < 0) div_node = *u;
    removed.push_back(*u);
    cur = un.outputs[0];
    out = cur;
  }
  if (taken < 3 || out == ir::kNoValue) return false;
  // d's other reader is the node that divides it.
  const NodeId other_reader = (*d_readers)[0] == sq_id ? (*d_readers)[1] : (*d_readers)[0];
  if (other_reader != div_node) return false;
  if (g.value(out).type != g.value(x).type) return false;
  std::vector<ValueId> inputs{x, gamma, beta};
  if (beta == ir::kNoValue) inputs.pop_back();
  ir::AttrMap attrs{{"axis", int64_t{-1}}, {"epsilon", static_cast<double>(eps)}};
  // Without a scale the node gets ones (LayerNormalization's Scale is required).
  const Tensor ones =
      Tensor::from_vector({dim}, std::vector<float>(static_cast<size_t>(dim), 1.0F));
  std::vector<std::pair<size_t, const Tensor*>> overrides;
  if (gamma == ir::kNoValue) overrides.emplace_back(1, &ones);
  if (!onednn_runs(g, "layer_normalization", m1.name, inputs, attrs, overrides)) return false;
  if (gamma == ir::kNoValue) {
    inputs[1] = g.add_constant(g.unique_value_name(m1.name + "_ones"), ones);
  }
  return replace_with(g, removed, out, "layer_normalization", m1.name, std::move(inputs),
                      std::move(attrs));
}

}  // namespace

FRAME_REGISTER_INTERPRETED_LOWERING_PATTERN("onednn", fuse_layer_norm, reduce_mean,
                                            fuse_layer_norm);

}  // namespace frame::backends::onednn
