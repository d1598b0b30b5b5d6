// `frame ops [--json] [--check]`: lists both registries; --check runs the registry
// self-check (ARCH-041) and exits 1 on any problem.
#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::cli {
namespace {

struct OpsOptions {
  bool json = false;
  bool check = false;
} g_ops;

int run_ops() {
  using ops::KernelRegistry;
  using ops::OpRegistry;
  if (g_ops.check) {
    std::vector<std::string> problems = ops::registry_self_check();
    for (const auto& p : problems) std::fprintf(stderr, "self-check: %s\n", p.c_str());
    std::printf("self-check: %zu ops, %zu kernels, %zu problem(s)\n", OpRegistry::global().size(),
                KernelRegistry::global().list().size(), problems.size());
    return problems.empty() ? 0 : kExitError;
  }
  if (g_ops.json) {
    std::cout << "{\"ops\": " << OpRegistry::global().to_json()
              << ",\n\"kernels\": " << KernelRegistry::global().to_json() << "}\n";
    return 0;
  }
  std::printf("%-28s %-9s %-8s %-40s %s\n", "op", "inputs", "outputs", "traits", "kernels");
  for (const ops::OpSchema* s : OpRegistry::global().list()) {
    std::string traits;
    for (ops::OpTrait t : s->traits()) {
      if (!traits.empty()) traits += ",";
      traits += ops::op_trait_name(t);
    }
    std::string kernels;
    for (const std::string& b : KernelRegistry::global().backends_of(s->name())) {
      if (!kernels.empty()) kernels += ",";
      kernels += b;
    }
    std::string arity = s->has_variadic_inputs() ? std::to_string(s->min_input_count()) + "+"
                                                 : std::to_string(s->min_input_count()) + "-" +
                                                       std::to_string(s->max_input_count());
    std::printf("%-28s %-9s %-8zu %-40s %s\n", s->name().c_str(), arity.c_str(),
                s->outputs().size(), traits.c_str(), kernels.c_str());
  }
  return 0;
}

CommandRegistration reg{
    Command{[](CLI::App& app) {
              CLI::App* sub = app.add_subcommand("ops", "List the op and kernel registries");
              sub->add_flag("--json", g_ops.json, "Print both registries as JSON");
              sub->add_flag("--check", g_ops.check,
                            "Run the registry self-check (every op has a shape function and a cpu "
                            "kernel; every kernel names a registered op)");
              return sub;
            },
            run_ops}};

}  // namespace
}  // namespace frame::cli
