#pragma once
/// \file
/// Registrations collected instead of applied: the static registrations (FRAME_REGISTER_OP,
/// FRAME_REGISTER_KERNEL, FRAME_REGISTER_LOWERING_PATTERN) a plugin's static initializers make
/// while `runtime::load_plugin` opens it. Static registration in the program itself is fatal on
/// a fault (ARCH-040: it happens before `main`, nobody could handle an error); a plugin loads
/// after start-up, so its faults become one error naming the plugin and nothing of it is
/// registered (docs/architecture/op-registration.md "Plugins").

#include <functional>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {

/// What one plugin registers, in registration order.
struct RegistrationBatch {
  std::vector<OpSchema> ops;
  std::vector<KernelDef> kernels;
  std::vector<LoweringPattern> patterns;
  /// Run after the ops and kernels are registered (e.g. ONNX custom-domain mappings,
  /// FRAME_REGISTER_ONNX_OP); an error of one is reported, the registrations stay.
  std::vector<std::function<Status()>> after;
  /// A fault a builder found while collecting (e.g. M9 variadic misuse), with its site;
  /// empty when none. A batch with a fault is never committed.
  std::string fault;
};

/// Routes this thread's static registrations into `batch` (nullptr: apply them again). Plugin
/// static initializers run on the thread that opens the plugin, so other threads keep
/// registering normally. Not reentrant; used by runtime::load_plugin.
void collect_registrations(RegistrationBatch* batch);

/// The batch this thread collects into, or nullptr.
RegistrationBatch* collecting_batch();

/// Registers every op, kernel and pattern of `batch`, all or nothing, under the registries'
/// locks, then runs its `after` actions. Errors (nothing registered): kInvalidArgument for the
/// batch's fault, an illegal or reserved op name, a missing shape function (ARCH-040, ARCH-041),
/// a kernel or pattern with an empty backend or null function, or a kernel for an op neither
/// registered nor in the batch; kAlreadyExists for an op, (op, backend) kernel or pattern
/// already registered or listed twice. Each message names the registration site (file:line).
/// An `after` action's error is returned after the registrations were made.
Status commit_registrations(RegistrationBatch batch);

/// Runs `action` now, or, while this thread collects a batch, after the batch commits. Static
/// form: an error now is a fatal registration fault (ARCH-040 exit), naming `what`.
void run_after_registration(std::string what, std::function<Status()> action);

}  // namespace frame::ops
