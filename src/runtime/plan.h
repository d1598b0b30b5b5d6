#pragma once
/// \file
/// The execution plan of a compiled graph (private to src/runtime): compiled parts in
/// topological order, where every value lives, and the per-run state that binds arena views
/// to the parts once, so steady-state runs allocate nothing but their outputs.

#include <atomic>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/passes/pass.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/compile.h"

namespace frame::runtime::detail {

/// One compiled part with the values it reads and writes.
struct Step {
  std::unique_ptr<CompiledPart> part;
  std::vector<ir::ValueId> inputs;  ///< kNoValue for absent optional inputs
  std::vector<ir::ValueId> outputs;
  size_t workspace_bytes = 0;
  /// Threads the part runs on (and prepared with): the plan's, or 1 for a per-kernel node too
  /// small to pay for waking the others (node_threads.h).
  int threads = 1;
  /// What a profile reports for this step (names, placement, types, fused body; no times).
  NodeProfile info;
  /// Names of `outputs` ("" for absent ones), for RunOptions::observer.
  std::vector<std::string> output_names;
  /// Memory order of each output as its producer stores it (ops::fused::ActivationLayout:
  /// 0 plain, 1 nhwc, 16 nChw16c), so an observer gets plain values.
  std::vector<int64_t> output_layouts;
};

/// Where a value's tensor comes from at run time.
enum class ValueHome : uint8_t { kNone, kArena, kConstant, kExternal };

/// A compiled graph ready to run: the top-level graph or a decomposition's micro-graph.
struct Plan {
  std::shared_ptr<const ir::Graph> graph;  ///< parts borrow from it
  std::vector<Step> steps;
  std::vector<ValueHome> home;  ///< per value
  std::vector<size_t> offset;   ///< per value: arena offset (kArena only)
  size_t arena_bytes = 0;       ///< planned region (64-byte aligned)
  size_t workspace_bytes = 0;   ///< largest step workspace, placed after the planned region
  int num_threads = 1;
  /// Per external value (graph inputs and outputs): the step slots that read it (k >= 0: input
  /// k) or write it (k < 0: output -k-1), so binding a run's tensors touches only those.
  std::vector<std::vector<std::pair<size_t, int64_t>>> refs;
  /// Parts of device backends (Backend::device_memory) in step order, with their boundary
  /// copies (CompileReport::device_groups).
  std::vector<DeviceGroupReport> device_groups;
  /// Step infos in step order: the layout a Profile is filled with.
  std::vector<NodeProfile> profile_layout;
  /// Bytes one run needs: planned region + workspace.
  size_t total_bytes() const { return arena_bytes + workspace_bytes; }
};

/// The ops a fused node holds, for the compile report and the profile: a
/// `fused_elementwise_internal` node's body ops in body order; a `fused_post_ops_internal`
/// node's `base_op` then its `post_ops` in order (src/ops/schemas/nn_fused_internal.h), e.g.
/// {"conv", "add", "relu"}; empty for one without post-ops (it only carries activation
/// layouts), for any other node or unreadable attributes.
std::vector<std::string> fused_node_ops(const ir::Node& n);

/// Builds the plan of `graph` from the placements and buffers in `ctx` (backend-lowering and
/// memory-planning must have run on exactly this graph). Decomposition placements get a nested
/// plan compiled with `ctx`'s settings.
Result<Plan> build_plan(std::shared_ptr<const ir::Graph> graph, const passes::PassContext& ctx,
                        int num_threads);

/// Mutable state of one run slot: views bound to one memory block, per-step tensor arrays and
/// per-part run state. Reused across runs (never shared by concurrent runs).
struct RunState {
  std::byte* base = nullptr;  ///< memory the views are bound to
  Tensor owned;               ///< the arena, when this state owns one (top level)
  std::vector<Tensor> values;
  std::vector<std::vector<Tensor>> step_inputs;
  std::vector<std::vector<Tensor>> step_outputs;
  std::vector<std::shared_ptr<void>> part_state;
  /// Executable::run's staging of the caller's tensors, reused so runs do not allocate.
  std::vector<Tensor> run_inputs;
  std::vector<Tensor> run_outputs;
  /// Per step: steady_clock start (ns since its epoch) and duration of a timed run.
  std::vector<int64_t> start_ns;
  std::vector<int64_t> dur_ns;
};

/// Makes a run state for `plan` with its own arena. Errors: allocation failure.
Result<std::unique_ptr<RunState>> make_run_state(const Plan& plan);
/// (Re)binds `state` to the memory block at `base` (plan.total_bytes() bytes, 64-aligned).
void bind(const Plan& plan, RunState& state, std::byte* base);

/// Runs `plan`: `inputs` per graph input, `outputs` per graph output (preallocated with the
/// output types; produced outputs are written in place, others copied in). Errors from parts
/// pass through (they name node and op). With `timed`, each step's start and duration go to
/// state.start_ns / state.dur_ns; without, no clock is read. `terminate`: RunOptions::terminate,
/// read before each step. `observer`: RunOptions::observer, called after each step.
Status run_plan(const Plan& plan, RunState& state, std::span<const Tensor> inputs,
                std::span<Tensor> outputs, bool timed = false,
                const std::atomic<bool>* terminate = nullptr,
                const NodeObserver* observer = nullptr);

}  // namespace frame::runtime::detail
