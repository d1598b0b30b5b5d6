#pragma once
/// \file
/// Availability probes of device backends. A backend whose kernels need a device (OpenCL,
/// CUDA) registers a probe under its name; `runtime::Backend::unavailable_reason()` of the
/// generic per-kernel backend asks it, so `frame backends` can say why a backend built into
/// this library cannot run on this machine. Lives in ops (below backends and runtime) so a
/// backend layer can register a probe without including the runtime (ARCH-001).

#include <string>
#include <string_view>

namespace frame::ops {

/// Returns "" when the backend can run here, else why not (e.g. "no OpenCL platform found").
/// Called possibly often and from any thread: a probe caches its answer.
using AvailabilityProbe = std::string (*)();

/// Registers `probe` for `backend` (static init of the backend's layer). A second probe for
/// the same backend replaces the first.
void register_availability_probe(std::string backend, AvailabilityProbe probe);

/// Why `backend` cannot run on this machine, or "" when it can or has no probe. Thread-safe.
std::string backend_unavailable_reason(std::string_view backend);

}  // namespace frame::ops
