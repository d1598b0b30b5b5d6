// A faulty plugin: a good op, then an ONNX mapping to an op nobody registers. load_plugin must
// refuse it before registering anything (plugin_badmap_op stays unregistered).
#include "plugin_common.h"

namespace {
using namespace plugin_test;
FRAME_REGISTER_OP(plugin_badmap_op).with(f32_same_type);
FRAME_REGISTER_KERNEL(plugin_badmap_op, "cpu", copy_cpu).dtypes(kF32);
}  // namespace

FRAME_REGISTER_ONNX_OP("com.frame.test", "Missing", plugin_not_registered_anywhere);
