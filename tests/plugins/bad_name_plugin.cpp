// A faulty plugin: an op name that breaks ARCH-040 (upper case).
#include "plugin_common.h"

namespace {

using namespace plugin_test;

FRAME_REGISTER_OP(PluginBadName)
    .input("X", "input", kF32, "T")
    .output("Y", "output", kF32, "T")
    .shape_infer(same_type);

}  // namespace
