// `frame backends [--json]`: every backend frame knows, whether this build has it, whether it
// can run on this machine (with the reason when not), its kind and its kernel count.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "commands.h"
#include "frame/ops/kernel_registry.h"
#include "frame/runtime/backend.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct BackendsOptions {
  bool json = false;
  std::vector<std::string> plugins;
} g_backends;

// Backends the project documents (docs/backends/); those a build lacks are listed as such.
constexpr const char* kKnownBackends[] = {"cpu", "onednn", "cuda", "intel_gpu", "intel_npu"};

struct BackendRow {
  std::string name;
  std::string kind;    // "per-kernel", "device-groups", "whole-graph" or "-"
  std::string status;  // "available", "unavailable: why" or "not in this build"
  size_t kernels = 0;
};

std::vector<BackendRow> backend_rows() {
  std::vector<std::string> names = runtime::backend_names();
  for (const char* k : kKnownBackends) {
    if (std::find(names.begin(), names.end(), k) == names.end()) names.emplace_back(k);
  }
  std::vector<size_t> counts(names.size(), 0);
  for (const ops::KernelDef* k : ops::KernelRegistry::global().list()) {
    auto it = std::find(names.begin(), names.end(), k->backend);
    if (it != names.end()) ++counts[static_cast<size_t>(it - names.begin())];
  }
  std::vector<BackendRow> rows;
  for (size_t i = 0; i < names.size(); ++i) {
    BackendRow r{names[i], "-", "not in this build", counts[i]};
    if (const runtime::Backend* b = runtime::find_backend(names[i])) {
      // A device backend's kernels run in device groups (values stay in device memory).
      r.kind = b->granularity() == runtime::Backend::Granularity::kPerKernel ? "per-kernel"
               : b->device_memory()                                          ? "device-groups"
                                                                             : "whole-graph";
      std::string why = b->unavailable_reason();
      r.status = why.empty() ? "available" : "unavailable: " + why;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

int run_backends() {
  // First, so the kernel counts include what the plugins add.
  if (Status s = load_plugins(g_backends.plugins); !s.is_ok()) {
    std::fprintf(stderr, "frame backends: %s\n", s.message().c_str());
    return kExitError;
  }
  std::vector<BackendRow> rows = backend_rows();
  if (g_backends.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const BackendRow& r : rows) {
      j.push_back(
          {{"name", r.name}, {"kind", r.kind}, {"status", r.status}, {"kernels", r.kernels}});
    }
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  size_t w = 7;
  for (const BackendRow& r : rows) w = std::max(w, r.name.size());
  std::printf("%-*s  %-11s  %7s  %s\n", static_cast<int>(w), "backend", "kind", "kernels",
              "status");
  for (const BackendRow& r : rows) {
    std::printf("%-*s  %-11s  %7zu  %s\n", static_cast<int>(w), r.name.c_str(), r.kind.c_str(),
                r.kernels, r.status.c_str());
  }
  std::string autos;
  for (std::string_view b : runtime::kAutoBackends) {
    if (runtime::find_backend(b) == nullptr) continue;
    autos += std::string(b) + ", ";
  }
  std::printf(
      "auto (the default of frame run) = %scpu; other backends run only when named "
      "(--backend NAME,cpu)\n",
      autos.c_str());
  return 0;
}

CommandRegistration reg{
    Command{[](CLI::App& app) {
              CLI::App* sub = app.add_subcommand(
                  "backends", "List the backends: kind, kernels, and whether they run here");
              sub->add_flag("--json", g_backends.json, "Print the list as JSON");
              add_opencl_device_option(sub);
              sub->add_option("--plugin", g_backends.plugins,
                              "Shared library to load first, so its kernels are counted "
                              "(repeatable; docs/architecture/op-registration.md#plugins)");
              return sub;
            },
            run_backends}};

}  // namespace

std::string available_backends() {
  std::string out;
  for (const BackendRow& r : backend_rows()) {
    if (r.status != "available") continue;
    if (!out.empty()) out += ", ";
    out += r.name;
  }
  return out;
}

}  // namespace frame::cli
