#pragma once
/// \file
/// Layer-by-layer comparison of two runs of one model (docs/debugging.md, `frame compare`):
/// the model runs once on the backend chain under test and once on a reference chain (by
/// default the `cpu` reference kernels), every value both runs produce is compared under
/// BUILD-011's tolerance (frame/core/tolerance.h), and the report names the first value that
/// diverges with its node, op, backend and kernel. Values are read through
/// RunOptions::observer, so each run keeps its own passes, fusions and layouts: a fused group
/// is compared at its outputs, which carry the ONNX names of its last op's outputs.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tolerance.h"
#include "frame/runtime/session.h"

namespace frame::runtime {

/// One value both runs produced (or a graph output), compared element by element.
struct ValueComparison {
  std::string value;  ///< the value's name (the ONNX value name for imported models)
  /// Where the run under test computed it: node name, op, backend, placement path ("kernel",
  /// "decomposition", "cpu-fallback") and a fused node's ops (e.g. conv, add, relu).
  std::string node;
  std::string op;
  std::string backend;
  std::string path;
  std::vector<std::string> fused_ops;
  std::string reference_node;     ///< the reference run's node that produced the value
  std::string reference_backend;  ///< and its backend
  std::string type;               ///< "f32[1,64,56,56]" in the run under test
  std::string reference_type;     ///< in the reference run
  double max_abs_error = 0.0;     ///< over finite pairs
  double max_rel_error = 0.0;     ///< |a - r| / |r| over finite pairs with r != 0
  int64_t mismatches = 0;         ///< elements outside the tolerance
  int64_t numel = 0;
  /// Largest |a - r| / (atol + rtol * |r|) over the elements: at most 1 within the tolerance.
  double worst_ratio = 0.0;
  /// The tolerance applied: BUILD-011's class for the reference value's dtype, its atol
  /// multiplied by max(1, largest |r| of the value) for floats (CompareOptions).
  double rtol = 0.0;
  double atol = 0.0;
  bool ok = true;       ///< within the tolerance, with equal dtypes and shapes
  std::string message;  ///< why not: the first mismatching element, or the type mismatch
};

/// What compare_runs found.
struct ComparisonReport {
  std::string model;                   ///< the model's name, for the text (set by the caller)
  std::vector<std::string> backends;   ///< the chain under test, as given
  std::vector<std::string> reference;  ///< the reference chain, as given
  /// Every value both runs produced, in the order the run under test computed them; graph
  /// outputs no node produced (constants, inputs) last.
  std::vector<ValueComparison> values;
  /// Index into `values` of the first one outside the tolerance; none when all agree.
  std::optional<size_t> first_divergence;
  /// Values only one run produced (fused away, or renamed by a lowering, in the other).
  size_t only_in_target = 0;
  size_t only_in_reference = 0;
  /// True when every compared value is within the tolerance.
  bool ok() const { return !first_divergence.has_value(); }
  /// Human-readable report: the first divergence (node, op, backend, kernel, errors, shapes),
  /// then a table of at most `max_rows` values (0: all), first divergence's neighbourhood
  /// first when the table is cut.
  std::string to_text(size_t max_rows = 0) const;
  /// The whole report as JSON (fields as above; `first_divergence` null or an index).
  std::string to_json() const;
};

/// Options of compare_runs.
struct CompareOptions {
  /// Labels of the two chains in the report (ComparisonReport::backends, reference).
  std::vector<std::string> backends;
  std::vector<std::string> reference_backends;
  /// BUILD-011 class whose tolerance_for(dtype) applies (default: whole models). For float
  /// values its atol is multiplied by max(1, largest |r| of the reference value): the error of
  /// a deep accumulation grows with the magnitude of the sums a layer computes, not with each
  /// element's own (an element near zero in a layer whose values reach 10 carries the error of
  /// those sums; the cpu reference kernels themselves are that far from float64 there).
  ToleranceClass tolerance = ToleranceClass::kDeepNetwork;
  /// When set, this rtol (or atol) for every dtype instead of the class's, used as given (not
  /// scaled); the other keeps the class's. Integers included: atol 1 accepts a quantized
  /// model's one-step requantization differences. Must be finite and >= 0.
  std::optional<double> rtol;
  std::optional<double> atol;
};

/// Runs `target` and `reference` on the same `inputs` (the Session::run contract: every
/// declared input, dtypes and shapes checked) and compares every value both runs produce by
/// name under the tolerance of `options`. The reference runs first and its values are kept;
/// the target's are compared while it runs (one run's values in memory). Errors: kInvalidArgument
/// for a negative or non-finite rtol/atol; kUnimplemented for a model with sequence or optional
/// inputs or outputs; either run's error, prefixed with which run failed ("the tested run: ", "the
/// reference run: ").
Result<ComparisonReport> compare_runs(const Session& target, const Session& reference,
                                      const TensorMap& inputs, const CompareOptions& options = {});

}  // namespace frame::runtime
