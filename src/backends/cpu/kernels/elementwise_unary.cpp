// cpu kernels of the unary elementwise ops (FRAME_EW_UNARY_OPS), clip and cast. One template
// per shape of op; dtype is expanded once per call with dispatch_dtype (ARCH-042) and the
// functor (with its attributes read once) runs in a contiguous loop, OpenMP-split when large.

#include "backends/cpu/kernels/kernel_util.h"
#include "frame/core/dtype.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cpu {
namespace {

namespace ew = ::frame::ops::ew;
using ops::KernelContext;

template <template <typename> class F, DTypeSet kSet>
Status unary_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  return dispatch_dtype<kSet>(x.dtype(), [&]<typename T>() {
    using Out = typename F<T>::out_type;
    const F<T> op = ew::make_functor<F, T>(*ctx.node);
    map_contiguous(x.data<T>(), y.data<Out>(), x.numel(), ctx.num_threads,
                   [op](T v) { return from_compute<Out>(op(to_compute(v))); });
  });
}

// The parentheses keep the template argument list's comma out of the macro arguments.
#define FRAME_EW_UNARY_KERNEL(name, F, types, traits, doc) \
  FRAME_REGISTER_KERNEL(name, "cpu", (unary_kernel<ew::F, types>)).dtypes(types);
FRAME_EW_UNARY_OPS(FRAME_EW_UNARY_KERNEL)
#undef FRAME_EW_UNARY_KERNEL

// Bounds come from the optional scalar inputs 1 (min) and 2 (max); absent means unbounded.
Status clip_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const bool has_min = ctx.inputs.size() > 1 && ctx.inputs[1].defined();
  const bool has_max = ctx.inputs.size() > 2 && ctx.inputs[2].defined();
  return dispatch_dtype<kNumericDTypes>(x.dtype(), [&]<typename T>() {
    ew::ClipOp<T> op;
    if (has_min) op.lo = to_compute(ctx.inputs[1].data<T>()[0]);
    if (has_max) op.hi = to_compute(ctx.inputs[2].data<T>()[0]);
    map_contiguous(x.data<T>(), y.data<T>(), x.numel(), ctx.num_threads,
                   [op](T v) { return from_compute<T>(op(to_compute(v))); });
  });
}
FRAME_REGISTER_KERNEL(clip, "cpu", clip_kernel).dtypes(kNumericDTypes);

// The target dtype is the preallocated output's (shape inference mapped `to`).
Status cast_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  return dispatch_dtype(x.dtype(), [&]<typename From>() {
    return dispatch_dtype(y.dtype(), [&]<typename To>() {
      map_contiguous(x.data<From>(), y.data<To>(), x.numel(), ctx.num_threads,
                     ew::CastOp<From, To>{});
    });
  });
}
FRAME_REGISTER_KERNEL(cast, "cpu", cast_kernel).dtypes(kAllDTypes);

}  // namespace
}  // namespace frame::backends::cpu
