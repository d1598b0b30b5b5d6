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

using ops::NodeContext;

std::string where(const NodeContext& ctx) {
  return fmt::format("node '{}' ({}): cuda: ", ctx.node_name, ctx.op);
}

Result<NodeKernel> plan_node(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  return node_kernel(ctx);
}

Status ew_accepts(const NodeContext& ctx) { return plan_node(ctx).status(); }

Result<std::shared_ptr<void>> ew_prepare(const NodeContext& ctx) {
  Result<NodeKernel> planned = plan_node(ctx);
  if (!planned.is_ok()) return planned.status().with_prefix(where(ctx));
  NodeKernel& p = *planned;
  auto l = std::make_shared<CudaLaunch>();
  l->geometry = p.geometry;
  for (const Shape& s : p.inputs) {
    l->in_bytes.push_back(static_cast<size_t>(numel_of(s)) * dtype_size(p.dtype));
  }
  l->elements = numel_of(p.out);
  l->out_bytes = static_cast<size_t>(l->elements) * (p.bool_out ? 1 : dtype_size(p.dtype));
  l->meta =
      pack_meta(p.out, broadcast_strides(p.out, p.inputs), p.geometry.num_inputs, p.geometry.wide);
  l->t_is_double = DTypeSet{DTypeCode::kFloat64}.contains(p.dtype);
  if (const gpu::EwOp* op = gpu::find_ew_op(ctx.op); op != nullptr && op->formula != nullptr) {
    const std::array<double, 2> params = op->params(ctx, op->formula->string_true);
    l->p0 = params[0];
    l->p1 = params[1];
  }
  FRAME_RETURN_IF_ERROR(load_kernel(*l, p.source, where(ctx)));
  return std::shared_ptr<void>(std::move(l));
}

// The variadic folds round after every step on cpu: generated where that is a no-op.
constexpr DTypeSet kVariadicTypes{DTypeCode::kFloat32, DTypeCode::kFloat64};

[[maybe_unused]] const bool kRegistered = [] {
  for (const gpu::EwOp& op : gpu::ew_ops()) {
    const DTypeSet types = op.dtypes & kCudaFloatTypes;
    const bool variadic = op.arity == gpu::kVariadic;
    const DTypeSet kernel_types = variadic ? types & kVariadicTypes : types;
    if (kernel_types.mask == 0 || op.formula == nullptr) continue;
    ops::KernelDef def;
    def.op = std::string(op.op);
    def.backend = std::string(kBackendName);
    def.fn = run_standalone;
    def.prepare = ew_prepare;
    def.accepts = ew_accepts;
    def.dtypes = kernel_types;
    def.file = __FILE__;
    def.line = __LINE__;
    ops::KernelRegistry::global().register_kernel(std::move(def));
  }
  return true;
}();

}  // namespace

FRAME_REGISTER_KERNEL(fused_elementwise_internal, "cuda", run_standalone)
    .prepare(ew_prepare)
    .accepts(ew_accepts)
    .dtypes(kCudaFloatTypes);

}  // namespace frame::backends::cuda
