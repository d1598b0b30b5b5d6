#pragma once
/// \file
/// OpenCL C spellings of the elementwise list functors (include/frame/ops/elementwise.h), one
/// per op, and the list entries they belong to. The op lists stay the single declaration of
/// the family: every entry of FRAME_EW_UNARY_OPS / _BINARY_OPS / _VARIADIC_OPS becomes an EwOp
/// here (its dtypes, whether it yields bool, how its attributes become the parameters p0, p1),
/// and
/// an entry whose dtypes include f32 without a spelling gets no intel_gpu kernel, which
/// tests/cpp/intel_gpu/ reports as a failure.
///
/// A spelling is an OpenCL C expression in the compute type `T` of the operand(s) `x` (unary)
/// or `a`, `b` (binary) and the parameters `p0`, `p1` (the functor's kAttrs in order; a
/// string attribute is 1 when it equals `string_true`). It must give the cpu functor's value
/// (NaN handling included) for every input; the op test database checks it against cpu.

#include <array>
#include <span>
#include <string>
#include <string_view>

#include "frame/core/dtype.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::intel_gpu {

/// One OpenCL C formula.
struct EwFormula {
  std::string_view op;
  std::string_view expr;
  std::string_view string_true = {};  ///< value of a string attribute that means p = 1
};

/// Parameters p0, p1 of one node, from its attributes (or the functor's declared defaults).
using EwParamsFn = std::array<double, 2> (*)(const ops::NodeContext&, std::string_view);

/// EwOp::arity of the variadic list's entries.
inline constexpr int kVariadic = -1;

/// One entry of the elementwise lists, as the intel_gpu kernels see it.
struct EwOp {
  std::string_view op;
  /// 1 (FRAME_EW_UNARY_OPS), 2 (FRAME_EW_BINARY_OPS) or kVariadic (FRAME_EW_VARIADIC_OPS:
  /// the binary formula folds the inputs left to right)
  int arity = 1;
  bool mean = false;      ///< variadic `mean`: the fold is divided by the input count
  DTypeSet dtypes;        ///< the list entry's input dtypes
  bool bool_out = false;  ///< the functor's out_type is bool (stored as uchar)
  EwParamsFn params = nullptr;
  const EwFormula* formula = nullptr;  ///< nullptr: no spelling (no intel_gpu kernel)
};

/// Every entry of FRAME_EW_UNARY_OPS, FRAME_EW_BINARY_OPS and FRAME_EW_VARIADIC_OPS, in list
/// order, then `pow` (same-dtype float base and exponent).
std::span<const EwOp> ew_ops();

/// The entry for `op`, or nullptr when the op is in neither list.
const EwOp* find_ew_op(std::string_view op);

/// OpenCL C helper functions the formulas use, over the compute type `T` (typedef'd before).
std::string ew_prelude();

/// `v` as an OpenCL C literal of type T (hex float, or INFINITY / NAN): exact for any double
/// when `fp64`, else for v rounded to float (what the cpu functor computes with).
std::string cl_literal(double v, bool fp64);

}  // namespace frame::backends::intel_gpu
