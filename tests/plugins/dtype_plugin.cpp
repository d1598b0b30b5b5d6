// A plugin whose shape function gives its f32 output (type T, like the input) dtype i64: it
// loads, and compiling a node of it is an error naming the node, op, output and dtypes.
#include "plugin_common.h"

namespace {
using namespace plugin_test;
frame::Result<std::vector<frame::ir::TensorType>> i64_type(const frame::ops::NodeContext& ctx) {
  frame::ir::TensorType t = ctx.input_types[0];
  t.dtype = frame::DTypeCode::kInt64;
  return std::vector<frame::ir::TensorType>{t};
}
FRAME_REGISTER_OP(plugin_bad_dtype).with(f32_x_to_y).shape_infer(i64_type);
FRAME_REGISTER_KERNEL(plugin_bad_dtype, "cpu", copy_cpu).dtypes(kF32);

frame::Result<std::vector<frame::ir::TensorType>> f64_type(const frame::ops::NodeContext& ctx) {
  frame::ir::TensorType t = ctx.input_types[0];
  t.dtype = frame::DTypeCode::kFloat64;
  return std::vector<frame::ir::TensorType>{t};
}
// f64 is allowed for Y, but Y shares type T with X (f32).
FRAME_REGISTER_OP(plugin_bad_type_var)
    .input("X", "input", frame::DTypeSet{frame::DTypeCode::kFloat32, frame::DTypeCode::kFloat64},
           "T")
    .output("Y", "output", frame::DTypeSet{frame::DTypeCode::kFloat32, frame::DTypeCode::kFloat64},
            "T")
    .shape_infer(f64_type);
FRAME_REGISTER_KERNEL(plugin_bad_type_var, "cpu", copy_cpu).dtypes(kF32);
}  // namespace
