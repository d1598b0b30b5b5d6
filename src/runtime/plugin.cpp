// runtime::load_plugin (include/frame/runtime/plugin.h): dlopen with the registries in
// collecting mode, then one all-or-nothing commit (ops/registration_batch.h).
#include "frame/runtime/plugin.h"

#include <dlfcn.h>

#include <filesystem>
#include <functional>
#include <mutex>
#include <set>

#include "frame/ops/registration_batch.h"

namespace frame::runtime {

Result<PluginInfo> load_plugin(const std::string& path) {
  static std::mutex mu;
  static std::set<std::string>* loaded = new std::set<std::string>();  // canonical paths
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return not_found("plugin '{}': no such file", path);
  }
  const std::string canonical = std::filesystem::canonical(path, ec).string();
  std::lock_guard<std::mutex> lock(mu);
  PluginInfo info;
  info.path = path;
  if (loaded->count(canonical) != 0) return info;

  ops::RegistrationBatch batch;
  ops::collect_registrations(&batch);
  // A path without a slash would make dlopen search the library path instead.
  const std::string open_path = path.find('/') == std::string::npos ? "./" + path : path;
  void* handle = dlopen(open_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  ops::collect_registrations(nullptr);
  if (handle == nullptr) {
    const char* why = dlerror();
    return invalid_argument("plugin '{}': cannot load: {}", path, why != nullptr ? why : "?");
  }
  for (const ops::OpSchema& op : batch.ops) info.ops.push_back(op.name());
  for (const ops::KernelDef& k : batch.kernels) info.kernels.push_back(k.op + "@" + k.backend);
  info.patterns = batch.patterns.size();
  std::vector<std::function<Status()>> after = std::move(batch.after);
  batch.after.clear();
  if (Status s = ops::commit_registrations(std::move(batch)); !s.is_ok()) {
    // Nothing was registered; drop every function of the library before closing it.
    after.clear();
    dlclose(handle);
    return Status(s.code(), fmt::format("plugin '{}': {}", path, s.message()));
  }
  loaded->insert(canonical);  // registered: the library stays for the process lifetime
  for (auto& action : after) {
    if (Status s = action(); !s.is_ok()) {
      return Status(s.code(), fmt::format("plugin '{}': {}", path, s.message()));
    }
  }
  return info;
}

}  // namespace frame::runtime
