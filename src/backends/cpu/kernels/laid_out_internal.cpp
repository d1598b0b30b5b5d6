// cpu reference kernel of laid_out_internal (src/ops/schemas/laid_out_internal.h): converts the
// activation inputs (nhwc) to plain NCHW copies, runs the base op's own cpu kernel on them (other
// inputs, batch-norm parameters, one-element operands and a conv_transpose's W and B, as they
// are) and stores its result
// nhwc in the output, so each formula keeps one home (ARCH-041: the
// fallback chain may place a node the onednn pattern created on cpu).

#include "ops/schemas/laid_out_internal.h"

#include <memory>
#include <vector>

#include "backends/cpu/kernels/activation_layout.h"
#include "frame/ops/kernel_registry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;
using ops::fused::ActivationLayout;

struct LaidOutState {
  const ops::KernelDef* base = nullptr;
  std::shared_ptr<void> base_state;  // the base kernel's prepared state, or null
  ActivationLayout layout = ActivationLayout::kNhwc;
  ops::laid_out::BaseKind kind = ops::laid_out::BaseKind::kPool;
};

Result<std::shared_ptr<void>> prepare_laid_out(const ops::NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ops::laid_out::LaidOutSpec spec, ops::laid_out::decode_laid_out(ctx));
  auto st = std::make_shared<LaidOutState>();
  st->base = ops::KernelRegistry::global().find(spec.base_op, "cpu");
  if (st->base == nullptr) return ctx.error("base op '{}' has no cpu kernel", spec.base_op);
  st->layout = spec.layout;
  st->kind = spec.kind;
  // The base kernel sees this node's logical types and attributes: it computes on plain copies.
  if (st->base->prepare != nullptr) {
    FRAME_ASSIGN_OR_RETURN(st->base_state, st->base->prepare(ctx));
  }
  return std::shared_ptr<void>(std::move(st));
}

Status laid_out_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const LaidOutState*>(ctx.state);
  const size_t n_in = ctx.inputs.size();
  std::vector<Tensor> plain_in(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    if (!ops::laid_out::activation_input(st.kind, i, ctx.input(i).shape())) {
      plain_in[i] = ctx.input(i);
      continue;
    }
    FRAME_ASSIGN_OR_RETURN(plain_in[i], plain_copy(ctx.input(i), st.layout, i));
  }
  Tensor& out = ctx.output(0);
  FRAME_ASSIGN_OR_RETURN(
      Tensor plain_out, Tensor::view(out.dtype(), out.shape(), layout_scratch(n_in, out.nbytes())));
  KernelContext base = ctx;
  base.inputs = plain_in;
  base.outputs = std::span<Tensor>(&plain_out, 1);
  base.state = st.base_state.get();
  FRAME_RETURN_IF_ERROR(st.base->fn(base));
  return dispatch_dtype<kFloatDTypes>(out.dtype(), [&]<typename T>() {
    relayout(plain_out.data<T>(), out.data<T>(), out.shape(), ActivationLayout::kPlain, st.layout);
    return Status();
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(laid_out_internal, "cpu", laid_out_kernel)
    .dtypes(kFloatDTypes)
    .prepare(prepare_laid_out);

}  // namespace frame::cpu
