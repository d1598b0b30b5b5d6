// A faulty plugin: an op name that breaks ARCH-040 (upper case).
#include "plugin_common.h"

namespace {

using namespace plugin_test;

FRAME_REGISTER_OP(PluginBadName).with(f32_same_type);

}  // namespace
