// The model repository of `frame serve` (frame/serve/repository.h; docs/serving.md, "Model
// repository").
#include "frame/serve/repository.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

namespace frame::serve {
namespace {

namespace fs = std::filesystem;

constexpr const char* kModelFile = "model.onnx";
constexpr const char* kConfigFile = "config.json";
constexpr size_t kMaxConfigBytes = size_t{1} << 20;

// A version directory name: a decimal number without leading zeros, at most 18 digits (fits
// int64), so that the numeric order below is the order of the names.
bool is_version_name(const std::string& s) {
  return !s.empty() && s.size() <= 18 && (s.size() == 1 || s[0] != '0') &&
         std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A model name a request may use: no control characters (a NUL would cut the path short), no
// path separator, not hidden.
bool is_model_name(std::string_view name) {
  if (name.empty() || name[0] == '.' || name.size() > 255) return false;
  return std::none_of(name.begin(), name.end(), [](char c) {
    return c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f;
  });
}

// Versions sort numerically ("10" after "9").
bool version_less(const std::string& a, const std::string& b) {
  return a.size() != b.size() ? a.size() < b.size() : a < b;
}

struct VersionState {
  std::string state = "UNAVAILABLE";
  std::string reason;
  std::shared_ptr<Model> model;
};

struct ModelEntry {
  std::map<std::string, VersionState, decltype(&version_less)> versions{&version_less};
};

class RepositoryImpl final : public ModelRepository {
 public:
  RepositoryImpl(std::string dir, RepositoryOptions options)
      : dir_(std::move(dir)), options_(options) {}

  size_t load_all() override {
    size_t loaded = 0;
    for (const std::string& name : model_dirs()) {
      if (load(name).is_ok()) ++loaded;
    }
    return loaded;
  }

  Status load(const std::string& name) override {
    if (!is_model_dir(name)) {
      return not_found("model repository '{}' has no model directory '{}'", dir_, name);
    }
    const fs::path root = fs::path(dir_) / name;
    // The versions on disk: numbered subdirectories with a model file, else model.onnx itself.
    std::vector<std::pair<std::string, fs::path>> found;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root, ec)) {
      const std::string v = e.path().filename().string();
      if (!e.is_directory(ec) || !fs::is_regular_file(e.path() / kModelFile, ec)) continue;
      if (is_version_name(v)) {
        found.emplace_back(v, e.path() / kModelFile);
      } else if (!v.empty() && std::all_of(v.begin(), v.end(), ::isdigit)) {
        std::fprintf(stderr,
                     "frame serve: model '%s': version directory '%s' ignored (versions are "
                     "decimal numbers without leading zeros, at most 18 digits)\n",
                     name.c_str(), v.c_str());
      }
    }
    if (found.empty() && fs::is_regular_file(root / kModelFile, ec)) {
      found.emplace_back("1", root / kModelFile);
    }
    ModelEntry fresh;
    Status first_error;
    auto fail = [&](const std::string& version, const Status& s) {
      fresh.versions[version] = {"UNAVAILABLE", s.message(), nullptr};
      if (first_error.is_ok()) first_error = s;
    };
    if (found.empty()) {
      fail("1", not_found("{}: no {} and no numbered version directory holding one", root.string(),
                          kModelFile));
    }
    Result<ModelConfig> config = read_config(root);
    for (const auto& [version, path] : found) {
      if (!config.is_ok()) {
        fail(version, config.status());
        continue;
      }
      Result<std::shared_ptr<Model>> m =
          open_model(name, version, path.string(), *config, options_.max_model_bytes);
      if (!m.is_ok()) {
        fail(version,
             m.status().with_prefix(fmt::format("model '{}' version {}: ", name, version)));
        continue;
      }
      fresh.versions[version] = {"READY", "", std::move(m).value()};
    }
    // Swap in the new versions, then let the old ones finish their in-flight requests.
    ModelEntry old;
    {
      std::lock_guard lock(mu_);
      ModelEntry& e = models_[name];
      old = std::move(e);
      e = std::move(fresh);
    }
    for (auto& [v, s] : old.versions) {
      if (s.model) s.model->drain();
    }
    return first_error;
  }

  Status unload(const std::string& name) override {
    ModelEntry old;
    {
      std::lock_guard lock(mu_);
      auto it = models_.find(name);
      if (it == models_.end()) {
        if (!is_model_dir(name)) return not_found("unknown model '{}'", name);
        return Status::ok();  // never loaded: nothing to do
      }
      for (auto& [v, s] : it->second.versions) {
        old.versions[v] = s;
        s = {"UNAVAILABLE", "unloaded", nullptr};
      }
    }
    for (auto& [v, s] : old.versions) {
      if (s.model) s.model->drain();
    }
    return Status::ok();
  }

  std::vector<IndexEntry> index() const override {
    std::vector<IndexEntry> out;
    std::lock_guard lock(mu_);
    std::vector<std::string> names = model_dirs();
    for (const auto& [n, e] : models_) {
      if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      auto it = models_.find(n);
      if (it == models_.end()) {
        out.push_back({n, "", "UNAVAILABLE", "not loaded"});
        continue;
      }
      for (const auto& [v, s] : it->second.versions) out.push_back({n, v, s.state, s.reason});
    }
    return out;
  }

  Result<std::shared_ptr<Model>> find(std::string_view name,
                                      std::string_view version) const override {
    if (!is_model_name(name)) return not_found("unknown model '{}'", name);
    std::lock_guard lock(mu_);
    auto it = models_.find(std::string(name));
    if (it == models_.end()) {
      if (is_model_dir(std::string(name))) {
        return Status(StatusCode::kFailedPrecondition,
                      fmt::format("model '{}' is not loaded", name));
      }
      return not_found("unknown model '{}'", name);
    }
    const auto& versions = it->second.versions;
    if (version.empty()) {
      for (auto v = versions.rbegin(); v != versions.rend(); ++v) {
        if (v->second.model) return v->second.model;
      }
      std::string why = versions.empty() ? "no version" : versions.rbegin()->second.reason;
      return Status(StatusCode::kFailedPrecondition,
                    fmt::format("model '{}' is not ready: {}", name, why));
    }
    auto v = versions.find(std::string(version));
    if (v == versions.end()) return not_found("model '{}' has no version '{}'", name, version);
    if (!v->second.model) {
      return Status(
          StatusCode::kFailedPrecondition,
          fmt::format("model '{}' version {} is not ready: {}", name, version, v->second.reason));
    }
    return v->second.model;
  }

  std::vector<std::shared_ptr<Model>> ready_models() const override {
    std::vector<std::shared_ptr<Model>> out;
    std::lock_guard lock(mu_);
    for (const auto& [n, e] : models_) {
      for (const auto& [v, s] : e.versions) {
        if (s.model) out.push_back(s.model);
      }
    }
    return out;
  }

  Result<ModelMetadata> metadata(std::string_view name, std::string_view version) const override {
    FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Model> m, find(name, version));
    ModelMetadata md = m->metadata();
    md.versions.clear();
    std::lock_guard lock(mu_);
    for (const auto& [v, s] : models_.at(std::string(name)).versions) {
      if (s.model) md.versions.push_back(v);
    }
    return md;
  }

 private:
  // Model directory names of the repository, sorted (hidden entries skipped).
  std::vector<std::string> model_dirs() const {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      const std::string n = e.path().filename().string();
      if (is_model_name(n) && e.is_directory(ec)) names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  bool is_model_dir(const std::string& name) const {
    if (!is_model_name(name)) return false;
    std::error_code ec;
    return fs::is_directory(fs::path(dir_) / name, ec);
  }

  Result<ModelConfig> read_config(const fs::path& root) const {
    const fs::path p = root / kConfigFile;
    std::error_code ec;
    if (!fs::exists(p, ec)) return ModelConfig{};
    if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) > kMaxConfigBytes) {
      return invalid_argument("{}: not a regular file of at most {} bytes", p.string(),
                              kMaxConfigBytes);
    }
    std::ifstream f(p, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    if (!f) return Status(StatusCode::kIo, fmt::format("{}: cannot be read", p.string()));
    return parse_model_config(text.str(), p.string());
  }

  const std::string dir_;
  const RepositoryOptions options_;
  mutable std::mutex mu_;
  std::map<std::string, ModelEntry> models_;
};

}  // namespace

Result<std::shared_ptr<ModelRepository>> ModelRepository::open(const std::string& dir,
                                                               RepositoryOptions options) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return not_found("model repository '{}' is not a directory", dir);
  }
  return std::shared_ptr<ModelRepository>(std::make_shared<RepositoryImpl>(dir, options));
}

}  // namespace frame::serve
