// cpu reference kernel of fused_post_ops_internal (src/ops/schemas/nn_fused_internal.h): runs
// the base op's own cpu kernel (conv, matmul or gemm) into the output, then each post-op over
// the output with the scalar functors of include/frame/ops/elementwise.h, rounding after every
// op like the unfused chain — each formula has one home. Activations stored blocked
// (src_layout / dst_layout / residual_layout = 1 nhwc, 8 nChw8c or 16 nChw16c) are converted to
// plain NCHW before and the result back after, by index arithmetic (ARCH-041: the fallback chain
// may place a node the onednn pattern marked on cpu).

#include "ops/schemas/nn_fused_internal.h"

#include <algorithm>
#include <array>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "backends/cpu/kernels/activation_layout.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;
using ops::fused::ActivationLayout;
using ops::fused::PostOp;
using ops::fused::PostOpKind;

struct FusedState {
  const ops::KernelDef* base = nullptr;
  size_t base_inputs = 0;
  std::vector<PostOp> post_ops;
  ActivationLayout src_layout = ActivationLayout::kPlain;
  ActivationLayout dst_layout = ActivationLayout::kPlain;
  ActivationLayout residual_layout = ActivationLayout::kPlain;
};

// Scratch slots of the plain copies (activation_layout.h).
enum Scratch : size_t { kSrcScratch, kResidualScratch, kDstScratch };

Result<std::shared_ptr<void>> prepare_fused(const ops::NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ops::fused::FusedSpec spec, ops::fused::decode_fused(ctx));
  auto st = std::make_shared<FusedState>();
  st->base = ops::KernelRegistry::global().find(spec.base_op, "cpu");
  if (st->base == nullptr) return ctx.error("base op '{}' has no cpu kernel", spec.base_op);
  st->base_inputs = spec.base_op == "matmul" ? 2 : 3;
  st->post_ops = std::move(spec.post_ops);
  st->src_layout = spec.src_layout;
  st->dst_layout = spec.dst_layout;
  st->residual_layout = spec.residual_layout;
  return std::shared_ptr<void>(std::move(st));
}

template <typename T, typename F>
void apply_unary(T* y, int64_t n, const F& f, int threads) {
  ops::parallel_for(n, n > (int64_t{1} << 15) ? threads : 1,
                    [&](int64_t i) { y[i] = from_compute<T>(f(to_compute(y[i]))); });
}

Status fused_post_ops_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const FusedState*>(ctx.state);
  // The base cpu kernel reads the same attributes and inputs 0..2 of this node.
  KernelContext base = ctx;
  base.inputs = ctx.inputs.first(std::min(st.base_inputs, ctx.inputs.size()));
  base.state = nullptr;
  // Blocked inputs are read through plain copies: X for the base op, R for the add.
  std::array<Tensor, 3> base_inputs;
  if (st.src_layout != ActivationLayout::kPlain) {
    std::copy(base.inputs.begin(), base.inputs.end(), base_inputs.begin());
    FRAME_ASSIGN_OR_RETURN(base_inputs[0], plain_copy(ctx.input(0), st.src_layout, kSrcScratch));
    base.inputs = std::span<const Tensor>(base_inputs.data(), base.inputs.size());
  }
  const Tensor* residual = ctx.inputs.size() > ops::fused::kResidualInput
                               ? &ctx.input(ops::fused::kResidualInput)
                               : nullptr;
  Tensor residual_plain;
  if (residual != nullptr && st.residual_layout != ActivationLayout::kPlain) {
    FRAME_ASSIGN_OR_RETURN(residual_plain,
                           plain_copy(*residual, st.residual_layout, kResidualScratch));
    residual = &residual_plain;
  }
  FRAME_RETURN_IF_ERROR(st.base->fn(base));
  Tensor& out = ctx.output(0);
  const int64_t n = out.numel();
  const int th = ctx.num_threads;
  return dispatch_dtype<kFloatDTypes>(out.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    T* y = out.data<T>();
    for (const PostOp& p : st.post_ops) {
      switch (p.kind) {
        case PostOpKind::kAdd: {
          // R of the output's shape, or a row (matmul/gemm bias) added to every row.
          const T* r = residual->data<T>();
          const ops::ew::AddOp<T> add;
          const int64_t width = std::max<int64_t>(residual->numel(), 1);
          const int64_t rows = n / width;
          ops::parallel_for(rows, (n > (int64_t{1} << 15)) ? th : 1, [&](int64_t row) {
            T* yr = y + row * width;
            const T* rr = residual->numel() == n ? r + row * width : r;
            for (int64_t i = 0; i < width; ++i) {
              yr[i] = from_compute<T>(add(to_compute(yr[i]), to_compute(rr[i])));
            }
          });
          break;
        }
        case PostOpKind::kRelu:
          apply_unary(y, n, ops::ew::ReluOp<T>{}, th);
          break;
        case PostOpKind::kLeakyRelu: {
          ops::ew::LeakyReluOp<T> f;
          f.alpha = static_cast<C>(p.alpha);
          apply_unary(y, n, f, th);
          break;
        }
        case PostOpKind::kClip: {
          ops::ew::ClipOp<T> f;
          f.lo = static_cast<C>(p.alpha);
          f.hi = static_cast<C>(p.beta);
          apply_unary(y, n, f, th);
          break;
        }
        case PostOpKind::kSigmoid:
          apply_unary(y, n, ops::ew::SigmoidOp<T>{}, th);
          break;
        case PostOpKind::kTanh:
          apply_unary(y, n, ops::ew::TanhOp<T>{}, th);
          break;
        case PostOpKind::kElu: {
          ops::ew::EluOp<T> f;
          f.alpha = static_cast<C>(p.alpha);
          apply_unary(y, n, f, th);
          break;
        }
        case PostOpKind::kHardSwish:
          apply_unary(y, n, ops::ew::HardSwishOp<T>{}, th);
          break;
        case PostOpKind::kGelu:
        case PostOpKind::kGeluTanh: {
          ops::ew::GeluOp<T> f;
          f.tanh_approx = p.kind == PostOpKind::kGeluTanh;
          apply_unary(y, n, f, th);
          break;
        }
        case PostOpKind::kHardSigmoid: {
          ops::ew::HardSigmoidOp<T> f;
          f.alpha = static_cast<C>(p.alpha);
          f.beta = static_cast<C>(p.beta);
          apply_unary(y, n, f, th);
          break;
        }
        case PostOpKind::kSwish: {
          // Rounded as the unfused pair: sigmoid(x) to T first, then the product.
          const ops::ew::SigmoidOp<T> sig;
          const ops::ew::MulOp<T> mul;
          ops::parallel_for(n, (n > (int64_t{1} << 15)) ? th : 1, [&](int64_t i) {
            const C x = to_compute(y[i]);
            y[i] = from_compute<T>(mul(x, to_compute(from_compute<T>(sig(x)))));
          });
          break;
        }
      }
    }
    if (st.dst_layout != ActivationLayout::kPlain) {
      // The plain result goes through scratch into the output's layout.
      T* plain = reinterpret_cast<T*>(layout_scratch(kDstScratch, out.nbytes()));
      std::copy(y, y + n, plain);
      relayout(plain, y, out.shape(), ActivationLayout::kPlain, st.dst_layout);
    }
  });
}

FRAME_REGISTER_KERNEL(fused_post_ops_internal, "cpu", fused_post_ops_kernel)
    .dtypes(kFloatDTypes)
    .prepare(prepare_fused);

}  // namespace
}  // namespace frame::cpu
