// A faulty plugin glibc cannot unload: an inline function with a static local is an
// STB_GNU_UNIQUE symbol, which makes the library NODELETE. It registers a builtin name (relu).
#include "plugin_common.h"

inline int& plugin_unique_counter() {
  static int c = 0;
  return c;
}

namespace {
using namespace plugin_test;
struct Touch {
  Touch() { ++plugin_unique_counter(); }
} touch;
FRAME_REGISTER_OP(plugin_unique_op).with(f32_same_type);
FRAME_REGISTER_KERNEL(plugin_unique_op, "cpu", copy_cpu).dtypes(kF32);
FRAME_REGISTER_OP(relu).with(f32_same_type);
FRAME_REGISTER_KERNEL(relu, "cpu", copy_cpu).dtypes(kF32);
}  // namespace
