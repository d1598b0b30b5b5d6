// A faulty plugin: a new op, then an op named like a builtin (relu). load_plugin must refuse
// the whole plugin, leaving plugin_dup_first unregistered.
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_schema.h"

namespace {

constexpr frame::DTypeSet kF32{frame::DTypeCode::kFloat32};

frame::Result<std::vector<frame::ir::TensorType>> same_type(const frame::ops::NodeContext& ctx) {
  return std::vector<frame::ir::TensorType>{ctx.input_types[0]};
}
frame::Status noop(frame::ops::KernelContext&) { return frame::Status(); }

FRAME_REGISTER_OP(plugin_dup_first)
    .input("X", "input", kF32, "T")
    .output("Y", "output", kF32, "T")
    .shape_infer(same_type);
FRAME_REGISTER_KERNEL(plugin_dup_first, "cpu", noop).dtypes(kF32);

FRAME_REGISTER_OP(relu)
    .input("X", "input", kF32, "T")
    .output("Y", "output", kF32, "T")
    .shape_infer(same_type);

}  // namespace
