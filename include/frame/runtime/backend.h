#pragma once
/// \file
/// The backend interface (docs/architecture/execution-model.md).
/// After backend-lowering has placed every node, the runtime hands each backend its part of
/// the graph: `Backend::compile(part) -> CompiledPart`. Per-kernel backends (cpu, onednn,
/// cuda, intel_gpu) get one node per part and assemble the registered kernel with its prepared
/// state; whole-graph backends (intel_npu via OpenVINO) get maximal runs of consecutive nodes
/// placed on them and hand each run to a vendor compiler. Both are invisible to the runtime
/// above: it only binds part inputs/outputs to arena tensors and calls `run`.

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ops/subgraph.h"

namespace frame::runtime {

/// Buffers of one execution of a compiled part. Tensors are views the runtime owns; a part
/// writes its outputs in place and never reallocates them.
struct PartIO {
  /// Per part input, in PartSpec::inputs order; absent optional inputs are undefined Tensors.
  std::span<const Tensor> inputs;
  /// Per part output, in PartSpec::outputs order, preallocated with the inferred shapes.
  std::span<Tensor> outputs;
  /// Scratch of CompiledPart::workspace_bytes() bytes, 64-byte aligned, private to this run.
  std::span<std::byte> workspace;
  /// State made by CompiledPart::make_run_state() for this run slot (nullptr without one).
  void* run_state = nullptr;
  /// Threads the part may use (>= 1).
  int num_threads = 1;
};

/// A part compiled by a backend. `run` must be safe to call concurrently from several threads
/// with distinct PartIO (compile-time state is read-only at run time).
class CompiledPart {
 public:
  virtual ~CompiledPart() = default;
  /// Executes the part. Errors name the node and op (kernel errors pass through).
  virtual Status run(const PartIO& io) const = 0;
  /// Scratch bytes `run` needs (carved out of the run's arena).
  virtual size_t workspace_bytes() const { return 0; }
  /// Layout reorders one run performs (ops::ReordersFn of the kernel; 0 when it declares none).
  virtual int reorders_per_run() const { return 0; }
  /// Mutable per-run state (e.g. bound views of a nested plan), made once per arena of the
  /// runtime's pool and reused, so steady-state runs allocate nothing. Default: none.
  virtual std::shared_ptr<void> make_run_state() const { return nullptr; }
  /// Device memory one run slot of this part holds, in bytes (0 for host parts), for the
  /// compile report (CompileReport::device_groups).
  virtual size_t device_bytes() const { return 0; }
  /// For a device part: whether part input `k` is copied to the device (false for one only
  /// read on the host when the part was compiled, e.g. a constant `shape`).
  virtual bool input_on_device(size_t /*k*/) const { return true; }
};

/// A control-flow body compiled by the runtime into a nested static plan (ADR 0006 decision
/// 5). Immutable and shareable; each run slot of the executable gets its own runner.
class CompiledSubgraph {
 public:
  virtual ~CompiledSubgraph() = default;
  /// A runner with its own arena and per-step state, reused by every iteration of the run slot
  /// that owns it. Errors: allocation failure.
  virtual Result<std::unique_ptr<ops::SubgraphRunner>> make_runner() const = 0;
};

/// Compiles graph attributes into CompiledSubgraphs with the settings of the enclosing
/// compilation (backend chain, pass options, threads): the ordinary pass pipeline, then a
/// nested plan. Provided by the runtime on every PartSpec, so backends never include passes.
class SubgraphCompiler {
 public:
  virtual ~SubgraphCompiler() = default;
  /// Compiles `body` (its graph inputs must be typed). Errors: pass or lowering failures,
  /// prefixed with the body's name.
  virtual Result<std::shared_ptr<const CompiledSubgraph>> compile(const ir::Graph& body) const = 0;
};

/// The slice of the compiled graph given to one backend.
struct PartSpec {
  /// The compiled graph; owned by the Executable and outliving every CompiledPart, so parts
  /// may borrow attributes and constants from it.
  const ir::Graph* graph = nullptr;
  /// Nodes of the part in topological order (exactly one for per-kernel backends).
  std::vector<ir::NodeId> nodes;
  /// Values the part reads from outside (kNoValue for absent optional inputs), in order.
  std::vector<ir::ValueId> inputs;
  /// Values the part produces that are read outside it or are graph outputs, in order.
  std::vector<ir::ValueId> outputs;
  /// Compiles the bodies of kernels that run graph attributes (ops::KernelDef::subgraph_attrs);
  /// valid during Backend::compile only. Null where bodies cannot be compiled.
  const SubgraphCompiler* subgraphs = nullptr;
  /// CompileOptions::shape_agnostic_kernels: kernels prepare with
  /// NodeContext::prefer_shape_agnostic (docs/adr/0007-first-seen-shapes.md).
  bool shape_agnostic = false;
};

/// One backend (names: "cpu", "onednn", "cuda", "intel_gpu", ...; docs/backends/).
class Backend {
 public:
  /// How the runtime partitions the graph for this backend.
  enum class Granularity : uint8_t {
    kPerKernel,   ///< one part per node: the registered (op, backend) kernel runs it
    kWholeGraph,  ///< maximal runs of consecutive nodes placed on the backend
  };
  virtual ~Backend() = default;
  virtual std::string_view name() const = 0;
  virtual Granularity granularity() const = 0;
  /// Compiles one part (runs kernel prepare steps, vendor compilers, ...), once per compile().
  /// Errors: kUnimplemented when the backend cannot run a node after all, naming node and op.
  virtual Result<std::unique_ptr<CompiledPart>> compile(const PartSpec& part) const = 0;
  /// Empty when the backend can run on this machine; otherwise why it cannot (e.g. "no OpenCL
  /// platform found"), for `frame backends` and error messages. Host backends are always
  /// available; a device backend probes once and caches the answer. Thread-safe.
  virtual std::string unavailable_reason() const { return {}; }
  /// True when the backend's parts keep values in device memory, so every part input it
  /// reads is a host -> device copy and every part output a device -> host copy (counted in
  /// CompileReport::device_groups). The generic per-kernel backend says so for a backend
  /// with a device group compiler (include/frame/ops/device_group.h).
  virtual bool device_memory() const { return false; }
};

/// Registers a backend object under backend->name(). Errors: kAlreadyExists for a taken name,
/// kInvalidArgument for a null backend or an empty name. Thread-safe.
Status register_backend(std::shared_ptr<const Backend> backend);
/// The backend named `name`: a registered object, else the generic per-kernel backend over
/// KernelRegistry when some kernel is registered for `name` (so a backend that is only a set
/// of FRAME_REGISTER_KERNEL(op, "name", fn) kernels works without further code), else nullptr.
/// The pointer stays valid for the process lifetime. Thread-safe.
const Backend* find_backend(std::string_view name);
/// Names of registered backend objects and of backends with kernels, sorted, unique.
std::vector<std::string> backend_names();

/// The optimized host backends "auto" stands for, most preferred first (M10: each falls back
/// through the chain to "cpu"). Only those present in this build (find_backend non-null) are
/// used, so "auto" quietly means {"cpu"} in a build without them.
inline constexpr std::string_view kAutoBackends[] = {"onednn"};

/// What split_list does with an empty item (",," or a trailing comma).
enum class EmptyItems { kDrop, kKeep };

/// Splits a comma-separated list with spaces dropped ("a, b,c" -> {"a", "b", "c"}): backend
/// lists, pass pipelines (`CompileOptions::pipeline`, passes::kStandardPipeline). Empty items
/// are dropped, or kept as "" for a caller that rejects them. Never fails.
std::vector<std::string> split_list(std::string_view list, EmptyItems empty = EmptyItems::kDrop);

/// Splits a `--backend` value: comma-separated names, spaces ignored ("onednn,cpu",
/// "auto"). Errors: kInvalidArgument for an empty list or an empty item, naming the value.
Result<std::vector<std::string>> parse_backend_list(std::string_view list);

/// The backend chain a compilation uses: "auto" becomes the kAutoBackends present in this
/// build followed by "cpu"; other names are kept; duplicates are dropped (first one wins).
/// Errors: kInvalidArgument for an empty list; kNotFound for a name that is neither "auto"
/// nor an available backend, listing the available ones. Thread-safe.
Result<std::vector<std::string>> resolve_backends(const std::vector<std::string>& backends);

}  // namespace frame::runtime
