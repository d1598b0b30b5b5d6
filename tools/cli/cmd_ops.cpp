// `frame ops [--json] [--check] [--onnx-table] [--plugin LIB ...]`: lists both registries; --check
// runs the registry self-check (ARCH-041) and exits 1 on any problem; --onnx-table prints the ONNX
// op table with each frame op's backends as the Markdown that docs/onnx.md embeds.
#include <cstdio>
#include <iostream>
#include <string>

#include "commands.h"
#include "frame/onnx/onnx.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct OpsOptions {
  bool json = false;
  bool check = false;
  bool onnx_table = false;
  std::vector<std::string> plugins;
} g_ops;

// One Markdown row per ONNX op table row (docs/onnx.md "Table", kept in sync by the ctest
// onnx_op_table_doc).
void print_onnx_table() {
  std::printf("| ONNX op | opsets | frame op | backends | conversion |\n");
  std::printf("|---|---|---|---|---|\n");
  for (const onnx::OpTableEntry& e : onnx::op_table()) {
    const std::string name = e.domain.empty() ? e.op_type : e.domain + "::" + e.op_type;
    const std::string opsets =
        e.until_opset == 0 ? std::to_string(e.since_opset) + "+"
                           : std::to_string(e.since_opset) + "-" + std::to_string(e.until_opset);
    std::string backends;
    for (const std::string& b : ops::KernelRegistry::global().backends_of(e.frame_op)) {
      if (!backends.empty()) backends += ", ";
      backends += b;
    }
    const std::string op = e.frame_op.empty() ? "(constant)" : "`" + e.frame_op + "`";
    std::printf("| %s | %s | %s | %s | %s |\n", name.c_str(), opsets.c_str(), op.c_str(),
                backends.c_str(), e.note.c_str());
  }
}

int run_ops() {
  using ops::KernelRegistry;
  using ops::OpRegistry;
  // First, so the listings and the self-check include what the plugins add.
  if (Status s = load_plugins(g_ops.plugins); !s.is_ok()) {
    std::fprintf(stderr, "frame ops: %s\n", s.message().c_str());
    return kExitError;
  }
  if (g_ops.check) {
    std::vector<std::string> problems = ops::registry_self_check();
    for (const auto& p : problems) std::fprintf(stderr, "self-check: %s\n", p.c_str());
    std::printf("self-check: %zu ops, %zu kernels, %zu problem(s)\n", OpRegistry::global().size(),
                KernelRegistry::global().list().size(), problems.size());
    return problems.empty() ? 0 : kExitError;
  }
  if (g_ops.onnx_table) {
    print_onnx_table();
    return 0;
  }
  if (g_ops.json) {
    std::cout << "{\"ops\": " << OpRegistry::global().to_json()
              << ",\n\"kernels\": " << KernelRegistry::global().to_json() << "}\n";
    return 0;
  }
  // Columns sized to the longest cell (model_util.h Table), so long op names never shift them.
  Table t({"op", "inputs", "outputs", "traits", "kernels"});
  for (const ops::OpSchema* s : OpRegistry::global().list()) {
    std::string traits;
    for (ops::OpTrait tr : s->traits()) {
      if (!traits.empty()) traits += ",";
      traits += ops::op_trait_name(tr);
    }
    std::string kernels;
    for (const std::string& b : KernelRegistry::global().backends_of(s->name())) {
      if (!kernels.empty()) kernels += ",";
      kernels += b;
    }
    std::string arity = s->has_variadic_inputs() ? std::to_string(s->min_input_count()) + "+"
                                                 : std::to_string(s->min_input_count()) + "-" +
                                                       std::to_string(s->max_input_count());
    t.add({s->name(), arity, std::to_string(s->outputs().size()), traits, kernels});
  }
  t.print("");
  return 0;
}

CommandRegistration reg{
    Command{[](CLI::App& app) {
              CLI::App* sub = app.add_subcommand("ops", "List the op and kernel registries");
              sub->add_flag("--json", g_ops.json, "Print both registries as JSON");
              sub->add_flag("--check", g_ops.check,
                            "Run the registry self-check (every op has a shape function and a cpu "
                            "kernel; every kernel names a registered op)");
              sub->add_option("--plugin", g_ops.plugins,
                              "Shared library to load first, so its ops and kernels are listed "
                              "and self-checked (repeatable; "
                              "docs/architecture/op-registration.md#plugins)");
              sub->add_flag("--onnx-table", g_ops.onnx_table,
                            "Print the ONNX op table (op type, opsets, frame op, backends, "
                            "conversion) as Markdown, as docs/onnx.md embeds it");
              return sub;
            },
            run_ops}};

}  // namespace
}  // namespace frame::cli
