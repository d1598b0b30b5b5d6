#pragma once
/// \file
/// The pieces of compile() that the compile cache on disk reuses (private to src/runtime;
/// docs/architecture/execution-model.md, "Compile cache on disk"): digests and fingerprints
/// for cache keys, option resolution, and building an executable from a graph the pipeline
/// has already lowered and planned, without running a pass.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/passes/pass.h"
#include "frame/runtime/compile.h"
#include "runtime/executable_impl.h"

namespace frame::runtime::detail {

/// The graph as the caches see it: its text form without constant data (names, types,
/// attributes, structure) followed by the digest of every tensor the text elides (constants
/// and tensor attributes, nested graphs included), so two graphs that differ only in data
/// differ here.
std::string graph_fingerprint(const ir::Graph& g);

/// Every compile option that changes the compiled result, one per line ("backends=...").
/// `resolved` must have its backends and thread count resolved (resolve_options).
std::string options_fingerprint(const CompileOptions& resolved);

/// `options` with "auto" expanded to this build's backend chain and num_threads 0 resolved to
/// the OpenMP default of the calling thread. Errors: kNotFound for an unknown backend.
Result<CompileOptions> resolve_options(const CompileOptions& options);

/// The pass settings of `options` (backends, strictness, folding and tensor limits, memory
/// planning switches); control-flow bodies compiled at prepare time read them too.
passes::PassContext pass_context(const CompileOptions& options);

/// A graph after the pass pipeline (backend-lowering and memory-planning included) with the
/// results a plan is built from; what the compile cache on disk stores and reads back.
struct LoweredGraph {
  std::shared_ptr<ir::Graph> graph;
  /// Placements, buffers, peak arena bytes and lowering rewrites of exactly `graph`
  /// (PassContext's results); pass_times_ms is empty when no pass ran.
  passes::PassContext ctx;
  std::map<std::string, int> op_counts_before;  ///< of the graph the pipeline was given
};

/// Checks the lowered graph (verification, resource limits of `resolved`) and builds its
/// execution plan (kernels prepare) and report. `stages` are the stages already timed
/// (CompileReport::stage_times_ms); `check` and `prepare` are appended, timed from `t0`.
/// Errors: verification failures of the compiled graph, kOutOfRange limits, kernel prepare
/// errors.
Result<std::shared_ptr<const CompiledCore>> build_core(
    LoweredGraph lowered, const CompileOptions& resolved,
    std::vector<std::pair<std::string, double>> stages, std::chrono::steady_clock::time_point t0);

}  // namespace frame::runtime::detail
