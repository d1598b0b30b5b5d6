#pragma once
/// \file
/// Device groups: how a device backend keeps values in its own memory between nodes
/// (docs/backends/intel-gpu.md, "Device memory"; docs/architecture/execution-model.md). A
/// backend whose kernels run on a device with separate memory (OpenCL, CUDA) registers a
/// group compiler under its name; the runtime then hands it maximal runs of consecutive nodes
/// placed on it (runtime::Backend::Granularity::kWholeGraph) instead of one node at a time.
/// Inside a run values stay in device memory; host <-> device copies happen only at the run's
/// boundary, i.e. where the lowering placed a neighbour on another backend (a cpu fallback) or
/// at graph inputs and outputs. Lives in ops (below backends and runtime) so a backend layer
/// registers its compiler without including the runtime (ARCH-001), like availability probes
/// (backend_availability.h).

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"

namespace frame::ops {

/// A run of consecutive nodes placed on one device backend (kernel path), in topological
/// order, with the values that cross its boundary.
struct DeviceGroupSpec {
  /// The compiled graph; outlives the compiled group (attributes and constants may be
  /// borrowed from it).
  const ir::Graph* graph = nullptr;
  std::vector<ir::NodeId> nodes;
  /// Values read from outside the group (graph inputs, constants, values of other backends),
  /// in the order `run` receives them; kNoValue for an absent optional input.
  std::vector<ir::ValueId> inputs;
  /// Values produced inside and read after the group or graph outputs, in the order `run`
  /// writes them.
  std::vector<ir::ValueId> outputs;
};

/// A compiled device group. Compile-time state is read-only at run time; `run` is safe to call
/// concurrently with distinct run states.
class DeviceGroup {
 public:
  virtual ~DeviceGroup() = default;
  /// Copies `inputs` (host tensors, per DeviceGroupSpec::inputs; undefined for absent ones) to
  /// the device, runs every node, and copies the results to `outputs` (preallocated host
  /// tensors, per DeviceGroupSpec::outputs). Blocks until the outputs are on the host. Errors
  /// name the node, op and the device error.
  virtual Status run(std::span<const Tensor> inputs, std::span<Tensor> outputs,
                     void* run_state) const = 0;
  /// State of one run slot (its device memory, queue and uploaded constants), made once per
  /// run slot of the executable and reused by its runs; device memory is allocated at the
  /// first run so allocation failures are run errors.
  virtual std::shared_ptr<void> make_run_state() const = 0;
  /// Device memory one run slot holds, in bytes (values and constants), for reports.
  virtual size_t device_bytes() const = 0;
  /// Whether input `k` (DeviceGroupSpec::inputs order) is copied to the device: false for an
  /// absent input and one only the host reads at prepare (e.g. a constant `shape`).
  virtual bool input_on_device(size_t k) const = 0;
};

/// Compiles one run of nodes (kernel lookup and prepare of each node, device memory plan).
/// Errors: kUnimplemented naming the node a kernel cannot run after all.
using DeviceGroupCompiler = Result<std::unique_ptr<DeviceGroup>> (*)(const DeviceGroupSpec&);

/// Registers `compiler` for `backend` (static init of the backend's layer); a second
/// registration for the same backend replaces the first. Thread-safe.
void register_device_group_compiler(std::string backend, DeviceGroupCompiler compiler);

/// The group compiler of `backend`, or nullptr (the backend runs one node per part).
/// Thread-safe.
DeviceGroupCompiler find_device_group_compiler(std::string_view backend);

}  // namespace frame::ops
