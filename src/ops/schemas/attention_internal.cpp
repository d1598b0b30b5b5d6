// Schema of attention_internal (see attention_internal.h): scaled dot-product attention as one
// node. Shape inference checks Q, KT and V against each other and the bias and mask against the
// scores' shape; the output is [..., Sq, Dv].

#include "ops/schemas/attention_internal.h"

#include <fmt/ranges.h>

#include <string>
#include <string_view>
#include <vector>

#include "frame/ops/op_registry.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::attention {

namespace {

// `want` with -1 for a dim any value matches, as text for errors.
std::string pattern_text(const Shape& want) {
  std::string s = "[";
  for (size_t i = 0; i < want.size(); ++i) {
    if (i > 0) s += ",";
    s += want[i] < 0 ? std::string("*") : std::to_string(want[i]);
  }
  return s + "]";
}

bool matches(const Shape& have, const Shape& want) {
  if (have.size() != want.size()) return false;
  for (size_t i = 0; i < have.size(); ++i) {
    if (want[i] >= 0 && have[i] != want[i]) return false;
  }
  return true;
}

// Attribute `name` (q_perm, v_perm, o_perm, k_perm): a permutation of [0, rank) keeping the
// last axis last (k_perm: or second to last), or empty when absent. Errors name the attribute
// and what is wrong.
Result<std::vector<int64_t>> perm_attr(const NodeContext& ctx, std::string_view name, size_t rank) {
  const auto* p = ctx.attr<std::vector<int64_t>>(name);
  if (p == nullptr) return std::vector<int64_t>();
  const bool kt = name == "k_perm";
  if (!is_rows_perm(*p, rank, kt)) {
    return ctx.error(
        "attribute '{}' must be a permutation of the {} axes that keeps the last "
        "one last{}, got [{}]",
        name, rank, kt ? " or second to last" : "", fmt::join(*p, ","));
  }
  return *p;
}

// The operand that transposing a tensor of shape `in` by `perm` gives (`in` itself where perm
// is empty): its shape and the strides of its dims in `in`'s row-major storage.
void transposed_view(const Shape& in, const std::vector<int64_t>& perm, Shape& shape,
                     std::vector<int64_t>& strides) {
  const std::vector<int64_t> st = contiguous_strides(in);
  if (perm.empty()) {
    shape = in;
    strides = st;
    return;
  }
  shape.resize(perm.size());
  strides.resize(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) {
    shape[k] = in[static_cast<size_t>(perm[k])];
    strides[k] = st[static_cast<size_t>(perm[k])];
  }
}

}  // namespace

bool is_rows_perm(std::span<const int64_t> perm, size_t rank, bool kt) {
  const auto last = static_cast<int64_t>(rank) - 1;
  if (perm.size() != rank || rank < 2 || (perm.back() != last && !(kt && perm[rank - 2] == last))) {
    return false;
  }
  std::vector<bool> seen(rank, false);
  for (int64_t a : perm) {
    if (a < 0 || a > last || seen[static_cast<size_t>(a)]) return false;
    seen[static_cast<size_t>(a)] = true;
  }
  return true;
}

Result<AttentionSpec> decode_attention(const NodeContext& ctx) {
  static constexpr const char* kNames[] = {"Q", "KT", "V", "bias", "mask"};
  if (ctx.num_inputs() < 3 || ctx.num_inputs() > 5) {
    return ctx.error("takes 3 to 5 inputs (Q, KT, V, bias?, mask?), got {}", ctx.num_inputs());
  }
  for (size_t i = 0; i < 3; ++i) {
    if (!ctx.has_input(i)) return ctx.error("input {} ({}) is absent", i, kNames[i]);
  }
  AttentionSpec spec;
  const size_t r = ctx.input_types[kQ].shape.size();
  if (r < 2) {
    return ctx.error("input 0 (Q) must have rank >= 2, got {}",
                     shape_to_string(ctx.input_types[kQ].shape));
  }
  FRAME_ASSIGN_OR_RETURN(const std::vector<int64_t> q_perm, perm_attr(ctx, "q_perm", r));
  FRAME_ASSIGN_OR_RETURN(const std::vector<int64_t> v_perm, perm_attr(ctx, "v_perm", r));
  FRAME_ASSIGN_OR_RETURN(const std::vector<int64_t> o_perm, perm_attr(ctx, "o_perm", r));
  FRAME_ASSIGN_OR_RETURN(const std::vector<int64_t> k_perm, perm_attr(ctx, "k_perm", r));
  if (!k_perm.empty() && ctx.input_types[kKT].shape.size() != r) {
    return ctx.error("input 1 (KT) has rank {} where k_perm has {} entries",
                     ctx.input_types[kKT].shape.size(), r);
  }
  if (!v_perm.empty() && ctx.input_types[kV].shape.size() != r) {
    return ctx.error("input 2 (V) has rank {} where v_perm has {} entries",
                     ctx.input_types[kV].shape.size(), r);
  }
  Shape q, kt, v;
  transposed_view(ctx.input_types[kQ].shape, q_perm, q, spec.q_strides);
  transposed_view(ctx.input_types[kKT].shape, k_perm, kt, spec.kt_strides);
  transposed_view(ctx.input_types[kV].shape, v_perm, v, spec.v_strides);
  spec.sq = q[r - 2];
  spec.d = q[r - 1];
  Shape batch(q.begin(), q.end() - 2);
  Shape want_kt = batch, want_v = batch;
  want_kt.insert(want_kt.end(), {spec.d, -1});
  if (!matches(kt, want_kt)) {
    return ctx.error("input 1 (KT) has shape {}, expected {} (Q is {})", shape_to_string(kt),
                     pattern_text(want_kt), shape_to_string(q));
  }
  spec.sk = kt[r - 1];
  want_v.insert(want_v.end(), {spec.sk, -1});
  if (!matches(v, want_v)) {
    return ctx.error("input 2 (V) has shape {}, expected {} (Q is {}, KT is {})",
                     shape_to_string(v), pattern_text(want_v), shape_to_string(q),
                     shape_to_string(kt));
  }
  spec.dv = v[r - 1];
  for (int64_t b : batch) spec.batch *= b;
  spec.scores = batch;
  spec.scores.insert(spec.scores.end(), {spec.sq, spec.sk});
  // O [..., Sq, Dv]; the node writes it transposed by o_perm: O's dim m lies where the output
  // dim k with o_perm[k] == m does.
  Shape o = batch;
  o.insert(o.end(), {spec.sq, spec.dv});
  spec.out = o;
  spec.o_strides = contiguous_strides(o);
  if (!o_perm.empty()) {
    for (size_t k = 0; k < r; ++k) spec.out[k] = o[static_cast<size_t>(o_perm[k])];
    const std::vector<int64_t> st = contiguous_strides(spec.out);
    for (size_t k = 0; k < r; ++k) spec.o_strides[static_cast<size_t>(o_perm[k])] = st[k];
  }
  for (size_t i = 0; i < 3; ++i) {
    if (ctx.input_types[i].dtype != DTypeCode::kFloat32) {
      return ctx.error("input {} ({}) has dtype {}, expected f32", i, kNames[i],
                       dtype_name(ctx.input_types[i].dtype));
    }
  }
  for (size_t i : {kBias, kMask}) {
    if (!ctx.has_input(i)) continue;
    const DTypeCode want = i == kBias ? DTypeCode::kFloat32 : DTypeCode::kBool;
    if (ctx.input_types[i].dtype != want) {
      return ctx.error("input {} ({}) has dtype {}, expected {}", i, kNames[i],
                       dtype_name(ctx.input_types[i].dtype), dtype_name(want));
    }
    if (!unidirectional_broadcastable(ctx.input_types[i].shape, spec.scores)) {
      return ctx.error("input {} ({}) has shape {}, which does not broadcast to the scores' {}", i,
                       kNames[i], shape_to_string(ctx.input_types[i].shape),
                       shape_to_string(spec.scores));
    }
  }
  spec.has_bias = ctx.has_input(kBias);
  spec.has_mask = ctx.has_input(kMask);
  spec.scale = static_cast<float>(ctx.attr_or<double>("scale", 1.0));
  spec.mask_fill = static_cast<float>(ctx.attr_or<double>("mask_fill", 0.0));
  const int64_t when = ctx.attr_or<int64_t>("mask_fill_when", 1);
  if (when != 0 && when != 1) {
    return ctx.error("attribute 'mask_fill_when' must be 0 or 1, got {}", when);
  }
  spec.fill_when = when == 1;
  return spec;
}

BroadcastIndex broadcast_index(std::span<const int64_t> operand, std::span<const int64_t> scores) {
  const size_t r = scores.size(), lead = r - operand.size();
  // Element strides of the operand, aligned to the scores' dims (0 where it broadcasts).
  std::vector<int64_t> stride(r, 0);
  int64_t s = 1;
  for (size_t i = operand.size(); i-- > 0;) {
    stride[lead + i] = operand[i] == 1 ? 0 : s;
    s *= operand[i];
  }
  return strided_index(stride, scores);
}

BroadcastIndex strided_index(std::span<const int64_t> stride, std::span<const int64_t> scores) {
  const size_t r = scores.size();
  BroadcastIndex ix;
  ix.row_stride = stride[r - 2];
  ix.col_stride = stride[r - 1];
  int64_t batch = 1;
  for (size_t i = 0; i + 2 < r; ++i) batch *= scores[i];
  ix.batch_offset.resize(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) {
    int64_t rest = b, off = 0;
    for (size_t i = r - 2; i-- > 0;) {
      off += (rest % scores[i]) * stride[i];
      rest /= scores[i];
    }
    ix.batch_offset[static_cast<size_t>(b)] = off;
  }
  return ix;
}

namespace {

Result<std::vector<ir::TensorType>> infer_attention(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(AttentionSpec spec, decode_attention(ctx));
  return std::vector<ir::TensorType>{{DTypeCode::kFloat32, std::move(spec.out)}};
}

}  // namespace

FRAME_REGISTER_OP(attention_internal)
    .doc(
        "Scaled dot-product attention (created by the onednn backend's lowering pattern, not by "
        "importers): S = scale * (Q x KT), plus `bias`, then where(mask == mask_fill_when, "
        "mask_fill, S), O = softmax(S over the last axis) x V; Q [..., Sq, D], KT [..., D, Sk], "
        "V [..., Sk, Dv] with equal leading dims, bias and mask broadcasting to [..., Sq, Sk].")
    .input("Q", "queries [..., Sq, D]", DTypeSet{DTypeCode::kFloat32}, "T")
    .input("KT", "keys, transposed [..., D, Sk]", DTypeSet{DTypeCode::kFloat32}, "T")
    .input("V", "values [..., Sk, Dv]", DTypeSet{DTypeCode::kFloat32}, "T")
    .optional_input("bias", "added to the scores (broadcasts to [..., Sq, Sk])",
                    DTypeSet{DTypeCode::kFloat32}, "T")
    .optional_input("mask", "scores where mask == mask_fill_when become mask_fill",
                    DTypeSet{DTypeCode::kBool})
    .output("O", "attention output [..., Sq, Dv]", DTypeSet{DTypeCode::kFloat32}, "T")
    .attr("scale", ir::AttrType::kFloat, "multiplies Q x KT", 1.0)
    .attr("mask_fill", ir::AttrType::kFloat, "the masked scores' value (e.g. -inf)", 0.0)
    .attr("mask_fill_when", ir::AttrType::kInt, "1: fill where mask is true; 0: where false",
          int64_t{1})
    .optional_attr("q_perm", ir::AttrType::kInts,
                   "input 0 transposed by q_perm is Q (last axis kept); absent: input 0 is Q")
    .optional_attr("k_perm", ir::AttrType::kInts,
                   "input 1 transposed by k_perm is KT (its last axis kept at KT's last or D "
                   "axis); absent: input 1 is KT")
    .optional_attr("v_perm", ir::AttrType::kInts,
                   "input 2 transposed by v_perm is V (last axis kept); absent: input 2 is V")
    .optional_attr("o_perm", ir::AttrType::kInts,
                   "the output is O transposed by o_perm (last axis kept); absent: the output is O")
    .shape_infer(infer_attention);

}  // namespace frame::ops::attention
