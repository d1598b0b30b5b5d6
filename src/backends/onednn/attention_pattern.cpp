// onednn lowering pattern fuse_attention (docs/backends/onednn.md#attention), anchored at softmax:
//
//   [Q' = Q * c | Q / c]  S0 = MatMul(Q', KT)  [S0 * c | S0 / c]  [+ bias]  [Where(mask, fill, S)
//   or Where(mask, S, fill)]  P = Softmax(S, last axis)  O = MatMul(P, V)
//
// -> one attention_internal node (src/ops/schemas/attention_internal.h) computing O, whose kernel
// keeps the scores in tiles. The forms torch exports: BERT's additive mask (scale, then + mask),
// GPT-2's causal Where, nn.MultiheadAttention and ViT's query scaled before the MatMul, Swin's
// relative-position bias. Steps may come as plain nodes or inside one fused_elementwise_internal
// (operator-fusion runs earlier), and the bias as the add post-op fuse_post_ops gave the first
// MatMul. Scales are c of an f32 one-element constant; the scale steps come before the bias, and
// the bias before the mask (the order the kernel applies them). Every intermediate value must be
// read by the next step only and not be a graph output; the rewrite fires only when the onednn
// kernel takes the node (equal batch dims of Q, KT and V, f32).

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "backends/onednn/pattern_util.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/attention_internal.h"
#include "ops/schemas/nn_fused_internal.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::onednn {
namespace {

using ir::Graph;
using ir::NodeId;
using ir::ValueId;

// Longest chain of steps between the two MatMuls that is searched (scale, bias, mask and the
// softmax, with room for a split scale).
constexpr int kMaxDepth = 6;

// What the steps between the first MatMul and the Softmax do to the scores.
struct Steps {
  double scale = 1.0;
  ValueId bias = ir::kNoValue;
  ValueId mask = ir::kNoValue;
  double fill = 0.0;
  bool fill_when = true;
};

// The value of `v` when it is a one-element f32 constant of rank at most `rank`.
std::optional<double> scalar_constant(const Graph& g, ValueId v, size_t rank) {
  const Tensor* t = constant_of(g, v);
  if (t == nullptr || t->numel() != 1 || t->dtype() != DTypeCode::kFloat32 ||
      t->shape().size() > rank) {
    return std::nullopt;
  }
  return static_cast<double>(t->data<float>()[0]);
}

// Whether `v` is of `dtype` and broadcasts to `scores` without changing it.
bool broadcasts_to(const Graph& g, ValueId v, DTypeCode dtype, const Shape& scores) {
  const std::optional<ir::TensorType>& t = g.value(v).type;
  return t && t->dtype == dtype && ops::unidirectional_broadcastable(t->shape, scores);
}

// Takes elementwise node `n` (its inputs outer values, `cur` the scores) into `st`; false for a
// node that is not a step, or a step out of the kernel's order (scale, bias, mask).
bool take_step(const Graph& g, const ir::Node& n, ValueId cur, const Shape& scores, Steps& st) {
  const std::vector<ValueId>& in = n.inputs;
  if ((n.op == "mul" || n.op == "div") && in.size() == 2) {
    if (st.bias != ir::kNoValue || st.mask != ir::kNoValue || in[0] == in[1]) return false;
    const bool first = in[0] == cur;
    if (!first && (n.op == "div" || in[1] != cur)) return false;
    const std::optional<double> c = scalar_constant(g, first ? in[1] : in[0], scores.size());
    if (!c || (n.op == "div" && *c == 0.0)) return false;
    st.scale = n.op == "mul" ? st.scale * *c : st.scale / *c;
    return true;
  }
  if (n.op == "add" && in.size() == 2) {
    if (st.bias != ir::kNoValue || st.mask != ir::kNoValue || in[0] == in[1]) return false;
    if (in[0] != cur && in[1] != cur) return false;
    const ValueId other = in[0] == cur ? in[1] : in[0];
    if (!broadcasts_to(g, other, DTypeCode::kFloat32, scores)) return false;
    st.bias = other;
    return true;
  }
  if (n.op == "where" && in.size() == 3) {
    if (st.mask != ir::kNoValue || in[0] == cur) return false;
    if (!broadcasts_to(g, in[0], DTypeCode::kBool, scores)) return false;
    const bool fill_if_true = in[2] == cur && in[1] != cur;
    if (!fill_if_true && !(in[1] == cur && in[2] != cur)) return false;
    const std::optional<double> c = scalar_constant(g, fill_if_true ? in[1] : in[2], scores.size());
    if (!c) return false;
    st.mask = in[0];
    st.fill = *c;
    st.fill_when = fill_if_true;
    return true;
  }
  return false;
}

// The first MatMul: a matmul, or a fused_post_ops_internal of a matmul whose only post-op is the
// add of a bias (fuse_post_ops ran at the MatMul first).
bool is_scores_matmul(const ir::Node& n) {
  if (n.op == "matmul") return n.inputs.size() == 2 && n.outputs.size() == 1;
  if (n.op != ops::fused::kFusedPostOpsOp || n.inputs.size() != 4 || n.inputs[2] != ir::kNoValue) {
    return false;
  }
  const auto base = n.attrs.find("base_op");
  const auto post = n.attrs.find("post_ops");
  if (base == n.attrs.end() || post == n.attrs.end()) return false;
  const auto* b = std::get_if<std::string>(&base->second);
  const auto* p = std::get_if<std::vector<std::string>>(&post->second);
  return b != nullptr && *b == "matmul" && p != nullptr && p->size() == 1 && (*p)[0] == "add";
}

// The first MatMul above `v` through at most `depth` elementwise nodes (each operand of the
// scores' type that a node computes is tried), or nullopt.
std::optional<NodeId> find_scores_matmul(const Graph& g, ValueId v, const ir::TensorType& type,
                                         int depth) {
  const ir::Value& val = g.value(v);
  if (val.producer < 0 || depth < 0) return std::nullopt;
  const NodeId p = val.producer;
  const ir::Node& n = g.node(p);
  if (is_scores_matmul(n)) return p;
  if (n.op != "mul" && n.op != "div" && n.op != "add" && n.op != "where" &&
      n.op != "fused_elementwise_internal") {
    return std::nullopt;
  }
  for (ValueId in : n.inputs) {
    if (in == ir::kNoValue || g.value(in).type != type || constant_of(g, in) != nullptr) continue;
    if (auto m = find_scores_matmul(g, in, type, depth - 1)) return m;
  }
  return std::nullopt;
}

// The transpose node producing `v` when its `perm` attribute is of a form attention_internal
// takes in (ops::attention::is_rows_perm: the last axis kept last, or for `kt` moved to D,
// K's rows becoming KT's columns); else nullopt.
std::optional<NodeId> row_transpose(const Graph& g, ValueId v, bool kt = false) {
  const int64_t p = g.value(v).producer;
  if (p < 0) return std::nullopt;
  const ir::Node& t = g.node(static_cast<NodeId>(p));
  if (t.op != "transpose" || t.inputs.size() != 1 || t.outputs.size() != 1) return std::nullopt;
  const auto it = t.attrs.find("perm");
  const auto* perm = it == t.attrs.end() ? nullptr : std::get_if<std::vector<int64_t>>(&it->second);
  const std::optional<ir::TensorType>& in = g.value(t.inputs[0]).type;
  if (perm == nullptr || !in || !ops::attention::is_rows_perm(*perm, in->shape.size(), kt)) {
    return std::nullopt;
  }
  return static_cast<NodeId>(p);
}

// The `perm` of a transpose row_transpose accepted.
std::vector<int64_t> transpose_perm_of(const ir::Node& t) {
  return std::get<std::vector<int64_t>>(t.attrs.at("perm"));
}

Result<bool> fuse_attention(Graph& g, NodeId id) {
  const ir::Node sm = g.node(id);
  if (sm.inputs.size() != 1 || sm.outputs.size() != 1) return false;
  const std::optional<ir::TensorType> type = g.value(sm.inputs[0]).type;
  if (!type || type->dtype != DTypeCode::kFloat32 || type->shape.size() < 2) return false;
  const Shape& scores = type->shape;
  {
    const ops::NodeContext ctx =
        ops::make_node_context(g, sm, ops::OpRegistry::global().find(sm.op));
    Result<ops::SoftmaxView> view = ops::softmax_view(ctx, scores);
    if (!view.is_ok() || view->inner != 1 || view->n != scores.back()) return false;
  }
  // P's one reader: O = MatMul(P, V).
  const std::optional<NodeId> pv_id = sole_user(g, sm.outputs[0]);
  if (!pv_id) return false;
  const ir::Node pv = g.node(*pv_id);
  if (pv.op != "matmul" || pv.inputs.size() != 2 || pv.outputs.size() != 1 ||
      pv.inputs[0] != sm.outputs[0] || pv.inputs[1] == sm.outputs[0]) {
    return false;
  }
  const std::optional<NodeId> qk_id = find_scores_matmul(g, sm.inputs[0], *type, kMaxDepth);
  if (!qk_id) return false;
  const ir::Node qk = g.node(*qk_id);
  Steps steps;
  std::vector<NodeId> removed{*qk_id};
  if (qk.op != "matmul") {
    if (!broadcasts_to(g, qk.inputs[ops::fused::kResidualInput], DTypeCode::kFloat32, scores)) {
      return false;
    }
    steps.bias = qk.inputs[ops::fused::kResidualInput];
  }
  // Down from the first MatMul to the softmax: each value read once, by the next step.
  ValueId cur = qk.outputs[0];
  while (cur != sm.inputs[0]) {
    const std::optional<NodeId> u = sole_user(g, cur);
    if (!u || removed.size() > kMaxDepth) return false;
    const ir::Node& un = g.node(*u);
    if (un.op == "fused_elementwise_internal") {
      const std::optional<std::vector<ir::Node>> body = body_chain(un, cur);
      if (!body) return false;
      for (const ir::Node& n : *body) {
        if (!take_step(g, n, cur, scores, steps)) return false;
      }
    } else if (!take_step(g, un, cur, scores, steps)) {
      return false;
    }
    removed.push_back(*u);
    cur = un.outputs[0];
  }
  if (sole_user(g, cur) != id) return false;
  // A query scaled by a constant before the MatMul, read by nothing else: the scale is taken in.
  ValueId q = qk.inputs[0];
  NodeId q_reader = *qk_id;
  if (const int64_t p = g.value(q).producer; p >= 0 && sole_user(g, q) == *qk_id) {
    const ir::Node& qn = g.node(p);
    Steps pre;
    const ValueId raw = qn.inputs.size() != 2                     ? ir::kNoValue
                        : constant_of(g, qn.inputs[0]) == nullptr ? qn.inputs[0]
                                                                  : qn.inputs[1];
    if ((qn.op == "mul" || qn.op == "div") && raw != ir::kNoValue &&
        take_step(g, qn, raw, scores, pre)) {
      steps.scale *= pre.scale;
      q = raw;
      q_reader = static_cast<NodeId>(p);
      removed.push_back(p);
    }
  }
  ir::AttrMap attrs;
  // The head split of Q, K and V and the merge of O (torch's nn.MultiheadAttention:
  // [S, B*H, D] <-> [B*H, S, D], K to [B*H, D, S]), each a transpose that nothing else reads
  // and that keeps the last axis (K's: last or at D): taken in as q_perm, k_perm, v_perm and
  // o_perm, so the kernels read and write those rows through strides instead of a copy each.
  ValueId kt = qk.inputs[1], v = pv.inputs[1], out = pv.outputs[0];
  if (const std::optional<NodeId> t = row_transpose(g, kt, true); t && sole_user(g, kt) == *qk_id) {
    attrs["k_perm"] = transpose_perm_of(g.node(*t));
    kt = g.node(*t).inputs[0];
    removed.push_back(*t);
  }
  if (const std::optional<NodeId> t = row_transpose(g, q); t && sole_user(g, q) == q_reader) {
    attrs["q_perm"] = transpose_perm_of(g.node(*t));
    q = g.node(*t).inputs[0];
    removed.push_back(*t);
  }
  if (const std::optional<NodeId> t = row_transpose(g, v); t && sole_user(g, v) == *pv_id) {
    attrs["v_perm"] = transpose_perm_of(g.node(*t));
    v = g.node(*t).inputs[0];
    removed.push_back(*t);
  }
  if (const std::optional<NodeId> t = sole_user(g, out);
      t && g.node(*t).op == "transpose" && g.node(*t).outputs.size() == 1 &&
      row_transpose(g, g.node(*t).outputs[0]) == *t) {
    attrs["o_perm"] = transpose_perm_of(g.node(*t));
    out = g.node(*t).outputs[0];
    removed.push_back(*t);
  }
  std::vector<ValueId> inputs{q, kt, v, steps.bias, steps.mask};
  while (inputs.back() == ir::kNoValue) inputs.pop_back();
  attrs["scale"] = steps.scale;
  if (steps.mask != ir::kNoValue) {
    attrs["mask_fill"] = steps.fill;
    attrs["mask_fill_when"] = int64_t{steps.fill_when ? 1 : 0};
  }
  const std::string_view op = ops::attention::kAttentionOp;
  if (!onednn_runs(g, op, sm.name, inputs, attrs)) return false;
  removed.push_back(id);
  removed.push_back(*pv_id);
  return replace_with(g, removed, out, op, sm.name, std::move(inputs), std::move(attrs));
}

}  // namespace

FRAME_REGISTER_INTERPRETED_LOWERING_PATTERN("onednn", fuse_attention, softmax, fuse_attention);

}  // namespace frame::backends::onednn
