// cuda kernels of conv, max_pool, average_pool and batch_normalization on cuDNN (dnn.h): the
// plan is made at prepare, a run enqueues the cuDNN call on the group's stream with the run
// slot's workspace.

#include <fmt/format.h>

#include <memory>
#include <string>

#include "backends/cuda/dnn.h"
#include "backends/cuda/launch.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::cuda {
namespace {

// The workspace a conv algorithm may ask for.
constexpr size_t kMaxWorkspace = size_t{64} << 20;

Status dnn_accepts(const ops::NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  if (!cudnn_unavailable_reason().empty()) return unimplemented("{}", cudnn_unavailable_reason());
  return dnn_supports(ctx);
}

Result<std::shared_ptr<void>> dnn_prepare(const ops::NodeContext& ctx) {
  const std::string where = fmt::format("node '{}' ({}): cuda: ", ctx.node_name, ctx.op);
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where));
  const CudaDevice& dev = *selected_device();
  Result<std::shared_ptr<DnnPlan>> plan = DnnPlan::make(dev, ctx, kMaxWorkspace);
  if (!plan.is_ok()) return plan.status().with_prefix(where);
  const ops::OpSchema* schema = ctx.schema;
  if (schema == nullptr) return internal_error("{}no schema", where);
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out, schema->infer(ctx));
  auto l = std::make_shared<CudaLaunch>();
  l->dev = &dev;
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    l->in_bytes.push_back(ctx.has_input(k)
                              ? static_cast<size_t>(numel_of(ctx.input_types[k].shape)) *
                                    dtype_size(ctx.input_types[k].dtype)
                              : 0);
  }
  l->work_items = numel_of(out.at(0).shape);
  l->out_bytes = static_cast<size_t>(l->work_items) * dtype_size(out.at(0).dtype);
  l->workspace_bytes = (*plan)->workspace_bytes();
  l->custom = [p = std::move(plan).value()](CUstream stream, std::span<const CUdeviceptr> in,
                                            CUdeviceptr y, CUdeviceptr workspace) {
    return p->run(stream, in, y, workspace);
  };
  return std::shared_ptr<void>(std::move(l));
}

constexpr DTypeSet kConvTypes{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16,
                              DTypeCode::kBFloat16};
constexpr DTypeSet kBatchNormTypes{DTypeCode::kFloat32, DTypeCode::kFloat64};

}  // namespace

FRAME_REGISTER_KERNEL(conv, "cuda", run_standalone)
    .prepare(dnn_prepare)
    .accepts(dnn_accepts)
    .dtypes(kConvTypes);
FRAME_REGISTER_KERNEL(conv_transpose, "cuda", run_standalone)
    .prepare(dnn_prepare)
    .accepts(dnn_accepts)
    .dtypes(kConvTypes);
FRAME_REGISTER_KERNEL(max_pool, "cuda", run_standalone)
    .prepare(dnn_prepare)
    .accepts(dnn_accepts)
    .dtypes(kConvTypes);
FRAME_REGISTER_KERNEL(average_pool, "cuda", run_standalone)
    .prepare(dnn_prepare)
    .accepts(dnn_accepts)
    .dtypes(kConvTypes);
FRAME_REGISTER_KERNEL(batch_normalization, "cuda", run_standalone)
    .prepare(dnn_prepare)
    .accepts(dnn_accepts)
    .dtypes(kBatchNormTypes);

}  // namespace frame::backends::cuda
