// A plugin whose shape function (plugin_throw_shape) and kernel (plugin_throw_kernel) throw:
// compile and run return errors naming the node instead of terminating the process.
#include <stdexcept>

#include "plugin_common.h"

namespace {
using namespace plugin_test;
frame::Result<std::vector<frame::ir::TensorType>> throwing_shape(const frame::ops::NodeContext&) {
  throw std::runtime_error("shape boom");
}
frame::Status throwing_kernel(frame::ops::KernelContext&) {
  throw std::runtime_error("kernel boom");
}
FRAME_REGISTER_OP(plugin_throw_shape).with(f32_x_to_y).shape_infer(throwing_shape);
FRAME_REGISTER_KERNEL(plugin_throw_shape, "cpu", copy_cpu).dtypes(kF32);
FRAME_REGISTER_OP(plugin_throw_kernel).with(f32_same_type);
FRAME_REGISTER_KERNEL(plugin_throw_kernel, "cpu", throwing_kernel).dtypes(kF32);
}  // namespace
