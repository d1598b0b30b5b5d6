// cuda kernels of the elementwise lists (FRAME_EW_UNARY_OPS, _BINARY_OPS, _VARIADIC_OPS, pow)
// and of `fused_elementwise_internal`: CUDA C++ generated per node from the shared formula
// table (codegen.h), compiled by NVRTC for the device at prepare (cached by source).

#include <fmt/format.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/codegen.h"
#include "backends/cuda/launch.h"
#include "backends/gpu/ew_formulas.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cuda {
namespace {

// The variadic folds round after every step on cpu: generated where that is a no-op.
constexpr DTypeSet kVariadicTypes{DTypeCode::kFloat32, DTypeCode::kFloat64};

[[maybe_unused]] const bool kRegistered = [] {
  for (const gpu::EwOp& op : gpu::ew_ops()) {
    const DTypeSet types = op.dtypes & kCudaFloatTypes;
    const bool variadic = op.arity == gpu::kVariadic;
    const DTypeSet kernel_types = variadic ? types & kVariadicTypes : types;
    if (kernel_types.mask == 0 || op.formula == nullptr) continue;
    if (op.op == "identity") continue;  // an element copy for every dtype (data_rows.cpp)
    register_generated_kernel(op.op, kernel_types, __FILE__, __LINE__);
  }
  return true;
}();

}  // namespace

FRAME_REGISTER_KERNEL(fused_elementwise_internal, "cuda", run_standalone)
    .prepare(generated_prepare)
    .accepts(generated_accepts)
    .dtypes(kCudaFloatTypes);

}  // namespace frame::backends::cuda
