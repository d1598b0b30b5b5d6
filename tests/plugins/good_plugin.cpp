// A plugin (runtime::load_plugin): op plugin_swish = x * sigmoid(x) with its cpu kernel, mapped
// from ONNX nodes com.frame.test::Swish.
#include <cmath>

#include "plugin_common.h"

namespace {

using namespace plugin_test;

FRAME_REGISTER_OP(plugin_swish)
    .doc("Y = X * sigmoid(X), elementwise (test plugin).")
    .with(f32_same_type);

frame::Status plugin_swish_cpu(frame::ops::KernelContext& ctx) {
  const frame::Tensor& x = ctx.input(0);
  frame::Tensor& y = ctx.output(0);
  const float* in = x.data<float>();
  float* out = y.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] / (1.0F + std::exp(-in[i]));
  return frame::Status();
}
FRAME_REGISTER_KERNEL(plugin_swish, "cpu", plugin_swish_cpu).dtypes(kF32);

}  // namespace

FRAME_REGISTER_ONNX_OP("com.frame.test", "Swish", plugin_swish);
