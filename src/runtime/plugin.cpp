// runtime::load_plugin (include/frame/runtime/plugin.h): dlopen with the registries in
// collecting mode, then one all-or-nothing commit (ops/registration_batch.h).
#include "frame/runtime/plugin.h"

#include <dlfcn.h>

#include <filesystem>
#include <map>
#include <mutex>
#include <set>

#include "frame/ops/registration_batch.h"

namespace frame::runtime {

namespace {

struct PluginState {
  std::mutex mu;
  std::set<std::string> loaded;  // canonical paths of registered plugins
  // Refused plugins glibc could not unload (e.g. STB_GNU_UNIQUE symbols make a library
  // NODELETE): their static initializers will not run again, so a later load could only
  // "succeed" with nothing. Canonical path -> the refusal, returned again.
  std::map<std::string, Status> stuck;
  // Op names and kernel keys of registered plugins -> the plugin's path, to name the library
  // that came first when another one registers the same name.
  std::map<std::string, std::string> owner;
};

PluginState& state() {
  static PluginState* s = new PluginState();  // never destroyed: plugins stay loaded
  return *s;
}

Status with_path(const std::string& path, const Status& s) {
  return Status(s.code(), fmt::format("plugin '{}': {}", path, s.message()));
}

}  // namespace

Result<PluginInfo> load_plugin(const std::string& path) {
  // A plugin's static initializer calling load_plugin would wait on the lock its own load holds.
  if (ops::collecting_batch() != nullptr) {
    return make_error(
        StatusCode::kFailedPrecondition,
        "plugin '{}': load_plugin called while a plugin is being loaded on this thread (from a "
        "plugin's static initializer); load dependencies before the plugin instead",
        path);
  }
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(st)) return not_found("plugin '{}': no such file", path);
  if (std::filesystem::is_directory(st)) {
    return invalid_argument("plugin '{}': is a directory, not a shared library", path);
  }
  if (!std::filesystem::is_regular_file(st)) {
    return invalid_argument("plugin '{}': not a regular file", path);
  }
  const std::string canonical = std::filesystem::canonical(path, ec).string();
  PluginState& ps = state();
  std::lock_guard<std::mutex> lock(ps.mu);
  PluginInfo info;
  info.path = path;
  if (ps.loaded.count(canonical) != 0) return info;
  if (auto it = ps.stuck.find(canonical); it != ps.stuck.end()) return it->second;

  ops::RegistrationBatch batch;
  batch.require_cpu_kernels = true;  // ARCH-041
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
  std::vector<ops::DeferredRegistration> after = std::move(batch.after);
  batch.after.clear();
  const std::set<std::string> names(info.ops.begin(), info.ops.end());
  Status s = ops::check_deferred(after, names);
  if (s.is_ok()) s = ops::commit_registrations(std::move(batch));
  if (!s.is_ok()) {
    if (s.code() == StatusCode::kAlreadyExists) {
      // Name the library that registered the name first (same sources give the same site).
      std::vector<std::string> keys = info.ops;
      keys.insert(keys.end(), info.kernels.begin(), info.kernels.end());
      for (const std::string& k : keys) {
        if (auto it = ps.owner.find(k); it != ps.owner.end()) {
          s = Status(s.code(), fmt::format("{} ('{}' was registered by plugin '{}')", s.message(),
                                           k, it->second));
          break;
        }
      }
    }
    // Nothing was registered; drop every function of the library before closing it.
    after.clear();
    batch = ops::RegistrationBatch();
    dlclose(handle);
    Status error = with_path(path, s);
    // RTLD_NOLOAD finds the library only if dlclose left it resident.
    if (void* still = dlopen(open_path.c_str(), RTLD_NOLOAD | RTLD_NOW)) {
      dlclose(still);
      error = Status(error.code(),
                     fmt::format("{} (the library could not be unloaded, so loading it again in "
                                 "this process fails the same way)",
                                 error.message()));
      ps.stuck.emplace(canonical, error);
    }
    return error;
  }
  ps.loaded.insert(canonical);  // registered: the library stays for the process lifetime
  for (const std::string& k : info.ops) ps.owner.emplace(k, path);
  for (const std::string& k : info.kernels) ps.owner.emplace(k, path);
  for (ops::DeferredRegistration& action : after) {
    if (Status a = action.apply(); !a.is_ok()) {
      return with_path(path, a.with_prefix(action.what + ": "));
    }
  }
  return info;
}

}  // namespace frame::runtime
