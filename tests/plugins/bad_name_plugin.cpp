// A faulty plugin: an op name that breaks ARCH-040 (upper case).
#include "frame/ops/op_schema.h"

namespace {

constexpr frame::DTypeSet kF32{frame::DTypeCode::kFloat32};

frame::Result<std::vector<frame::ir::TensorType>> same_type(const frame::ops::NodeContext& ctx) {
  return std::vector<frame::ir::TensorType>{ctx.input_types[0]};
}

FRAME_REGISTER_OP(PluginBadName)
    .input("X", "input", kF32, "T")
    .output("Y", "output", kF32, "T")
    .shape_infer(same_type);

}  // namespace
