// onednn kernel of fused_post_ops_internal (src/ops/schemas/nn_fused_internal.h): the base
// conv / matmul / gemm primitive with the post-ops attached as oneDNN post-ops (eltwise for the
// activations, binary add for the residual), so the result is written once.

#include <utility>

#include "backends/onednn/kernels/linear_kernels.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::onednn {

std::optional<std::vector<OwnPostOp>> own_post_ops(std::span<const ops::fused::PostOp> post) {
  using ops::fused::PostOpKind;
  const VecTable& vt = vec_table();
  const auto loop = [&](std::string_view op) {
    const int i = unary_index(op);
    return i < 0 ? nullptr : vt.unary[static_cast<size_t>(i)];
  };
  std::vector<OwnPostOp> chain;
  for (const ops::fused::PostOp& o : post) {
    OwnPostOp q;
    q.kind = o.kind;
    const auto a = static_cast<float>(o.alpha), b = static_cast<float>(o.beta);
    switch (o.kind) {
      case PostOpKind::kAdd:
        break;
      case PostOpKind::kRelu:
        q.unary = loop("relu"), q.functor = ops::ew::ReluOp<float>{};
        break;
      case PostOpKind::kLeakyRelu: {
        ops::ew::LeakyReluOp<float> f;
        f.alpha = a;
        q.unary = loop("leaky_relu"), q.functor = f;
        break;
      }
      case PostOpKind::kClip: {
        ops::ew::ClipOp<float> f;
        f.lo = a, f.hi = b;
        q.unary = vt.clip, q.functor = f;
        break;
      }
      case PostOpKind::kSigmoid:
        q.unary = loop("sigmoid"), q.functor = ops::ew::SigmoidOp<float>{};
        break;
      case PostOpKind::kTanh:
        q.unary = loop("tanh"), q.functor = ops::ew::TanhOp<float>{};
        break;
      case PostOpKind::kElu: {
        ops::ew::EluOp<float> f;
        f.alpha = a;
        q.unary = loop("elu"), q.functor = f;
        break;
      }
      case PostOpKind::kHardSwish:
        q.unary = loop("hard_swish"), q.functor = ops::ew::HardSwishOp<float>{};
        break;
      case PostOpKind::kGelu:
      case PostOpKind::kGeluTanh: {
        ops::ew::GeluOp<float> f;
        f.tanh_approx = o.kind == PostOpKind::kGeluTanh;
        q.unary = loop("gelu"), q.functor = f;
        break;
      }
      case PostOpKind::kHardSigmoid: {
        ops::ew::HardSigmoidOp<float> f;
        f.alpha = a, f.beta = b;
        q.unary = loop("hard_sigmoid"), q.functor = f;
        break;
      }
      default:
        return std::nullopt;
    }
    if (o.kind != PostOpKind::kAdd && q.unary == nullptr) return std::nullopt;
    chain.push_back(std::move(q));
  }
  return chain;
}

void apply_own_post_ops(std::span<const OwnPostOp> chain, VecBinaryFn add, float* y, const float* r,
                        size_t n) {
  static const ops::ew::AddOp<float> add_functor{};
  for (const OwnPostOp& o : chain) {
    if (o.kind == ops::fused::PostOpKind::kAdd) {
      add(y, r, y, n, &add_functor);
    } else {
      o.unary(y, y, n, o.arg());
    }
  }
}

namespace {

Result<std::shared_ptr<LinearPrimitive>> make_fused(const ops::NodeContext& ctx, bool reorder) {
  FRAME_ASSIGN_OR_RETURN(ops::fused::FusedSpec spec, ops::fused::decode_fused(ctx));
  if (spec.base_op == "conv") {
    const ConvLayouts layouts{spec.src_layout, spec.dst_layout, spec.residual_layout};
    const bool plain = layouts.src == ops::fused::ActivationLayout::kPlain &&
                       layouts.dst == ops::fused::ActivationLayout::kPlain &&
                       layouts.residual == ops::fused::ActivationLayout::kPlain;
    // Prepared for one run (the interpreted tier): the shape-agnostic conv with the chain as
    // its own loops. Where the conv alone would run shape-agnostic but the chain has no own
    // loop, the node is refused (the post-ops stay nodes of their own) rather than built as a
    // primitive, whose JIT code is specific to the sizes.
    if (ctx.run_once && plain) {
      Result<std::shared_ptr<LinearPrimitive>> p =
          make_shape_agnostic_conv(ctx, reorder, spec.post_ops);
      if (p.is_ok() || make_shape_agnostic_conv(ctx, false).is_ok()) return p;
    }
    if (Result<std::shared_ptr<LinearPrimitive>> p =
            make_winograd_conv(ctx, spec.post_ops, layouts, reorder);
        p.is_ok()) {
      return p;
    }
    if (plain) {
      if (Result<std::shared_ptr<LinearPrimitive>> p =
              padding_taps_conv(ctx, spec.post_ops, reorder);
          p.is_ok()) {
        return p;
      }
    }
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
    .reuse_state(linear_reuse_state)
    .in_place_input(conv_residual_in_place)
    .accepts(accepts_fused)
    .prepare(prepare_fused);

}  // namespace
}  // namespace frame::backends::onednn
