// cpu reference kernel of fused_post_ops_internal (src/ops/schemas/nn_fused_internal.h): runs
// the base op's own cpu kernel (conv, matmul or gemm) into the output, then each post-op over
// the output with the scalar functors of include/frame/ops/elementwise.h, rounding after every
// op like the unfused chain — each formula has one home.

#include "ops/schemas/nn_fused_internal.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;
using ops::fused::PostOp;
using ops::fused::PostOpKind;

struct FusedState {
  const ops::KernelDef* base = nullptr;
  size_t base_inputs = 0;
  std::vector<PostOp> post_ops;
};

Result<std::shared_ptr<void>> prepare_fused(const ops::NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ops::fused::FusedSpec spec, ops::fused::decode_fused(ctx));
  auto st = std::make_shared<FusedState>();
  st->base = ops::KernelRegistry::global().find(spec.base_op, "cpu");
  if (st->base == nullptr) return ctx.error("base op '{}' has no cpu kernel", spec.base_op);
  st->base_inputs = spec.base_op == "matmul" ? 2 : 3;
  st->post_ops = std::move(spec.post_ops);
  return std::shared_ptr<void>(std::move(st));
}

template <typename T, typename F>
void apply_unary(T* y, int64_t n, const F& f, int threads) {
#pragma omp parallel for num_threads(threads) if (n > (int64_t{1} << 15) && threads > 1)
  for (int64_t i = 0; i < n; ++i) y[i] = from_compute<T>(f(to_compute(y[i])));
}

Status fused_post_ops_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const FusedState*>(ctx.state);
  // The base cpu kernel reads the same attributes and inputs 0..2 of this node.
  KernelContext base = ctx;
  base.inputs = ctx.inputs.first(std::min(st.base_inputs, ctx.inputs.size()));
  base.state = nullptr;
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
          const T* r = ctx.input(ops::fused::kResidualInput).data<T>();
          const ops::ew::AddOp<T> add;
#pragma omp parallel for num_threads(th) if (n > (int64_t{1} << 15) && th > 1)
          for (int64_t i = 0; i < n; ++i)
            y[i] = from_compute<T>(add(to_compute(y[i]), to_compute(r[i])));
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
      }
    }
  });
}

FRAME_REGISTER_KERNEL(fused_post_ops_internal, "cpu", fused_post_ops_kernel)
    .dtypes(kFloatDTypes)
    .prepare(prepare_fused);

}  // namespace
}  // namespace frame::cpu
