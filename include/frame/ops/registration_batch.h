#pragma once
/// \file
/// Registrations collected instead of applied: the static registrations (FRAME_REGISTER_OP,
/// FRAME_REGISTER_KERNEL, FRAME_REGISTER_LOWERING_PATTERN) a plugin's static initializers make
/// while `runtime::load_plugin` opens it. Static registration in the program itself is fatal on
/// a fault (ARCH-040: it happens before `main`, nobody could handle an error); a plugin loads
/// after start-up, so its faults become one error naming the plugin and nothing of it is
/// registered (docs/architecture/op-registration.md "Plugins").

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/lowering_pattern.h"
#include "frame/ops/op_schema.h"

namespace frame::ops {

/// What a deferred action's check sees of its batch.
struct BatchView {
  const std::set<std::string>* ops = nullptr;  ///< the batch's op names (not yet registered)
  /// Keys claimed by the checks run before this one in the same batch (e.g. "onnx:dom::Type"),
  /// so a check can refuse a key listed twice; a passing check inserts its own.
  std::set<std::string>* claimed = nullptr;
};

/// A registration made after a batch's ops and kernels are registered (e.g. an ONNX
/// custom-domain mapping, FRAME_REGISTER_ONNX_OP): `check` validates it without side effects
/// before anything of the batch is registered, `apply` makes it after. A failing check refuses
/// the whole batch (nothing registered).
struct DeferredRegistration {
  std::string what;  ///< e.g. "onnx mapping com.example::Swish", for messages
  std::function<Status(const BatchView&)> check;
  std::function<Status()> apply;
};

/// What one plugin registers, in registration order.
struct RegistrationBatch {
  std::vector<OpSchema> ops;
  std::vector<KernelDef> kernels;
  std::vector<LoweringPattern> patterns;
  /// Checked before and applied after the ops and kernels are registered; see
  /// DeferredRegistration. An `apply` error (only possible if another thread registered the same
  /// thing between check and apply) is reported, the registrations stay.
  std::vector<DeferredRegistration> after;
  /// Plugin batches: every op of the batch needs a "cpu" kernel in the batch (ARCH-041, the
  /// fallback backend must run every op). register_op_with_kernels leaves it off (its caller,
  /// the Python custom-op path, may register an op whose kernels come later).
  bool require_cpu_kernels = false;
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

/// Runs the `check` of every deferred registration in order (ops: the batch's op names); the
/// first error, prefixed with the action's `what`, or OK. Registers nothing.
Status check_deferred(const std::vector<DeferredRegistration>& actions,
                      const std::set<std::string>& ops);

/// Registers every op, kernel and pattern of `batch`, all or nothing, under the registries'
/// locks, then applies its `after` actions (whose checks run first, before anything is
/// registered). Errors (nothing registered): kInvalidArgument for the batch's fault, an illegal
/// or reserved op name, a missing shape function (ARCH-040, ARCH-041), an op without a cpu
/// kernel in a batch with `require_cpu_kernels` (ARCH-041), a kernel or pattern with an empty
/// backend or null function, a kernel or pattern for an op neither registered nor in the batch,
/// or a failing `after` check; kAlreadyExists for an op, (op, backend) kernel or (backend,
/// name, anchor op) pattern already registered or listed twice. Each message names the
/// registration site (file:line). An `after` apply error is returned after the registrations
/// were made.
Status commit_registrations(RegistrationBatch batch);

/// Runs `check` then `apply` now, or, while this thread collects a batch, defers both (see
/// DeferredRegistration). Static form: an error now is a fatal registration fault (ARCH-040
/// exit), naming `what`.
void run_after_registration(std::string what, std::function<Status(const BatchView&)> check,
                            std::function<Status()> apply);

}  // namespace frame::ops
