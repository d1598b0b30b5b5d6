// Executable: input validation, run slots from a small thread-safe pool (one arena per
// concurrent run, reused afterwards), and output allocation.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <span>

#include "frame/runtime/threads.h"
#include "runtime/executable_impl.h"
#include "runtime/thread_count_scope.h"

namespace frame::runtime {

namespace detail {

// Enough idle slots for typical thread counts; more concurrent runs allocate and drop theirs.
constexpr size_t kMaxIdleSlots = 16;

Result<std::unique_ptr<RunState>> CompiledCore::acquire() const {
  {
    std::lock_guard lock(mu_);
    if (!free_.empty()) {
      std::unique_ptr<RunState> s = std::move(free_.back());
      free_.pop_back();
      return s;
    }
  }
  return make_run_state(plan);
}

void CompiledCore::release(std::unique_ptr<RunState> state) const {
  std::lock_guard lock(mu_);
  if (free_.size() < kMaxIdleSlots) free_.push_back(std::move(state));
}

}  // namespace detail

namespace {

const CompileReport kEmptyReport;
const std::vector<std::pair<std::string, ir::TensorType>> kEmptySignature;
const ir::Graph kEmptyGraph;

std::string type_of(const Tensor& t) { return ir::TensorType{t.dtype(), t.shape()}.to_string(); }

}  // namespace

Status run_terminated(std::string_view node) {
  return make_error(StatusCode::kFailedPrecondition,
                    "the run was terminated (RunOptions::terminate) before node '{}'", node);
}

Executable::Executable() = default;
Executable::Executable(std::shared_ptr<const ExecutableImpl> impl) : impl_(std::move(impl)) {}
Executable::~Executable() = default;
Executable::Executable(const Executable&) = default;
Executable& Executable::operator=(const Executable&) = default;

const std::vector<std::pair<std::string, ir::TensorType>>& Executable::input_signature() const {
  return impl_ ? impl_->core->inputs : kEmptySignature;
}
const std::vector<std::pair<std::string, ir::TensorType>>& Executable::output_signature() const {
  return impl_ ? impl_->core->outputs : kEmptySignature;
}
const CompileReport& Executable::report() const { return impl_ ? impl_->report : kEmptyReport; }
const ir::Graph& Executable::compiled_graph() const {
  return impl_ ? *impl_->core->graph : kEmptyGraph;
}

namespace {

// Checks the caller's inputs and stages them in `staged` (copy-assignment into a reused
// vector, so the steady state does not allocate).
Status stage_inputs(const detail::CompiledCore& core, const TensorMap& inputs,
                    std::vector<Tensor>& staged) {
  staged.resize(core.inputs.size());
  for (size_t i = 0; i < core.inputs.size(); ++i) {
    const auto& [name, type] = core.inputs[i];
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      return invalid_argument("missing input '{}' (expected {})", name, type.to_string());
    }
    const Tensor& t = it->second;
    if (!t.defined() || t.dtype() != type.dtype || t.shape() != type.shape) {
      return invalid_argument("input '{}': expected {}, got {}", name, type.to_string(),
                              t.defined() ? type_of(t) : std::string("an undefined tensor"));
    }
    staged[i] = t;
  }
  if (inputs.size() != core.inputs.size()) {
    for (const auto& [name, t] : inputs) {
      const bool known = std::any_of(core.inputs.begin(), core.inputs.end(),
                                     [&name = name](const auto& s) { return s.first == name; });
      if (!known) {
        std::vector<std::string> names;
        for (const auto& s : core.inputs) names.push_back(s.first);
        return invalid_argument("unknown input '{}' (graph inputs: {})", name,
                                fmt::join(names, ", "));
      }
    }
  }
  return Status();
}

// Checks caller-provided output tensors against the output signature.
Status check_outputs(const detail::CompiledCore& core, const TensorMap& outputs) {
  for (const auto& [name, type] : core.outputs) {
    auto it = outputs.find(name);
    if (it == outputs.end()) {
      return invalid_argument("missing output '{}' (expected a tensor {} to write into)", name,
                              type.to_string());
    }
    const Tensor& t = it->second;
    if (!t.defined() || t.dtype() != type.dtype || t.shape() != type.shape) {
      return invalid_argument(
          "output '{}': the run produces {}, the tensor given to write it into "
          "is {}",
          name, type.to_string(), t.defined() ? type_of(t) : std::string("an undefined tensor"));
    }
  }
  for (const auto& [name, t] : outputs) {
    const bool known = std::any_of(core.outputs.begin(), core.outputs.end(),
                                   [&name = name](const auto& s) { return s.first == name; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& s : core.outputs) names.push_back(s.first);
      return invalid_argument("unknown output '{}' (graph outputs: {})", name,
                              fmt::join(names, ", "));
    }
  }
  return Status();
}

bool overlaps(const Tensor& a, const Tensor& b) {
  const auto* pa = static_cast<const std::byte*>(a.raw_data());
  const auto* pb = static_cast<const std::byte*>(b.raw_data());
  return a.nbytes() > 0 && b.nbytes() > 0 && pa < pb + b.nbytes() && pb < pa + a.nbytes();
}

// Caller buffers must be distinct: kernels write outputs while reading inputs, and the memory
// plan assumes every output has its own storage.
Status check_aliasing(const detail::CompiledCore& core, std::span<const Tensor> in,
                      std::span<const Tensor> out) {
  for (size_t j = 0; j < out.size(); ++j) {
    for (size_t i = 0; i < in.size(); ++i) {
      if (overlaps(out[j], in[i])) {
        return invalid_argument("output '{}' shares memory with input '{}'", core.outputs[j].first,
                                core.inputs[i].first);
      }
    }
    for (size_t k = 0; k < j; ++k) {
      if (core.outputs[k].first != core.outputs[j].first && overlaps(out[j], out[k])) {
        return invalid_argument("output '{}' shares memory with output '{}'", core.outputs[j].first,
                                core.outputs[k].first);
      }
    }
  }
  return Status();
}

}  // namespace

Result<TensorMap> Executable::run(const TensorMap& inputs) const {
  return run(inputs, RunOptions{});
}

Result<TensorMap> Executable::run(const TensorMap& inputs, const RunOptions& options) const {
  if (!impl_) return make_error(StatusCode::kFailedPrecondition, "Executable is empty");
  const detail::CompiledCore& core = *impl_->core;
  TensorMap result;
  for (const auto& [name, type] : core.outputs) {
    if (result.count(name) != 0) continue;  // a name listed twice is one tensor
    FRAME_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(type.dtype, type.shape));
    result.emplace(name, std::move(t));
  }
  FRAME_RETURN_IF_ERROR(run(inputs, result, options));
  return result;
}

Status Executable::run(const TensorMap& inputs, TensorMap& outputs,
                       const RunOptions& options) const {
  if (!impl_) return make_error(StatusCode::kFailedPrecondition, "Executable is empty");
  const detail::CompiledCore& core = *impl_->core;
  FRAME_RETURN_IF_ERROR(check_outputs(core, outputs));
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<detail::RunState> state, core.acquire());
  Status s = stage_inputs(core, inputs, state->run_inputs);
  if (s.is_ok()) {
    state->run_outputs.resize(core.outputs.size());
    for (size_t j = 0; j < core.outputs.size(); ++j) {
      state->run_outputs[j] = outputs.find(core.outputs[j].first)->second;
    }
    s = check_aliasing(core, state->run_inputs, state->run_outputs);
  }
  if (s.is_ok() && core.plan.num_threads > 1 && fork_generation() > 0) {
    s = make_error(
        StatusCode::kFailedPrecondition,
        "this executable was compiled for {} threads before the process was forked, and "
        "OpenMP's worker threads do not survive fork(): compile again in this process (it "
        "then uses 1 thread), or start workers with multiprocessing's 'spawn' method",
        core.plan.num_threads);
  }
  if (s.is_ok()) {
    detail::ThreadCountScope threads(core.plan.num_threads);
    if (options.profile == nullptr) {
      s = detail::run_plan(core.plan, *state, state->run_inputs, state->run_outputs, false,
                           options.terminate, options.observer);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      s = detail::run_plan(core.plan, *state, state->run_inputs, state->run_outputs, true,
                           options.terminate, options.observer);
      const auto dt = std::chrono::steady_clock::now() - t0;
      if (s.is_ok()) {
        options.profile->merge_run(
            core.plan.profile_layout, state->start_ns, state->dur_ns,
            std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count());
      }
    }
  }
  core.release(std::move(state));
  return s;
}

}  // namespace frame::runtime
