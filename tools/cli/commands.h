#pragma once
// Subcommands of the `frame` command line. Each verb lives in its own cmd_<verb>.cpp and
// registers itself here; main.cpp only parses and dispatches.

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
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

/// Names of the backends this build has that can run on this machine, comma-separated
/// (`frame --version`).
std::string available_backends();

/// CLI11 check for an integer option in [lo, hi]: the message names the bad value and the
/// accepted range ("--threads: expected an integer from 0 to 4096, got 'abc'").
inline CLI::Validator int_in_range(long long lo, long long hi) {
  return CLI::Validator(
      [lo, hi](std::string& value) -> std::string {
        long long v = 0;
        size_t used = 0;
        try {
          v = std::stoll(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != value.size() || v < lo || v > hi) {
          return "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                 ", got '" + value + "'";
        }
        return {};
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

/// Exit codes: 0 success, 1 runtime/model error, 2 usage error.
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

}  // namespace frame::cli
