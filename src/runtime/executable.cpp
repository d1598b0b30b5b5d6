// Executable: input validation, run slots from a small thread-safe pool (one arena per
// concurrent run, reused afterwards), and output allocation.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "runtime/executable_impl.h"

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

Result<TensorMap> Executable::run(const TensorMap& inputs) const {
  if (!impl_) return make_error(StatusCode::kFailedPrecondition, "Executable is empty");
  const detail::CompiledCore& core = *impl_->core;
  std::vector<Tensor> in;
  in.reserve(core.inputs.size());
  for (const auto& [name, type] : core.inputs) {
    auto it = inputs.find(name);
    if (it == inputs.end()) {
      return invalid_argument("missing input '{}' (expected {})", name, type.to_string());
    }
    const Tensor& t = it->second;
    if (!t.defined() || t.dtype() != type.dtype || t.shape() != type.shape) {
      return invalid_argument("input '{}': expected {}, got {}", name, type.to_string(),
                              t.defined() ? type_of(t) : std::string("an undefined tensor"));
    }
    in.push_back(t);
  }
  for (const auto& [name, t] : inputs) {
    const bool known = std::any_of(core.inputs.begin(), core.inputs.end(),
                                   [&](const auto& s) { return s.first == name; });
    if (!known) {
      std::vector<std::string> names;
      for (const auto& s : core.inputs) names.push_back(s.first);
      return invalid_argument("unknown input '{}' (graph inputs: {})", name,
                              fmt::join(names, ", "));
    }
  }
  std::vector<Tensor> out;
  out.reserve(core.outputs.size());
  for (const auto& [name, type] : core.outputs) {
    FRAME_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(type.dtype, type.shape));
    out.push_back(std::move(t));
  }
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<detail::RunState> state, core.acquire());
  Status s = detail::run_plan(core.plan, *state, in, out);
  core.release(std::move(state));
  FRAME_RETURN_IF_ERROR(s);
  TensorMap result;
  for (size_t j = 0; j < out.size(); ++j) result.emplace(core.outputs[j].first, std::move(out[j]));
  return result;
}

}  // namespace frame::runtime
