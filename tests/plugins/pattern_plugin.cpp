// Faulty plugins with lowering patterns: the same (backend, name, anchor op) twice
// (PLUGIN_DUP_PATTERN) or a pattern anchored at an op nobody registers.
#include "frame/ops/lowering_pattern.h"
#include "plugin_common.h"

namespace {
frame::Result<bool> no_match(frame::ir::Graph&, frame::ir::NodeId) { return false; }
#ifdef PLUGIN_DUP_PATTERN
FRAME_REGISTER_LOWERING_PATTERN("cpu", plugin_pattern, relu, no_match);
FRAME_REGISTER_LOWERING_PATTERN("cpu", plugin_pattern, relu, no_match);
#else
FRAME_REGISTER_LOWERING_PATTERN("cpu", plugin_pattern_anchor, plugin_no_such_op, no_match);
#endif
}  // namespace
