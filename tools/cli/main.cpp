// `frame`: command line of the frame graph engine. Verbs: see `frame --help`.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "commands.h"

namespace frame::cli {
std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}
}  // namespace frame::cli

int main(int argc, char** argv) {
  // Idle OpenMP workers sleep instead of spinning: spinning workers starve each other when
  // cores are shared (measured 85x slower runs on a loaded 2-core machine). libgomp reads the
  // variable when it is loaded, before main, so set it and re-execute once. An explicit
  // OMP_WAIT_POLICY in the environment still wins.
  if (std::getenv("OMP_WAIT_POLICY") == nullptr) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);  // returns only on failure; then run with the default
  }
  CLI::App app{"frame: a C++20 graph engine (ONNX import, compiler passes, cpu runtime)"};
  app.require_subcommand(1);
  for (auto& c : frame::cli::commands()) c.sub = c.setup(app);
  // Usage errors exit with 2 (frame::cli exit codes), not CLI11's per-error codes.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return frame::cli::kExitUsage;
  }
  for (auto& c : frame::cli::commands()) {
    if (c.sub != nullptr && c.sub->parsed()) return c.run();
  }
  return 2;
}
