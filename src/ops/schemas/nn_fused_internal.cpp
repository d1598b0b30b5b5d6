// Schema of fused_post_ops_internal (see nn_fused_internal.h): a conv/matmul/gemm node with
// post-ops, produced by backend lowering patterns. Shape inference is the base op's.

#include "ops/schemas/nn_fused_internal.h"

#include <fmt/format.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

#include "frame/ops/op_registry.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::fused {

namespace {

constexpr std::array<std::pair<PostOpKind, std::string_view>, 12> kNames = {{
    {PostOpKind::kAdd, "add"},
    {PostOpKind::kRelu, "relu"},
    {PostOpKind::kLeakyRelu, "leaky_relu"},
    {PostOpKind::kClip, "clip"},
    {PostOpKind::kSigmoid, "sigmoid"},
    {PostOpKind::kTanh, "tanh"},
    {PostOpKind::kElu, "elu"},
    {PostOpKind::kHardSwish, "hard_swish"},
    {PostOpKind::kGelu, "gelu"},
    {PostOpKind::kGeluTanh, "gelu_tanh"},
    {PostOpKind::kHardSigmoid, "hard_sigmoid"},
    {PostOpKind::kSwish, "swish"},
}};

// Number of leading inputs that belong to the base op.
size_t base_inputs(std::string_view base) { return base == "matmul" ? 2 : 3; }

// Decodes layout attribute `name` of a tensor of rank `rank` with `channels` channels
// (`present` false: the tensor is absent, so only the plain layout is valid).
Result<ActivationLayout> decode_layout(const NodeContext& ctx, std::string_view name,
                                       std::string_view base, bool present, size_t rank,
                                       int64_t channels) {
  const int64_t v = ctx.attr_or<int64_t>(name, 0);
  const auto layout = static_cast<ActivationLayout>(v);
  if (layout == ActivationLayout::kPlain) return layout;
  if (layout != ActivationLayout::kNhwc && layout != ActivationLayout::kNChw8c &&
      layout != ActivationLayout::kNChw16c) {
    return ctx.error(
        "attribute '{}' must be 0 (plain), 1 (nhwc), 8 (nChw8c) or 16 (nChw16c), got {}", name, v);
  }
  const int64_t block = channel_block(layout);
  if (base != "conv" || !present || rank != 4 || channels % block != 0) {
    return ctx.error(
        "attribute '{}' = {} needs a conv with that tensor present and rank 4{}; got base_op "
        "\"{}\", {}rank {}, {} channels",
        name, v, block > 1 ? fmt::format(", channels a multiple of {}", block) : std::string(),
        base, present ? "" : "tensor absent, ", rank, channels);
  }
  return layout;
}

}  // namespace

std::string_view post_op_name(PostOpKind k) {
  for (const auto& [kind, name] : kNames) {
    if (kind == k) return name;
  }
  return "?";
}

std::optional<PostOpKind> post_op_from_name(std::string_view s) {
  for (const auto& [kind, name] : kNames) {
    if (name == s) return kind;
  }
  return std::nullopt;
}

Result<FusedSpec> decode_fused(const NodeContext& ctx) {
  FusedSpec spec;
  const std::string* base = ctx.attr<std::string>("base_op");
  if (base == nullptr || (*base != "conv" && *base != "matmul" && *base != "gemm")) {
    return ctx.error("attribute 'base_op' must be \"conv\", \"matmul\" or \"gemm\", got \"{}\"",
                     base == nullptr ? "" : *base);
  }
  spec.base_op = *base;
  const auto* names = ctx.attr<std::vector<std::string>>("post_ops");
  const auto* params = ctx.attr<std::vector<double>>("post_op_params");
  const size_t n = names == nullptr ? 0 : names->size();
  if (params != nullptr && params->size() != 2 * n) {
    return ctx.error("attribute 'post_op_params' must hold 2 values per post-op ({}), got {}",
                     2 * n, params->size());
  }
  int adds = 0;
  for (size_t i = 0; i < n; ++i) {
    std::optional<PostOpKind> k = post_op_from_name((*names)[i]);
    if (!k) return ctx.error("attribute 'post_ops': unknown post-op \"{}\"", (*names)[i]);
    PostOp p{*k, 0.0, 0.0};
    if (params != nullptr) {
      p.alpha = (*params)[2 * i];
      p.beta = (*params)[2 * i + 1];
    }
    adds += *k == PostOpKind::kAdd ? 1 : 0;
    spec.post_ops.push_back(p);
  }
  spec.has_residual = ctx.has_input(kResidualInput);
  if (adds != (spec.has_residual ? 1 : 0)) {
    return ctx.error("{} \"add\" post-op(s) but input 3 (R) is {}", adds,
                     spec.has_residual ? "present (needs exactly one)" : "absent");
  }
  if (spec.base_op == "matmul" && ctx.has_input(2)) {
    return ctx.error("base_op \"matmul\" takes 2 inputs; input 2 must be absent");
  }
  // Channels of X (dim 1 of input 0) and of Y and R (dim 0 of the conv weights W).
  const Shape x = ctx.has_input(0) ? ctx.input_types[0].shape : Shape{};
  const Shape w = ctx.has_input(1) ? ctx.input_types[1].shape : Shape{};
  const int64_t cx = x.size() > 1 ? x[1] : 0;
  const int64_t cy = w.empty() ? 0 : w[0];
  FRAME_ASSIGN_OR_RETURN(spec.src_layout, decode_layout(ctx, kSrcLayoutAttr, spec.base_op,
                                                        ctx.has_input(0), x.size(), cx));
  FRAME_ASSIGN_OR_RETURN(spec.dst_layout, decode_layout(ctx, kDstLayoutAttr, spec.base_op,
                                                        ctx.has_input(0), x.size(), cy));
  FRAME_ASSIGN_OR_RETURN(spec.residual_layout, decode_layout(ctx, kResidualLayoutAttr, spec.base_op,
                                                             spec.has_residual, x.size(), cy));
  return spec;
}

namespace {

using ir::AttrType;
using ir::TensorType;

Result<std::vector<TensorType>> infer_fused(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(FusedSpec spec, decode_fused(ctx));
  const OpSchema* base = OpRegistry::global().find(spec.base_op);
  if (base == nullptr || base->shape_fn() == nullptr) {
    return ctx.error("base op '{}' is not registered", spec.base_op);
  }
  NodeContext bctx = ctx;
  const size_t nb = std::min(base_inputs(spec.base_op), ctx.num_inputs());
  bctx.input_types.resize(nb);
  bctx.input_present.resize(nb);
  bctx.input_constants.resize(std::min(nb, bctx.input_constants.size()));
  FRAME_ASSIGN_OR_RETURN(std::vector<TensorType> out, base->shape_fn()(bctx));
  if (spec.has_residual) {
    const TensorType& r = ctx.input_types[kResidualInput];
    const bool row = spec.base_op != "conv" && broadcasts_along_rows(r.shape, out[0].shape);
    if (r.dtype != out[0].dtype || (r.shape != out[0].shape && !row)) {
      return ctx.error("input 3 (R) {} {} must have the output's dtype and shape {} {}{}",
                       dtype_name(r.dtype), shape_to_string(r.shape), dtype_name(out[0].dtype),
                       shape_to_string(out[0].shape),
                       spec.base_op != "conv" ? " (or be a row of its last dim)" : "");
    }
  }
  return out;
}

}  // namespace

FRAME_REGISTER_OP(fused_post_ops_internal)
    .doc(
        "A conv, matmul or gemm node (`base_op`, with that op's inputs and attributes) followed "
        "by `post_ops` applied in order to its result: \"add\" adds input 3 (R, same shape as "
        "the output), the others are the activations relu, leaky_relu (alpha), clip (alpha = "
        "min, beta = max), sigmoid, tanh, elu (alpha), hard_swish, gelu (erf) and gelu_tanh. "
        "Created by backend lowering patterns, not by importers. A conv may carry src_layout, "
        "dst_layout and residual_layout (0 = plain NCHW; rank 4 only: 1 = nhwc, 8 = nChw8c "
        "[N][C/8][H][W][8] with channels a multiple of 8, 16 = nChw16c [N][C/16][H][W][16] with "
        "channels a multiple of 16): the memory order of X, Y and R; the "
        "logical "
        "shape and the values are unchanged, only the order of the elements in memory.")
    .input("A", "conv X / matmul A / gemm A", kFloatDTypes, "T")
    .input("B", "conv W / matmul B / gemm B", kFloatDTypes, "T")
    .optional_input("C", "conv bias B / gemm C (absent for matmul)", kFloatDTypes, "T")
    .optional_input("R",
                    "residual added by the \"add\" post-op: output shape, or for matmul/gemm a "
                    "row of the output's last dim (a bias)",
                    kFloatDTypes, "T")
    .output("Y", "base result after the post-ops", kFloatDTypes, "T")
    .required_attr("base_op", AttrType::kString, "\"conv\", \"matmul\" or \"gemm\"")
    .required_attr("post_ops", AttrType::kStrings, "post-op names, applied in order")
    .optional_attr("post_op_params", AttrType::kFloats, "two floats (alpha, beta) per post-op")
    .attr("auto_pad", AttrType::kString, "conv: NOTSET, SAME_UPPER, SAME_LOWER or VALID",
          std::string("NOTSET"))
    .optional_attr("dilations", AttrType::kInts, "conv: dilation per spatial dim")
    .attr("group", AttrType::kInt, "conv: number of channel groups", int64_t{1})
    .optional_attr("kernel_shape", AttrType::kInts, "conv: must match W's spatial dims")
    .optional_attr("pads", AttrType::kInts, "conv: [x1_begin, ..., x1_end, ...]")
    .optional_attr("strides", AttrType::kInts, "conv: stride per spatial dim")
    .attr("src_layout", AttrType::kInt,
          "conv: memory order of X: 0 plain, 1 nhwc, 8 nChw8c, 16 nChw16c", int64_t{0})
    .attr("dst_layout", AttrType::kInt,
          "conv: memory order of Y: 0 plain, 1 nhwc, 8 nChw8c, 16 nChw16c", int64_t{0})
    .attr("residual_layout", AttrType::kInt,
          "conv: memory order of R: 0 plain, 1 nhwc, 8 nChw8c, 16 nChw16c", int64_t{0})
    .attr("alpha", AttrType::kFloat, "gemm: scale of the product", 1.0)
    .attr("beta", AttrType::kFloat, "gemm: scale of C", 1.0)
    .attr("transA", AttrType::kInt, "gemm: transpose A when 1", int64_t{0})
    .attr("transB", AttrType::kInt, "gemm: transpose B when 1", int64_t{0})
    .shape_infer(infer_fused);

}  // namespace frame::ops::fused
