// onednn kernel of fused_post_ops_internal (src/ops/schemas/nn_fused_internal.h): the base
// conv / matmul / gemm primitive with the post-ops attached as oneDNN post-ops (eltwise for the
// activations, binary add for the residual), so the result is written once.

#include <utility>

#include "backends/onednn/kernels/linear_kernels.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::onednn {
namespace {

Result<std::shared_ptr<LinearPrimitive>> make_fused(const ops::NodeContext& ctx, bool reorder) {
  FRAME_ASSIGN_OR_RETURN(ops::fused::FusedSpec spec, ops::fused::decode_fused(ctx));
  if (spec.base_op == "conv") {
    const ConvLayouts layouts{spec.src_layout, spec.dst_layout, spec.residual_layout};
    return make_conv(ctx, false, spec.post_ops, reorder, layouts);
  }
  return make_matmul(ctx, spec.base_op == "gemm", spec.post_ops, reorder);
}

// As the plain matmul's (matmul.cpp): where prepare follows at once (NodeContext::
// accepted_state, set by the interpreted tier), accepts keeps the state it built, with weights
// reordered, and prepare takes it instead of building it again.
Status accepts_fused(const ops::NodeContext& ctx) {
  const bool keep = ctx.accepted_state != nullptr;
  Result<std::shared_ptr<LinearPrimitive>> p = make_fused(ctx, keep);
  if (keep && p.is_ok()) *ctx.accepted_state = std::shared_ptr<void>(std::move(*p));
  return p.status();
}

Result<std::shared_ptr<void>> prepare_fused(const ops::NodeContext& ctx) {
  if (ctx.accepted_state != nullptr && *ctx.accepted_state != nullptr) {
    return std::exchange(*ctx.accepted_state, nullptr);
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<LinearPrimitive> p, make_fused(ctx, true));
  return std::shared_ptr<void>(std::move(p));
}

// A conv's residual (input R) may be overwritten by Y where both share one memory order: the
// sum post-op needs R in Y's buffer before the primitive runs, so sharing that buffer saves the
// copy (ResNet-50's 16 residual blocks copy 22 MB per run otherwise). With equal layouts the
// residual then needs no reorder into Y, which could not run in place; where Y goes through a
// reorder, the primitive writes a scratch buffer and Y is written after R was read
// (KernelDef::in_place_input).
int conv_residual_in_place(const ops::NodeContext& ctx) {
  Result<ops::fused::FusedSpec> spec = ops::fused::decode_fused(ctx);
  if (!spec.is_ok() || spec->base_op != "conv" || !spec->has_residual ||
      spec->residual_layout != spec->dst_layout) {
    return -1;
  }
  return static_cast<int>(ops::fused::kResidualInput);
}

FRAME_REGISTER_KERNEL(fused_post_ops_internal, "onednn", run_linear)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .reorders(linear_reorders)
    .in_place_input(conv_residual_in_place)
    .accepts(accepts_fused)
    .prepare(prepare_fused);

}  // namespace
}  // namespace frame::backends::onednn
