#pragma once
// Subcommands of the `frame` command line. Each verb lives in its own cmd_<verb>.cpp and
// registers itself here; main.cpp only parses and dispatches.

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace frame::cli {

/// A verb: `setup` adds its options to the app and returns the subcommand; `run` is called
/// when it was chosen and returns the process exit code.
struct Command {
  std::function<CLI::App*(CLI::App&)> setup;
  std::function<int()> run;
  CLI::App* sub = nullptr;
};

/// The registered verbs (static registration, like ops).
std::vector<Command>& commands();

struct CommandRegistration {
  explicit CommandRegistration(Command c) { commands().push_back(std::move(c)); }
};

/// Exit codes: 0 success, 1 runtime/model error, 2 usage error.
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

}  // namespace frame::cli
