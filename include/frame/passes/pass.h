#pragma once
/// \file
/// Compiler passes and the pass manager (op spec §7; docs/architecture/compiler-passes.md).
/// A pass transforms an ir::Graph in place, asking op traits and schemas through the
/// registries — never matching op names (docs/architecture/compiler-passes.md).

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/ir/graph.h"

namespace frame::passes {

/// Where a node runs, decided by backend-lowering.
struct NodePlacement {
  std::string backend;  ///< backend whose kernel runs the node
  /// "kernel" (a preferred backend's own kernel), "decomposition" (run as micro-graph), or
  /// "cpu-fallback".
  std::string path;
  std::vector<std::string> rejected;  ///< "<backend>: <why>" for each alternative passed over
};

/// Arena placement of one value, decided by memory-planning.
struct BufferSlot {
  size_t offset = 0;  ///< bytes from the arena start, 64-byte aligned
  size_t bytes = 0;
  bool in_place = false;  ///< shares the buffer of the input it overwrites
};

/// Settings read by passes and results written by them. Results are keyed by ids of the
/// final graph: passes that renumber (compact) run before lowering and memory-planning.
struct PassContext {
  // Settings.
  std::vector<std::string> backends = {"cpu"};  ///< preference list (lowering, fusion)
  bool strict = false;                          ///< lowering: fallback is an error
  size_t fold_size_limit = size_t{1} << 24;     ///< constant-folding output cap (bytes)
  /// shape-inference: a node output larger than this (bytes) is a kOutOfRange error naming
  /// the node, the value and the bytes (runtime::CompileOptions::max_tensor_bytes).
  size_t max_tensor_bytes = SIZE_MAX;
  bool allow_inplace = true;     ///< memory-planning
  bool reuse_buffers = true;     ///< memory-planning
  bool force_decompose = false;  ///< decomposition: expand every composite
  /// lowering and kernel prepare: NodeContext::prefer_shape_agnostic (ADR 0007)
  bool shape_agnostic_kernels = false;
  std::vector<std::string> print_ir_after;  ///< pass names or "all"
  bool verify_after_each = false;           ///< run Graph::verify after each pass (tests)

  // Results.
  std::map<ir::NodeId, NodePlacement> placements;  ///< backend-lowering
  std::map<ir::ValueId, BufferSlot> buffers;       ///< memory-planning (non-constant values)
  size_t peak_arena_bytes = 0;                     ///< memory-planning
  std::vector<std::pair<std::string, double>> pass_times_ms;  ///< pass manager
  /// backend-lowering: each lowering-pattern rewrite, in order, as
  /// "<backend>/<pattern> at node '<name>' (<op>)" (include/frame/ops/lowering_pattern.h).
  std::vector<std::string> lowering_rewrites;
};

/// One pass. Implementations live one per file in src/passes/.
class Pass {
 public:
  virtual ~Pass() = default;
  /// Kebab-case name used in pipelines ("constant-folding").
  virtual std::string_view name() const = 0;
  /// Transforms `g`. Errors name the node, op and value concerned.
  virtual Status run(ir::Graph& g, PassContext& ctx) = 0;
};

/// The standard pipeline, in order.
inline constexpr std::string_view kStandardPipeline =
    "shape-inference,constant-folding,cse,dce,float16-widening,decomposition,operator-fusion,"
    "backend-lowering,memory-planning";

/// A pass by name. Errors: kNotFound listing the known names.
Result<std::unique_ptr<Pass>> make_pass(std::string_view name);
/// Names of all passes.
std::vector<std::string> pass_names();

/// Runs a comma-separated pipeline on `g`, timing each pass into ctx.pass_times_ms,
/// printing the IR after passes named in ctx.print_ir_after, and verifying after each pass
/// when ctx.verify_after_each. `skip` names passes to leave out.
Status run_pipeline(ir::Graph& g, std::string_view pipeline, PassContext& ctx,
                    const std::vector<std::string>& skip = {});

}  // namespace frame::passes
