// `frame run [MODEL.onnx] [--backend B] [--input NAME=FILE.npy ...] [--shape NAME=d0,d1 ...]
// [--threads N] [--repeat N] [--output-dir DIR] [--cache-dir DIR] [--json] [--profile]
// [--profile-json FILE]`:
// open a model as a runtime::Session, specialize it for the given inputs (ADR 0006), run it;
// print each output's summary, the per-stage times and, with --profile, per-node times. Without
// MODEL it runs the bundled small CNN on its bundled input and compares with the bundled expected
// output.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "commands.h"
#include "frame/core/npy.h"
#include "frame/core/tolerance.h"
#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/runtime/compile.h"
#include "frame/runtime/session.h"
#include "frame/runtime/threads.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string backend = "auto";
  std::vector<std::string> inputs;
  std::vector<std::string> plugins;
  std::vector<std::string> shapes;
  int threads = 0;
  int repeat = 1;
  std::string output_dir;
  bool json = false;
  bool kernels = false;
  bool profile = false;
  bool strict = false;
  std::string profile_json;
  std::string cache_dir;
  std::string max_memory;
  CLI::Option* max_memory_option = nullptr;  // to tell `--max-memory ""` from no flag
} g_run;

int fail(const Status& s) {
  std::fprintf(stderr, "frame run: %s\n", s.message().c_str());
  return kExitError;
}

// Per-node times summed over the timed runs, top nodes first; columns sized to the longest
// entry.
void print_profile(const runtime::Profile& prof) {
  const double run_ms = static_cast<double>(prof.run_ns) / 1e6;
  std::printf("profile: %lld timed run%s, %.3f ms in all; per node, top first:\n",
              static_cast<long long>(prof.runs), prof.runs == 1 ? "" : "s", run_ms);
  Table t({"ms", "%", "calls", "node", "op", "backend", "path", "inputs -> outputs"},
          {true, true, true});
  auto percent = [&](double ms) {
    return fmt::format("{:.1f}%", run_ms > 0 ? 100.0 * ms / run_ms : 0.0);
  };
  double node_ms = 0;
  for (size_t i : prof.by_time()) {
    const runtime::NodeProfile& n = prof.nodes[i];
    const double ms = static_cast<double>(n.total_ns) / 1e6;
    node_ms += ms;
    std::string io =
        fmt::format("{} -> {}", fmt::join(n.input_types, ", "), fmt::join(n.output_types, ", "));
    if (!n.fused_ops.empty()) io += fmt::format("  [fused: {}]", fmt::join(n.fused_ops, " + "));
    t.add({fmt::format("{:.3f}", ms), percent(ms), std::to_string(n.calls), n.node, n.op, n.backend,
           n.path, io});
  }
  t.add({fmt::format("{:.3f}", run_ms - node_ms), percent(run_ms - node_ms), "", "(outside nodes)",
         "", "", "", "binding, output copies"});
  t.print();
}

int run_run() {
  RunOptions& o = g_run;
  // First: a plugin may add ops, kernels, backends and ONNX mappings the rest needs.
  if (Status s = load_plugins(o.plugins); !s.is_ok()) return fail(s);
  // Bad option values are usage errors (exit 2, docs/cli.md).
  Result<std::map<std::string, Shape>> shapes = parse_shapes(o.shapes);
  if (!shapes.is_ok()) return usage_error("run", shapes.status());
  Result<std::map<std::string, std::string>> files = parse_inputs(o.inputs);
  if (!files.is_ok()) return usage_error("run", files.status());
  Result<std::vector<std::string>> backends = backends_for(o.backend);
  if (!backends.is_ok()) return usage_error("run", backends.status());
  std::optional<size_t> max_memory;
  if (o.max_memory_option != nullptr && o.max_memory_option->count() > 0) {
    Result<size_t> m = parse_byte_size(o.max_memory);
    if (!m.is_ok()) return usage_error("run", m.status().with_prefix("--max-memory: "));
    max_memory = *m;
  }

  std::optional<BundledModel> bundled;
  std::string model_path = o.model;
  if (model_path.empty()) {
    Result<BundledModel> b = find_bundled_model();
    if (!b.is_ok()) return fail(b.status());
    bundled = *b;
    model_path = b->model.string();
    if (files->empty()) (*files)["input"] = b->input.string();
  }

  runtime::SessionOptions so;
  so.compile.backends = *backends;
  so.compile.num_threads = o.threads;
  so.compile.strict = o.strict;
  so.cache_dir = o.cache_dir;
  onnx::LoadOptions lo;
  if (max_memory) apply_memory_limit(*max_memory, so.compile, lo);
  auto t0 = std::chrono::steady_clock::now();
  Result<runtime::Session> session = [&] {
    Progress p("loading " + model_path);
    return onnx::open_session(model_path, so, lo);
  }();
  const double load_s = seconds_since(t0);
  if (!session.is_ok()) return fail(session.status());

  // Input files are fed as the run's inputs (never bound as constants by hand): the session
  // reads symbolic dims and shape-determining values from them (ADR 0006). A model with a
  // sequence or optional input or output runs with values (run_values(): a directory is a
  // sequence, `none` an absent optional).
  const bool values = has_non_tensor_values(*session);
  Result<runtime::ValueMap> read = read_input_values(*files, *session);
  if (!read.is_ok()) return fail(read.status());
  runtime::ValueMap given_values = std::move(*read);
  runtime::TensorMap given;
  Result<std::vector<std::string>> random_inputs = std::vector<std::string>{};
  if (values) {
    random_inputs = complete_input_values(*session, *shapes, given_values);
  } else {
    for (auto& [name, v] : given_values) {
      if (!v.is_tensor()) {
        return fail(
            invalid_argument("--input {}: the model's input '{}' is a tensor, got {} "
                             "(a directory is a sequence, 'none' an absent optional)",
                             name, name, v.to_string()));
      }
      given[name] = std::move(v.tensor);
    }
    random_inputs = complete_inputs(*session, *shapes, given);
  }
  if (!random_inputs.is_ok()) return fail(random_inputs.status());
  const runtime::TensorMap& inputs = given;

  // A staged model (data-dependent shapes, docs/adr/0008-data-dependent-shapes.md) has no
  // single executable: its stages compile during the first run, which is timed as the compile.
  const bool staged = session->is_staged();
  std::optional<runtime::Executable> exe;
  t0 = std::chrono::steady_clock::now();
  if (!staged) {
    Result<runtime::Executable> prepared = [&] {
      Progress p("compiling");
      return session->prepare(inputs);
    }();
    if (!prepared.is_ok()) return fail(prepared.status());
    exe = std::move(*prepared);
  } else {
    Progress p("compiling the first stages (staged model)");
    Status first =
        values ? session->run_values(given_values).status() : session->run(inputs).status();
    if (!first.is_ok()) return fail(first);
  }
  const double compile_s = seconds_since(t0);
  // The specialization's compile, stage by stage (CompileReport::stage_times_ms).
  const std::optional<runtime::CompileReport> compiled = session->last_report();
  const std::vector<std::pair<std::string, double>> stages =
      compiled ? compiled->stage_times_ms : std::vector<std::pair<std::string, double>>{};
  const int threads_used = exe ? exe->report().num_threads : o.threads;
  // Outputs in the model's order.
  std::vector<std::string> output_order;
  if (exe) {
    for (const auto& [name, type] : exe->output_signature()) output_order.push_back(name);
  } else {
    for (const runtime::ValueInfo& vi : session->outputs()) output_order.push_back(vi.name);
  }

  std::vector<double> times;
  runtime::TensorMap outputs;
  runtime::ValueMap out_values;  // every output, tensors included
  runtime::Profile profile;
  runtime::RunOptions ro;
  if (o.profile || !o.profile_json.empty()) ro.profile = &profile;
  {
    Progress p(fmt::format("running ({} time{})", o.repeat, o.repeat == 1 ? "" : "s"));
    // One untimed warm-up run (thread pool start, first-touch of the arena) so the reported
    // median measures steady-state runs even with --repeat 1. Its outputs are the buffers the
    // timed runs write into, so they allocate nothing.
    if (values) {
      for (int i = 0; i <= o.repeat; ++i) {
        const auto r0 = std::chrono::steady_clock::now();
        Result<runtime::ValueMap> r =
            session->run_values(given_values, i == 0 ? runtime::RunOptions{} : ro);
        if (i > 0) times.push_back(seconds_since(r0));
        if (!r.is_ok()) return fail(r.status());
        out_values = std::move(*r);
      }
    } else {
      Result<runtime::TensorMap> warm = session->run(inputs);
      if (!warm.is_ok()) return fail(warm.status());
      outputs = std::move(*warm);
      for (int i = 0; i < o.repeat; ++i) {
        const auto r0 = std::chrono::steady_clock::now();
        Status s = session->run(inputs, outputs, ro);
        times.push_back(seconds_since(r0));
        if (!s.is_ok()) return fail(s);
      }
      for (const auto& [name, t] : outputs) out_values[name] = runtime::Value::of(t);
    }
  }
  if (!o.profile_json.empty()) {
    std::ofstream f(o.profile_json);
    f << profile.to_json() << "\n";
    f.close();  // a full disk may only show when the buffer is flushed
    if (!f) {
      return fail(make_error(StatusCode::kIo, "cannot write --profile-json '{}'", o.profile_json));
    }
  }
  std::sort(times.begin(), times.end());
  const double run_s = times[times.size() / 2];

  std::vector<std::string> written;        // paths
  std::vector<std::string> written_lines;  // "PATH", or "PATH (output 'NAME')" when renamed
  if (!o.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(o.output_dir, ec);
    if (ec) {
      return fail(make_error(StatusCode::kIo, "cannot create --output-dir '{}': {}", o.output_dir,
                             ec.message()));
    }
    std::vector<std::string> names;
    for (const auto& [name, v] : out_values) names.push_back(name);
    const std::vector<std::string> stems = unique_file_stems(names);
    size_t k = 0;
    for (const auto& [name, v] : out_values) {
      const std::string& stem = stems[k++];
      // A tensor is DIR/<output>.npy; a sequence the directory DIR/<output>/ of 0.npy, 1.npy,
      // ... (what --input reads back); an absent optional writes nothing.
      std::filesystem::path path = std::filesystem::path(o.output_dir) / (stem + ".npy");
      if (v.is_none()) {
        // A file an earlier run wrote would read back as a present optional.
        std::error_code rm_ec;
        std::filesystem::remove(path, rm_ec);
        continue;
      }
      if (v.is_sequence()) {
        path = std::filesystem::path(o.output_dir) / stem;
        std::error_code dir_ec;
        std::filesystem::create_directories(path, dir_ec);
        if (dir_ec || !std::filesystem::is_directory(path)) {
          return fail(make_error(StatusCode::kIo,
                                 "cannot create the directory '{}' for sequence "
                                 "output '{}'{}",
                                 path.string(), name, dir_ec ? ": " + dir_ec.message() : ""));
        }
        for (size_t e = 0; e < v.sequence.size(); ++e) {
          Status s = write_npy((path / fmt::format("{}.npy", e)).string(), v.sequence[e]);
          if (!s.is_ok()) return fail(s);
        }
        // Elements an earlier, longer run wrote (N.npy past the end) would read back as part
        // of the sequence; nothing else in the directory is touched.
        for (size_t e = v.sequence.size();; ++e) {
          std::error_code rm_ec;
          if (!std::filesystem::remove(path / fmt::format("{}.npy", e), rm_ec)) break;
        }
      } else {
        Status s = write_npy(path.string(), v.tensor);
        if (!s.is_ok()) return fail(s);
      }
      written.push_back(path.string());
      written_lines.push_back(stem == name ? path.string()
                                           : fmt::format("{} (output '{}')", path.string(), name));
    }
  }

  std::optional<double> bundled_err;
  bool bundled_ok = true;
  if (bundled) {
    Result<Tensor> expected = read_npy(bundled->expected.string());
    if (!expected.is_ok()) return fail(expected.status());
    const Tensor& actual = outputs.begin()->second;
    bundled_err = max_abs_error(actual, *expected);
    // The bundled model's output must match its reference under BUILD-011's deep-network
    // tolerance.
    bundled_ok = compare_tensors(actual, *expected,
                                 tolerance_for(expected->dtype(), ToleranceClass::kDeepNetwork))
                     .ok;
  }

  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = model_path;
    j["backends"] = *backends;
    j["threads"] = threads_used;
    j["wait_policy"] = runtime::openmp_wait_policy();
    j["times_s"] = {
        {"load", load_s}, {"compile", compile_s}, {"run_median", run_s}, {"repeat", o.repeat}};
    j["compile_stages_ms"] = nlohmann::ordered_json::object();
    for (const auto& [stage, ms] : stages) j["compile_stages_ms"][stage] = ms;
    j["random_inputs"] = *random_inputs;
    j["shape_determining_inputs"] = session->shape_determining_inputs();
    const runtime::CacheStats cs = session->cache_stats();
    j["specializations"] = {{"entries", cs.entries},
                            {"bytes", cs.bytes},
                            {"hits", cs.hits},
                            {"misses", cs.misses},
                            {"evictions", cs.evictions},
                            {"tier_ups", cs.tier_ups},
                            {"interpreted", cs.interpreted},
                            {"background_compiles", cs.background_compiles},
                            {"background_tier_ups", cs.background_tier_ups},
                            {"background_probes", cs.background_probes},
                            {"retyped_in_place", cs.retyped_in_place}};
    if (!o.cache_dir.empty()) {
      j["cache_dir"] = {{"path", o.cache_dir},
                        {"hits", cs.disk_hits},
                        {"misses", cs.disk_misses},
                        {"writes", cs.disk_writes},
                        {"rejected", cs.disk_rejected},
                        {"pass_count", compiled ? compiled->pass_times_ms.size() : 0}};
    }
    if (staged) j["stages"] = session->stages();
    auto tensor_json = [](const Tensor& t) {
      Stats s = tensor_stats(t);
      return nlohmann::ordered_json{{"dtype", std::string(dtype_name(t.dtype()))},
                                    {"shape", t.shape()},
                                    {"min", s.min},
                                    {"max", s.max},
                                    {"mean", s.mean},
                                    {"first", s.first}};
    };
    for (const std::string& name : output_order) {
      const runtime::Value& v = out_values.at(name);
      nlohmann::ordered_json entry{{"name", name}};
      if (v.is_tensor()) {
        entry.update(tensor_json(v.tensor));
      } else if (v.is_none()) {
        entry["kind"] = "none";
      } else {
        entry["kind"] = "sequence";
        entry["elements"] = nlohmann::ordered_json::array();
        for (const Tensor& t : v.sequence) entry["elements"].push_back(tensor_json(t));
      }
      j["outputs"].push_back(std::move(entry));
    }
    if (o.kernels && exe) {
      for (const auto& p : exe->report().placements) {
        j["placements"].push_back({{"node", p.node},
                                   {"op", p.op},
                                   {"backend", p.backend},
                                   {"path", p.path},
                                   {"rejected", p.rejected}});
      }
    }
    if (o.profile) {
      nlohmann::ordered_json pj = nlohmann::ordered_json::parse(profile.to_json());
      pj.erase("traceEvents");
      pj.erase("displayTimeUnit");
      j["profile"] = std::move(pj);
    }
    if (!o.profile_json.empty()) j["profile_json"] = o.profile_json;
    if (!o.output_dir.empty()) j["written"] = written;
    if (bundled_err) {
      j["expected_max_abs_error"] = *bundled_err;
      j["expected_match"] = bundled_ok;
    }
    std::cout << j.dump(2) << "\n";
  } else {
    std::printf("model: %s\n", model_path.c_str());
    for (const auto& name : *random_inputs) {
      std::printf("input '%s': random values (fixed seed); pass --input %s=FILE.npy to choose\n",
                  name.c_str(), name.c_str());
    }
    auto print_tensor = [](const std::string& label, const Tensor& t) {
      std::printf("%s: %s%s %s\n", label.c_str(), std::string(dtype_name(t.dtype())).c_str(),
                  shape_to_string(t.shape()).c_str(), summarize(t).c_str());
    };
    for (const std::string& name : output_order) {
      const runtime::Value& v = out_values.at(name);
      if (v.is_tensor()) {
        print_tensor("output " + name, v.tensor);
      } else if (v.is_none()) {
        std::printf("output %s: none (an absent optional)\n", name.c_str());
      } else {
        std::printf("output %s: a sequence of %zu %s tensors\n", name.c_str(), v.sequence.size(),
                    std::string(dtype_name(v.elem_dtype)).c_str());
        for (size_t e = 0; e < v.sequence.size(); ++e) {
          print_tensor(fmt::format("  [{}]", e), v.sequence[e]);
        }
      }
    }
    std::printf("times: load %.3f ms, compile %.3f ms, run %.3f ms (median of %d)\n", load_s * 1e3,
                compile_s * 1e3, run_s * 1e3, o.repeat);
    std::printf("backends: %s; threads: %d; OpenMP wait policy: %s\n",
                fmt::format("{}", fmt::join(*backends, ", ")).c_str(), threads_used,
                runtime::openmp_wait_policy().c_str());
    for (const std::string& line : written_lines) std::printf("wrote %s\n", line.c_str());
    if (staged) {
      std::printf("stages (data-dependent shapes; a stage compiles per new boundary shape):\n");
      for (const std::string& line : session->stages()) std::printf("  %s\n", line.c_str());
    }
    if (o.kernels && exe) {
      Table t({"node", "op", "backend", "path"});
      for (const auto& p : exe->report().placements) {
        t.add({p.node, p.op, p.backend, p.path});
        for (const std::string& why : p.rejected) t.note("  rejected: " + why);
      }
      t.print();
    }
    if (o.profile) {
      std::vector<std::string> parts;
      for (const auto& [stage, ms] : stages) parts.push_back(fmt::format("{} {:.3f}", stage, ms));
      std::printf("compile stages (ms): %s\n", fmt::format("{}", fmt::join(parts, ", ")).c_str());
      print_profile(profile);
    }
    if (bundled_err) {
      std::printf("bundled model: max abs error vs expected %.3g (%s)\n", *bundled_err,
                  bundled_ok ? "ok" : "MISMATCH");
    }
    if (!o.profile_json.empty()) {
      std::printf(
          "profile written to %s (Chrome trace: open in chrome://tracing or "
          "ui.perfetto.dev)\n",
          o.profile_json.c_str());
    }
  }
  if (!bundled_ok) {
    std::fprintf(stderr, "frame run: the bundled model's output differs from %s\n",
                 bundled->expected.string().c_str());
    return kExitError;
  }
  return 0;
}

CommandRegistration reg{Command{
    [](CLI::App& app) {
      CLI::App* sub = app.add_subcommand(
          "run", "Load, compile and run an ONNX model (default: the bundled small CNN)");
      sub->add_option("model", g_run.model, "ONNX model file (default: models/small_cnn.onnx)");
      sub->add_option("--backend", g_run.backend,
                      "Backend chain, comma-separated, most preferred first (e.g. onednn,cpu); "
                      "default auto = the optimized backends built here, then cpu");
      sub->add_option("--input", g_run.inputs,
                      "NAME=FILE.npy, fed as that input; NAME=DIR for a sequence (DIR/0.npy, "
                      "1.npy, ...), NAME=none for an absent optional; inputs without a file "
                      "get random values, except shape-determining ones, which need a file");
      add_opencl_device_option(sub);
      sub->add_option("--plugin", g_run.plugins,
                      "Shared library whose ops, kernels and ONNX mappings to load first "
                      "(repeatable; docs/architecture/op-registration.md#plugins)");
      sub->add_option("--shape", g_run.shapes,
                      "NAME=d0,d1,... shape of the random values of an input without a file "
                      "(needed where the model's dims are symbolic)");
      sub->add_option("--threads", g_run.threads, "Kernel threads (0 = all cores)")
          ->check(int_in_range(0, 4096));
      sub->add_option("--repeat", g_run.repeat, "Runs to time; the median is reported")
          ->check(int_in_range(1, 1000000));
      sub->add_option("--output-dir", g_run.output_dir,
                      "Write DIR/<output>.npy for each output (a sequence: DIR/<output>/0.npy, "
                      "1.npy, ...; an absent optional: nothing)");
      sub->add_flag("--json", g_run.json, "Print the result as JSON");
      sub->add_option("--cache-dir", g_run.cache_dir,
                      "Compile cache on disk: read the compiled specialization from DIR when a "
                      "run (or `frame compile`) stored it there, else compile and store it "
                      "(docs/cli.md)");
      g_run.max_memory_option =
          sub->add_option("--max-memory", g_run.max_memory,
                          "Memory limit, e.g. 512M or 4G: compiling refuses a model whose run "
                          "would hold more (arena + constants), or a larger tensor; default 3/4 of "
                          "physical memory (docs/security.md)");
      sub->add_flag("--strict", g_run.strict,
                    "Lowering's strict mode: a node that no backend of the chain runs with its "
                    "own kernel (decomposition or cpu fallback) is an error naming it");
      sub->add_flag("--kernels", g_run.kernels,
                    "Also print the backend and path of every node, and why each alternative "
                    "was rejected");
      sub->add_flag("--profile", g_run.profile,
                    "Print per-node time (ms, % of the run, op, backend, kernel, shapes, fused "
                    "body) summed over the timed runs, top nodes first");
      sub->add_option("--profile-json", g_run.profile_json,
                      "Write the per-node profile as JSON to FILE (also a Chrome trace: open it "
                      "in chrome://tracing or Perfetto)");
      return sub;
    },
    run_run}};

}  // namespace
}  // namespace frame::cli
