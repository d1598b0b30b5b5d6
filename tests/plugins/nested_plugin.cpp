// A plugin whose static initializer calls load_plugin (to pull a dependency): the nested call
// must fail instead of deadlocking; the plugin records the status it got.
#include "frame/runtime/plugin.h"
#include "plugin_common.h"

namespace {
frame::Status nested_status() {
  frame::Result<frame::runtime::PluginInfo> r = frame::runtime::load_plugin("/nonexistent.so");
  return r.status();
}
const frame::Status kNested = nested_status();
}  // namespace

/// The status the nested load_plugin call returned.
extern "C" __attribute__((visibility("default"))) const char* plugin_nested_message() {
  static const std::string m = kNested.message();
  return m.c_str();
}
