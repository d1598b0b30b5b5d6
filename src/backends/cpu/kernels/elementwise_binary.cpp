// cpu kernels of the broadcasting binary and variadic elementwise ops (FRAME_EW_BINARY_OPS,
// FRAME_EW_VARIADIC_OPS), pow, prelu and where. Broadcasting goes through BroadcastPlan
// (kernel_util.h): equal shapes and scalar operands collapse to one contiguous run.

#include <cstring>
#include <string_view>

#include "backends/cpu/kernels/kernel_util.h"
#include "frame/core/dtype.h"
#include "frame/ops/elementwise.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cpu {
namespace {

namespace ew = ::frame::ops::ew;
using ops::KernelContext;

// Integer division and modulo by zero must not crash: the node gets an error instead.
template <typename T>
Status check_no_zero_divisor(const KernelContext& ctx, const Tensor& b, size_t input) {
  const T* p = b.data<T>();
  for (int64_t i = 0; i < b.numel(); ++i) {
    if (p[i] == T(0)) {
      return ctx.node->error(
          "input {} (divisor) has 0 at flat index {}: integer division by "
          "zero",
          input, i);
    }
  }
  return Status();
}

template <template <typename> class F, DTypeSet kSet>
Status binary_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& c = ctx.output(0);
  return dispatch_dtype<kSet>(a.dtype(), [&]<typename T>() -> Status {
    using Out = typename F<T>::out_type;
    if constexpr (requires { F<T>::kIntegerDivision; }) {
      if constexpr (F<T>::kIntegerDivision) {
        FRAME_RETURN_IF_ERROR(check_no_zero_divisor<T>(ctx, b, 1));
      }
    }
    const F<T> op = ew::make_functor<F, T>(*ctx.node);
    map_broadcast2(a.data<T>(), a.shape(), b.data<T>(), b.shape(), c.data<Out>(), c.shape(),
                   ctx.num_threads,
                   [op](T x, T y) { return from_compute<Out>(op(to_compute(x), to_compute(y))); });
    return Status();
  });
}

// The parentheses keep the template argument list's comma out of the macro arguments.
#define FRAME_EW_BINARY_KERNEL(name, F, types, traits, doc) \
  FRAME_REGISTER_KERNEL(name, "cpu", (binary_kernel<ew::F, types>)).dtypes(types);
FRAME_EW_BINARY_OPS(FRAME_EW_BINARY_KERNEL)
#undef FRAME_EW_BINARY_KERNEL

// ONNX PRelu-16 T: the floats, int32/64 and uint32/64.
constexpr DTypeSet kPReluDTypes = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64,
                                                          DTypeCode::kUInt32, DTypeCode::kUInt64};
FRAME_REGISTER_KERNEL(prelu, "cpu", (binary_kernel<ew::PReluOp, kPReluDTypes>))
    .dtypes(kPReluDTypes);

// Folds the inputs left to right into the output, rounding to T after every step like a chain
// of binary ops; `kMean` divides by the input count at the end.
template <template <typename> class F, DTypeSet kSet, bool kMean>
Status variadic_kernel(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const size_t n = ctx.inputs.size();
  return dispatch_dtype<kSet>(out.dtype(), [&]<typename T>() {
    T* o = out.data<T>();
    const Tensor& first = ctx.input(0);
    const F<T> op{};
    auto step = [op](T x, T y) { return from_compute<T>(op(to_compute(x), to_compute(y))); };
    if (n == 1) {
      std::memcpy(o, first.data<T>(), out.nbytes());  // shape inference: same shape
    } else {
      map_broadcast2(first.data<T>(), first.shape(), ctx.input(1).data<T>(), ctx.input(1).shape(),
                     o, out.shape(), ctx.num_threads, step);
    }
    for (size_t k = 2; k < n; ++k) {
      map_broadcast2(static_cast<const T*>(o), out.shape(), ctx.input(k).data<T>(),
                     ctx.input(k).shape(), o, out.shape(), ctx.num_threads, step);
    }
    if constexpr (kMean) {
      const auto count = static_cast<int64_t>(n);
      const ew::MeanFinish<T> finish{};
      map_contiguous(
          static_cast<const T*>(o), o, out.numel(), ctx.num_threads,
          [finish, count](T v) { return from_compute<T>(finish(to_compute(v), count)); });
    }
  });
}

#define FRAME_EW_VARIADIC_KERNEL(name, F, types, traits, doc)                               \
  FRAME_REGISTER_KERNEL(name, "cpu",                                                        \
                        (variadic_kernel<ew::F, types, std::string_view(#name) == "mean">)) \
      .dtypes(types);
FRAME_EW_VARIADIC_OPS(FRAME_EW_VARIADIC_KERNEL)
#undef FRAME_EW_VARIADIC_KERNEL

constexpr DTypeSet kPowBase = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64};
constexpr DTypeSet kPowExponent = kFloatDTypes | kIntDTypes;

// Base and exponent dtypes are expanded independently (ONNX T and T1).
Status pow_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  Tensor& z = ctx.output(0);
  return dispatch_dtype<kPowBase>(x.dtype(), [&]<typename T>() {
    return dispatch_dtype<kPowExponent>(y.dtype(), [&]<typename T1>() {
      const ew::PowOp<T, T1> op{};
      map_broadcast2(x.data<T>(), x.shape(), y.data<T1>(), y.shape(), z.data<T>(), z.shape(),
                     ctx.num_threads,
                     [op](T b, T1 e) { return from_compute<T>(op(to_compute(b), to_compute(e))); });
    });
  });
}
FRAME_REGISTER_KERNEL(pow, "cpu", pow_kernel).dtypes(kPowBase);

Status where_kernel(KernelContext& ctx) {
  const Tensor& cond = ctx.input(0);
  const Tensor& x = ctx.input(1);
  const Tensor& y = ctx.input(2);
  Tensor& out = ctx.output(0);
  return dispatch_storage(x.dtype(), [&]<typename T>() {
    map_broadcast3(cond.data<bool>(), cond.shape(), x.data<T>(), x.shape(), y.data<T>(), y.shape(),
                   out.data<T>(), out.shape(), ctx.num_threads,
                   [](bool c, T a, T b) { return c ? a : b; });
  });
}
FRAME_REGISTER_KERNEL(where, "cpu", where_kernel).dtypes(kAllDTypes).dtype_input(1);

}  // namespace
}  // namespace frame::backends::cpu
