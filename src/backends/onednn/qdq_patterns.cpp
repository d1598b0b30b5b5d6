// QDQ lowering patterns of the onednn backend (docs/backends/onednn.md#lowering-patterns):
// a quantized model's DequantizeLinear -> Conv / MatMul -> QuantizeLinear runs as one int8
// oneDNN primitive instead of a float one between two elementwise conversions.
//   quantize_qdq_conv: conv(dequantize_linear(xq, xs, xzp), W, B) read only by
//     quantize_linear(., ys, yzp) -> qlinear_conv(xq, xs, xzp, wq, ws, 0, ys, yzp, bq);
//   quantize_qdq_matmul: matmul(dequantize_linear(aq, as, azp), W) read only by
//     quantize_linear(., ys, yzp) -> qlinear_matmul(aq, as, azp, wq, ws, 0, ys, yzp);
//   either with a relu before the quantize (a fused_post_ops_internal of the base op and one
//     relu, as fuse_post_ops leaves it) -> the int8 node then max(., yzp);
//   quantize_before_max_pool: quantize_linear(max_pool(v)) -> max_pool(quantize_linear(v)),
//     which exposes a conv -> (relu ->) quantize for the patterns above.
// Constant folding has already turned the weights' own DequantizeLinear into a float constant
// W, so the int8 weights are recovered: per output channel (per column of a matmul W) the scale
// s = max|W| / 127 of symmetric int8 quantization, wq = round(W / s), and the pattern fires
// only when every W / s is within 1e-3 of an integer (W really is int8 values times s). The
// bias becomes int32 bq = round(B / (xs * s)) in double. Every scale and zero point must be a
// one-element constant (per-channel activations are not matched). The integer result can
// differ from the float QDQ graph by one quantization step where the float sum lies near a
// rounding boundary. Each fires only when the onednn kernel supports the node it creates.

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "backends/onednn/pattern_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::backends::onednn {
namespace {

using ir::Graph;
using ir::NodeId;
using ir::ValueId;

bool one_element(const Tensor* t) {
  return t != nullptr && t->numel() == 1 && t->shape().size() <= 1;
}

// The live node producing `v`, or nullopt (graph input or constant).
std::optional<NodeId> producer(const Graph& g, ValueId v) {
  for (NodeId id : g.node_ids()) {
    for (ValueId o : g.node(id).outputs) {
      if (o == v) return id;
    }
  }
  return std::nullopt;
}

// What a QDQ match around a conv / matmul node `id` found.
struct QdqMatch {
  NodeId dq, q;
  bool dq_dies = false;  // the DequantizeLinear output is read by the anchor only
  ValueId xq, xs, xzp, ys, yzp;
  float x_scale = 0.0f;
};

std::optional<QdqMatch> match_qdq(const Graph& g, NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
  const std::optional<NodeId> q = sole_user(g, n.outputs[0]);
  if (!q || g.node(*q).op != "quantize_linear") return std::nullopt;
  const ir::Node& qn = g.node(*q);
  if (qn.inputs.size() < 2 || qn.inputs[0] != n.outputs[0] ||
      !one_element(constant_of(g, qn.inputs[1])) ||
      constant_of(g, qn.inputs[1])->dtype() != DTypeCode::kFloat32) {
    return std::nullopt;
  }
  const bool has_yzp = qn.inputs.size() > 2 && qn.inputs[2] != ir::kNoValue;
  if (!has_yzp || !one_element(constant_of(g, qn.inputs[2]))) return std::nullopt;
  const std::optional<NodeId> dq = producer(g, n.inputs[0]);
  if (!dq || g.node(*dq).op != "dequantize_linear") return std::nullopt;
  const ir::Node& dn = g.node(*dq);
  if (dn.inputs.size() < 3 || dn.inputs[2] == ir::kNoValue) return std::nullopt;
  const Tensor* xs = constant_of(g, dn.inputs[1]);
  if (!one_element(xs) || xs->dtype() != DTypeCode::kFloat32) return std::nullopt;
  if (!one_element(constant_of(g, dn.inputs[2]))) return std::nullopt;
  QdqMatch m{*dq,          *q,           false,        dn.inputs[0],        dn.inputs[1],
             dn.inputs[2], qn.inputs[1], qn.inputs[2], xs->data<float>()[0]};
  m.dq_dies = sole_user(g, dn.outputs[0]) == id;
  return m;
}

// Symmetric int8 weights of a float constant, one scale per group of `inner` consecutive
// elements taken with stride: element (o, i) of group o is at o * o_stride + i * i_stride.
// nullopt unless every element is (within 1e-3) an integer multiple of its group's scale.
struct Int8Weights {
  Tensor q;
  std::vector<float> scales;
};

std::optional<Int8Weights> recover_int8(const Tensor& w, int64_t groups, int64_t inner,
                                        int64_t o_stride, int64_t i_stride) {
  if (w.dtype() != DTypeCode::kFloat32) return std::nullopt;
  Result<Tensor> q = Tensor::empty(DTypeCode::kInt8, w.shape());
  if (!q.is_ok()) return std::nullopt;
  Int8Weights r{std::move(q).value(), std::vector<float>(static_cast<size_t>(groups))};
  const float* src = w.data<float>();
  int8_t* dst = r.q.data<int8_t>();
  for (int64_t o = 0; o < groups; ++o) {
    float amax = 0.0f;
    for (int64_t i = 0; i < inner; ++i)
      amax = std::fmax(amax, std::fabs(src[o * o_stride + i * i_stride]));
    if (!std::isfinite(amax)) return std::nullopt;
    const float s = amax > 0.0f ? amax / 127.0f : 1.0f;
    r.scales[static_cast<size_t>(o)] = s;
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t at = o * o_stride + i * i_stride;
      const double k = static_cast<double>(src[at]) / s;
      const double kr = std::nearbyint(k);
      if (std::fabs(k - kr) > 1e-3 || kr < -127.0 || kr > 127.0) return std::nullopt;
      dst[at] = static_cast<int8_t>(kr);
    }
  }
  return r;
}

// Replaces the anchor, its QuantizeLinear (and the DequantizeLinear when nothing else reads
// it) by node `op`, whose output takes over the QuantizeLinear output's name, type and uses.
// With `relu` (the anchor applied a relu before the quantize) the int8 node is followed by
// max(., y_zero_point): quantize(relu(v)) = max(quantize(v), quantize(0)) since quantize is
// monotonic and quantize(0) = y_zero_point.
Result<bool> replace_qdq(Graph& g, NodeId anchor, const QdqMatch& m, std::string_view op,
                         std::vector<ValueId> inputs,
                         std::vector<std::pair<size_t, Tensor>> constants, ir::AttrMap attrs,
                         bool relu) {
  const ir::Node an = g.node(anchor);
  const ValueId out = g.node(m.q).outputs[0];
  const std::string out_name = g.value(out).name;
  const std::optional<ir::TensorType> type = g.value(out).type;
  for (auto& [i, t] : constants) {
    inputs[i] =
        g.add_constant(g.unique_value_name(an.name + "_int8_" + std::to_string(i)), std::move(t));
  }
  g.remove_node(m.q);
  g.remove_node(anchor);
  if (m.dq_dies) g.remove_node(m.dq);
  std::vector<std::string> names{out_name};
  if (relu) names = {g.unique_value_name(an.name + "_int8")};
  FRAME_ASSIGN_OR_RETURN(NodeId n,
                         g.create_node(op, an.name, std::move(inputs), 1, std::move(attrs), names));
  ValueId nv = g.node(n).outputs[0];
  g.value(nv).type = type;
  if (relu) {
    FRAME_ASSIGN_OR_RETURN(NodeId r,
                           g.create_node("max", an.name + "_relu", {nv, m.yzp}, 1, {}, {out_name}));
    nv = g.node(r).outputs[0];
    g.value(nv).type = type;
  }
  g.replace_all_uses(out, nv);
  return true;
}

// A fused_post_ops_internal node made by fuse_post_ops from a plain `base` node and one relu
// (no residual, plain layouts): true, with the base op's attributes in `*base_attrs`.
bool base_plus_relu(const Graph& g, NodeId id, std::string_view base, ir::AttrMap* base_attrs) {
  const ir::Node& n = g.node(id);
  const ops::NodeContext ctx = ops::make_node_context(g, n, ops::OpRegistry::global().find(n.op));
  Result<ops::fused::FusedSpec> spec = ops::fused::decode_fused(ctx);
  if (!spec.is_ok() || spec->base_op != base || spec->has_residual || spec->post_ops.size() != 1 ||
      spec->post_ops[0].kind != ops::fused::PostOpKind::kRelu ||
      spec->src_layout != ops::fused::ActivationLayout::kPlain ||
      spec->dst_layout != ops::fused::ActivationLayout::kPlain) {
    return false;
  }
  *base_attrs = n.attrs;
  for (const char* a : {"base_op", "post_ops", "post_op_params"}) base_attrs->erase(a);
  for (std::string_view a :
       {ops::fused::kSrcLayoutAttr, ops::fused::kDstLayoutAttr, ops::fused::kResidualLayoutAttr}) {
    base_attrs->erase(std::string(a));
  }
  return true;
}

Result<bool> quantize_qdq_conv(Graph& g, NodeId id) {
  ir::AttrMap attrs = g.node(id).attrs;
  const bool relu = g.node(id).op != "conv";
  if (relu && !base_plus_relu(g, id, "conv", &attrs)) return false;
  const std::optional<QdqMatch> m = match_qdq(g, id);
  if (!m) return false;
  const ir::Node conv = g.node(id);
  if (conv.inputs.size() < 2) return false;
  const Tensor* w = constant_of(g, conv.inputs[1]);
  if (w == nullptr || w->rank() < 3 || w->dim(0) == 0) return false;
  const int64_t mch = w->dim(0), per = w->numel() / mch;
  std::optional<Int8Weights> wq = recover_int8(*w, mch, per, per, 1);
  if (!wq) return false;
  const bool has_b = conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoValue;
  const Tensor* b = has_b ? constant_of(g, conv.inputs[2]) : nullptr;
  if (has_b && (b == nullptr || b->dtype() != DTypeCode::kFloat32 || b->numel() != mch)) {
    return false;
  }
  FRAME_ASSIGN_OR_RETURN(Tensor ws, Tensor::empty(DTypeCode::kFloat32, Shape{mch}));
  FRAME_ASSIGN_OR_RETURN(Tensor wzp, Tensor::zeros(DTypeCode::kInt8, Shape{mch}));
  FRAME_ASSIGN_OR_RETURN(Tensor bq, Tensor::empty(DTypeCode::kInt32, Shape{mch}));
  for (int64_t o = 0; o < mch; ++o) {
    const float s = wq->scales[static_cast<size_t>(o)];
    ws.data<float>()[o] = s;
    const double v =
        b == nullptr ? 0.0
                     : std::nearbyint(static_cast<double>(b->data<float>()[o]) /
                                      (static_cast<double>(m->x_scale) * static_cast<double>(s)));
    if (!(std::fabs(v) < 2147483647.0)) return false;
    bq.data<int32_t>()[o] = static_cast<int32_t>(v);
  }
  std::vector<ValueId> inputs{m->xq,        m->xs, m->xzp, ir::kNoValue, ir::kNoValue,
                              ir::kNoValue, m->ys, m->yzp, ir::kNoValue};
  if (!onednn_runs(g, "qlinear_conv", conv.name, inputs, attrs,
                   {{3, &wq->q}, {4, &ws}, {5, &wzp}, {8, &bq}})) {
    return false;
  }
  std::vector<std::pair<size_t, Tensor>> consts;
  consts.emplace_back(3, std::move(wq->q));
  consts.emplace_back(4, std::move(ws));
  consts.emplace_back(5, std::move(wzp));
  consts.emplace_back(8, std::move(bq));
  return replace_qdq(g, id, *m, "qlinear_conv", std::move(inputs), std::move(consts),
                     std::move(attrs), relu);
}

Result<bool> quantize_qdq_matmul(Graph& g, NodeId id) {
  ir::AttrMap attrs;
  const bool relu = g.node(id).op != "matmul";
  if (relu && !base_plus_relu(g, id, "matmul", &attrs)) return false;
  const std::optional<QdqMatch> m = match_qdq(g, id);
  if (!m) return false;
  const ir::Node mm = g.node(id);
  if (mm.inputs.size() < 2 || (mm.inputs.size() > 2 && mm.inputs[2] != ir::kNoValue)) return false;
  const Tensor* w = constant_of(g, mm.inputs[1]);
  if (w == nullptr || w->rank() != 2 || w->dim(1) == 0) return false;
  const int64_t k = w->dim(0), n = w->dim(1);
  // One scale per column of W.
  std::optional<Int8Weights> wq = recover_int8(*w, n, k, 1, n);
  if (!wq) return false;
  FRAME_ASSIGN_OR_RETURN(Tensor ws, Tensor::empty(DTypeCode::kFloat32, Shape{n}));
  for (int64_t j = 0; j < n; ++j) ws.data<float>()[j] = wq->scales[static_cast<size_t>(j)];
  Tensor wzp = Tensor::scalar<int8_t>(0);
  std::vector<ValueId> inputs{m->xq,        m->xs,        m->xzp, ir::kNoValue,
                              ir::kNoValue, ir::kNoValue, m->ys,  m->yzp};
  if (!onednn_runs(g, "qlinear_matmul", mm.name, inputs, {}, {{3, &wq->q}, {4, &ws}, {5, &wzp}})) {
    return false;
  }
  std::vector<std::pair<size_t, Tensor>> consts;
  consts.emplace_back(3, std::move(wq->q));
  consts.emplace_back(4, std::move(ws));
  consts.emplace_back(5, std::move(wzp));
  return replace_qdq(g, id, *m, "qlinear_matmul", std::move(inputs), std::move(consts), {}, relu);
}

// max_pool(v) read only by quantize_linear(., ys, yzp) with a one-element positive scale ->
// max_pool(quantize_linear(v, ys, yzp)): quantize is monotonic (non-decreasing), so it commutes
// with max and the result is the same integers. The pool then moves u8/i8 instead of f32, and
// the conv (+ relu) before it, now read by a QuantizeLinear, becomes a qlinear_conv (the stem
// of a ResNet: conv -> relu -> maxpool -> Q). Fires only when onednn pools the quantized
// dtype with the node's attributes.
Result<bool> quantize_before_max_pool(Graph& g, NodeId id) {
  const ir::Node pool = g.node(id);
  if (pool.inputs.size() != 1 || pool.outputs.size() != 1) return false;
  const std::optional<NodeId> q = sole_user(g, pool.outputs[0]);
  if (!q || g.node(*q).op != "quantize_linear") return false;
  const ir::Node qn = g.node(*q);
  if (qn.inputs.size() < 3 || qn.inputs[0] != pool.outputs[0] || qn.inputs[2] == ir::kNoValue) {
    return false;
  }
  const Tensor* ys = constant_of(g, qn.inputs[1]);
  if (!one_element(ys) || ys->dtype() != DTypeCode::kFloat32 || !(ys->data<float>()[0] > 0.0f) ||
      !one_element(constant_of(g, qn.inputs[2]))) {
    return false;
  }
  const ValueId out = qn.outputs[0];
  const std::optional<ir::TensorType> out_type = g.value(out).type;
  const std::optional<ir::TensorType> in_type = g.value(pool.inputs[0]).type;
  if (!out_type || !in_type) return false;
  const ir::TensorType q_type{out_type->dtype, in_type->shape};
  {
    const ops::OpSchema* schema = ops::OpRegistry::global().find("max_pool");
    const ops::KernelDef* k = ops::KernelRegistry::global().find("max_pool", "onednn");
    if (schema == nullptr || k == nullptr) return false;
    ops::NodeContext ctx;
    ctx.op = "max_pool";
    ctx.node_name = pool.name;
    ctx.attrs = &pool.attrs;
    ctx.schema = schema;
    ctx.input_types = {q_type};
    ctx.input_present = {true};
    ctx.input_constants = {nullptr};
    if (!schema->infer(ctx).is_ok() || !k->supports(ctx).is_ok()) return false;
  }
  const std::string out_name = g.value(out).name;
  g.remove_node(*q);
  g.remove_node(id);
  FRAME_ASSIGN_OR_RETURN(
      NodeId nq,
      g.create_node("quantize_linear", qn.name, {pool.inputs[0], qn.inputs[1], qn.inputs[2]}, 1,
                    qn.attrs, {g.unique_value_name(qn.name + "_before_pool")}));
  const ValueId qv = g.node(nq).outputs[0];
  g.value(qv).type = q_type;
  FRAME_ASSIGN_OR_RETURN(NodeId np,
                         g.create_node("max_pool", pool.name, {qv}, 1, pool.attrs, {out_name}));
  const ValueId pv = g.node(np).outputs[0];
  g.value(pv).type = out_type;
  g.replace_all_uses(out, pv);
  return true;
}

FRAME_REGISTER_LOWERING_PATTERN("onednn", quantize_before_max_pool, max_pool,
                                quantize_before_max_pool);
// Names sort after the other conv / matmul patterns (patterns run by name), which leave a
// conv whose only reader is a QuantizeLinear alone.
FRAME_REGISTER_LOWERING_PATTERN("onednn", quantize_qdq_conv, conv, quantize_qdq_conv);
FRAME_REGISTER_LOWERING_PATTERN("onednn", quantize_qdq_matmul, matmul, quantize_qdq_matmul);
// conv / matmul -> relu -> quantize: fuse_post_ops has made the conv and relu one node.
FRAME_REGISTER_LOWERING_PATTERN("onednn", quantize_qdq_conv, fused_post_ops_internal,
                                quantize_qdq_conv);
FRAME_REGISTER_LOWERING_PATTERN("onednn", quantize_qdq_matmul, fused_post_ops_internal,
                                quantize_qdq_matmul);

}  // namespace
}  // namespace frame::backends::onednn
