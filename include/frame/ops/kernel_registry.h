#pragma once
/// \file
/// `KernelRegistry`: kernels keyed by (op, backend), never by dtype (op spec §3); dtype is
/// expanded inside the kernel with dispatch_dtype (ARCH-042). `FRAME_REGISTER_KERNEL`.

#include <memory>
#include <shared_mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ops/op_schema.h"
#include "frame/ops/subgraph.h"

namespace frame::ops {

struct RegistrationBatch;

/// Everything a kernel sees when it runs. Outputs are preallocated with the inferred shapes
/// (from the arena or the caller); a kernel writes into them and never reallocates.
struct KernelContext {
  const NodeContext* node = nullptr;
  /// Per input position; absent optional inputs are undefined Tensors.
  std::span<const Tensor> inputs;
  std::span<Tensor> outputs;
  /// State built once by the kernel's prepare step (nullptr without one).
  void* state = nullptr;
  /// Threads the kernel may use (OpenMP), >= 1.
  int num_threads = 1;
  /// One runner per name in KernelDef::subgraph_attrs, in that order (nullptr for an absent
  /// attribute); empty when the caller cannot run bodies (import-time folding, the
  /// constant-folding evaluator), in which case such a kernel returns an error.
  std::span<SubgraphRunner* const> subgraphs;

  const Tensor& input(size_t i) const { return inputs[i]; }
  Tensor& output(size_t i) { return outputs[i]; }
};

/// Runs a kernel. Errors: kInvalidArgument for input values the kernel rejects (e.g. an
/// out-of-range gather index), naming node, op and input.
using KernelFn = Status (*)(KernelContext&);
/// Builds per-node state once at compile time (e.g. a oneDNN primitive, reordered weights).
using PrepareFn = Result<std::shared_ptr<void>> (*)(const NodeContext&);

/// Whether a kernel can run one particular node beyond its dtype (attributes, ranks, optional
/// outputs): OK, or kUnimplemented saying what it cannot do, e.g. "max_pool with an Indices
/// output". Checked by KernelDef::supports at lowering, so a declined node falls back through
/// the chain (M10) instead of failing at compile time.
using AcceptsFn = Status (*)(const NodeContext&);

/// How many layout reorders (copies of an activation into another memory order, e.g. NCHW ->
/// nhwc around a oneDNN convolution) one run of a prepared node performs, from its prepared
/// state. Reported per node by the compile report (Placement::reorders_per_run) and
/// `frame inspect`; weights reordered once at prepare are not counted.
using ReordersFn = int (*)(const void* state);

/// Most threads worth giving node `ctx` (>= 1), or 0 for no limit beyond the runtime's own
/// choice (docs/architecture/execution-model.md, "Threading"): a kernel whose work cannot be
/// split well at these sizes (oneDNN 2.6's GRU and RNN primitives over a batch of a few rows
/// open parallel regions per step and ran slower at 2 threads than at 1) declares it, and the
/// node then prepares and runs with min(this, the runtime's count) threads, in compiled plans
/// and in the interpreted tier alike.
using MaxThreadsFn = int (*)(const NodeContext& ctx);

/// Whether `state`, which this kernel's prepare built for an earlier run of the same node (same
/// op, attributes and constant inputs, other input shapes), still serves node `ctx` exactly as a
/// state prepared for `ctx` would, so that the interpreted tier may run it without choosing and
/// preparing the kernel again (docs/architecture/execution-model.md, "Interpreted tier").
/// Only the kernel knows what its state depends on: the onednn matmul's own loops depend on K,
/// N and the weights but not on the row count M, so a new batch or sequence length keeps them
/// (ADR 0007, "Revisited (2026-12-07, later)"). Must return false whenever in doubt: a true
/// answer skips the kernel's accepts, and its results must equal a fresh prepare's.
using ReuseStateFn = bool (*)(const NodeContext& ctx, const void* state);

/// Input position whose buffer output 0 of node `ctx` may take (the kernel then writes its
/// result over that input), or -1. memory-planning gives output 0 that input's arena slot only
/// when this node is the input's last reader, dtype and byte size match, and the value is read
/// at no other input position of the node; the kernel must then be correct with
/// `output(0).raw_data() == input(k).raw_data()` (it may also be called with distinct
/// buffers). A kernel's counterpart of OpSchema::view_of_input and of the kElementwise
/// in-place rule, for kernels that read an input whole before writing (ONNX Runtime's
/// `MayInplace` kernel hint). Example: the onednn conv with a residual sum post-op, whose
/// residual must sit in the output before the primitive runs
/// (docs/architecture/compiler-passes.md#memory-planning).
using InPlaceFn = int (*)(const NodeContext& ctx);

/// A registered kernel.
struct KernelDef {
  std::string op;
  std::string backend;
  KernelFn fn = nullptr;
  PrepareFn prepare = nullptr;
  /// Optional node predicate beyond dtype (nullptr = every node of a supported dtype).
  AcceptsFn accepts = nullptr;
  /// Layout reorders per run of a prepared node (nullptr = none).
  ReordersFn reorders = nullptr;
  /// Input output 0 may be written over, per node (nullptr = none; InPlaceFn).
  InPlaceFn in_place_input = nullptr;
  /// Most threads worth giving a node (nullptr = no limit; MaxThreadsFn).
  MaxThreadsFn max_threads = nullptr;
  /// Whether an earlier run's prepared state serves a node again (nullptr = never;
  /// ReuseStateFn).
  ReuseStateFn reuse_state = nullptr;
  /// dtypes the kernel supports, checked on input `dtype_input` (or output 0 when the op has
  /// no inputs) before it is chosen.
  DTypeSet dtypes = kAllDTypes;
  int dtype_input = 0;
  /// Input positions whose values the kernel never reads, only their dtype and shape (e.g.
  /// `shape`, `size`). constant-folding evaluates such a node when its other inputs are
  /// constants, passing a placeholder tensor of the right type for these positions.
  std::vector<int> type_only_inputs;
  /// Graph-valued attributes (ir::AttrType::kGraph) the kernel runs as bodies: the runtime
  /// compiles each into a nested plan with the same backend chain and threads and hands the
  /// kernel one ops::SubgraphRunner per name (KernelContext::subgraphs). Control flow (ADR
  /// 0006 decision 5).
  std::vector<std::string> subgraph_attrs;
  std::string file;
  int line = 0;

  /// OK if this kernel can run the node; else kUnimplemented naming the dtype and the
  /// supported set, e.g. "kernel relu@cpu does not support dtype i8 (supports {f32, f64})",
  /// or the reason `accepts` gave.
  Status supports(const NodeContext& ctx) const;

  /// Runs this kernel once on `ctx` outside a compiled plan (import-time and compile-time
  /// folding): outputs of `out_types` allocated zeroed, the prepare step run first when there
  /// is one, one thread, no subgraph runners. Does not call `supports`. Errors: those of
  /// Tensor::zeros, prepare and the kernel.
  Result<std::vector<Tensor>> run_once(const NodeContext& ctx, std::span<const Tensor> inputs,
                                       std::span<const ir::TensorType> out_types) const;
};

/// Global kernel table. Thread-safe like OpRegistry.
class KernelRegistry {
 public:
  static KernelRegistry& global();
  /// Adds a kernel. Fatal on a duplicate (op, backend) pair, an empty backend name or a
  /// null function (ARCH-040 exit). The op need not be registered yet (static-init order);
  /// the self-check reports kernels of unknown ops.
  void register_kernel(KernelDef def);
  /// The kernel for (op, backend), or nullptr. Valid for the process lifetime.
  const KernelDef* find(std::string_view op, std::string_view backend) const;
  /// The kernel of the first backend in `backends` (preference order) that has one for node
  /// `ctx`'s op and supports the node (KernelDef::supports), or nullptr: step 1 of
  /// backend-lowering's placement, shared by the lowering patterns' anchor check and the
  /// interpreted tier.
  const KernelDef* first_supporting(const NodeContext& ctx,
                                    std::span<const std::string> backends) const;
  /// Kernels of one backend, sorted by op.
  std::vector<const KernelDef*> list_backend(std::string_view backend) const;
  /// All kernels sorted by (op, backend).
  std::vector<const KernelDef*> list() const;
  /// Backend names that have at least one kernel, sorted.
  std::vector<std::string> backends() const;
  /// Backends with a kernel for `op`, sorted.
  std::vector<std::string> backends_of(std::string_view op) const;
  /// JSON array of {op, backend, dtypes, dtype_input, has_prepare, type_only_inputs, file, line}.
  std::string to_json() const;

 private:
  friend Status commit_registrations(RegistrationBatch batch);
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<KernelDef>> kernels_;  // key "op@backend"
};

/// Registers an op and its kernels after start-up (the Python package's frame.register_op,
/// plugins), all or nothing and without aborting: the checks of OpRegistry::register_op and
/// KernelRegistry::register_kernel (ARCH-040, ARCH-041) become errors. Both registries are
/// locked for the whole check-and-insert, so concurrent lookups never see the op without its
/// kernels. Errors: kInvalidArgument (illegal or reserved op name, no shape function, a kernel
/// for another op, an empty backend name, a null kernel function, a backend listed twice),
/// kAlreadyExists (the op, or a kernel for (op, backend), is already registered); nothing is
/// registered then.
Status register_op_with_kernels(OpSchema schema, std::vector<KernelDef> kernels);

/// Builder behind FRAME_REGISTER_KERNEL; registers when converted to KernelRegistration.
class KernelBuilder {
 public:
  KernelBuilder(std::string op, std::string backend, KernelFn fn, const char* file, int line);
  KernelBuilder& dtypes(DTypeSet s);
  KernelBuilder& dtype_input(int i);
  KernelBuilder& prepare(PrepareFn fn);
  /// Declares which nodes the kernel can run beyond dtype (KernelDef::accepts).
  KernelBuilder& accepts(AcceptsFn fn);
  /// Declares how the kernel counts its layout reorders per run (KernelDef::reorders).
  KernelBuilder& reorders(ReordersFn fn);
  /// Declares which input output 0 may be written over (KernelDef::in_place_input).
  KernelBuilder& in_place_input(InPlaceFn fn);
  /// Declares the most threads worth giving a node (KernelDef::max_threads).
  KernelBuilder& max_threads(MaxThreadsFn fn);
  /// Declares when an earlier run's prepared state serves a node again (KernelDef::reuse_state).
  KernelBuilder& reuse_state(ReuseStateFn fn);
  /// Declares inputs the kernel reads only for their type (KernelDef::type_only_inputs).
  KernelBuilder& type_only_inputs(std::vector<int> inputs);
  /// Declares the graph attributes the kernel runs as bodies (KernelDef::subgraph_attrs).
  KernelBuilder& subgraphs(std::vector<std::string> attrs);
  KernelDef def;
};

class KernelRegistration {
 public:
  KernelRegistration(KernelBuilder& b);   // NOLINT(google-explicit-constructor)
  KernelRegistration(KernelBuilder&& b);  // NOLINT(google-explicit-constructor)
};

/// Registry self-check (the article's self-check list, ARCH-041): every op has a shape
/// function and a "cpu" kernel, every kernel names a registered op. Returns one line per
/// problem; empty when the registries are consistent.
std::vector<std::string> registry_self_check();

}  // namespace frame::ops

/// Registers a kernel: `FRAME_REGISTER_KERNEL(relu, "cpu", relu_cpu).dtypes(kFloatDTypes);`
/// `op` is an identifier token; the key is (op, backend), never dtype.
#define FRAME_REGISTER_KERNEL(op, backend, fn)                           \
  [[maybe_unused]] static ::frame::ops::KernelRegistration FRAME_CONCAT( \
      frame_kernel_registration_, __COUNTER__) =                         \
      ::frame::ops::KernelBuilder(#op, backend, fn, __FILE__, __LINE__)
