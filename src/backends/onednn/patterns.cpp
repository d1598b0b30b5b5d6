// Lowering patterns of the onednn backend (include/frame/ops/lowering_pattern.h,
// docs/backends/onednn.md#lowering-patterns). Op-specific rewrites live here, with the backend
// that knows the ops, not in the generic passes (which ask traits only):
//   fold_batch_norm_into_conv: conv -> batch_normalization (inference form), every parameter
//     constant and the conv output read only by the batch norm -> one conv with
//     W' = W * s and B' = (B - mean) * s + bias, s = scale / sqrt(var + epsilon);
//   fuse_post_ops: conv / matmul / gemm -> a single-use chain of a residual add (other operand
//     of the output's shape) and activations -> one fused_post_ops_internal node run with
//     oneDNN post-ops. A fused_elementwise_internal whose body is such a chain (operator-fusion
//     runs earlier) is taken as its post-ops; sigmoid(x) * x (SiLU) is one swish post-op,
//     hard_sigmoid is eltwise_linear + eltwise_clip, and a GELU spelled as elementwise nodes
//     (torch's erf and tanh exports before opset 20; match_gelu) one gelu / gelu_tanh post-op;
//   keep_blocked_activations: a rank-4 f32 conv output, not a graph output, read only by
//     convs (as X or as the residual R) -> producer dst_layout and the users' src_layout /
//     residual_layout = the layout oneDNN picks for the producer's output (1 nhwc, or 8 / 16
//     nChw8c / nChw16c when C is a multiple of the block, and no set tied to the edge must be
//     nhwc: component_needs_nhwc), so no reorder runs between them. Plain convs become
//     fused_post_ops_internal with no post-ops to carry the attributes;
//   fold_pad_into_average_pool: pad (constant mode, value 0, spatial dims only, not negative)
//     read only by an average_pool without pads of its own -> one average_pool with those
//     pads and count_include_pad=1 (the padded zeros were taps of its input; how torch exports
//     avg_pool2d(padding=p), e.g. Inception-V3's pool branches); not with ceil_mode, which may
//     drop a last window that starts in the pads;
//   keep_nhwc_through: the rank-4 f32 values joined by pools, channel concats, inference batch
//     norms, attribute-free elementwise ops and 2-d conv_transposes (every activation such a
//     node reads or writes, except those whose bytes are the same in both orders, C == 1 or
//     H*W == 1), each
//     produced by a conv or such a node and read only by convs (as X or R) or such nodes, none
//     a graph input or output -> every one stored in one layout: those nodes become
//     laid_out_internal, the convs get dst_layout / src_layout / residual_layout. The layout
//     is the convs' channel-blocked one (nChw8c on AVX2; blocked_layout_of) where every node
//     takes it (every C a multiple of the block, elementwise operands of one shape), else
//     nhwc (1). The whole set or nothing, so no node mixes layouts.
//     Grown from a pool or concat.
// fuse_attention (scaled dot-product attention -> attention_internal) lives in
// attention_pattern.cpp, fuse_layer_norm (torch's decomposed LayerNorm -> layer_normalization) in
// layer_norm_pattern.cpp. Each fires only when the onednn kernel supports the node it creates.

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/pattern_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/laid_out_internal.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::backends::onednn {
namespace {

using ir::Graph;
using ir::NodeId;
using ir::ValueId;
using ops::fused::PostOp;
using ops::fused::PostOpKind;

// Longest post-op chain fused into one node (oneDNN allows more; real models use 1-2).
constexpr size_t kMaxPostOps = 4;

Result<bool> fold_batch_norm_into_conv(Graph& g, NodeId id) {
  const ir::Node conv = g.node(id);
  if (conv.outputs.size() != 1 || conv.inputs.size() < 2) return false;
  const std::optional<NodeId> bn_id = sole_user(g, conv.outputs[0]);
  if (!bn_id) return false;
  const ir::Node bn = g.node(*bn_id);
  if (bn.op != "batch_normalization" || bn.outputs.size() != 1 || bn.inputs.size() != 5 ||
      bn.inputs[0] != conv.outputs[0]) {
    return false;
  }
  const ops::NodeContext bctx =
      ops::make_node_context(g, bn, ops::OpRegistry::global().find(bn.op));
  if (bctx.attr_or<int64_t>("training_mode", 0) != 0) return false;
  const double eps = bctx.attr_or<double>("epsilon", 1e-5);
  const Tensor* w = constant_of(g, conv.inputs[1]);
  const bool has_b = conv.inputs.size() > 2 && conv.inputs[2] != ir::kNoValue;
  const Tensor* b = has_b ? constant_of(g, conv.inputs[2]) : nullptr;
  const Tensor* p[4];
  for (size_t i = 0; i < 4; ++i) p[i] = constant_of(g, bn.inputs[i + 1]);
  if (w == nullptr || (has_b && b == nullptr)) return false;
  for (const Tensor* t : {w, b, p[0], p[1], p[2], p[3]}) {
    if (t != nullptr && t->dtype() != DTypeCode::kFloat32) return false;
  }
  for (const Tensor* t : p) {
    if (t == nullptr) return false;
  }
  const int64_t m = w->dim(0);
  if (m == 0 || p[0]->numel() != m) return false;
  const int64_t per = w->numel() / m;
  FRAME_ASSIGN_OR_RETURN(Tensor w2, Tensor::empty(DTypeCode::kFloat32, w->shape()));
  FRAME_ASSIGN_OR_RETURN(Tensor b2, Tensor::empty(DTypeCode::kFloat32, Shape{m}));
  const float* scale = p[0]->data<float>();
  const float* shift = p[1]->data<float>();
  const float* mean = p[2]->data<float>();
  const float* var = p[3]->data<float>();
  for (int64_t o = 0; o < m; ++o) {
    // In double, rounded once: the folded conv stays within BUILD-011 of conv + batch norm.
    const double s = static_cast<double>(scale[o]) / std::sqrt(static_cast<double>(var[o]) + eps);
    const float* src = w->data<float>() + o * per;
    float* dst = w2.data<float>() + o * per;
    for (int64_t i = 0; i < per; ++i) dst[i] = static_cast<float>(src[i] * s);
    const double bias = b != nullptr ? static_cast<double>(b->data<float>()[o]) : 0.0;
    b2.data<float>()[o] = static_cast<float>((bias - mean[o]) * s + shift[o]);
  }
  std::vector<ValueId> inputs{conv.inputs[0], conv.inputs[1], ir::kNoValue};
  if (!onednn_runs(g, "conv", conv.name, inputs, conv.attrs, {{1, &w2}, {2, &b2}})) return false;
  inputs[1] = g.add_constant(g.unique_value_name(conv.name + "_w_bn_folded"), std::move(w2));
  inputs[2] = g.add_constant(g.unique_value_name(conv.name + "_b_bn_folded"), std::move(b2));
  return replace_with(g, {id, *bn_id}, bn.outputs[0], "conv", conv.name, std::move(inputs),
                      conv.attrs);
}

// The post-op node `n` applies to value `cur`, or nullopt. An add takes its other operand as
// the residual (at most one, of `cur`'s dtype and shape; with `rows`, for a matmul or gemm,
// also a row added to every row of `cur`: a bias, ops::fused::broadcasts_along_rows).
std::optional<PostOp> as_post_op(const Graph& g, const ir::Node& n, ValueId cur, ValueId* residual,
                                 bool rows = false) {
  if (n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
  if (n.op == "add") {
    if (n.inputs.size() != 2 || *residual != ir::kNoValue) return std::nullopt;
    const ValueId other = n.inputs[0] == cur ? n.inputs[1] : n.inputs[0];
    if (other == cur || other == ir::kNoValue) return std::nullopt;
    const std::optional<ir::TensorType>& ot = g.value(other).type;
    const std::optional<ir::TensorType>& ct = g.value(cur).type;
    const bool row = rows && ot && ct && ot->dtype == ct->dtype &&
                     ops::fused::broadcasts_along_rows(ot->shape, ct->shape);
    if (ot != ct && !row) return std::nullopt;
    *residual = other;
    return PostOp{PostOpKind::kAdd};
  }
  if (n.inputs[0] != cur) return std::nullopt;
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  if (schema == nullptr) return std::nullopt;
  const ops::NodeContext ctx = ops::make_node_context(g, n, schema);
  if (n.op == "relu") return PostOp{PostOpKind::kRelu};
  if (n.op == "sigmoid") return PostOp{PostOpKind::kSigmoid};
  if (n.op == "tanh") return PostOp{PostOpKind::kTanh};
  if (n.op == "hard_swish") return PostOp{PostOpKind::kHardSwish};
  if (n.op == "hard_sigmoid") {
    return PostOp{PostOpKind::kHardSigmoid, ctx.attr_or<double>("alpha", 0.2),
                  ctx.attr_or<double>("beta", 0.5)};
  }
  if (n.op == "leaky_relu") {
    return PostOp{PostOpKind::kLeakyRelu, ctx.attr_or<double>("alpha", 0.01)};
  }
  if (n.op == "elu") return PostOp{PostOpKind::kElu, ctx.attr_or<double>("alpha", 1.0)};
  if (n.op == "gelu") {
    const bool tanh = ctx.attr_or<std::string>("approximate", "none") == "tanh";
    return PostOp{tanh ? PostOpKind::kGeluTanh : PostOpKind::kGelu};
  }
  if (n.op == "clip") {
    // Bounds must be constant scalars (or absent: unbounded).
    double bound[2] = {-std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::infinity()};
    for (size_t i = 1; i < n.inputs.size() && i < 3; ++i) {
      if (n.inputs[i] == ir::kNoValue) continue;
      const Tensor* t = constant_of(g, n.inputs[i]);
      if (t == nullptr || t->numel() != 1 || t->dtype() != DTypeCode::kFloat32) {
        return std::nullopt;
      }
      bound[i - 1] = t->data<float>()[0];
    }
    return PostOp{PostOpKind::kClip, bound[0], bound[1]};
  }
  return std::nullopt;
}

// The post-ops of a fused_elementwise_internal node `f` whose body is a chain of post-ops
// starting at the body input fed by `cur` (operator-fusion may have grouped an add and an
// activation before lowering), or nullopt. `rows`: as as_post_op's.
std::optional<std::vector<PostOp>> body_post_ops(const Graph& g, const ir::Node& f, ValueId cur,
                                                 ValueId* residual, bool rows) {
  auto it = f.attrs.find("body");
  if (it == f.attrs.end() || f.outputs.size() != 1) return std::nullopt;
  const auto* body = std::get_if<std::shared_ptr<const ir::Graph>>(&it->second);
  if (body == nullptr || *body == nullptr || (*body)->outputs().size() != 1) return std::nullopt;
  const Graph& b = **body;
  if (b.inputs().size() != f.inputs.size()) return std::nullopt;
  // Body value -> outer value: body inputs map to the node's inputs; the chain value to `cur`.
  ValueId chain = ir::kNoValue;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    if (f.inputs[i] != cur) continue;
    if (chain != ir::kNoValue) return std::nullopt;
    chain = b.inputs()[i];
  }
  Result<std::vector<NodeId>> order = b.topological_order();
  if (chain == ir::kNoValue || !order.is_ok()) return std::nullopt;
  // A body input's one-element constant, read through the node's input at that position.
  const ScalarOf outer = graph_scalars(g);
  const ScalarOf scalar = [&](ValueId v) -> std::optional<double> {
    const auto pos = std::find(b.inputs().begin(), b.inputs().end(), v);
    if (pos == b.inputs().end()) return graph_scalars(b)(v);
    return outer(f.inputs[static_cast<size_t>(pos - b.inputs().begin())]);
  };
  std::vector<PostOp> out;
  std::set<NodeId> in_gelu;  // nodes of a GELU already taken as one post-op
  for (size_t k = 0; k < order->size(); ++k) {
    const NodeId id = (*order)[k];
    if (in_gelu.count(id) != 0) continue;
    if (const auto gm = match_gelu(b, chain, scalar);
        gm && std::count(gm->nodes.begin(), gm->nodes.end(), id) != 0) {
      out.push_back(PostOp{gm->tanh ? PostOpKind::kGeluTanh : PostOpKind::kGelu});
      in_gelu.insert(gm->nodes.begin(), gm->nodes.end());
      chain = gm->out;
      continue;
    }
    // sigmoid(c) then mul(c, sigmoid(c)): one swish post-op (SiLU).
    if (k + 1 < order->size() && b.node(id).op == "sigmoid" && b.node(id).inputs.size() == 1 &&
        b.node(id).inputs[0] == chain) {
      const ir::Node& m = b.node((*order)[k + 1]);
      const ValueId sv = b.node(id).outputs[0];
      const bool pair = m.op == "mul" && m.inputs.size() == 2 &&
                        ((m.inputs[0] == chain && m.inputs[1] == sv) ||
                         (m.inputs[1] == chain && m.inputs[0] == sv));
      bool sv_elsewhere = b.is_output(sv);
      for (size_t j = k + 2; j < order->size(); ++j) {
        for (ValueId in : b.node((*order)[j]).inputs) sv_elsewhere = sv_elsewhere || in == sv;
      }
      if (pair && !sv_elsewhere) {
        out.push_back(PostOp{PostOpKind::kSwish});
        chain = m.outputs[0];
        ++k;
        continue;
      }
    }
    ir::Node n = b.node(id);
    for (ValueId& v : n.inputs) {
      if (v == ir::kNoValue) continue;
      if (v == chain) {
        v = cur;
        continue;
      }
      const auto pos = std::find(b.inputs().begin(), b.inputs().end(), v);
      if (pos == b.inputs().end()) return std::nullopt;  // reads another body value: no chain
      v = f.inputs[static_cast<size_t>(pos - b.inputs().begin())];
    }
    const std::optional<PostOp> p = as_post_op(g, n, cur, residual, rows);
    if (!p) return std::nullopt;
    out.push_back(*p);
    chain = b.node(id).outputs[0];
  }
  if (chain != b.outputs()[0]) return std::nullopt;
  return out;
}

// oneDNN 2.6's JIT post-op injectors are keyed by eltwise algorithm: a second post-op of one
// algorithm runs with the first one's alpha/beta (matmul -> leaky_relu(0.1) -> leaky_relu(0.5)
// ran as two leaky_relu(0.1); conv -> clip -> clip as the first clip twice). So a chain never
// holds one algorithm twice with different parameters; relu is eltwise_relu with alpha 0.
bool clashes(const std::vector<PostOp>& taken, const PostOp& p) {
  const auto alg = [](PostOpKind k) { return k == PostOpKind::kLeakyRelu ? PostOpKind::kRelu : k; };
  // hard_sigmoid is eltwise_linear then eltwise_clip(0, 1): it clashes with a clip of other
  // bounds (and the alpha/beta check below covers two hard_sigmoids).
  const auto clip_clash = [](const PostOp& hs, const PostOp& c) {
    return hs.kind == PostOpKind::kHardSigmoid && c.kind == PostOpKind::kClip &&
           (c.alpha != 0.0 || c.beta != 1.0);
  };
  for (const PostOp& t : taken) {
    if (clip_clash(t, p) || clip_clash(p, t)) return true;
    if (p.kind != PostOpKind::kAdd && alg(t.kind) == alg(p.kind) &&
        (t.alpha != p.alpha || t.beta != p.beta)) {
      return true;
    }
  }
  return false;
}

Result<bool> fuse_post_ops(Graph& g, NodeId id) {
  const ir::Node base = g.node(id);
  if (base.outputs.size() != 1 || !g.value(base.outputs[0]).type) return false;
  ValueId cur = base.outputs[0];
  ValueId residual = ir::kNoValue;
  // A matmul's or gemm's add may take a bias row (oneDNN broadcasts a binary post-op's operand).
  const bool rows = base.op == "matmul" || base.op == "gemm";
  std::vector<NodeId> chain{id};
  std::vector<PostOp> taken;
  const ScalarOf scalars = graph_scalars(g);
  while (taken.size() < kMaxPostOps) {
    if (const auto gm = match_gelu(g, cur, scalars)) {
      const PostOp p{gm->tanh ? PostOpKind::kGeluTanh : PostOpKind::kGelu};
      if (clashes(taken, p)) break;
      chain.insert(chain.end(), gm->nodes.begin(), gm->nodes.end());
      taken.push_back(p);
      cur = gm->out;
      continue;
    }
    if (const auto sw = swish_pair(g, cur)) {
      const PostOp p{PostOpKind::kSwish};
      if (clashes(taken, p)) break;
      chain.push_back(sw->first);
      chain.push_back(sw->second);
      taken.push_back(p);
      cur = g.node(sw->second).outputs[0];
      continue;
    }
    const std::optional<NodeId> u = sole_user(g, cur);
    if (!u) break;
    if (g.node(*u).op == "fused_elementwise_internal") {
      const ValueId saved = residual;
      const std::optional<std::vector<PostOp>> ps =
          body_post_ops(g, g.node(*u), cur, &residual, rows);
      std::vector<PostOp> next = taken;
      bool clash = !ps;
      for (size_t i = 0; ps && i < ps->size() && !clash; ++i) {
        clash = clashes(next, (*ps)[i]);
        next.push_back((*ps)[i]);
      }
      if (clash || next.size() > kMaxPostOps) {
        residual = saved;
        break;
      }
      taken = std::move(next);
      chain.push_back(*u);
      cur = g.node(*u).outputs[0];
      continue;
    }
    const std::optional<PostOp> p = as_post_op(g, g.node(*u), cur, &residual, rows);
    if (!p || clashes(taken, *p)) break;  // a clashing p is never an add: residual unchanged
    chain.push_back(*u);
    taken.push_back(*p);
    cur = g.node(*u).outputs[0];
  }
  std::vector<std::string> names;
  std::vector<double> params;
  for (const PostOp& p : taken) {
    names.emplace_back(ops::fused::post_op_name(p.kind));
    params.push_back(p.alpha);
    params.push_back(p.beta);
  }
  if (names.empty()) return false;
  std::vector<ValueId> inputs = base.inputs;
  inputs.resize(3, ir::kNoValue);
  if (residual != ir::kNoValue) inputs.push_back(residual);
  ir::AttrMap attrs = base.attrs;
  attrs["base_op"] = base.op;
  attrs["post_ops"] = std::move(names);
  attrs["post_op_params"] = std::move(params);
  const std::string_view op = ops::fused::kFusedPostOpsOp;
  if (!onednn_runs(g, op, base.name, inputs, attrs)) return false;
  return replace_with(g, chain, cur, op, base.name, std::move(inputs), std::move(attrs));
}

// A conv: a `conv` node or a fused_post_ops_internal with base_op "conv".
bool is_conv(const ir::Node& n) {
  if (n.op == "conv") return true;
  if (n.op != ops::fused::kFusedPostOpsOp) return false;
  auto it = n.attrs.find("base_op");
  const auto* base = it == n.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  return base != nullptr && *base == "conv";
}

// Whether fold_batch_norm_into_conv or fuse_post_ops may still rewrite conv `n` (its output
// read only by a batch norm, a fused elementwise body or a post-op). Such a conv is left plain
// until they have settled: they build their node from the conv's own attributes, and
// fuse_post_ops is not anchored at fused nodes.
bool may_still_fuse(const Graph& g, const ir::Node& n) {
  if (n.op != "conv" || n.outputs.size() != 1) return false;
  const std::optional<NodeId> u = sole_user(g, n.outputs[0]);
  if (!u) return false;
  const ir::Node& un = g.node(*u);
  if (un.op == "batch_normalization" || un.op == "fused_elementwise_internal") return true;
  ValueId residual = ir::kNoValue;
  return as_post_op(g, un, n.outputs[0], &residual).has_value();
}

// The inputs and attributes conv `n` has as a fused_post_ops_internal node.
std::pair<std::vector<ValueId>, ir::AttrMap> as_fused(const ir::Node& n) {
  std::vector<ValueId> inputs = n.inputs;
  ir::AttrMap attrs = n.attrs;
  if (n.op == "conv") {
    inputs.resize(3, ir::kNoValue);
    attrs["base_op"] = std::string("conv");
    attrs["post_ops"] = std::vector<std::string>{};
    attrs["post_op_params"] = std::vector<double>{};
  }
  return {std::move(inputs), std::move(attrs)};
}

// Sets int attribute `name` to `v`; true if that changed it.
bool set_layout(ir::AttrMap& attrs, std::string_view name, int64_t v) {
  auto it = attrs.find(std::string(name));
  if (it != attrs.end()) {
    const auto* cur = std::get_if<int64_t>(&it->second);
    if (cur != nullptr && *cur == v) return false;
  }
  attrs[std::string(name)] = v;
  return true;
}

// Gives node `id` the inputs and attributes `fused` (a conv becomes fused_post_ops_internal);
// returns the value its output is now.
Result<ValueId> apply_fused(Graph& g, NodeId id,
                            std::pair<std::vector<ValueId>, ir::AttrMap> fused) {
  ir::Node& n = g.node(id);
  if (n.op != "conv") {
    n.attrs = std::move(fused.second);
    return n.outputs[0];
  }
  const std::string name = n.name;
  FRAME_RETURN_IF_ERROR(replace_with(g, {id}, n.outputs[0], ops::fused::kFusedPostOpsOp, name,
                                     std::move(fused.first), std::move(fused.second))
                            .status());
  return g.node(g.find_node(name)).outputs[0];
}

// The int64 values of constant `v`, or nullopt when it is not an int64 constant.
std::optional<std::vector<int64_t>> int64_constant(const Graph& g, ValueId v) {
  const Tensor* t = constant_of(g, v);
  if (t == nullptr || t->dtype() != DTypeCode::kInt64) return std::nullopt;
  return std::vector<int64_t>(t->data<int64_t>(), t->data<int64_t>() + t->numel());
}

// Int attribute `name` of `n`, or `fallback` when absent.
int64_t int_attr(const ir::Node& n, const char* name, int64_t fallback) {
  auto it = n.attrs.find(name);
  const auto* v = it == n.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second);
  return v == nullptr ? fallback : *v;
}

// Int attribute `name` of `n` as an activation layout, or kPlain when absent.
ops::fused::ActivationLayout layout_attr(const ir::Node& n, std::string_view name) {
  return static_cast<ops::fused::ActivationLayout>(int_attr(n, std::string(name).c_str(), 0));
}

// Whether the bytes of a value of type `t` are the same stored plain and nhwc: rank 4 with
// C == 1 or H * W == 1 (a global pool's output, a squeeze-excitation gate).
bool layout_free(const ir::TensorType& t) {
  return t.shape.size() == 4 && (t.shape[1] == 1 || t.shape[2] * t.shape[3] == 1);
}

// The kind of node `n` as a base op of laid_out_internal when keep_nhwc_through can carry the
// layout through it (a laid_out_internal counts as its base op), or nullopt: one f32 output of
// rank 4; a pool; a concat along the channel axis; an inference batch normalization; an
// attribute-free elementwise op whose inputs are f32 of rank 4 or of one element; a
// conv_transpose (rank 4: 2 spatial dims).
std::optional<ops::laid_out::BaseKind> carries_nhwc(const Graph& g, const ir::Node& n) {
  using ops::laid_out::BaseKind;
  auto base = n.attrs.find("base_op");
  const auto* base_op = base == n.attrs.end() ? nullptr : std::get_if<std::string>(&base->second);
  const std::string_view op =
      n.op == ops::laid_out::kLaidOutOp && base_op != nullptr ? *base_op : n.op;
  const std::optional<BaseKind> kind = ops::laid_out::base_kind(op);
  if (!kind || n.outputs.size() != 1 || n.inputs.empty()) return std::nullopt;
  const std::optional<ir::TensorType>& out = g.value(n.outputs[0]).type;
  if (!out || out->dtype != DTypeCode::kFloat32 || out->shape.size() != 4) return std::nullopt;
  if (*kind == BaseKind::kConcat) {
    const int64_t axis = int_attr(n, "axis", 0);
    if (axis != 1 && axis != -3) return std::nullopt;
  }
  if (*kind == BaseKind::kBatchNorm && int_attr(n, "training_mode", 0) != 0) return std::nullopt;
  for (ValueId in : n.inputs) {
    const std::optional<ir::TensorType>& t = in == ir::kNoValue ? out : g.value(in).type;
    if (!t || t->dtype != DTypeCode::kFloat32) return std::nullopt;
    if (*kind == BaseKind::kElementwise && t->shape.size() != 4 && numel_of(t->shape) != 1) {
      return std::nullopt;
    }
  }
  return kind;
}

// Whether input `i` of node `n` (of base kind `kind`) is an activation stored in the node's
// layout (ops::laid_out::activation_input: X of a pool, batch normalization or conv_transpose,
// every part of a concat, every rank-4 operand of an elementwise op).
bool nhwc_input(const Graph& g, const ir::Node& n, ops::laid_out::BaseKind kind, size_t i) {
  const std::optional<ir::TensorType>& t = g.value(n.inputs[i]).type;
  return t && ops::laid_out::activation_input(kind, i, t->shape);
}

// One node keep_nhwc_through rewrites: its new op, inputs and attributes.
struct NhwcRewrite {
  NodeId id;
  std::string op;
  std::vector<ValueId> inputs;
  ir::AttrMap attrs;
};

// A set keep_nhwc_through stores nhwc: the nodes that carry the layout, the convs at its
// edges and the values between them.
struct NhwcSet {
  std::set<NodeId> through, convs;
  std::set<ValueId> values;
};

// The (node, input index) pairs reading each value (indexed by ValueId), from one walk over
// the graph.
using Readers = std::vector<std::vector<std::pair<NodeId, size_t>>>;
Readers readers_of(const Graph& g) {
  Readers readers(g.num_values());
  for (NodeId u : g.node_ids()) {
    const ir::Node& un = g.node(u);
    for (size_t i = 0; i < un.inputs.size(); ++i) {
      if (un.inputs[i] != ir::kNoValue) readers[un.inputs[i]].emplace_back(u, i);
    }
  }
  return readers;
}

// The set around carrying node `id` (`readers`: readers_of(g)); nullopt where some value of it
// cannot be stored nhwc (a graph input or output, a constant, a reader or producer that is neither
// a conv nor a carrying node), or where it holds no conv or no value.
std::optional<NhwcSet> find_nhwc_set(const Graph& g, NodeId id, const Readers& readers) {
  if (!carries_nhwc(g, g.node(id))) return std::nullopt;
  NhwcSet set;
  std::set<NodeId>& through = set.through;
  std::set<NodeId>& convs = set.convs;
  std::set<ValueId>& values = set.values;
  through.insert(id);
  std::vector<NodeId> node_queue{id};
  std::vector<ValueId> value_queue;
  // Adds value `v` of a carrying node; false if it cannot be stored nhwc.
  const auto add_value = [&](ValueId v) {
    const std::optional<ir::TensorType>& t = g.value(v).type;
    if (!t || t->dtype != DTypeCode::kFloat32 || t->shape.size() != 4) return false;
    if (layout_free(*t)) return true;  // same bytes either way: no constraint
    if (values.insert(v).second) value_queue.push_back(v);
    return true;
  };
  const auto add_node = [&](NodeId n) {
    if (through.insert(n).second) node_queue.push_back(n);
  };
  while (!node_queue.empty() || !value_queue.empty()) {
    if (!node_queue.empty()) {
      const ir::Node& n = g.node(node_queue.back());
      node_queue.pop_back();
      const ops::laid_out::BaseKind kind = *carries_nhwc(g, n);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        if (n.inputs[i] == ir::kNoValue || !nhwc_input(g, n, kind, i)) continue;
        if (!add_value(n.inputs[i])) return std::nullopt;
      }
      if (!add_value(n.outputs[0])) return std::nullopt;
      continue;
    }
    const ValueId v = value_queue.back();
    value_queue.pop_back();
    const NodeId p = g.value(v).producer;
    // Graph outputs, inputs and constants stay plain.
    if (g.is_output(v) || p < 0) return std::nullopt;
    const ir::Node& pn = g.node(p);
    if (is_conv(pn) && !may_still_fuse(g, pn)) {
      convs.insert(p);
    } else if (carries_nhwc(g, pn)) {
      add_node(p);
    } else {
      return std::nullopt;
    }
    for (const auto& [u, i] : readers[v]) {
      const ir::Node& un = g.node(u);
      if (is_conv(un) && (i == 0 || i == ops::fused::kResidualInput) && !may_still_fuse(g, un)) {
        convs.insert(u);
      } else if (const auto kind = carries_nhwc(g, un); kind && nhwc_input(g, un, *kind, i)) {
        add_node(u);
      } else {
        return std::nullopt;
      }
    }
  }
  if (convs.empty() || values.empty()) return std::nullopt;  // nothing to gain without a conv
  return set;
}

std::optional<NhwcSet> find_nhwc_set(const Graph& g, NodeId id) {
  return find_nhwc_set(g, id, readers_of(g));
}

// Whether every node of `set` takes a channel-blocked layout of `block` channels
// (decode_laid_out's rule): every activation's C a multiple of the block, the rank-4 operands of
// each elementwise node of one shape (a squeeze-excitation gate [N,C,1,1] would broadcast across
// the blocks).
bool blocked_fits(const Graph& g, const NhwcSet& set, int64_t block) {
  using ops::laid_out::BaseKind;
  for (ValueId v : set.values) {
    if (g.value(v).type->shape[1] % block != 0) return false;
  }
  for (NodeId t : set.through) {
    const ir::Node& n = g.node(t);
    const BaseKind kind = *carries_nhwc(g, n);
    const Shape* first = nullptr;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (n.inputs[i] == ir::kNoValue || !nhwc_input(g, n, kind, i)) continue;
      const Shape& s = g.value(n.inputs[i]).type->shape;
      if (s[1] % block != 0) return false;
      if (first == nullptr) first = &s;
      if (kind == BaseKind::kElementwise && s != *first) return false;
    }
  }
  return true;
}

// Whether the layout component of value `v` must be stored nhwc rather than in the convs'
// blocked layout of `block` channels. The component is the rank-4 activations tied to `v`:
// a conv's X, R and Y (oneDNN's jit convs take one layout on both sides; a conv with one nhwc
// and one blocked side reorders) and the values of a set keep_nhwc_through carries. It must be
// nhwc where one of its sets does not fit the blocked layout (blocked_fits: a
// squeeze-excitation gate) or one of its values' C is not a multiple of the
// block. A value that is a graph input or output, or is read by a node that keeps plain NCHW,
// ties nothing. Deciding per component, not per edge from its neighbours, leaves no conv with
// mixed sides: RegNetY-400MF, whose every block holds a gate, kept 20 reorders per run when
// only the edges next to a gate were nhwc.
bool component_needs_nhwc(const Graph& g, ValueId v, int64_t block) {
  Readers readers = readers_of(g);
  std::set<ValueId> seen{v};
  std::set<NodeId> carried;  // carrying nodes whose set was looked at
  std::vector<ValueId> queue{v};
  const auto push = [&](ValueId w) {
    if (w != ir::kNoValue && seen.insert(w).second) queue.push_back(w);
  };
  // Ties the activations of conv `n` when `w` is one of them.
  const auto tie_conv = [&](const ir::Node& n, ValueId w) {
    const bool r =
        n.inputs.size() > ops::fused::kResidualInput && n.inputs[ops::fused::kResidualInput] == w;
    if (n.inputs[0] != w && n.outputs[0] != w && !r) return;
    push(n.inputs[0]);
    push(n.outputs[0]);
    if (n.inputs.size() > ops::fused::kResidualInput) push(n.inputs[ops::fused::kResidualInput]);
  };
  while (!queue.empty()) {
    const ValueId w = queue.back();
    queue.pop_back();
    const std::optional<ir::TensorType>& t = g.value(w).type;
    if (!t || t->dtype != DTypeCode::kFloat32 || t->shape.size() != 4 || g.is_output(w) ||
        g.value(w).producer < 0) {
      continue;
    }
    // A value made by a node that writes plain NCHW (neither a conv nor one that carries a
    // layout: an fp16 model's input cast before its first conv, whose 3 channels made every
    // edge of ResNet-18 in float16 nhwc) stays plain, like a graph input, and ties nothing.
    if (const ir::Node& pn = g.node(g.value(w).producer);
        !(is_conv(pn) && !may_still_fuse(g, pn)) && !carries_nhwc(g, pn)) {
      continue;
    }
    // A value of the same bytes in every order (H*W = 1: a squeeze-excitation's pooled vector)
    // holds any C but still ties the convs around it.
    if (!layout_free(*t) && t->shape[1] % block != 0) return true;
    std::vector<NodeId> nodes{g.value(w).producer};
    for (const auto& [u, i] : readers[w]) nodes.push_back(u);
    for (NodeId u : nodes) {
      const ir::Node& un = g.node(u);
      if (is_conv(un) && !may_still_fuse(g, un) && !un.outputs.empty()) {
        tie_conv(un, w);
      } else if (carries_nhwc(g, un) && carried.insert(u).second) {
        const std::optional<NhwcSet> set = find_nhwc_set(g, u, readers);
        if (!set) continue;  // stays plain: its values tie nothing
        if (!blocked_fits(g, *set, block)) return true;
        carried.insert(set->through.begin(), set->through.end());
        for (ValueId sv : set->values) push(sv);
      }
    }
  }
  return false;
}

Result<bool> keep_blocked_activations(Graph& g, NodeId id) {
  using ops::fused::ActivationLayout;
  const ir::Node& prod = g.node(id);
  if (!is_conv(prod) || prod.outputs.size() != 1 || may_still_fuse(g, prod)) return false;
  const ValueId v = prod.outputs[0];
  const std::optional<ir::TensorType>& t = g.value(v).type;
  if (g.is_output(v) || !t || t->dtype != DTypeCode::kFloat32 || t->shape.size() != 4) {
    return false;
  }
  // An edge carried already (an earlier application) stays as it is.
  if (layout_attr(prod, ops::fused::kDstLayoutAttr) != ActivationLayout::kPlain) return false;
  // The layout oneDNN picks for the producer's output on this CPU (nhwc for its brgemm convs).
  Result<ActivationLayout> layout = preferred_conv_layout(
      ops::make_node_context(g, prod, ops::OpRegistry::global().find(prod.op)));
  if (!layout.is_ok() || *layout == ActivationLayout::kPlain) return false;
  // nChw8c / nChw16c have the plain byte size only when C is a multiple of the block (the
  // arena stays as planned); other channel counts are carried nhwc, which oneDNN's jit convs
  // also take (ShuffleNet-V2's 58, 116 and 232 channels on AVX2, where the padded nChw8c cost
  // a reorder on each side of every conv). The kernels' check below declines nhwc where only a
  // slow implementation takes it.
  if (t->shape[1] % ops::fused::channel_block(*layout) != 0) *layout = ActivationLayout::kNhwc;
  // In a component that holds an nhwc set (a squeeze-excitation gate), the edge is nhwc too,
  // so no conv has one nhwc and one blocked side (oneDNN's jit convs take neither, and the set
  // or the edge was left plain). 2-core AVX2 EPYC, frame_bench_driver, two interleaved rounds,
  // 1 / 2 threads, with the edges next to such a set only: RegNetY-400MF 13.6-13.8 -> 12.8-12.9
  // / 11.1-11.2 -> 10.4-10.5 ms (67 reorders per run -> 15), EfficientNet-B0 18.7-18.9 ->
  // 15.5-15.6 / 10.8-16.0 -> 8.7-10.9 (11 -> 1), MobileNet-V3-small 2.29-2.33 -> 2.22-2.33 /
  // 1.57-1.59 -> 1.39-1.40 (24 -> 5); ResNet-18 unchanged (its stem max pool's set fits
  // nChw8c: made nhwc, its first stage ran 10% slower at 2 threads).
  if (*layout != ActivationLayout::kNhwc &&
      component_needs_nhwc(g, v, ops::fused::channel_block(*layout))) {
    *layout = ActivationLayout::kNhwc;
  }
  // The rewrites for the edge stored as `value`; empty where the edge cannot be carried or the
  // onednn kernel does not take every node with the explicit layouts (it declines where oneDNN
  // has only its reference or gemm convolution for them).
  using Rewrites = std::vector<std::pair<NodeId, std::pair<std::vector<ValueId>, ir::AttrMap>>>;
  const auto plan = [&](int64_t value) -> Rewrites {
    Rewrites rewrites;
    bool changed = false;
    rewrites.emplace_back(id, as_fused(prod));
    changed |= set_layout(rewrites[0].second.second, ops::fused::kDstLayoutAttr, value);
    for (NodeId u : g.node_ids()) {
      const ir::Node& un = g.node(u);
      bool reads = false;
      for (size_t i = 0; i < un.inputs.size(); ++i) {
        if (un.inputs[i] != v) continue;
        reads = true;
        // Only X (0) or the residual R (3) of a conv; conv_transpose, pools, adds... read plain.
        if (!is_conv(un) || (i != 0 && i != ops::fused::kResidualInput) || may_still_fuse(g, un)) {
          return {};
        }
      }
      if (!reads) continue;
      if (u == id) return {};  // a conv reading its own output: not a DAG, never taken
      auto fused = as_fused(un);
      if (un.inputs[0] == v) {
        changed |= set_layout(fused.second, ops::fused::kSrcLayoutAttr, value);
      }
      if (un.inputs.size() > ops::fused::kResidualInput &&
          un.inputs[ops::fused::kResidualInput] == v) {
        changed |= set_layout(fused.second, ops::fused::kResidualLayoutAttr, value);
      }
      rewrites.emplace_back(u, std::move(fused));
    }
    if (!changed || rewrites.size() < 2) return {};
    for (const auto& [n, fused] : rewrites) {
      if (!onednn_runs(g, ops::fused::kFusedPostOpsOp, g.node(n).name, fused.first, fused.second)) {
        return {};
      }
    }
    return rewrites;
  };
  Rewrites rewrites = plan(static_cast<int64_t>(*layout));
  if (rewrites.empty()) return false;
  for (size_t i = 0; i < rewrites.size(); ++i) {
    const ValueId old_out = g.node(rewrites[i].first).outputs[0];
    FRAME_ASSIGN_OR_RETURN(ValueId new_out,
                           apply_fused(g, rewrites[i].first, std::move(rewrites[i].second)));
    // A conv replaced by a new node gave its output a new value: later rewrites read that one.
    for (size_t k = i + 1; k < rewrites.size() && new_out != old_out; ++k) {
      std::replace(rewrites[k].second.first.begin(), rewrites[k].second.first.end(), old_out,
                   new_out);
    }
  }
  return true;
}

Result<bool> fold_pad_into_average_pool(Graph& g, NodeId id) {
  const ir::Node& pool = g.node(id);
  if (pool.inputs.empty() || pool.outputs.size() != 1) return false;
  const ValueId x = pool.inputs[0];
  const NodeId p = g.value(x).producer;
  if (p < 0 || g.node(p).op != "pad" || sole_user(g, x) != id) return false;
  const ir::Node& pad = g.node(p);
  const auto attr_str = [](const ir::AttrMap& a, const char* name, const char* dflt) {
    auto it = a.find(name);
    const auto* v = it == a.end() ? nullptr : std::get_if<std::string>(&it->second);
    return v == nullptr ? std::string(dflt) : *v;
  };
  if (attr_str(pad.attrs, "mode", "constant") != "constant" ||
      attr_str(pool.attrs, "auto_pad", "NOTSET") != "NOTSET") {
    return false;
  }
  // With ceil_mode, ONNX drops a last window that starts in the end pads, but keeps it when
  // those rows are the padded input's own: the folded pool could have fewer outputs.
  if (int_attr(pool, "ceil_mode", 0) != 0) return false;
  // No axes input; a constant value absent or a constant 0.
  if (pad.inputs.size() > 3 && pad.inputs[3] != ir::kNoValue) return false;
  if (pad.inputs.size() > 2 && pad.inputs[2] != ir::kNoValue) {
    const Tensor* cv = constant_of(g, pad.inputs[2]);
    if (cv == nullptr || cv->dtype() != DTypeCode::kFloat32 || cv->numel() != 1 ||
        cv->data<float>()[0] != 0.0F) {
      return false;
    }
  }
  const std::optional<ir::TensorType>& in_t = g.value(pad.inputs[0]).type;
  const std::optional<std::vector<int64_t>> pads = int64_constant(g, pad.inputs[1]);
  if (!in_t || !pads || in_t->shape.size() < 3) return false;
  const size_t rank = in_t->shape.size();
  if (pads->size() != 2 * rank) return false;
  // Only spatial dims padded, none cropped.
  if ((*pads)[0] != 0 || (*pads)[1] != 0 || (*pads)[rank] != 0 || (*pads)[rank + 1] != 0) {
    return false;
  }
  std::vector<int64_t> spatial;  // the pool's [x1_begin, ..., x1_end, ...]
  for (size_t half : {size_t{0}, rank}) {
    for (size_t d = 2; d < rank; ++d) {
      if ((*pads)[half + d] < 0) return false;
      spatial.push_back((*pads)[half + d]);
    }
  }
  ir::AttrMap attrs = pool.attrs;
  if (auto it = attrs.find("pads"); it != attrs.end()) {
    const auto* own = std::get_if<std::vector<int64_t>>(&it->second);
    if (own == nullptr || std::any_of(own->begin(), own->end(), [](int64_t v) { return v != 0; })) {
      return false;
    }
  }
  attrs["pads"] = std::move(spatial);
  attrs["count_include_pad"] = int64_t{1};
  std::vector<ValueId> inputs{pad.inputs[0]};
  if (!onednn_runs(g, "average_pool", pool.name, inputs, attrs)) return false;
  return replace_with(g, {p, id}, pool.outputs[0], "average_pool", pool.name, std::move(inputs),
                      std::move(attrs));
}

// The channel-blocked layout (nChw8c, nChw16c) the convs of `set` use: one a conv side
// carries already (keep_blocked_activations), else the one oneDNN picks for a conv's output on
// this CPU; nullopt where none is blocked.
std::optional<ops::fused::ActivationLayout> blocked_layout_of(const Graph& g, const NhwcSet& set) {
  using ops::fused::ActivationLayout;
  std::optional<ActivationLayout> blocked;
  const auto take = [&](ActivationLayout l) {
    if (!blocked && ops::fused::channel_block(l) > 1) blocked = l;
  };
  for (NodeId c : set.convs) {
    const ir::Node& cn = g.node(c);
    for (std::string_view a : {ops::fused::kSrcLayoutAttr, ops::fused::kDstLayoutAttr,
                               ops::fused::kResidualLayoutAttr}) {
      take(layout_attr(cn, a));
    }
  }
  for (auto it = set.convs.begin(); !blocked && it != set.convs.end(); ++it) {
    const ir::Node& cn = g.node(*it);
    Result<ActivationLayout> l =
        preferred_conv_layout(ops::make_node_context(g, cn, ops::OpRegistry::global().find(cn.op)));
    if (l.is_ok()) take(*l);
  }
  return blocked;
}

// The rewrites that store every value of `set` in `layout`: the convs' sides as
// fused_post_ops_internal attributes, the carrying nodes as laid_out_internal; empty where the
// onednn kernel does not take one of the rewritten nodes (it declines where oneDNN has only its
// reference pooling or its reference or gemm convolution for them, or the layout does not fit
// a node: decode_laid_out).
std::vector<NhwcRewrite> layout_rewrites(const Graph& g, const NhwcSet& set, int64_t layout) {
  std::vector<NhwcRewrite> rewrites;
  for (NodeId c : set.convs) {
    const ir::Node& cn = g.node(c);
    auto [inputs, attrs] = as_fused(cn);
    if (set.values.count(cn.outputs[0]) != 0) {
      set_layout(attrs, ops::fused::kDstLayoutAttr, layout);
    }
    if (set.values.count(inputs[0]) != 0) set_layout(attrs, ops::fused::kSrcLayoutAttr, layout);
    if (inputs.size() > ops::fused::kResidualInput &&
        set.values.count(inputs[ops::fused::kResidualInput]) != 0) {
      set_layout(attrs, ops::fused::kResidualLayoutAttr, layout);
    }
    rewrites.push_back(
        {c, std::string(ops::fused::kFusedPostOpsOp), std::move(inputs), std::move(attrs)});
  }
  for (NodeId t : set.through) {
    const ir::Node& tn = g.node(t);
    ir::AttrMap attrs = tn.attrs;
    if (tn.op != ops::laid_out::kLaidOutOp) attrs["base_op"] = tn.op;
    attrs["layout"] = layout;
    rewrites.push_back({t, std::string(ops::laid_out::kLaidOutOp), tn.inputs, std::move(attrs)});
  }
  for (const NhwcRewrite& r : rewrites) {
    if (!onednn_runs(g, r.op, g.node(r.id).name, r.inputs, r.attrs)) return {};
  }
  return rewrites;
}

Result<bool> keep_nhwc_through(Graph& g, NodeId id) {
  if (g.node(id).op == ops::laid_out::kLaidOutOp) return false;
  std::optional<NhwcSet> set = find_nhwc_set(g, id);
  if (!set) return false;
  // The set's convs' blocked layout first (nChw8c on AVX2: oneDNN's jit convs there are faster
  // on it than on nhwc, and a conv side carried blocked already stays so), then nhwc.
  std::vector<NhwcRewrite> rewrites;
  if (const std::optional<ops::fused::ActivationLayout> blocked = blocked_layout_of(g, *set);
      blocked && blocked_fits(g, *set, ops::fused::channel_block(*blocked)) &&
      !component_needs_nhwc(g, *set->values.begin(), ops::fused::channel_block(*blocked))) {
    rewrites = layout_rewrites(g, *set, static_cast<int64_t>(*blocked));
  }
  if (rewrites.empty()) {
    rewrites = layout_rewrites(g, *set, static_cast<int64_t>(ops::fused::ActivationLayout::kNhwc));
  }
  if (rewrites.empty()) return false;
  for (size_t i = 0; i < rewrites.size(); ++i) {
    NhwcRewrite& r = rewrites[i];
    ir::Node& n = g.node(r.id);
    const ValueId old_out = n.outputs[0];
    ValueId new_out = old_out;
    if (n.op == r.op) {
      n.attrs = std::move(r.attrs);
    } else {
      const std::string name = n.name;
      FRAME_RETURN_IF_ERROR(
          replace_with(g, {r.id}, old_out, r.op, name, std::move(r.inputs), std::move(r.attrs))
              .status());
      new_out = g.node(g.find_node(name)).outputs[0];
    }
    // A replaced node's output is a new value: later rewrites read that one.
    for (size_t k = i + 1; k < rewrites.size() && new_out != old_out; ++k) {
      std::replace(rewrites[k].inputs.begin(), rewrites[k].inputs.end(), old_out, new_out);
    }
  }
  return true;
}

FRAME_REGISTER_LOWERING_PATTERN("onednn", fold_batch_norm_into_conv, conv,
                                fold_batch_norm_into_conv);
FRAME_REGISTER_INTERPRETED_LOWERING_PATTERN("onednn", fuse_post_ops, conv, fuse_post_ops);
FRAME_REGISTER_INTERPRETED_LOWERING_PATTERN("onednn", fuse_post_ops, matmul, fuse_post_ops);
FRAME_REGISTER_INTERPRETED_LOWERING_PATTERN("onednn", fuse_post_ops, gemm, fuse_post_ops);
// Sorted after fold_batch_norm_into_conv and fuse_post_ops at a conv (patterns run by name).
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_blocked_activations, conv, keep_blocked_activations);
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_blocked_activations, fused_post_ops_internal,
                                keep_blocked_activations);
FRAME_REGISTER_LOWERING_PATTERN("onednn", fold_pad_into_average_pool, average_pool,
                                fold_pad_into_average_pool);
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_nhwc_through, max_pool, keep_nhwc_through);
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_nhwc_through, average_pool, keep_nhwc_through);
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_nhwc_through, global_max_pool, keep_nhwc_through);
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_nhwc_through, global_average_pool,
                                keep_nhwc_through);
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_nhwc_through, concat, keep_nhwc_through);
FRAME_REGISTER_LOWERING_PATTERN("onednn", keep_nhwc_through, conv_transpose, keep_nhwc_through);

}  // namespace
}  // namespace frame::backends::onednn
