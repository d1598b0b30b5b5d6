// `frame`: command line of the frame graph engine. Verbs: see `frame --help`.
#include <cstdio>
#include <cstdlib>

#include "commands.h"
#include "frame/runtime/threads.h"

namespace frame::cli {
std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}
}  // namespace frame::cli

int main(int argc, char** argv) {
  // The wait policy must be chosen before the OpenMP runtime loads (threads.h): this
  // re-executes once with it; an explicit OMP_WAIT_POLICY or GOMP_SPINCOUNT still wins.
  frame::runtime::use_recommended_wait_policy(argv);
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
