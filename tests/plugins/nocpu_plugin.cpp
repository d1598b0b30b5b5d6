// A faulty plugin: an op with no cpu kernel (ARCH-041), mapped from ONNX.
#include "plugin_common.h"

namespace {
using namespace plugin_test;
FRAME_REGISTER_OP(plugin_nocpu).with(f32_same_type);
}  // namespace

FRAME_REGISTER_ONNX_OP("com.frame.test", "NoCpu", plugin_nocpu);
