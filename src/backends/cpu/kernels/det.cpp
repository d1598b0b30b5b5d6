// cpu reference kernel for Det (ONNX opset 11): LU with partial pivoting per matrix in
// compute_t<T> (the element type; float for 16-bit floats), rounded once to T.

#include <cmath>
#include <utility>
#include <vector>

#include "frame/ops/kernel_registry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;

// Determinant of the m x m row-major matrix `a` (overwritten by its LU factors).
template <typename C>
C lu_det(C* a, int64_t m) {
  C det = 1;
  for (int64_t k = 0; k < m; ++k) {
    int64_t p = k;
    for (int64_t i = k + 1; i < m; ++i) {
      if (std::abs(a[i * m + k]) > std::abs(a[p * m + k])) p = i;
    }
    if (a[p * m + k] == C(0)) return C(0);
    if (p != k) {
      for (int64_t j = 0; j < m; ++j) std::swap(a[k * m + j], a[p * m + j]);
      det = -det;
    }
    const C pivot = a[k * m + k];
    det *= pivot;
    for (int64_t i = k + 1; i < m; ++i) {
      const C f = a[i * m + k] / pivot;
      for (int64_t j = k + 1; j < m; ++j) a[i * m + j] -= f * a[k * m + j];
    }
  }
  return det;
}

Status det_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t m = x.dim(x.rank() - 1);
  const int64_t batch = ctx.output(0).numel();
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    using C = compute_t<T>;
    const T* xp = x.data<T>();
    T* yp = ctx.output(0).data<T>();
    std::vector<C> a(static_cast<size_t>(m * m));
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < m * m; ++i) a[static_cast<size_t>(i)] = to_compute(xp[b * m * m + i]);
      yp[b] = from_compute<T>(lu_det(a.data(), m));
    }
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(det, "cpu", det_kernel).dtypes(kFloatDTypes);

}  // namespace frame::cpu
