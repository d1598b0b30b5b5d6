// `frame compare MODEL [--input NAME=FILE.npy ...] [--shape NAME=d0,d1 ...] [--backend B]
// [--reference cpu] [--threads N] [--rows N] [--rtol R] [--atol A] [--json] [--plugin LIB]`: run
// the model on the chain under test and on the reference chain with the same inputs, compare every
// value both runs produce (runtime::compare_runs, BUILD-011's deep-network tolerance) and report
// the first value that diverges, with node, op, backend and kernel, then a per-value table
// (docs/debugging.md). Exit 0 when every value agrees, 1 when one diverges or a run fails, 2
// on a usage error.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "frame/onnx/session.h"
#include "frame/runtime/compare.h"
#include "frame/runtime/session.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct CompareOptions {
  std::string model;
  std::string backend = "auto";
  std::string reference = "cpu";
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::vector<std::string> plugins;
  int threads = 1;
  int rows = 40;
  std::optional<double> rtol;
  std::optional<double> atol;
  bool json = false;
} g_compare;

// CLI11 check for --rtol / --atol: a finite number >= 0.
CLI::Validator tolerance_value() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        size_t used = 0;
        double v = -1;
        try {
          v = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != value.size() || !std::isfinite(v) || v < 0) {
          return "expected a finite number >= 0, got '" + value + "'";
        }
        return {};
      },
      "NUMBER >= 0");
}

int fail(const Status& s) {
  std::fprintf(stderr, "frame compare: %s\n", s.message().c_str());
  return kExitError;
}

int run_compare() {
  CompareOptions& o = g_compare;
  if (Status s = load_plugins(o.plugins); !s.is_ok()) return fail(s);
  Result<std::map<std::string, Shape>> shapes = parse_shapes(o.shapes);
  if (!shapes.is_ok()) return usage_error("compare", shapes.status());
  Result<std::map<std::string, std::string>> files = parse_inputs(o.inputs);
  if (!files.is_ok()) return usage_error("compare", files.status());
  Result<std::vector<std::string>> backends = backends_for(o.backend);
  if (!backends.is_ok()) return usage_error("compare", backends.status());
  Result<std::vector<std::string>> reference = backends_for(o.reference, "--reference");
  if (!reference.is_ok()) return usage_error("compare", reference.status());

  // Two sessions of one model: each compiles with its own chain (its own fusions and layouts).
  auto open = [&](const std::vector<std::string>& chain) {
    runtime::SessionOptions so;
    so.compile.backends = chain;
    so.compile.num_threads = o.threads;
    so.tiered_compile = false;  // the full compile: what a recurring shape runs
    return onnx::open_session(o.model, so);
  };
  Result<runtime::Session> tested = open(*backends);
  if (!tested.is_ok()) return fail(tested.status());
  Result<runtime::Session> ref = open(*reference);
  if (!ref.is_ok()) return fail(ref.status());

  Result<runtime::TensorMap> read = read_input_files(*files);
  if (!read.is_ok()) return fail(read.status());
  runtime::TensorMap inputs = std::move(*read);
  Result<std::vector<std::string>> random = complete_inputs(*tested, *shapes, inputs);
  if (!random.is_ok()) return fail(random.status());

  runtime::CompareOptions co;
  co.backends = *backends;
  co.reference_backends = *reference;
  co.rtol = o.rtol;
  co.atol = o.atol;
  Result<runtime::ComparisonReport> report = runtime::compare_runs(*tested, *ref, inputs, co);
  if (!report.is_ok()) return fail(report.status());
  report->model = o.model;
  if (o.json) {
    std::cout << report->to_json() << "\n";
  } else {
    if (!random->empty()) {
      std::printf("random inputs (fixed seed): %s\n",
                  fmt::format("{}", fmt::join(*random, ", ")).c_str());
    }
    std::cout << report->to_text(static_cast<size_t>(o.rows));
  }
  return report->ok() ? 0 : kExitError;
}

CommandRegistration reg{Command{
    [](CLI::App& app) {
      CLI::App* sub = app.add_subcommand(
          "compare",
          "Run an ONNX model on a backend chain and on a reference chain, compare every value "
          "both produce, and report the first that diverges (node, op, backend, kernel)");
      sub->add_option("model", g_compare.model, "ONNX model file")->required();
      sub->add_option("--backend", g_compare.backend,
                      "Chain under test, comma-separated (default auto = the optimized backends "
                      "built here, then cpu)");
      sub->add_option("--reference", g_compare.reference,
                      "Reference chain (default cpu: the reference kernels)");
      sub->add_option("--input", g_compare.inputs,
                      "NAME=FILE.npy, fed to both runs; inputs without a file get random values "
                      "(fixed seed), except shape-determining ones");
      sub->add_option("--shape", g_compare.shapes,
                      "NAME=d0,d1,... shape of the random values of an input without a file");
      sub->add_option("--threads", g_compare.threads, "Kernel threads of each run (0 = all cores)")
          ->check(int_in_range(0, 4096));
      sub->add_option("--rows", g_compare.rows,
                      "Rows of the per-value table (0 = all; default 40, around the first "
                      "divergence)")
          ->check(int_in_range(0, 100000000));
      sub->add_option("--rtol", g_compare.rtol,
                      "Relative tolerance for every dtype instead of BUILD-011's deep-network "
                      "class (the absolute one stays the class's unless --atol is given)")
          ->check(tolerance_value());
      sub->add_option("--atol", g_compare.atol,
                      "Absolute tolerance for every dtype, integers included, used as given (e.g. "
                      "1 for a quantized model's requantization steps)")
          ->check(tolerance_value());
      sub->add_flag("--json", g_compare.json, "Print the whole report as JSON");
      add_opencl_device_option(sub);
      sub->add_option("--plugin", g_compare.plugins,
                      "Shared library whose ops, kernels and ONNX mappings to load first "
                      "(repeatable)");
      return sub;
    },
    run_compare}};

}  // namespace
}  // namespace frame::cli
