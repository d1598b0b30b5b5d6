#pragma once
/// \file
/// The runtime entry points (seed chapter 7, DESIGN.md "Main job and interfaces"):
/// `compile(graph, options) -> Executable` runs the standard pass pipeline, lowers every node
/// with the fallback chain (M10: backend kernel -> decomposition -> cpu), plans memory and
/// hands each backend its part; `Executable::run(inputs) -> outputs` executes it.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"

namespace frame::runtime {

/// Options of one compilation. Part of the compile-cache key.
struct CompileOptions {
  /// Backend preference list, most preferred first; "cpu" is always appended as the end of
  /// the fallback chain unless `strict` is set. Names as in DESIGN.md ("cpu", "onednn", ...).
  /// "auto" (the default) stands for the optimized backends of this build, then "cpu"
  /// (kAutoBackends in backend.h; M10): every node such a backend can run goes there, the
  /// rest falls back through the chain. An unknown name is a kNotFound error of compile().
  std::vector<std::string> backends = {"auto"};
  /// Comma-separated pass names; empty = the standard pipeline
  /// "shape-inference,constant-folding,cse,dce,decomposition,operator-fusion,backend-lowering,memory-planning".
  std::string pipeline;
  /// Passes to skip by name (e.g. {"operator-fusion"}).
  std::vector<std::string> disabled_passes;
  /// Fail compilation instead of taking any fallback (decomposition or cpu).
  bool strict = false;
  /// Threads kernels may use; 0 = hardware concurrency.
  int num_threads = 0;
  /// Constant folding never produces a tensor larger than this (bytes).
  size_t fold_size_limit = size_t{1} << 24;
  /// Memory planning: reuse buffers in place when legal.
  bool allow_inplace = true;
  /// Memory planning: share arena slots between values with disjoint lifetimes.
  bool reuse_buffers = true;
  /// Print the IR after each listed pass ("all" = every pass) to stderr.
  std::vector<std::string> print_ir_after;
  /// Use the process-wide compile cache.
  bool use_cache = true;
};

/// Named tensors passed to and returned from Executable::run.
using TensorMap = std::map<std::string, Tensor>;

/// How one node was placed (backend-lowering report).
struct Placement {
  std::string node;
  std::string op;
  std::string backend;  ///< backend whose kernel runs it
  /// "kernel" (preferred backend's kernel), "decomposition", or "cpu-fallback".
  std::string path;
  /// For each rejected alternative, why (e.g. "onednn: no kernel for op 'erf'").
  std::vector<std::string> rejected;
};

/// What the compiler did; shown by `frame inspect`.
struct CompileReport {
  std::map<std::string, int> op_counts_before;  ///< op -> node count of the input graph
  std::map<std::string, int> op_counts_after;   ///< after the pipeline
  std::vector<std::pair<std::string, double>> pass_times_ms;  ///< in pipeline order
  /// The backend chain used: CompileOptions::backends with "auto" expanded.
  std::vector<std::string> backends;
  std::vector<Placement> placements;
  std::vector<std::vector<std::string>> fused_groups;  ///< op names per fused group
  size_t peak_arena_bytes = 0;
  bool cache_hit = false;
  std::string to_json() const;
};

class ExecutableImpl;

/// A compiled graph. `run` is thread-safe and re-entrant: concurrent calls on one
/// Executable each get their own arena and give correct results.
class Executable {
 public:
  Executable();
  explicit Executable(std::shared_ptr<const ExecutableImpl> impl);
  ~Executable();
  Executable(const Executable&);
  Executable& operator=(const Executable&);

  /// Runs the graph. `inputs` must name every graph input with the compiled dtype and shape.
  /// Errors: kInvalidArgument naming the input and expected vs actual (missing input,
  /// unknown name, wrong dtype or shape); kernel errors with node and op.
  Result<TensorMap> run(const TensorMap& inputs) const;
  /// Names, dtypes and shapes of the compiled graph inputs / outputs, in graph order.
  const std::vector<std::pair<std::string, ir::TensorType>>& input_signature() const;
  const std::vector<std::pair<std::string, ir::TensorType>>& output_signature() const;
  const CompileReport& report() const;
  /// The graph after the pipeline (for printing).
  const ir::Graph& compiled_graph() const;

 private:
  std::shared_ptr<const ExecutableImpl> impl_;
};

/// Compiles `graph` (copied; the caller's graph is not modified). Graph inputs must have
/// concrete shapes (ARCH-044). Errors: verification failures (V1–V4), shape inference errors
/// naming node/op/input, unsupported dtype on every backend, strict-mode fallbacks.
Result<Executable> compile(const ir::Graph& graph, const CompileOptions& options = {});

}  // namespace frame::runtime
