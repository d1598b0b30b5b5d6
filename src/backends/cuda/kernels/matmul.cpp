// cuda kernels of matmul and gemm on cuBLASLt (blas.h): the plan is made at prepare, a run
// enqueues one cublasLtMatmul on the group's stream with the run slot's workspace.

#include <fmt/format.h>

#include <memory>
#include <string>

#include "backends/cuda/blas.h"
#include "backends/cuda/launch.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cuda {
namespace {

// The workspace a plan may ask for (cuBLASLt's recommendation for Hopper is 32 MiB).
constexpr size_t kMaxWorkspace = size_t{32} << 20;

Status gemm_accepts(const ops::NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  if (!cublaslt_unavailable_reason().empty())
    return unimplemented("{}", cublaslt_unavailable_reason());
  return gemm_shape(ctx).status();
}

Result<std::shared_ptr<void>> gemm_prepare(const ops::NodeContext& ctx) {
  const std::string where = fmt::format("node '{}' ({}): cuda: ", ctx.node_name, ctx.op);
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where));
  Result<GemmShape> shape = gemm_shape(ctx);
  if (!shape.is_ok()) return shape.status().with_prefix(where);
  const GemmShape& s = *shape;
  const CudaDevice& dev = *selected_device();
  Result<std::shared_ptr<GemmPlan>> plan = GemmPlan::make(dev, s, kMaxWorkspace);
  if (!plan.is_ok()) return plan.status().with_prefix(where);
  auto l = std::make_shared<CudaLaunch>();
  l->dev = &dev;
  const size_t e = dtype_size(s.dtype);
  for (size_t k = 0; k < 3; ++k) {
    const bool read = k < 2 || (k < ctx.num_inputs() && ctx.has_input(k) && s.c_kind != 0);
    l->in_bytes.push_back(read ? static_cast<size_t>(numel_of(ctx.input_types[k].shape)) * e : 0);
  }
  l->work_items = s.batch * s.m * s.n;
  l->out_bytes = static_cast<size_t>(l->work_items) * e;
  l->workspace_bytes = (*plan)->workspace_bytes();
  l->custom = [p = std::move(plan).value(), ws = l->workspace_bytes](
                  CUstream stream, std::span<const CUdeviceptr> in, CUdeviceptr out,
                  CUdeviceptr workspace) {
    return p->run(stream, in[0], in[1], in.size() > 2 ? in[2] : 0, out, workspace, ws);
  };
  return std::shared_ptr<void>(std::move(l));
}

constexpr DTypeSet kGemmTypes{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16,
                              DTypeCode::kBFloat16};

}  // namespace

FRAME_REGISTER_KERNEL(matmul, "cuda", run_standalone)
    .prepare(gemm_prepare)
    .accepts(gemm_accepts)
    .dtypes(kGemmTypes);
FRAME_REGISTER_KERNEL(gemm, "cuda", run_standalone)
    .prepare(gemm_prepare)
    .accepts(gemm_accepts)
    .dtypes(kGemmTypes);

}  // namespace frame::backends::cuda
