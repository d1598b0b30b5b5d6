// A faulty plugin: a fixed input declared after the variadic group (M9), which a builder
// reports while the schema is built. In a plugin it must be an error, not an abort.
#include "plugin_common.h"

namespace {

using namespace plugin_test;

FRAME_REGISTER_OP(plugin_m9_misuse)
    .variadic_input("xs", "inputs", 1)
    .input("late", "a fixed input after the group")
    .output("Y", "output")
    .shape_infer(same_type);

}  // namespace
