// Schema of laid_out_internal (see laid_out_internal.h): a pool or channel concat whose rank-4
// activations are stored nhwc. Shape inference is the base op's.

#include "ops/schemas/laid_out_internal.h"

#include <string>
#include <vector>

#include "frame/ops/op_registry.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops::laid_out {

Result<LaidOutSpec> decode_laid_out(const NodeContext& ctx) {
  LaidOutSpec spec;
  const std::string* base = ctx.attr<std::string>("base_op");
  if (base == nullptr || !is_base_op(*base)) {
    return ctx.error(
        "attribute 'base_op' must be \"max_pool\", \"average_pool\", \"global_average_pool\", "
        "\"global_max_pool\" or \"concat\", got \"{}\"",
        base == nullptr ? "" : *base);
  }
  spec.base_op = *base;
  const int64_t layout = ctx.attr_or<int64_t>("layout", 0);
  if (layout != static_cast<int64_t>(fused::ActivationLayout::kNhwc)) {
    return ctx.error("attribute 'layout' must be 1 (nhwc), got {}", layout);
  }
  spec.layout = fused::ActivationLayout::kNhwc;
  if (ctx.num_inputs() == 0) return ctx.error("needs at least one input");
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) return ctx.error("input {} is absent", i);
    if (ctx.input_types[i].shape.size() != 4) {
      return ctx.error("input {} must be rank 4 [N, C, H, W] to be stored nhwc, got {}", i,
                       shape_to_string(ctx.input_types[i].shape));
    }
  }
  if (spec.base_op == "concat") {
    const int64_t axis = ctx.attr_or<int64_t>("axis", 0);
    if (axis != 1 && axis != -3) {
      return ctx.error("concat of nhwc tensors joins the channel axis (1 or -3), got axis {}",
                       axis);
    }
  } else if (ctx.num_inputs() != 1) {
    return ctx.error("{} takes one input, got {}", spec.base_op, ctx.num_inputs());
  }
  if (ctx.num_outputs != 1) return ctx.error("has one output, got {}", ctx.num_outputs);
  return spec;
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
  return out;
}

}  // namespace

FRAME_REGISTER_OP(laid_out_internal)
    .doc(
        "A max_pool, average_pool, global_average_pool, global_max_pool or channel concat "
        "(`base_op`, with that op's inputs and attributes) whose rank-4 inputs and output are "
        "stored channels-last (`layout` = 1: [N][H][W][C]); the logical shapes and the values "
        "are the base op's, only the order of the elements in memory differs. Created by the "
        "onednn lowering pattern keep_nhwc_through, not by importers.")
    .variadic_input("X", "the base op's inputs, rank 4, stored nhwc", 1, kFloatDTypes, "T")
    .output("Y", "the base op's result, rank 4, stored nhwc", kFloatDTypes, "T")
    .required_attr("base_op", AttrType::kString,
                   "max_pool, average_pool, global_average_pool, global_max_pool or concat")
    .required_attr("layout", AttrType::kInt, "memory order of every input and the output: 1 nhwc")
    .optional_attr("axis", AttrType::kInt, "concat: the channel axis, 1 or -3")
    .attr("auto_pad", AttrType::kString, "pools: NOTSET, SAME_UPPER, SAME_LOWER or VALID",
          std::string("NOTSET"))
    .attr("ceil_mode", AttrType::kInt, "pools: round the output size up", int64_t{0})
    .attr("count_include_pad", AttrType::kInt, "average_pool: count pad taps in the divisor",
          int64_t{0})
    .optional_attr("dilations", AttrType::kInts, "pools: dilation per spatial dim")
    .optional_attr("kernel_shape", AttrType::kInts, "pools: window size per spatial dim")
    .optional_attr("pads", AttrType::kInts, "pools: [x1_begin, ..., x1_end, ...]")
    .attr("storage_order", AttrType::kInt, "max_pool: Indices order (no Indices output here)",
          int64_t{0})
    .optional_attr("strides", AttrType::kInts, "pools: stride per spatial dim")
    .shape_infer(infer_laid_out);

}  // namespace frame::ops::laid_out
