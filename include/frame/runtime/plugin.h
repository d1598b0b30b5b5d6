#pragma once
/// \file
/// Plugins: shared libraries that add ops, kernels, lowering patterns and ONNX custom-domain
/// mappings at run time through the usual static registration macros (FRAME_REGISTER_OP,
/// FRAME_REGISTER_KERNEL, FRAME_REGISTER_LOWERING_PATTERN, FRAME_REGISTER_ONNX_OP).
/// docs/architecture/op-registration.md "Plugins"; examples/04_plugin.

#include <string>
#include <vector>

#include "frame/core/status.h"

namespace frame::runtime {

/// What one load_plugin call added.
struct PluginInfo {
  std::string path;                  ///< the path as given
  std::vector<std::string> ops;      ///< op names, in registration order
  std::vector<std::string> kernels;  ///< "op@backend" keys
  size_t patterns = 0;               ///< lowering patterns
};

/// Opens the shared library at `path` (dlopen, symbols resolved now, kept local) and registers
/// what its static initializers register, all or nothing: a plugin's illegal or duplicate op
/// name, missing shape function or cpu-less op (ARCH-040/041 checks), duplicate kernel or a
/// kernel of an unknown op is an error naming the plugin's path and the registration site,
/// and the registries stay as they were (unlike static registration in the program, which is
/// fatal; ARCH-040 applies before `main`, a plugin loads after). The library stays loaded for
/// the process's lifetime once it registered something; after an error it is closed again.
/// Loading a path that is already loaded adds nothing and succeeds. Thread-safe (loads are
/// serialized; lookups in the registries may run concurrently).
/// Errors: kNotFound (no such file), kInvalidArgument (not a loadable library: dlerror's
/// message; or a registration fault), kAlreadyExists (a name another library registered);
/// an ONNX mapping error after the ops registered is returned as is.
Result<PluginInfo> load_plugin(const std::string& path);

}  // namespace frame::runtime
