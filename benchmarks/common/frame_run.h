#pragma once
/// \file
/// How the benchmarks call `Executable::run`: into caller-owned output tensors reused across
/// runs (like ONNX Runtime's IoBinding) when the runtime offers
/// `Status run(const TensorMap&, TensorMap&) const`, else the allocating
/// `Result<TensorMap> run(const TensorMap&) const`. Detected at compile time, so the
/// benchmarks build against either runtime and measure the cheaper path when it exists.

#include <concepts>
#include <string>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/runtime/compile.h"

namespace bench {

/// True when `E` can run into caller-provided outputs.
template <typename E>
concept RunsIntoOutputs = requires(const E& e, const frame::runtime::TensorMap& in,
                                   frame::runtime::TensorMap& out) {
  { e.run(in, out) } -> std::same_as<frame::Status>;
};

/// "into caller outputs" or "allocating outputs": which run form `E` is measured with.
template <typename E = frame::runtime::Executable>
constexpr const char* run_form() {
  return RunsIntoOutputs<E> ? "into caller outputs" : "allocating outputs";
}

/// Allocates one output tensor per graph output of `exe` (compiled dtype and shape); empty
/// when the runtime has no run-into form (then run_reusing fills `outputs` itself).
template <typename E>
frame::Result<frame::runtime::TensorMap> make_outputs(const E& exe) {
  frame::runtime::TensorMap out;
  if constexpr (RunsIntoOutputs<E>) {
    for (const auto& [name, type] : exe.output_signature()) {
      FRAME_ASSIGN_OR_RETURN(out[name], frame::Tensor::empty(type.dtype, type.shape));
    }
  }
  return out;
}

/// One run of `exe` on `inputs`, leaving the results in `outputs` (from make_outputs).
template <typename E>
frame::Status run_reusing(const E& exe, const frame::runtime::TensorMap& inputs,
                          frame::runtime::TensorMap& outputs) {
  if constexpr (RunsIntoOutputs<E>) {
    return exe.run(inputs, outputs);
  } else {
    FRAME_ASSIGN_OR_RETURN(outputs, exe.run(inputs));
    return frame::Status::ok();
  }
}

}  // namespace bench
