// `frame compile MODEL --cache-dir DIR [--shape NAME=d0,d1 ...] [--input NAME=FILE.npy ...]
// [--backend B] [--threads N] [--plugin LIB]`: fill the compile cache on disk ahead of time
// (docs/cli.md, docs/architecture/execution-model.md "Compile cache on disk"). The model is
// opened as a runtime::Session with that cache directory and specialized for the given shapes
// and shape-determining values (nothing runs); a later `frame run --cache-dir DIR`, or a
// session with SessionOptions::cache_dir, with the same model, shapes, values and options
// then skips import and every pass.
#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "frame/onnx/session.h"
#include "frame/runtime/session.h"
#include "model_util.h"

namespace frame::cli {
namespace {

struct CompileVerbOptions {
  std::string model;
  std::string cache_dir;
  std::string backend = "auto";
  std::vector<std::string> inputs;
  std::vector<std::string> shapes;
  std::vector<std::string> plugins;
  int threads = 0;
} g_compile;

int fail(const Status& s) {
  std::fprintf(stderr, "frame compile: %s\n", s.message().c_str());
  return kExitError;
}

int run_compile() {
  CompileVerbOptions& o = g_compile;
  if (Status s = load_plugins(o.plugins); !s.is_ok()) return fail(s);
  Result<std::map<std::string, Shape>> shapes = parse_shapes(o.shapes);
  if (!shapes.is_ok()) return usage_error("compile", shapes.status());
  Result<std::map<std::string, std::string>> files = parse_inputs(o.inputs);
  if (!files.is_ok()) return usage_error("compile", files.status());
  Result<std::vector<std::string>> backends = backends_for(o.backend);
  if (!backends.is_ok()) return usage_error("compile", backends.status());
  if (o.cache_dir.empty()) {
    return usage_error("compile", invalid_argument("--cache-dir: expected a directory"));
  }
  Result<runtime::TensorMap> read = read_input_files(*files);
  if (!read.is_ok()) return fail(read.status());
  runtime::TensorMap inputs = std::move(*read);

  runtime::SessionOptions so;
  so.compile.backends = *backends;
  so.compile.num_threads = o.threads;
  so.cache_dir = o.cache_dir;
  Result<runtime::Session> session = onnx::open_session(o.model, so);
  if (!session.is_ok()) return fail(session.status());
  // Inputs without a file get values of the given (or declared) shape; their values do not
  // matter for the compile, except shape-determining ones, which need a file.
  Result<std::vector<std::string>> random = complete_inputs(*session, *shapes, inputs);
  if (!random.is_ok()) return fail(random.status());
  Result<runtime::Executable> exe = session->prepare(inputs);
  if (!exe.is_ok()) return fail(exe.status());
  const runtime::CacheStats cs = session->cache_stats();
  std::vector<std::string> parts;
  for (const auto& [name, type] : exe->input_signature()) {
    parts.push_back(fmt::format("{}: {}", name, type.to_string()));
  }
  if (cs.disk_writes > 0) {
    std::printf("stored %s (%s) in %s\n", o.model.c_str(),
                fmt::format("{}", fmt::join(parts, ", ")).c_str(), o.cache_dir.c_str());
  } else if (cs.disk_hits > 0) {
    std::printf("%s (%s) is already in %s\n", o.model.c_str(),
                fmt::format("{}", fmt::join(parts, ", ")).c_str(), o.cache_dir.c_str());
  } else {
    return fail(make_error(StatusCode::kIo, "nothing was written to '{}' (see the warning above)",
                           o.cache_dir));
  }
  return 0;
}

CommandRegistration reg{Command{
    [](CLI::App& app) {
      CLI::App* sub = app.add_subcommand(
          "compile",
          "Compile an ONNX model for given input shapes into a compile cache directory, so "
          "that `frame run --cache-dir` and sessions with cache_dir start without compiling");
      sub->add_option("model", g_compile.model, "ONNX model file")->required();
      sub->add_option("--cache-dir", g_compile.cache_dir, "The cache directory to fill")
          ->required();
      sub->add_option("--shape", g_compile.shapes,
                      "NAME=d0,d1,... the shape to compile an input for (needed where the "
                      "model's dims are symbolic)");
      sub->add_option("--input", g_compile.inputs,
                      "NAME=FILE.npy: an input's value (needed for shape-determining inputs, "
                      "whose values are part of the specialization)");
      sub->add_option("--backend", g_compile.backend,
                      "Backend chain, comma-separated (as `frame run --backend`); the run "
                      "must use the same chain to find the entry");
      sub->add_option("--threads", g_compile.threads,
                      "Kernel threads (0 = all cores); part of the entry's key, as for `frame "
                      "run --threads`")
          ->check(int_in_range(0, 4096));
      sub->add_option("--plugin", g_compile.plugins,
                      "Shared library whose ops, kernels and ONNX mappings to load first");
      return sub;
    },
    run_compile}};

}  // namespace
}  // namespace frame::cli
