// Schema of laid_out_internal (see laid_out_internal.h): a pool, channel concat, inference
// batch normalization or attribute-free elementwise node whose rank-4 activations are stored
// nhwc or channel-blocked. Shape inference is the base op's.

#include "ops/schemas/laid_out_internal.h"

#include <string>
#include <vector>

#include "frame/ops/op_registry.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::laid_out {

std::optional<BaseKind> base_kind(std::string_view op) {
  if (op == "max_pool" || op == "average_pool" || op == "global_max_pool" ||
      op == "global_average_pool") {
    return BaseKind::kPool;
  }
  if (op == "concat") return BaseKind::kConcat;
  if (op == "batch_normalization") return BaseKind::kBatchNorm;
  if (op == "conv_transpose") return BaseKind::kConvTranspose;
  // Broadcasting commutes with permuting every operand's axes alike, so an elementwise op
  // computes the same on nhwc operands read as [N, H, W, C]; attributes are excluded only
  // because this schema declares a fixed set (ARCH-043: decided by the trait, not a name list).
  const OpSchema* s = OpRegistry::global().find(op);
  if (s != nullptr && s->has_trait(OpTrait::kElementwise) && s->attrs().empty() &&
      !op.ends_with("_internal")) {
    return BaseKind::kElementwise;
  }
  return std::nullopt;
}

Result<LaidOutSpec> decode_laid_out(const NodeContext& ctx) {
  LaidOutSpec spec;
  const std::string* base = ctx.attr<std::string>("base_op");
  const std::optional<BaseKind> kind =
      base == nullptr ? std::nullopt : base_kind(std::string_view(*base));
  if (!kind) {
    return ctx.error(
        "attribute 'base_op' must be a pool, concat, batch_normalization, conv_transpose or an "
        "elementwise op without attributes, got \"{}\"",
        base == nullptr ? "" : *base);
  }
  spec.base_op = *base;
  spec.kind = *kind;
  const int64_t layout = ctx.attr_or<int64_t>("layout", 0);
  if (layout != static_cast<int64_t>(fused::ActivationLayout::kNhwc) &&
      layout != static_cast<int64_t>(fused::ActivationLayout::kNChw8c) &&
      layout != static_cast<int64_t>(fused::ActivationLayout::kNChw16c)) {
    return ctx.error("attribute 'layout' must be 1 (nhwc), 8 (nChw8c) or 16 (nChw16c), got {}",
                     layout);
  }
  spec.layout = static_cast<fused::ActivationLayout>(layout);
  if (ctx.num_outputs != 1) return ctx.error("has one output, got {}", ctx.num_outputs);
  if (ctx.num_inputs() == 0 || !ctx.has_input(0)) return ctx.error("input 0 is absent");
  // Positions that must hold rank-4 activations.
  size_t rank4 = 1;
  if (spec.kind == BaseKind::kConcat) rank4 = ctx.num_inputs();
  bool any_rank4 = false;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const Shape& s = ctx.input_types[i].shape;
    const bool elementwise_scalar = spec.kind == BaseKind::kElementwise && numel_of(s) == 1;
    if (s.size() == 4) {
      any_rank4 = true;
    } else if ((i < rank4 || spec.kind == BaseKind::kElementwise) && !elementwise_scalar) {
      return ctx.error("input {} must be rank 4 [N, C, H, W] to be stored nhwc{}, got {}", i,
                       spec.kind == BaseKind::kElementwise ? " (or hold one element)" : "",
                       shape_to_string(s));
    }
  }
  if (!any_rank4) return ctx.error("no input is rank 4");
  // A blocked layout: a pool, concat, batch normalization or an elementwise op whose rank-4
  // operands all have one shape (no broadcasting across the blocks), every activation's C a
  // multiple of the block (so the byte size is the plain one).
  if (const int64_t block = fused::channel_block(spec.layout); block > 1) {
    const Shape* first = nullptr;  // the first activation's shape
    for (size_t i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i) || !activation_input(spec.kind, i, ctx.input_types[i].shape)) continue;
      const Shape& s = ctx.input_types[i].shape;
      if (s[1] % block != 0) {
        return ctx.error("input {} has {} channels, not a multiple of layout {}'s block", i, s[1],
                         layout);
      }
      if (first == nullptr) first = &s;
      if (spec.kind == BaseKind::kElementwise && s != *first) {
        return ctx.error(
            "elementwise operands stored blocked must have one shape: input {} is {}, not {}", i,
            shape_to_string(s), shape_to_string(*first));
      }
    }
  }
  if (spec.kind == BaseKind::kConcat) {
    const int64_t axis = ctx.attr_or<int64_t>("axis", 0);
    if (axis != 1 && axis != -3) {
      return ctx.error("concat of nhwc tensors joins the channel axis (1 or -3), got axis {}",
                       axis);
    }
  } else if (spec.kind == BaseKind::kPool && ctx.num_inputs() != 1) {
    return ctx.error("{} takes one input, got {}", spec.base_op, ctx.num_inputs());
  } else if (spec.kind == BaseKind::kBatchNorm && ctx.attr_or<int64_t>("training_mode", 0) != 0) {
    return ctx.error("batch_normalization is laid out in inference form only (training_mode 0)");
  } else if (spec.kind == BaseKind::kConvTranspose) {
    if (ctx.num_inputs() < 2 || ctx.num_inputs() > 3 || !ctx.has_input(1)) {
      return ctx.error("conv_transpose takes X, W and an optional B, got {} inputs",
                       ctx.num_inputs());
    }
    if (ctx.input_types[1].shape.size() != 4) {
      return ctx.error("input 1 (W) of conv_transpose must be rank 4 like X, got {}",
                       shape_to_string(ctx.input_types[1].shape));
    }
  }
  return spec;
}

bool activation_input(BaseKind kind, size_t i, const Shape& shape) {
  if (kind == BaseKind::kConcat) return true;
  if (kind == BaseKind::kElementwise) return shape.size() == 4;
  return i == 0;
}

namespace {

using ir::AttrType;
using ir::TensorType;

Result<std::vector<TensorType>> infer_laid_out(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(LaidOutSpec spec, decode_laid_out(ctx));
  const OpSchema* base = OpRegistry::global().find(spec.base_op);
  if (base == nullptr || base->shape_fn() == nullptr) {
    return ctx.error("base op '{}' is not registered", spec.base_op);
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<TensorType> out, base->shape_fn()(ctx));
  out.resize(1);
  if (out[0].shape.size() != 4) {
    return ctx.error("the output must be rank 4 to be stored in layout {}, got {}",
                     static_cast<int64_t>(spec.layout), shape_to_string(out[0].shape));
  }
  if (out[0].shape[1] % fused::channel_block(spec.layout) != 0) {
    return ctx.error("the output has {} channels, not a multiple of layout {}'s block",
                     out[0].shape[1], static_cast<int64_t>(spec.layout));
  }
  return out;
}

}  // namespace

FRAME_REGISTER_OP(laid_out_internal)
    .doc(
        "A pool (max_pool, average_pool, global_max_pool, global_average_pool), a channel "
        "concat, an inference batch_normalization, an elementwise op without attributes or a "
        "2-d conv_transpose (`base_op`, with that op's inputs and attributes) whose rank-4 "
        "activations and output are stored channels-last (`layout` = 1: [N][H][W][C]) or "
        "channel-blocked (8: nChw8c, 16: nChw16c, [N][C/b][H][W][b]; C a multiple of b, "
        "elementwise operands of one shape); the logical shapes and the values "
        "are the base op's, only the order of the elements in memory differs. Created by the "
        "onednn lowering pattern keep_nhwc_through, not by importers.")
    .variadic_input("X", "the base op's inputs; rank-4 ones stored nhwc", 1, kFloatDTypes, "T")
    .output("Y", "the base op's result, rank 4, stored nhwc", kFloatDTypes, "T")
    .required_attr("base_op", AttrType::kString,
                   "a pool, concat, batch_normalization, conv_transpose or an attribute-free "
                   "elementwise op")
    .required_attr("layout", AttrType::kInt,
                   "memory order of the rank-4 tensors: 1 nhwc, 8 nChw8c, 16 nChw16c")
    .optional_attr("axis", AttrType::kInt, "concat: the channel axis, 1 or -3")
    .attr("auto_pad", AttrType::kString, "pools: NOTSET, SAME_UPPER, SAME_LOWER or VALID",
          std::string("NOTSET"))
    .attr("ceil_mode", AttrType::kInt, "pools: round the output size up", int64_t{0})
    .attr("count_include_pad", AttrType::kInt, "average_pool: count pad taps in the divisor",
          int64_t{0})
    .optional_attr("dilations", AttrType::kInts, "pools, conv_transpose: dilation per spatial dim")
    .optional_attr("kernel_shape", AttrType::kInts,
                   "pools, conv_transpose: window size per spatial dim")
    .optional_attr("pads", AttrType::kInts, "pools, conv_transpose: [x1_begin, ..., x1_end, ...]")
    .attr("group", AttrType::kInt, "conv_transpose: number of groups", int64_t{1})
    .optional_attr("output_padding", AttrType::kInts,
                   "conv_transpose: extra size at the end of each spatial dim")
    .optional_attr("output_shape", AttrType::kInts, "conv_transpose: the output's spatial size")
    .attr("storage_order", AttrType::kInt, "max_pool: Indices order (no Indices output here)",
          int64_t{0})
    .optional_attr("strides", AttrType::kInts, "pools, conv_transpose: stride per spatial dim")
    .attr("epsilon", AttrType::kFloat, "batch_normalization: added to the variance", 1e-5)
    .attr("momentum", AttrType::kFloat, "batch_normalization: unused in inference form", 0.9)
    .attr("training_mode", AttrType::kInt, "batch_normalization: must be 0", int64_t{0})
    .shape_infer(infer_laid_out);

}  // namespace frame::ops::laid_out
