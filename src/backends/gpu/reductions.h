#pragma once
/// \file
/// The reductions both GPU backends generate (docs/backends/gpu-codegen.md): per op its initial
/// value, fold, finish and the combine of two partial results, as C over the compute type `T`
/// (the cpu kernels' arithmetic, src/backends/cpu/kernels/reduction.cpp), and the geometry of
/// a node: which input dims are kept and which are reduced, with their strides. `intel_gpu`
/// folds one output per work-item; `cuda` one output per warp, combining the lanes' partials.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::gpu {

/// One reduction op.
struct Reduction {
  std::string_view op;
  double init;               ///< the accumulator's start (spelled with c_literal)
  std::string_view fold;     ///< statement over `acc` and the element `v`
  std::string_view finish;   ///< T expression over `acc` and `n` (the reduced count)
  std::string_view combine;  ///< T expression over partial results `a` and `b`
};

/// reduce_sum, _mean, _prod, _max, _min, _l1, _sum_square, _l2, _log_sum.
std::span<const Reduction> reductions();

/// The entry for `op`, or nullptr.
const Reduction* find_reduction(std::string_view op);

/// Kept and reduced dims of a reduction node's input, row-major strides.
struct ReduceGeometry {
  std::vector<int64_t> kept_dims, kept_strides;        ///< in input order
  std::vector<int64_t> reduced_dims, reduced_strides;  ///< in input order
  int64_t reduced = 1;                                 ///< elements folded into each output
  int64_t outputs = 1;                                 ///< output elements
};

/// The geometry of `ctx` (axes from the `axes` attribute or a constant input 1, ONNX
/// ReduceSum-18 rules for every reduction, ops::nn::resolve_reduce_axes). Errors:
/// kUnimplemented for axes computed at run time; the axis errors of resolve_reduce_axes.
Result<ReduceGeometry> reduce_geometry(const ops::NodeContext& ctx);

}  // namespace frame::backends::gpu
