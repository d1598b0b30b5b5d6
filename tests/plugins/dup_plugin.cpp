// A faulty plugin: a new op, then an op named like a builtin (relu). load_plugin must refuse
// the whole plugin, leaving plugin_dup_first unregistered.
#include "plugin_common.h"

namespace {

using namespace plugin_test;

frame::Status noop(frame::ops::KernelContext&) { return frame::Status(); }

FRAME_REGISTER_OP(plugin_dup_first).with(f32_same_type);
FRAME_REGISTER_KERNEL(plugin_dup_first, "cpu", noop).dtypes(kF32);

FRAME_REGISTER_OP(relu).with(f32_same_type);

}  // namespace
