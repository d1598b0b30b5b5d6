// `frame inspect MODEL [--backend B] [--shape NAME=d0,..] [--json]`: what the compiler did to a
// model — node counts per op before and after the pipeline, fused groups, the backend, kernel
// and path of every node, fallbacks and why, peak arena bytes and per-pass times.
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/compile.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct InspectOptions {
  std::string model;
  std::string backend = "auto";
  std::vector<std::string> shapes;
  bool json = false;
} g_inspect;

int fail(const Status& s) {
  std::fprintf(stderr, "frame inspect: %s\n", s.message().c_str());
  return kExitError;
}

void print_counts(const runtime::CompileReport& r) {
  std::set<std::string> ops;
  int before = 0;
  int after = 0;
  for (const auto& [op, n] : r.op_counts_before) {
    ops.insert(op);
    before += n;
  }
  for (const auto& [op, n] : r.op_counts_after) {
    ops.insert(op);
    after += n;
  }
  std::printf("nodes per op (before -> after the pipeline): %d -> %d\n", before, after);
  for (const std::string& op : ops) {
    auto b = r.op_counts_before.find(op);
    auto a = r.op_counts_after.find(op);
    std::printf("  %-32s %6d -> %d\n", op.c_str(), b == r.op_counts_before.end() ? 0 : b->second,
                a == r.op_counts_after.end() ? 0 : a->second);
  }
}

int run_inspect() {
  InspectOptions& o = g_inspect;
  Result<std::map<std::string, Shape>> shapes = parse_shapes(o.shapes);
  if (!shapes.is_ok()) return fail(shapes.status());
  Result<std::vector<std::string>> backends = backends_for(o.backend);
  if (!backends.is_ok()) return fail(backends.status());
  onnx::LoadOptions lo;
  lo.input_shapes = *shapes;
  Result<ir::Graph> graph = [&] {
    Progress p("loading " + o.model);
    return onnx::load(o.model, lo);
  }();
  if (!graph.is_ok()) return fail(graph.status());
  runtime::CompileOptions co;
  co.backends = *backends;
  co.use_cache = false;  // the report should describe a real compilation
  Result<runtime::Executable> exe = [&] {
    Progress p("compiling");
    return runtime::compile(*graph, co);
  }();
  if (!exe.is_ok()) return fail(exe.status());
  const runtime::CompileReport& r = exe->report();

  if (o.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(r.to_json());
    j["model"] = o.model;
    j["backends"] = *backends;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("model: %s\nbackends: %s\n\n", o.model.c_str(),
              fmt::format("{}", fmt::join(*backends, ", ")).c_str());
  print_counts(r);
  std::printf("\nfused groups: %zu\n", r.fused_groups.size());
  for (size_t i = 0; i < r.fused_groups.size(); ++i) {
    std::printf("  group %zu: %s\n", i,
                fmt::format("{}", fmt::join(r.fused_groups[i], " + ")).c_str());
  }
  std::printf("\nlowering-pattern rewrites: %zu\n", r.lowering_rewrites.size());
  for (const std::string& rw : r.lowering_rewrites) std::printf("  %s\n", rw.c_str());
  std::printf("\nplacement (node, op, backend, path):\n");
  int fallbacks = 0;
  for (const auto& p : r.placements) {
    std::printf("  %-36s %-24s %-8s %s\n", p.node.c_str(), p.op.c_str(), p.backend.c_str(),
                p.path.c_str());
    if (p.path != "kernel") ++fallbacks;
  }
  std::map<std::string, int> per_backend;
  for (const auto& p : r.placements) ++per_backend[p.backend];
  std::string counts;
  for (const auto& [b, n] : per_backend) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", b, n);
  }
  std::printf("nodes per backend: %s\n", counts.c_str());
  std::printf("\nfallbacks: %d\n", fallbacks);
  for (const auto& p : r.placements) {
    if (p.path == "kernel") continue;
    std::printf("  %s (%s) -> %s on %s: %s\n", p.node.c_str(), p.op.c_str(), p.path.c_str(),
                p.backend.c_str(), fmt::format("{}", fmt::join(p.rejected, "; ")).c_str());
  }
  std::printf("\npeak arena: %zu bytes (%.2f MiB)\n", r.peak_arena_bytes,
              static_cast<double>(r.peak_arena_bytes) / (1 << 20));
  std::printf("\npass times:\n");
  double total = 0;
  for (const auto& [pass, ms] : r.pass_times_ms) {
    std::printf("  %-24s %10.3f ms\n", pass.c_str(), ms);
    total += ms;
  }
  std::printf("  %-24s %10.3f ms\n", "total", total);
  return 0;
}

CommandRegistration reg{Command{
    [](CLI::App& app) {
      CLI::App* sub = app.add_subcommand(
          "inspect", "Show what the compiler does to a model (counts, fusion, placement, memory)");
      sub->add_option("model", g_inspect.model, "ONNX model file")->required();
      sub->add_option("--backend", g_inspect.backend,
                      "Backend chain, comma-separated (e.g. onednn,cpu); default auto = "
                      "the optimized backends built here, then cpu");
      sub->add_option("--shape", g_inspect.shapes,
                      "NAME=d0,d1,... concrete shape of a dynamic input");
      sub->add_flag("--json", g_inspect.json, "Print the report as JSON");
      return sub;
    },
    run_inspect}};

}  // namespace
}  // namespace frame::cli
