#pragma once
/// \file
/// Availability probes of device backends, and warm-ups. A backend whose kernels need a device
/// (OpenCL, CUDA) registers a probe under its name; `runtime::Backend::unavailable_reason()` of
/// the generic per-kernel backend asks it, so `frame backends` can say why a backend built into
/// this library cannot run on this machine. A backend with one-time setup that a first run
/// would otherwise pay registers a warm-up, which the ONNX frontend starts while it imports a
/// model. Lives in ops (below backends and runtime) so a backend layer can register either
/// without including the runtime (ARCH-001).

#include <string>
#include <string_view>
#include <vector>

namespace frame::ops {

/// Returns "" when the backend can run here, else why not (e.g. "no OpenCL platform found").
/// Called possibly often and from any thread: a probe caches its answer.
using AvailabilityProbe = std::string (*)();

/// Registers `probe` for `backend` (static init of the backend's layer). A second probe for
/// the same backend replaces the first.
void register_availability_probe(std::string backend, AvailabilityProbe probe);

/// Why `backend` cannot run on this machine, or "" when it can or has no probe. Thread-safe.
std::string backend_unavailable_reason(std::string_view backend);

/// Starts a backend's one-time, process-wide setup (JIT code generation a first run would
/// otherwise wait for) on a thread of its own and returns at once, given the ops (frame op
/// names) of the model being opened and whether its input shapes vary (symbolic dims: first-seen
/// shapes run the interpreted tier's kernels), so a backend starts only what those kernels
/// use. Called often, it starts its setup at most once per process. Returns true while a
/// setup it started runs (the caller then waits for it with WarmUpWait), false otherwise.
using WarmUpStart = bool (*)(const std::vector<std::string>& ops, bool shapes_vary);
/// Waits until the setup a WarmUpStart began has ended (at once if none runs). Thread-safe.
using WarmUpWait = void (*)();

/// Registers the warm-up of `backend` (static init of the backend's layer). A second
/// registration for the same backend replaces the first.
void register_warm_up(std::string backend, WarmUpStart start, WarmUpWait wait);

/// Starts the warm-up registered for `backend`, if any, for a model holding `ops` (the ONNX
/// frontend, once the model is parsed and before it is imported). Returns what the warm-up
/// returned (false without one): whether there is a warm-up to wait for. Thread-safe.
bool start_warm_up(std::string_view backend, const std::vector<std::string>& ops, bool shapes_vary);

/// Waits for the warm-up of `backend` started by start_warm_up (the ONNX frontend, before
/// returning the session: no warm-up thread outlives the call that opened a model, so a
/// process may exit or fork() at any time after). Thread-safe.
void wait_warm_up(std::string_view backend);

/// The cores this process may run on (its CPU affinity mask, sched_getaffinity), at least 1.
/// A warm-up runs only where there is a core beside the import's; runtime::available_cores()
/// returns the same.
int available_cores();

}  // namespace frame::ops
