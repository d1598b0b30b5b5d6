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
/// name, missing shape function, an op without a cpu kernel in the plugin (ARCH-040/041
/// checks), a duplicate kernel or a kernel of an unknown op, a lowering pattern listed twice or
/// anchored at an unknown op, or an ONNX mapping (FRAME_REGISTER_ONNX_OP) that
/// onnx::check_custom_op refuses or that the plugin lists twice is an error naming the plugin's
/// path and the registration site, and the registries and the ONNX op table stay as they were
/// (unlike static registration in the program, which is fatal; ARCH-040 applies before `main`,
/// a plugin loads after). A name another plugin registered first names that plugin's path. The
/// library stays loaded for the process's lifetime once it registered something; after an
/// error it is closed again, and if glibc cannot unload it (e.g. STB_GNU_UNIQUE symbols, from
/// an inline function with a static local), its static initializers would not run again, so
/// every later load of that path returns the same error (saying so). Loading a path that is
/// already loaded adds nothing and succeeds. Plugins are trusted code and must not throw: an
/// exception escaping a plugin's static initializer terminates the process (one escaping a
/// shape function or a kernel call becomes an error naming the node; docs/security.md).
/// Thread-safe (loads are serialized; lookups in the registries may run concurrently).
/// Errors: kNotFound (no such file), kInvalidArgument (a directory or other non-regular file;
/// not a loadable library: dlerror's message; or a registration fault), kAlreadyExists (a name
/// another library registered), kFailedPrecondition (called from a plugin's static initializer
/// while this thread loads a plugin; nested loads would deadlock), kNotFound/kAlreadyExists
/// from a mapping check as onnx::register_custom_op returns them.
Result<PluginInfo> load_plugin(const std::string& path);

}  // namespace frame::runtime
