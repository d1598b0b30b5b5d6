#pragma once
/// \file
/// BUILD-011: the one source of numerical tolerances (every test: op database, backend vs cpu
/// cross-checks, decomposition checks, end-to-end models; and `frame compare`,
/// runtime::compare_runs), and the tensor comparison that applies them. A value passes when
/// `|actual - expected| <= atol + rtol * |expected|` (numpy.isclose form); NaN equals NaN,
/// +inf equals +inf, -inf equals -inf.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "frame/core/dtype.h"
#include "frame/core/tensor.h"

namespace frame {

/// Relative and absolute tolerance. Both zero means exact comparison.
struct Tolerance {
  double rtol = 0.0;
  double atol = 0.0;
};

/// Which kind of check a tolerance is for.
enum class ToleranceClass : uint8_t {
  /// One op against an independent reference (op database, backend vs cpu, one kernel).
  kOp,
  /// Whole models (many ops in a chain, reassociated reductions, fused kernels): error
  /// accumulates over depth, so floats get a looser bound. Integers and bool stay exact.
  kDeepNetwork,
  /// One op on an optimized backend (onednn, cuda, ...) against the same independent
  /// reference as kOp (the op database's cross-backend runs): vectorized exp/log/tanh
  /// approximations and reordered accumulations cost a few tens of f32 ulps (oneDNN's
  /// log_softmax: 3.3e-6 absolute on a value of 0.062), beyond kOp's f32 bound. Floats other
  /// than f32, integers and bool are as kOp.
  kCrossBackend,
  /// f32 matmul / gemm / conv on tensor cores in TF32 (the cuda backend with
  /// FRAME_CUDA_TF32=1, off by default; docs/backends/cuda.md): each product's inputs are
  /// rounded to a 10-bit mantissa (relative error up to 2^-11 each) before f32 accumulation, so
  /// a K-term dot product of O(1) values is off by about 1e-3 relative to the sum of |terms|.
  /// Floats other than f32, integers and bool are as kCrossBackend.
  kTf32,
};

/// BUILD-011 tolerance for values of dtype `d`.
/// kOp: f32 rtol 1e-5 atol 1e-6; f64 1e-12/1e-12; f16 1e-3/1e-3 (about one f16 ulp);
/// bf16 1e-2/1e-2 (about one bf16 ulp); integers and bool exact.
/// kDeepNetwork: f32 rtol 1e-3 atol 1e-4; f64 1e-9/1e-9; f16 1e-2/1e-2; bf16 5e-2/5e-2.
/// kCrossBackend: f32 rtol 1e-4 atol 1e-5; the rest as kOp.
/// kTf32: f32 rtol 5e-3 atol 5e-3; the rest as kOp.
constexpr Tolerance tolerance_for(DTypeCode d, ToleranceClass c = ToleranceClass::kOp) {
  const bool deep = c == ToleranceClass::kDeepNetwork;
  switch (d) {
    case DTypeCode::kFloat32:
      if (c == ToleranceClass::kCrossBackend) return Tolerance{1e-4, 1e-5};
      if (c == ToleranceClass::kTf32) return Tolerance{5e-3, 5e-3};
      return deep ? Tolerance{1e-3, 1e-4} : Tolerance{1e-5, 1e-6};
    case DTypeCode::kFloat64:
      return deep ? Tolerance{1e-9, 1e-9} : Tolerance{1e-12, 1e-12};
    case DTypeCode::kFloat16:
      return deep ? Tolerance{1e-2, 1e-2} : Tolerance{1e-3, 1e-3};
    case DTypeCode::kBFloat16:
      return deep ? Tolerance{5e-2, 5e-2} : Tolerance{1e-2, 1e-2};
    default:
      return Tolerance{0.0, 0.0};
  }
}

/// True if `a` (actual) is close to `e` (expected) under `tol`; NaN == NaN, infinities must
/// match exactly.
inline bool values_close(double a, double e, Tolerance tol) {
  if (std::isnan(a) || std::isnan(e)) return std::isnan(a) && std::isnan(e);
  if (std::isinf(a) || std::isinf(e)) return a == e;
  return std::fabs(a - e) <= tol.atol + tol.rtol * std::fabs(e);
}

/// Outcome of compare_tensors. `ok` is false on a dtype/shape mismatch or any value outside
/// the tolerance; `message` then says which (first mismatching index, values, max errors).
struct CompareResult {
  bool ok = true;
  int64_t mismatches = 0;
  int64_t first_mismatch = -1;
  /// Largest |a - e| over finite pairs; +inf when a NaN or an infinity differs.
  double max_abs_error = 0.0;
  double max_rel_error = 0.0;  ///< |a-e| / |e| over finite pairs with e != 0
  /// Largest |a - e| / (atol + rtol * |e|): at most 1 when every element is within the
  /// tolerance (0 for equal values; +inf for a difference where the tolerance is exact).
  double worst_ratio = 0.0;
  std::string message;
};

namespace detail {
// Integers exactly (int64 beyond 2^53 included): the difference is taken in the type's own
// width, then compared with the tolerance in long double.
template <typename T>
void compare_integers(const T* a, const T* e, int64_t n, Tolerance tol, CompareResult& r) {
  for (int64_t i = 0; i < n; ++i) {
    if (a[i] == e[i]) continue;
    const auto hi = std::max(a[i], e[i]);
    const auto lo = std::min(a[i], e[i]);
    using U = std::make_unsigned_t<T>;
    const auto diff =
        static_cast<long double>(static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo)));
    const long double bound = tol.atol + tol.rtol * std::fabs(static_cast<long double>(e[i]));
    r.max_abs_error = std::fmax(r.max_abs_error, static_cast<double>(diff));
    if (e[i] != 0) {
      r.max_rel_error = std::fmax(
          r.max_rel_error, static_cast<double>(diff / std::fabs(static_cast<long double>(e[i]))));
    }
    r.worst_ratio = std::fmax(r.worst_ratio, bound > 0 ? static_cast<double>(diff / bound)
                                                       : std::numeric_limits<double>::infinity());
    if (diff <= bound) continue;
    if (r.mismatches == 0) {
      r.first_mismatch = i;
      // + 0 prints 8-bit integers as numbers, not characters.
      r.message = fmt::format("first mismatch at flat index {}: actual {}, expected {}", i,
                              a[i] + 0, e[i] + 0);
    }
    ++r.mismatches;
  }
}
}  // namespace detail

/// Compares `actual` with `expected` element by element: integers exactly in their own type
/// (int64 and uint64 beyond 2^53 too), floats and bool read through Tensor::element_as_double.
inline CompareResult compare_tensors(const Tensor& actual, const Tensor& expected, Tolerance tol) {
  CompareResult r;
  if (actual.dtype() != expected.dtype() || actual.shape() != expected.shape()) {
    r.ok = false;
    r.message = fmt::format("type mismatch: actual {}{}, expected {}{}", dtype_name(actual.dtype()),
                            shape_to_string(actual.shape()), dtype_name(expected.dtype()),
                            shape_to_string(expected.shape()));
    return r;
  }
  const auto inf = std::numeric_limits<double>::infinity();
  if (is_integral(expected.dtype())) {
    (void)dispatch_dtype<kIntDTypes>(expected.dtype(), [&]<typename T>() {
      detail::compare_integers(actual.data<T>(), expected.data<T>(), expected.numel(), tol, r);
      return Status();
    });
  } else {
    for (int64_t i = 0; i < expected.numel(); ++i) {
      const double a = actual.element_as_double(i);
      const double e = expected.element_as_double(i);
      const bool close = values_close(a, e, tol);
      if (std::isfinite(a) && std::isfinite(e)) {
        const double abs_err = std::fabs(a - e);
        r.max_abs_error = std::fmax(r.max_abs_error, abs_err);
        if (e != 0.0) r.max_rel_error = std::fmax(r.max_rel_error, abs_err / std::fabs(e));
        const double bound = tol.atol + tol.rtol * std::fabs(e);
        if (abs_err > 0.0)
          r.worst_ratio = std::fmax(r.worst_ratio, bound > 0 ? abs_err / bound : inf);
      } else if (!close) {
        r.max_abs_error = inf;  // a NaN or an infinity where the other has something else
        r.worst_ratio = inf;
      }
      if (!close) {
        if (r.mismatches == 0) {
          r.first_mismatch = i;
          r.message =
              fmt::format("first mismatch at flat index {}: actual {}, expected {}", i, a, e);
        }
        ++r.mismatches;
      }
    }
  }
  if (r.mismatches > 0) {
    r.ok = false;
    r.message += fmt::format(
        " ({} of {} elements differ; max abs error {:.3g}, max rel error "
        "{:.3g}; rtol {:g} atol {:g})",
        r.mismatches, expected.numel(), r.max_abs_error, r.max_rel_error, tol.rtol, tol.atol);
  }
  return r;
}

}  // namespace frame
