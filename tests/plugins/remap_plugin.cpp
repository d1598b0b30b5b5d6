// A faulty plugin: maps com.frame.test::Swish, which good_plugin maps, and maps
// com.frame.test::Twice twice. Refused with nothing registered.
#include "plugin_common.h"

namespace {
using namespace plugin_test;
FRAME_REGISTER_OP(plugin_remap_op).with(f32_same_type);
FRAME_REGISTER_KERNEL(plugin_remap_op, "cpu", copy_cpu).dtypes(kF32);
}  // namespace

#ifdef PLUGIN_TWICE
FRAME_REGISTER_ONNX_OP("com.frame.test", "Twice", plugin_remap_op);
FRAME_REGISTER_ONNX_OP("com.frame.test", "Twice", plugin_remap_op);
#else
FRAME_REGISTER_ONNX_OP("com.frame.test", "Swish", plugin_remap_op);
#endif
