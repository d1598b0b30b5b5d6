#pragma once
/// \file
/// The elementwise formulas both GPU backends generate their kernels from (docs/backends/
/// gpu-codegen.md): one C expression per op of the elementwise lists (include/frame/ops/
/// elementwise.h), written once and spelled into OpenCL C (`intel_gpu`) or CUDA C++ (`cuda`).
/// The op lists stay the single declaration of the family: every entry of FRAME_EW_UNARY_OPS /
/// _BINARY_OPS / _VARIADIC_OPS becomes an EwOp here (its dtypes, whether it yields bool, how
/// its attributes become the parameters p0, p1), and an entry whose dtypes include f32 without
/// a formula gets no GPU kernel (a formula is optional: the node then reaches cpu through the
/// fallback chain), which tests/cpp/intel_gpu/ and tests/cpp/cuda/ report.
///
/// A formula is a C expression in the compute type `T` of the operand(s) `x` (unary) or `a`,
/// `b` (binary) and the parameters `p0`, `p1` (the functor's kAttrs in order; a string
/// attribute is 1 when it equals `string_true`). It may call the C99 math functions both
/// OpenCL C and CUDA overload for float and double (fabs, exp, expm1, log1p, erf, tanh, rint,
/// fmod, copysign, isnan, isinf, ...) and the `frame_*` helpers of ew_prelude(). It must give
/// the cpu functor's value (NaN handling included) for every input; the op database checks it
/// against cpu on every GPU backend that runs.

#include <array>
#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/ir/graph.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::gpu {

/// The language a kernel source is generated in.
enum class Dialect {
  kOpenCL,  ///< OpenCL C 1.2 (intel_gpu)
  kCuda,    ///< CUDA C++ for NVRTC, no headers (cuda)
};

/// One formula.
struct EwFormula {
  std::string_view op;
  std::string_view expr;
  std::string_view string_true = {};  ///< value of a string attribute that means p = 1
};

/// Parameters p0, p1 of one node, from its attributes (or the functor's declared defaults).
using EwParamsFn = std::array<double, 2> (*)(const ops::NodeContext&, std::string_view);

/// EwOp::arity of the variadic list's entries.
inline constexpr int kVariadic = -1;

/// One entry of the elementwise lists, as the GPU kernels see it.
struct EwOp {
  std::string_view op;
  /// 1 (FRAME_EW_UNARY_OPS), 2 (FRAME_EW_BINARY_OPS) or kVariadic (FRAME_EW_VARIADIC_OPS:
  /// the binary formula folds the inputs left to right)
  int arity = 1;
  bool mean = false;      ///< variadic `mean`: the fold is divided by the input count
  DTypeSet dtypes;        ///< the list entry's input dtypes
  bool bool_out = false;  ///< the functor's out_type is bool (stored as one byte)
  EwParamsFn params = nullptr;
  const EwFormula* formula = nullptr;  ///< nullptr: no formula (no GPU kernel)
};

/// Every entry of FRAME_EW_UNARY_OPS, FRAME_EW_BINARY_OPS and FRAME_EW_VARIADIC_OPS, in list
/// order, then `pow` (same-dtype float base and exponent).
std::span<const EwOp> ew_ops();

/// The entry for `op`, or nullptr when the op is in neither list.
const EwOp* find_ew_op(std::string_view op);

/// The qualifier of a generated helper function: "inline" (OpenCL C) or
/// "__device__ __forceinline__" (CUDA).
std::string_view device_fn(Dialect d);

/// The helper functions the formulas use, over the compute type `T` (typedef'd before), in
/// dialect `d`.
std::string ew_prelude(Dialect d);

/// `v` as a literal of type T in dialect `d` (a hex float; infinities and NaN by their bit
/// patterns in CUDA, INFINITY / NAN in OpenCL): exact for any double when `fp64`, else for v
/// rounded to float (what the cpu functor computes with).
std::string c_literal(double v, bool fp64, Dialect d);

/// A fused elementwise body as straight-line code.
struct FusedBodyCode {
  /// One helper per body node (its formula with its parameters as literals), f0, f1, ...
  std::string functions;
  /// Statements computing every body value from `v_in0`, `v_in1`, ... (the body's inputs, of
  /// type T), in topological order.
  std::string statements;
  /// The variable holding the body's output.
  std::string result;
};

/// Rounds a T expression to the storage dtype and back (per-op rounding of f16/bf16
/// intermediates; identity for f32/f64).
using RoundFn = std::function<std::string(const std::string&)>;

/// The body of a `fused_elementwise_internal` node (one output, every node an elementwise
/// list op with a formula, one dtype `dtype` throughout) in dialect `d`. `narrow` (f16/bf16:
/// computed in float) declines variadic folds (the cpu rounds after every step) and rounds
/// every node's value with `round`. `fp64` spells literals as doubles. Errors: kUnimplemented
/// naming the body node that has no formula, changes the dtype, reads a value from outside
/// the body, or folds in a narrow dtype; a body whose input count differs from `num_inputs`.
Result<FusedBodyCode> fused_body_code(const ir::Graph& body, size_t num_inputs, DTypeCode dtype,
                                      bool narrow, bool fp64, Dialect d, const RoundFn& round);

}  // namespace frame::backends::gpu
