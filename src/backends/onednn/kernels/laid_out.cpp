// onednn kernel of laid_out_internal (src/ops/schemas/laid_out_internal.h): a pool or channel
// concat on activations stored nhwc, so the layout oneDNN's convolutions pick flows through it
// (keep_nhwc_through, patterns.cpp). Pools are oneDNN pooling primitives with explicit nhwc
// descriptors (declined where oneDNN offers only its reference loops); concat copies each
// part's channels into every pixel's row (one parallel byte copy, layout.cpp).

#include "backends/onednn/kernels/laid_out.h"

#include <memory>

#include "frame/ops/kernel_registry.h"
#include "ops/schemas/laid_out_internal.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;

struct LaidOutState {
  ops::KernelFn run = nullptr;  // run_pool or run_concat
  std::shared_ptr<void> inner;  // its prepared state
};

Status laid_out_accepts(const NodeContext& ctx) {
  Result<ops::laid_out::LaidOutSpec> spec = ops::laid_out::decode_laid_out(ctx);
  if (!spec.is_ok()) return Status(StatusCode::kUnimplemented, spec.status().message());
  if (spec->base_op == "concat") return Status();
  return nhwc_pool_accepts(ctx, spec->base_op);
}

Result<std::shared_ptr<void>> laid_out_prepare(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ops::laid_out::LaidOutSpec spec, ops::laid_out::decode_laid_out(ctx));
  auto st = std::make_shared<LaidOutState>();
  if (spec.base_op == "concat") {
    st->run = run_concat;
    FRAME_ASSIGN_OR_RETURN(st->inner, nhwc_concat_prepare(ctx));
  } else {
    st->run = run_pool;
    FRAME_ASSIGN_OR_RETURN(st->inner, nhwc_pool_prepare(ctx, spec.base_op));
  }
  return std::shared_ptr<void>(std::move(st));
}

Status laid_out_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const LaidOutState*>(ctx.state);
  KernelContext inner = ctx;
  inner.state = st.inner.get();
  return st.run(inner);
}

}  // namespace

FRAME_REGISTER_KERNEL(laid_out_internal, "onednn", laid_out_kernel)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .accepts(laid_out_accepts)
    .prepare(laid_out_prepare);

}  // namespace frame::backends::onednn
