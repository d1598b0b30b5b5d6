// `frame`: command line of the frame graph engine. Verbs: see `frame --help`.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "commands.h"
#include "frame/runtime/threads.h"
#include "frame_git_revision.h"

namespace frame::cli {
std::vector<Command>& commands() {
  static std::vector<Command> c;
  return c;
}
}  // namespace frame::cli

namespace {

// The first argument that is not an option must name a verb; CLI11 would only say that a
// subcommand is required.
int check_verb(int argc, char** argv, const CLI::App& app) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.empty() || a[0] == '-') continue;
    for (const auto& c : frame::cli::commands()) {
      if (c.sub != nullptr && c.sub->check_name(a)) return 0;
    }
    std::string verbs;
    for (const CLI::App* s : app.get_subcommands({})) {
      if (!verbs.empty()) verbs += ", ";
      verbs += s->get_name();
    }
    std::fprintf(stderr, "frame: unknown command '%s' (commands: %s; see frame --help)\n",
                 a.c_str(), verbs.c_str());
    return frame::cli::kExitUsage;
  }
  return 0;
}

// The verb on the command line, the first argument that is not an option (check_verb has
// accepted it), or "" when none: CLI11's own parse errors get the same "frame VERB: " prefix
// as the verbs' errors.
std::string verb_of(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (argv[i][0] != '\0' && argv[i][0] != '-') return argv[i];
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  // The wait policy must be chosen before the OpenMP runtime loads (threads.h): this
  // re-executes once with it; an explicit OMP_WAIT_POLICY or GOMP_SPINCOUNT still wins.
  frame::runtime::use_recommended_wait_policy(argv);
  CLI::App app{
      "frame: a C++20 graph engine (ONNX import, compiler passes, cpu and onednn backends)",
      "frame"};
  app.require_subcommand(1);
  bool version_flag = false;  // handled before parsing (below); declared for --help
  app.add_flag("--version", version_flag, "Print the version, git revision and backends, and exit");
  for (auto& c : frame::cli::commands()) c.sub = c.setup(app);
  // `--version` alone is not a usage error even though a verb is otherwise required.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--version") {
      std::printf("frame %s (git %s)\nbackends: %s\n", FRAME_VERSION, FRAME_GIT_REVISION,
                  frame::cli::available_backends().c_str());
      return 0;
    }
  }
  if (argc == 1) {  // no verb: the overview, as a usage error
    std::fputs(app.help().c_str(), stderr);
    return frame::cli::kExitUsage;
  }
  if (int rc = check_verb(argc, argv, app); rc != 0) return rc;
  // Usage errors exit with 2 (frame::cli exit codes), not CLI11's per-error codes.
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string verb = verb_of(argc, argv);
    const std::string who = verb.empty() ? "frame" : "frame " + verb;
    std::fprintf(stderr, "%s: %s (see %s --help)\n", who.c_str(), e.what(), who.c_str());
    return frame::cli::kExitUsage;
  }
  for (auto& c : frame::cli::commands()) {
    if (c.sub != nullptr && c.sub->parsed()) return c.run();
  }
  return frame::cli::kExitUsage;
}
