// onednn kernel of laid_out_internal (src/ops/schemas/laid_out_internal.h): a pool, channel
// concat, inference batch normalization or elementwise op on activations stored nhwc, nChw8c
// or nChw16c, so the layout oneDNN's convolutions pick flows through it (keep_nhwc_through,
// patterns.cpp).
//   pools: oneDNN pooling primitives with explicit descriptors of the layout (declined where
//     oneDNN offers only its reference loops; pool.cpp);
//   concat: nhwc, each part's channels copied into every pixel's row; blocked, each part's
//     blocks copied after the previous part's, per image (one parallel byte copy; layout.cpp);
//   batch normalization: y = x * a[c] + b[c] over pixels of C channels (norm.cpp);
//   elementwise: the op's own onednn kernel prepared for the operands read as [N, H, W, C]
//     (every rank-4 shape permuted alike; broadcasting commutes with that), so a [N, C, 1, 1]
//     squeeze-excitation gate broadcasts over the pixels as it does over the planes; blocked
//     (operands of one shape), prepared for the shapes as they are;
//   conv_transpose: oneDNN's deconvolution with explicit source and destination of the layout
//     (conv.cpp's
//     make_conv; declined where oneDNN has only a reference or gemm implementation for them).

#include "backends/onednn/kernels/laid_out.h"

#include <memory>
#include <vector>

#include "backends/onednn/kernels/linear_kernels.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "ops/schemas/laid_out_internal.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;
using ops::laid_out::BaseKind;

struct LaidOutState {
  ops::KernelFn run = nullptr;         // the base kernel
  std::shared_ptr<void> inner;         // its prepared state
  ops::ReordersFn reorders = nullptr;  // the base kernel's count of layout reorders, or null
};

// A conv_transpose's activations, both in `layout`: no reorder of X or Y.
ConvLayouts conv_transpose_layouts(ops::fused::ActivationLayout layout) {
  return ConvLayouts{layout, layout, ops::fused::ActivationLayout::kPlain};
}

// The context of an elementwise base op on operands stored in `layout`: op and schema the base
// op's; nhwc: every rank-4 type [N, C, H, W] read as [N, H, W, C]; blocked: the types as they
// are (the rank-4 operands have one shape, decode_laid_out, so the op maps element i of each to
// element i of the output whatever the order). Borrows `ctx`'s attributes and constants.
NodeContext permuted_context(const NodeContext& ctx, std::string_view base_op,
                             ops::fused::ActivationLayout layout) {
  NodeContext p = ctx;
  p.op = base_op;
  p.schema = ops::OpRegistry::global().find(base_op);
  for (ir::TensorType& t : p.input_types) {
    if (t.shape.size() == 4 && layout == ops::fused::ActivationLayout::kNhwc) {
      t.shape = Shape{t.shape[0], t.shape[2], t.shape[3], t.shape[1]};
    }
  }
  return p;
}

// The onednn kernel of an elementwise base op, or why there is none.
Result<const ops::KernelDef*> elementwise_kernel(std::string_view base_op) {
  const ops::KernelDef* k = ops::KernelRegistry::global().find(base_op, "onednn");
  if (k == nullptr) return unimplemented("no onednn kernel for '{}'", base_op);
  return k;
}

Status laid_out_accepts(const NodeContext& ctx) {
  Result<ops::laid_out::LaidOutSpec> spec = ops::laid_out::decode_laid_out(ctx);
  if (!spec.is_ok()) return Status(StatusCode::kUnimplemented, spec.status().message());
  switch (spec->kind) {
    case BaseKind::kPool:
      return laid_out_pool_accepts(ctx, spec->base_op, spec->layout);
    case BaseKind::kConcat:
      return Status();
    case BaseKind::kBatchNorm:
      return laid_out_batch_norm_accepts(ctx);
    case BaseKind::kConvTranspose:
      return make_conv(ctx, true, {}, false, conv_transpose_layouts(spec->layout)).status();
    case BaseKind::kElementwise:
      break;
  }
  FRAME_ASSIGN_OR_RETURN(const ops::KernelDef* k, elementwise_kernel(spec->base_op));
  return k->supports(permuted_context(ctx, spec->base_op, spec->layout));
}

Result<std::shared_ptr<void>> laid_out_prepare(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ops::laid_out::LaidOutSpec spec, ops::laid_out::decode_laid_out(ctx));
  auto st = std::make_shared<LaidOutState>();
  switch (spec.kind) {
    case BaseKind::kPool: {
      st->run = run_pool;
      FRAME_ASSIGN_OR_RETURN(st->inner, laid_out_pool_prepare(ctx, spec.base_op, spec.layout));
      break;
    }
    case BaseKind::kConcat: {
      st->run = run_concat;
      FRAME_ASSIGN_OR_RETURN(st->inner, laid_out_concat_prepare(ctx, spec.layout));
      break;
    }
    case BaseKind::kBatchNorm: {
      st->run = run_norm;
      FRAME_ASSIGN_OR_RETURN(st->inner, laid_out_batch_norm_prepare(ctx, spec.layout));
      break;
    }
    case BaseKind::kConvTranspose: {
      st->run = run_linear;
      st->reorders = linear_reorders;
      FRAME_ASSIGN_OR_RETURN(st->inner,
                             make_conv(ctx, true, {}, true, conv_transpose_layouts(spec.layout)));
      break;
    }
    case BaseKind::kElementwise: {
      FRAME_ASSIGN_OR_RETURN(const ops::KernelDef* k, elementwise_kernel(spec.base_op));
      st->run = k->fn;
      if (k->prepare != nullptr) {
        FRAME_ASSIGN_OR_RETURN(st->inner,
                               k->prepare(permuted_context(ctx, spec.base_op, spec.layout)));
      }
      break;
    }
  }
  return std::shared_ptr<void>(std::move(st));
}

Status laid_out_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const LaidOutState*>(ctx.state);
  KernelContext inner = ctx;
  inner.state = st.inner.get();
  return st.run(inner);
}

int laid_out_reorders(const void* state) {
  const auto& st = *static_cast<const LaidOutState*>(state);
  return st.reorders != nullptr ? st.reorders(st.inner.get()) : 0;
}

}  // namespace

FRAME_REGISTER_KERNEL(laid_out_internal, "onednn", laid_out_kernel)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .reorders(laid_out_reorders)
    .accepts(laid_out_accepts)
    .prepare(laid_out_prepare);

}  // namespace frame::backends::onednn
