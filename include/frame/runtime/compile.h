#pragma once
/// \file
/// The runtime entry points (op spec §7; docs/architecture/execution-model.md):
/// `compile(graph, options) -> Executable` runs the standard pass pipeline, lowers every node
/// with the fallback chain (M10: backend kernel -> decomposition -> cpu), plans memory and
/// hands each backend its part; `Executable::run(inputs) -> outputs` executes it.

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"

namespace frame::runtime {

/// This machine's physical memory in bytes (sysconf); 0 when it cannot be read.
size_t physical_memory_bytes();
/// Default CompileOptions::max_memory_bytes (and onnx::LoadLimits::max_initializer_bytes): 3/4
/// of physical memory; SIZE_MAX when the physical memory is unknown.
size_t default_max_memory_bytes();
/// Default CompileOptions::max_tensor_bytes: 1/2 of physical memory; SIZE_MAX when unknown.
size_t default_max_tensor_bytes();

/// Options of one compilation. Part of the compile-cache key.
struct CompileOptions {
  /// Backend preference list, most preferred first; "cpu" is always appended as the end of
  /// the fallback chain unless `strict` is set. Names: "cpu", "onednn", ... (docs/backends/).
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
  /// Constant folding never produces a tensor larger than this (bytes); a larger node stays
  /// and runs at run time (its size is checked before any value is computed).
  size_t fold_size_limit = size_t{1} << 24;
  /// Resource limit (docs/security.md): the bytes a run may hold, i.e. the arena peak of the
  /// memory plan plus the graph's constants (each storage counted once). Exceeding it is a
  /// kOutOfRange error of compile(), before any kernel prepares or any buffer is allocated.
  /// Default: 3/4 of physical memory (default_max_memory_bytes()).
  size_t max_memory_bytes = default_max_memory_bytes();
  /// Resource limit: the largest single tensor (any value of the graph), in bytes. Checked on
  /// the typed input graph before the pipeline and on the compiled graph before planning
  /// buffers; the error names the value, the node producing it, its type and bytes.
  /// Default: 1/2 of physical memory (default_max_tensor_bytes()).
  size_t max_tensor_bytes = default_max_tensor_bytes();
  /// Memory planning: reuse buffers in place when legal.
  bool allow_inplace = true;
  /// Memory planning: share arena slots between values with disjoint lifetimes.
  bool reuse_buffers = true;
  /// Print the IR after each listed pass ("all" = every pass) to stderr.
  std::vector<std::string> print_ir_after;
  /// Use the process-wide compile cache.
  bool use_cache = true;
  /// Kernels prepare shape-agnostic state where they have one (NodeContext::
  /// prefer_shape_agnostic; e.g. oneDNN matmul over constant weights with a runtime row
  /// count, whose primitive every shape shares): cheaper compiles of a new shape, runs up to
  /// ~15% slower on those nodes. A Session sets it for first-seen shape keys and recompiles a
  /// key without it when the key recurs (docs/adr/0007-first-seen-shapes.md).
  bool shape_agnostic_kernels = false;
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
  /// Layout reorders one run of the node performs inside its kernel (ops::ReordersFn), e.g. 2
  /// for a oneDNN convolution that reads and writes NCHW around an nhwc primitive.
  int reorders_per_run = 0;
};

/// What the compiler did; shown by `frame inspect`.
/// One device group: a run of consecutive nodes a device backend executes with its values in
/// device memory (include/frame/ops/device_group.h, docs/backends/intel-gpu.md). Copies happen
/// only at its boundary: each run copies `copies_in` host -> device and `copies_out` device ->
/// host; constants are uploaded once per run slot.
struct DeviceGroupReport {
  std::string backend;
  std::vector<std::string> nodes;       ///< node names in execution order
  std::vector<std::string> copies_in;   ///< values copied host -> device every run
  std::vector<std::string> copies_out;  ///< values copied device -> host every run
  size_t bytes_in = 0;                  ///< bytes of copies_in
  size_t bytes_out = 0;                 ///< bytes of copies_out
  size_t constants = 0;                 ///< constants uploaded once per run slot
  size_t constant_bytes = 0;
  size_t device_bytes = 0;  ///< device memory per run slot (values and constants)
};

struct CompileReport {
  std::map<std::string, int> op_counts_before;  ///< op -> node count of the input graph
  std::map<std::string, int> op_counts_after;   ///< after the pipeline
  std::vector<std::pair<std::string, double>> pass_times_ms;  ///< in pipeline order
  /// Wall-clock milliseconds of each stage of the compile that built this executable, in the
  /// order they ran (docs/architecture/execution-model.md, "Compile stages"):
  /// - `specialize`: a Session's import of the model at the run's shapes and shape-determining
  ///   values (ADR 0006); only in the reports a Session gives;
  /// - `verify`: the input graph's checks (V1-V4);
  /// - `cache_key`: the compile cache's key (the graph's text); only with use_cache;
  /// - `passes`: the whole pipeline (pass_times_ms breaks it down), lowering and planning
  ///   included;
  /// - `check`: verification of the compiled graph and the memory limits;
  /// - `prepare`: kernels' prepare (oneDNN primitives created, OpenCL programs built) and the
  ///   execution plan.
  /// A compile-cache hit (cache_hit) has only `verify` and `cache_key`: it runs no pass. A
  /// hit of the compile cache on disk (disk_cache_hit) has `disk_read`, `check` and `prepare`.
  std::vector<std::pair<std::string, double>> stage_times_ms;
  /// The backend chain used: CompileOptions::backends with "auto" expanded.
  std::vector<std::string> backends;
  /// Threads every run uses (CompileOptions::num_threads; 0 resolved to the OpenMP default).
  int num_threads = 0;
  std::vector<Placement> placements;
  /// Op names per fused_elementwise_internal node (operator-fusion), in execution order.
  std::vector<std::vector<std::string>> fused_groups;
  /// Nodes fused by backend lowering patterns (fused_post_ops_internal: a conv, matmul or gemm
  /// with post-ops), in execution order: node name, then its ops, base op first, post-ops in
  /// the order applied (e.g. {"conv", "add", "relu"}).
  std::vector<std::pair<std::string, std::vector<std::string>>> lowering_fused;
  /// Backend lowering-pattern rewrites in order, as "<backend>/<pattern> at node '<name>'
  /// (<op>)" (include/frame/ops/lowering_pattern.h), e.g. batch-norm folded into a conv.
  std::vector<std::string> lowering_rewrites;
  size_t peak_arena_bytes = 0;
  /// Device groups in execution order (empty when every node runs on a host backend).
  std::vector<DeviceGroupReport> device_groups;
  /// True when the process-wide compile cache (CompileOptions::use_cache) returned it.
  bool cache_hit = false;
  /// True when a Session's compile cache on disk (SessionOptions::cache_dir) returned it: no
  /// import and no pass ran; stage_times_ms has `disk_read` (reading and checking the entry),
  /// `check` and `prepare`, and pass_times_ms is empty.
  bool disk_cache_hit = false;
  /// Compiled with CompileOptions::shape_agnostic_kernels (a Session's first-seen shape key,
  /// docs/adr/0007-first-seen-shapes.md).
  bool shape_agnostic_kernels = false;
  std::string to_json() const;
};

/// Time spent in one node of the compiled graph (one step of the execution plan), summed over
/// the profiled runs.
struct NodeProfile {
  /// Node name; for a part holding several nodes (whole-graph backends) their names joined
  /// with "+".
  std::string node;
  std::string op;       ///< op name (joined with "+" like `node` for a multi-node part)
  std::string backend;  ///< backend that runs it (a decomposition: the backends it uses)
  /// Placement path: "kernel", "decomposition" or "cpu-fallback" (Placement::path).
  std::string path;
  /// Type of each input, e.g. "f32[1,3,224,224]"; "" for an absent optional input.
  std::vector<std::string> input_types;
  /// Type of each output, e.g. "f32[1,1000]".
  std::vector<std::string> output_types;
  /// The ops a fused node holds: a fused_elementwise_internal node's body ops in body order; a
  /// fused_post_ops_internal node's base op then its post-ops (e.g. conv, add, relu); otherwise
  /// empty (also for a fused_post_ops_internal node with no post-ops).
  std::vector<std::string> fused_ops;
  int64_t total_ns = 0;  ///< steady_clock nanoseconds in the node, summed over calls
  int64_t calls = 0;     ///< times it ran
};

/// One call of one node, as a Chrome trace "complete" event.
struct TraceEvent {
  size_t node = 0;       ///< index into Profile::nodes
  int64_t start_ns = 0;  ///< steady_clock ns since the Profile was made
  int64_t dur_ns = 0;    ///< duration of the call in ns
  int thread = 0;        ///< small id of the calling thread, in order of first appearance
};

/// Per-node timings of the runs given this Profile through RunOptions::profile, summed over
/// those runs. Runs on several threads may share one Profile (each run merges its times under
/// a lock when it ends). `nodes` starts with the first profiled run's steps, in execution
/// order; runs of another Executable (another specialization of a session, a stage of a staged
/// model) add to the row of the same node, op, backend and path, appending rows for steps not
/// seen before. Read the public fields once no run using the Profile is in flight; by_time()
/// and to_json() lock.
class Profile {
 public:
  /// At most this many trace events are kept (the first ones); totals keep counting.
  static constexpr size_t kMaxTraceEvents = size_t{1} << 18;

  /// An empty profile; trace timestamps count from its construction.
  Profile();
  /// Copies the timings (under `other`'s lock), keeping `other`'s clock origin.
  Profile(const Profile& other);
  /// Replaces the timings with a copy of `other`'s.
  Profile& operator=(const Profile& other);

  std::vector<NodeProfile> nodes;  ///< per plan step, in execution order
  std::vector<TraceEvent> events;  ///< per node call, in completion order per run
  int64_t runs = 0;                ///< profiled runs merged
  int64_t run_ns = 0;              ///< wall ns of those runs (plan execution), summed
  /// Node indices sorted by total_ns, largest first.
  std::vector<size_t> by_time() const;
  /// Forgets every timing (keeps the clock origin).
  void clear();
  /// JSON: {"traceEvents": [...], "displayTimeUnit": "ms", "runs": N, "run_ms": total,
  /// "nodes_ms": time inside nodes, "nodes": [{"node", "op", "backend", "path", "inputs",
  /// "outputs", "fused_ops", "ms", "percent", "calls"}, ...] largest first}. The object is a valid
  /// Chrome trace (Trace Event Format: "X" events with "ts"/"dur" in microseconds, one "tid" per
  /// calling thread), so it opens in chrome://tracing and Perfetto; the extra keys are ignored
  /// there.
  std::string to_json() const;

  /// Adds one call of a step timed outside an Executable (a staged model's eager node or
  /// folded stage, docs/adr/0008-data-dependent-shapes.md) to the row of `step`'s node, op,
  /// backend and path; `start` on steady_clock, `dur_ns` in ns. Does not count a run.
  /// Thread-safe.
  void add_step(const NodeProfile& step, std::chrono::steady_clock::time_point start,
                int64_t dur_ns);
  /// Counts one run of `run_ns` ns (a staged model's whole run). Thread-safe.
  void add_run(int64_t run_ns);
  /// Adds `other`'s rows and trace events to this profile's (rows matched as add_step does),
  /// not its run count. Thread-safe.
  void merge_steps(const Profile& other);

 private:
  friend class Executable;
  size_t row_for(const NodeProfile& step);  // the row of step's node/op/backend/path; mu_ held
  int thread_id();                          // the calling thread's small id; mu_ held
  void add_call(size_t row, int64_t start_ns, int64_t dur_ns, int tid);  // mu_ held
  // Adds one run made on the calling thread: per step its steady_clock start (ns since the
  // clock's epoch) and duration; `layout` names the steps. Thread-safe.
  void merge_run(const std::vector<NodeProfile>& layout, const std::vector<int64_t>& start_ns,
                 const std::vector<int64_t>& dur_ns, int64_t run_ns);

  mutable std::mutex mu_;
  std::chrono::steady_clock::time_point origin_;
  std::vector<std::thread::id> threads_;
  // The executable's step layout `nodes` was taken from: runs of another one (even with as
  // many steps) are not merged into `nodes`.
  const std::vector<NodeProfile>* layout_ = nullptr;
  std::unordered_map<std::string, size_t> rows_;  // row_for's index, built at its first use
};

/// Called by a run after each top-level node (RunOptions::observer) with the node's profile
/// row (name, op, backend, path, fused ops), the names of its outputs in the compiled graph
/// (ONNX value names for imported models; a fused group's are its last op's) and their
/// values in plain row-major layout (a value a kernel keeps in nhwc or nChw16c is handed over
/// as a plain copy). The tensors are valid only during the call: copy what you keep. An absent
/// optional output is an undefined Tensor. Called on the thread that runs the graph.
using NodeObserver =
    std::function<void(const NodeProfile& node, std::span<const std::string> output_names,
                       std::span<const Tensor> outputs)>;

/// Options of one Executable::run call.
struct RunOptions {
  /// When set, this run's per-node times are added to it (steady_clock around each step);
  /// when null (the default) nothing is timed and the run costs nothing extra. The Profile
  /// must outlive the call.
  Profile* profile = nullptr;
  /// When set, the run reads it before each top-level node (and each stage or eager node of a
  /// staged model) and, once it is true, stops with kFailedPrecondition naming the node it did
  /// not start ("terminated"); outputs are then unspecified. Another thread sets it to stop a
  /// long run between nodes (ONNX Runtime's RunOptions.terminate). One relaxed atomic load per
  /// node; must outlive the call.
  const std::atomic<bool>* terminate = nullptr;
  /// When set, called after each top-level node with its outputs (NodeObserver; `frame
  /// compare` reads every value this way). Values kept in another layout are copied to plain
  /// for it; one null check per node when unset. Must outlive the call.
  const NodeObserver* observer = nullptr;
};

/// The error a run stopped by RunOptions::terminate returns: kFailedPrecondition, "the run was
/// terminated (RunOptions::terminate) before node '<node>'".
Status run_terminated(std::string_view node);

class ExecutableImpl;
namespace detail {
class DiskCache;
}

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
  /// Same, with options (profiling).
  Result<TensorMap> run(const TensorMap& inputs, const RunOptions& options) const;
  /// Runs the graph writing into caller-provided output tensors (ONNX Runtime's IoBinding):
  /// `outputs` must name every graph output with a defined tensor of the compiled dtype and
  /// shape (e.g. Tensor::view over the caller's memory, reused across runs), not aliasing an
  /// input. A caller who reuses its input and output tensors makes the runtime allocate
  /// nothing per run in the steady state (kernels that need scratch may still allocate).
  /// Errors: kInvalidArgument for inputs as in run(), and naming the output and expected vs
  /// actual for a missing output, an unknown output name, an undefined tensor or a wrong
  /// dtype or shape (outputs are then untouched); kernel errors with node and op.
  Status run(const TensorMap& inputs, TensorMap& outputs, const RunOptions& options = {}) const;
  /// Names, dtypes and shapes of the compiled graph inputs, in graph order.
  const std::vector<std::pair<std::string, ir::TensorType>>& input_signature() const;
  /// Names, dtypes and shapes of the compiled graph outputs, in graph order.
  const std::vector<std::pair<std::string, ir::TensorType>>& output_signature() const;
  const CompileReport& report() const;
  /// The graph after the pipeline (for printing).
  const ir::Graph& compiled_graph() const;

 private:
  friend class detail::DiskCache;  // stores the placements and buffers of the core
  std::shared_ptr<const ExecutableImpl> impl_;
};

/// Compiles `graph` (copied; the caller's graph is not modified). Graph inputs must have
/// concrete shapes (ARCH-044). Errors: verification failures (V1–V4), shape inference errors
/// naming node/op/input, unsupported dtype on every backend, strict-mode fallbacks, kOutOfRange
/// when a value or the run's memory exceeds CompileOptions::max_tensor_bytes or
/// max_memory_bytes (naming the node, the value, the bytes asked for and the limit).
Result<Executable> compile(const ir::Graph& graph, const CompileOptions& options = {});

}  // namespace frame::runtime
