// `frame inspect MODEL [--backend B] [--shape NAME=d0,..] [--input NAME=FILE.npy ..] [--json]`:
// what the compiler did to a model (with --input, to the specialization a session compiles for
// those input values and shapes, ADR 0006) — the shape-determining graph inputs (ADR 0006, listed
// before compiling), node counts per op before and after the pipeline, fused groups
// (operator-fusion and lowering patterns), the backend and path of every node with the alternatives
// rejected and why, nodes per backend, fallbacks, peak arena bytes and per-pass times.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <array>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/passes/shape_determining.h"
#include "frame/runtime/compile.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct InspectOptions {
  std::string model;
  std::string backend = "auto";
  std::vector<std::string> shapes;
  std::vector<std::string> inputs;
  std::vector<std::string> plugins;
  bool json = false;
  std::string max_memory;
  CLI::Option* max_memory_option = nullptr;  // to tell `--max-memory ""` from no flag
} g_inspect;

int fail(const Status& s) {
  std::fprintf(stderr, "frame inspect: %s\n", s.message().c_str());
  return kExitError;
}

// What import did to the node count: the file's nodes by ONNX op type against the frame nodes
// before the pipeline. Identity and Constant nodes become aliases and constants, not nodes.
void print_import(const std::string& model, const runtime::CompileReport& r) {
  Result<std::map<std::string, int64_t>> onnx_counts = onnx::model_op_counts(model);
  if (!onnx_counts.is_ok()) return;
  int64_t onnx_total = 0;
  for (const auto& [op, n] : *onnx_counts) onnx_total += n;
  int64_t frame_total = 0;
  for (const auto& [op, n] : r.op_counts_before) frame_total += n;
  // ONNX op type, frame op, what import made of the nodes that left no frame node.
  const std::array<std::array<const char*, 3>, 2> kFolded = {{
      {"Identity", "identity", "Identity nodes of constants became aliases"},
      {"Constant", "constant", "Constant nodes became constants"},
  }};
  std::string dropped;
  for (const auto& [onnx_op, frame_op, what] : kFolded) {
    auto it = onnx_counts->find(onnx_op);
    if (it == onnx_counts->end()) continue;
    auto kept = r.op_counts_before.find(frame_op);
    const int64_t n = it->second - (kept == r.op_counts_before.end() ? 0 : kept->second);
    if (n > 0) dropped += fmt::format("{}{} {}", dropped.empty() ? "" : ", ", n, what);
  }
  std::printf("import: %lld ONNX nodes -> %lld frame nodes%s\n", static_cast<long long>(onnx_total),
              static_cast<long long>(frame_total), dropped.empty() ? "" : ("; " + dropped).c_str());
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
  Table t({"op", "before", "after"}, {false, true, true});
  for (const std::string& op : ops) {
    auto b = r.op_counts_before.find(op);
    auto a = r.op_counts_after.find(op);
    t.add({op, std::to_string(b == r.op_counts_before.end() ? 0 : b->second),
           std::to_string(a == r.op_counts_after.end() ? 0 : a->second)});
  }
  t.print();
}

// Fused nodes of both kinds: operator-fusion's elementwise groups and the base op + post-ops
// nodes made by backend lowering patterns.
void print_fused(const runtime::CompileReport& r) {
  std::printf("\nfused groups (operator-fusion, fused_elementwise_internal): %zu\n",
              r.fused_groups.size());
  // Groups and placements are both in the compiled graph's topological order, so the k-th
  // fused_elementwise_internal placement is the node of group k.
  std::vector<std::string> nodes;
  for (const runtime::Placement& p : r.placements) {
    if (p.op == "fused_elementwise_internal") nodes.push_back(p.node);
  }
  if (!r.fused_groups.empty()) {
    Table t({"node", "ops"});
    for (size_t i = 0; i < r.fused_groups.size(); ++i) {
      t.add({i < nodes.size() ? nodes[i] : fmt::format("group {}", i),
             fmt::format("{}", fmt::join(r.fused_groups[i], " + "))});
    }
    t.print();
  }
  std::printf("fused by lowering patterns (fused_post_ops_internal): %zu\n",
              r.lowering_fused.size());
  if (r.lowering_fused.empty()) return;
  Table t({"node", "ops"});
  for (const auto& [node, ops] : r.lowering_fused) {
    t.add({node, fmt::format("{}", fmt::join(ops, " + "))});
  }
  t.print();
}

// Every node's placement; under it, each alternative passed over and why (also for nodes on
// a later backend of the chain through its own kernel, which are not fallbacks).
// Device groups: runs of nodes whose values stay in device memory, and the host <-> device
// copies each run costs at its boundary (docs/backends/intel-gpu.md, "Device memory").
void print_device_groups(const runtime::CompileReport& r) {
  if (r.device_groups.empty()) return;
  auto mib = [](size_t b) { return static_cast<double>(b) / (1 << 20); };
  auto names = [](const std::vector<std::string>& v) {
    constexpr size_t kShown = 3;
    if (v.size() <= kShown) return fmt::format("{}", fmt::join(v, ", "));
    return fmt::format("{} (+{})", fmt::join(v.begin(), v.begin() + kShown, ", "),
                       v.size() - kShown);
  };
  size_t in = 0, out = 0, bytes_in = 0, bytes_out = 0;
  for (const runtime::DeviceGroupReport& g : r.device_groups) {
    in += g.copies_in.size();
    out += g.copies_out.size();
    bytes_in += g.bytes_in;
    bytes_out += g.bytes_out;
  }
  std::printf(
      "\ndevice groups: %zu (values stay in device memory inside a group)\n"
      "host<->device copies per run: %zu in (%.2f MiB), %zu out (%.2f MiB)\n",
      r.device_groups.size(), in, mib(bytes_in), out, mib(bytes_out));
  Table t({"#", "backend", "nodes", "first .. last", "copies in", "copies out", "constants",
           "device MiB"},
          {true, false, true, false, false, false, true, true});
  for (size_t i = 0; i < r.device_groups.size(); ++i) {
    const runtime::DeviceGroupReport& g = r.device_groups[i];
    t.add({std::to_string(i + 1), g.backend, std::to_string(g.nodes.size()),
           g.nodes.size() == 1 ? g.nodes.front() : g.nodes.front() + " .. " + g.nodes.back(),
           names(g.copies_in), names(g.copies_out),
           fmt::format("{} ({:.2f} MiB once)", g.constants, mib(g.constant_bytes)),
           fmt::format("{:.2f}", mib(g.device_bytes))});
  }
  t.print();
}

// Layout reorders inside kernels (an activation copied into another memory order every run,
// e.g. NCHW -> nhwc around a oneDNN convolution whose neighbours are not convolutions), per node
// and in all; weights reordered once at prepare are not counted.
void print_reorders(const runtime::CompileReport& r) {
  int total = 0;
  Table t({"node", "op", "reorders"}, {false, false, true});
  for (const runtime::Placement& p : r.placements) {
    if (p.reorders_per_run == 0) continue;
    total += p.reorders_per_run;
    t.add({p.node, p.op, std::to_string(p.reorders_per_run)});
  }
  std::printf("\nlayout reorders per run (inside kernels): %d\n", total);
  if (total > 0) t.print();
}

void print_placements(const runtime::CompileReport& r) {
  std::printf("\nplacement (rejected alternatives indented under their node):\n");
  Table t({"node", "op", "backend", "path"});
  int fallbacks = 0;
  int passed_over = 0;
  for (const auto& p : r.placements) {
    t.add({p.node, p.op, p.backend, p.path});
    for (const std::string& why : p.rejected) t.note("  rejected: " + why);
    if (p.path != "kernel") ++fallbacks;
    if (!p.rejected.empty()) ++passed_over;
  }
  t.print();
  std::map<std::string, int> per_backend;
  for (const auto& p : r.placements) ++per_backend[p.backend];
  std::string counts;
  for (const auto& [b, n] : per_backend) {
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", b, n);
  }
  std::printf("nodes per backend: %s\n", counts.c_str());
  std::printf("nodes not on their first choice (rejected alternatives above): %d\n", passed_over);
  std::printf("\nfallbacks (decomposition or cpu-fallback path): %d\n", fallbacks);
  for (const auto& p : r.placements) {
    if (p.path == "kernel") continue;
    std::printf("  %s (%s) -> %s on %s: %s\n", p.node.c_str(), p.op.c_str(), p.path.c_str(),
                p.backend.c_str(), fmt::format("{}", fmt::join(p.rejected, "; ")).c_str());
  }
}

// Graph inputs whose values decide output shapes (ADR 0006), as JSON.
nlohmann::ordered_json sdi_json(const std::vector<passes::ShapeDeterminingInput>& sdi) {
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const passes::ShapeDeterminingInput& in : sdi) {
    nlohmann::ordered_json feeds = nlohmann::ordered_json::array();
    for (const passes::ShapeDeterminingUse& u : in.uses) {
      feeds.push_back(
          {{"node", u.node_name}, {"op", u.op}, {"input", u.input}, {"input_name", u.input_name}});
    }
    arr.push_back({{"input", in.name}, {"feeds", std::move(feeds)}});
  }
  return arr;
}

// Printed before compiling, so it shows even when compilation fails on such an input.
void print_sdi(const std::vector<passes::ShapeDeterminingInput>& sdi) {
  std::printf("shape-determining graph inputs (values decide output shapes, ADR 0006): %zu\n",
              sdi.size());
  for (const passes::ShapeDeterminingInput& in : sdi) {
    std::printf("  %s ->", in.name.c_str());
    for (size_t k = 0; k < in.uses.size(); ++k) {
      const passes::ShapeDeterminingUse& u = in.uses[k];
      std::printf("%s %s (%s) input %zu (%s)", k == 0 ? "" : ",", u.node_name.c_str(), u.op.c_str(),
                  u.input, u.input_name.c_str());
    }
    std::printf("\n");
  }
  std::printf("\n");
  std::fflush(stdout);
}

int run_inspect() {
  InspectOptions& o = g_inspect;
  if (Status s = load_plugins(o.plugins); !s.is_ok()) return fail(s);
  // Bad option values are usage errors (exit 2, docs/cli.md).
  Result<std::map<std::string, Shape>> shapes = parse_shapes(o.shapes);
  if (!shapes.is_ok()) return usage_error("inspect", shapes.status());
  Result<std::vector<std::string>> backends = backends_for(o.backend);
  if (!backends.is_ok()) {
    return usage_error("inspect", backends.status());
  }
  Result<std::map<std::string, std::string>> files = parse_inputs(o.inputs);
  if (!files.is_ok()) return usage_error("inspect", files.status());
  onnx::LoadOptions lo;
  lo.input_shapes = *shapes;
  runtime::CompileOptions co;
  if (o.max_memory_option != nullptr && o.max_memory_option->count() > 0) {
    Result<size_t> max_memory = parse_byte_size(o.max_memory);
    if (!max_memory.is_ok()) {
      return usage_error("inspect", max_memory.status().with_prefix("--max-memory: "));
    }
    apply_memory_limit(*max_memory, co, lo);
  }
  onnx::LoadOptions session_load;
  static_cast<onnx::LoadLimits&>(session_load) = lo;
  std::vector<passes::ShapeDeterminingInput> sdi;
  runtime::SessionOptions so;
  so.compile = co;
  so.compile.backends = *backends;
  Result<runtime::Session> session = [&] {
    Progress p("loading " + o.model);
    return onnx::open_session(o.model, so, session_load);
  }();
  {
    // A model with data-dependent shapes has no single compiled graph: list its stages and
    // eager nodes (docs/adr/0008-data-dependent-shapes.md).
    if (session.is_ok() && session->is_staged()) {
      const std::vector<std::string> steps = session->stages();
      if (o.json) {
        nlohmann::ordered_json j;
        j["model"] = o.model;
        j["stages"] = steps;
        j["shape_determining_inputs"] = session->shape_determining_inputs();
        std::cout << j.dump(2) << "\n";
      } else {
        std::printf("model: %s\n", o.model.c_str());
        std::printf(
            "data-dependent shapes: runs as stages, each compiled per new shape at its "
            "boundary (ADR 0008); `frame run` runs it\n");
        for (const std::string& line : steps) std::printf("  %s\n", line.c_str());
      }
      return 0;
    }
  }
  Result<runtime::Executable> exe = internal_error("not compiled");
  if (!o.inputs.empty()) {
    // The specialization a session compiles for these values and shapes (ADR 0006); inputs
    // without a file get random values of their declared or --shape shape.
    Result<runtime::TensorMap> given = read_input_files(*files);
    if (!given.is_ok()) return fail(given.status());
    if (!session.is_ok()) return fail(session.status());
    Result<std::vector<std::string>> random = complete_inputs(*session, *shapes, *given);
    if (!random.is_ok()) return fail(random.status());
    // The session's own classification (the same with or without the shapes given here).
    if (auto c = onnx::classify_inputs(o.model, session_load); c.is_ok()) sdi = std::move(*c);
    if (!o.json) print_sdi(sdi);
    Progress p("compiling");
    exe = session->prepare(*given);
  } else {
    Result<ir::Graph> graph = [&] {
      Progress p("loading " + o.model);
      return onnx::load(o.model, lo);
    }();
    if (!graph.is_ok()) {
      // A shape function rejected a non-constant shape input at import (ARCH-044): load the
      // structure only, to list every shape-determining input before reporting the error.
      if (graph.status().message().find("must be a constant") == std::string::npos) {
        return fail(graph.status());
      }
      Result<std::vector<passes::ShapeDeterminingInput>> c =
          onnx::classify_inputs(o.model, session_load);
      if (!c.is_ok()) return fail(graph.status());
      sdi = std::move(*c);
      // Say what to do first; the compiler's own message and hints follow.
      const Status err(graph.status().code(),
                       "the model has shape-determining inputs (their values decide output "
                       "shapes): pass their values with --input NAME=FILE.npy to inspect the "
                       "specialization a session compiles for them (ADR 0006)\n  " +
                           graph.status().message());
      if (o.json) {
        nlohmann::ordered_json j;
        j["model"] = o.model;
        j["shape_determining_inputs"] = sdi_json(sdi);
        j["error"] = err.message();
        std::cout << j.dump(2) << "\n";
      } else {
        print_sdi(sdi);
      }
      return fail(err);
    }
    // What a session over this model binds per run (onnx::classify_inputs), so inspect, run
    // and Python agree.
    if (auto c = onnx::classify_inputs(o.model, session_load); c.is_ok()) sdi = std::move(*c);
    if (!o.json) print_sdi(sdi);
    co.backends = *backends;
    co.use_cache = false;  // the report should describe a real compilation
    Progress p("compiling");
    exe = runtime::compile(*graph, co);
  }
  if (!exe.is_ok()) {
    if (o.json) {
      nlohmann::ordered_json j;
      j["model"] = o.model;
      j["shape_determining_inputs"] = sdi_json(sdi);
      j["error"] = exe.status().message();
      std::cout << j.dump(2) << "\n";
    }
    return fail(exe.status());
  }
  const runtime::CompileReport& r = exe->report();

  if (o.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(r.to_json());
    j["model"] = o.model;
    j["backends"] = *backends;
    j["shape_determining_inputs"] = sdi_json(sdi);
    if (auto counts = onnx::model_op_counts(o.model); counts.is_ok()) j["onnx_op_counts"] = *counts;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("model: %s\nbackends: %s\n\n", o.model.c_str(),
              fmt::format("{}", fmt::join(*backends, ", ")).c_str());
  print_import(o.model, r);
  print_counts(r);
  print_fused(r);
  std::printf("\nlowering-pattern rewrites: %zu\n", r.lowering_rewrites.size());
  for (const std::string& rw : r.lowering_rewrites) std::printf("  %s\n", rw.c_str());
  print_placements(r);
  print_reorders(r);
  print_device_groups(r);
  std::printf("\npeak arena: %zu bytes (%.2f MiB)\n", r.peak_arena_bytes,
              static_cast<double>(r.peak_arena_bytes) / (1 << 20));
  std::printf("\npass times:\n");
  Table t({"pass", "ms"}, {false, true});
  double total = 0;
  for (const auto& [pass, ms] : r.pass_times_ms) {
    t.add({pass, fmt::format("{:.3f}", ms)});
    total += ms;
  }
  t.add({"total", fmt::format("{:.3f}", total)});
  t.print();
  std::printf("\ncompile stages:\n");
  Table st({"stage", "ms"}, {false, true});
  for (const auto& [stage, ms] : r.stage_times_ms) st.add({stage, fmt::format("{:.3f}", ms)});
  st.print();
  return 0;
}

CommandRegistration reg{Command{
    [](CLI::App& app) {
      CLI::App* sub = app.add_subcommand(
          "inspect", "Show what the compiler does to a model (counts, fusion, placement, memory)");
      sub->add_option("model", g_inspect.model, "ONNX model file")->required();
      add_backend_options(sub, g_inspect.backend, g_inspect.plugins);
      sub->add_option("--shape", g_inspect.shapes,
                      "NAME=d0,d1,... concrete shape of a dynamic input");
      sub->add_option("--input", g_inspect.inputs,
                      "NAME=FILE.npy: inspect the specialization for this input's value and "
                      "shape (ADR 0006); other inputs get random values");
      sub->add_flag("--json", g_inspect.json, "Print the report as JSON");
      g_inspect.max_memory_option =
          sub->add_option("--max-memory", g_inspect.max_memory,
                          "Memory limit, e.g. 512M or 4G (as for frame run; docs/security.md)");
      return sub;
    },
    run_inspect}};

}  // namespace
}  // namespace frame::cli
