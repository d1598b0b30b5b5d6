#pragma once
// Subcommands of the `frame` command line. Each verb lives in its own cmd_<verb>.cpp and
// registers itself here; main.cpp only parses and dispatches.

#include <CLI/CLI.hpp>
#include <cstdlib>
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

/// Environment variable the intel_gpu backend reads to choose its OpenCL device
/// (docs/backends/intel-gpu.md, "Device selection").
inline constexpr const char* kOpenclDeviceEnv = "FRAME_OPENCL_DEVICE";

/// Adds `--opencl-device SUBSTRING` to a verb (docs/cli.md): sets kOpenclDeviceEnv for this
/// process while the command line is parsed, so before the verb runs and before any backend
/// probes its devices (intel_gpu chooses its device once per process, on first use). Overrides
/// the variable from the environment. An empty value is a usage error.
inline CLI::Option* add_opencl_device_option(CLI::App* sub) {
  return sub
      ->add_option_function<std::string>(
          "--opencl-device", [](const std::string& v) { setenv(kOpenclDeviceEnv, v.c_str(), 1); },
          "intel_gpu: use the OpenCL device whose '<platform> / <device>' name contains "
          "SUBSTRING (case-insensitive; sets FRAME_OPENCL_DEVICE)")
      ->type_name("SUBSTRING")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return v.empty() ? "expected a non-empty device name substring" : "";
          },
          ""));
}

/// Adds `--backend CHAIN`, `--opencl-device` and `--plugin LIB` (repeatable), in that order: the
/// options that choose what `frame inspect` and `frame viz` compile a model for.
inline void add_backend_options(CLI::App* sub, std::string& backend,
                                std::vector<std::string>& plugins) {
  sub->add_option("--backend", backend,
                  "Backend chain, comma-separated (e.g. onednn,cpu); default auto = "
                  "the optimized backends built here, then cpu");
  add_opencl_device_option(sub);
  sub->add_option("--plugin", plugins,
                  "Shared library whose ops, kernels and ONNX mappings to load first "
                  "(repeatable)");
}

/// Exit codes: 0 success, 1 runtime/model error, 2 usage error.
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;

}  // namespace frame::cli
