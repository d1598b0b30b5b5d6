// A faulty plugin: a fixed input declared after the variadic group (M9), which a builder
// reports while the schema is built. In a plugin it must be an error, not an abort.
#include "frame/ops/op_schema.h"

namespace {

frame::Result<std::vector<frame::ir::TensorType>> same_type(const frame::ops::NodeContext& ctx) {
  return std::vector<frame::ir::TensorType>{ctx.input_types[0]};
}

FRAME_REGISTER_OP(plugin_m9_misuse)
    .variadic_input("xs", "inputs", 1)
    .input("late", "a fixed input after the group")
    .output("Y", "output")
    .shape_infer(same_type);

}  // namespace
