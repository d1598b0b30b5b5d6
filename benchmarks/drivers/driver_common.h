#pragma once
/// \file
/// What the frame and ONNX Runtime benchmark drivers share, so both measure the same way:
/// the command line, the clock, peak RSS, and the one result line compare.py parses.
///
/// Command line (both drivers):
///   --model PATH          the .onnx file
///   --threads N           intra-op threads (default 1)
///   --warmup W --runs R   untimed then timed runs (defaults 3 and 10)
///   --warmup-ms T         keep warming up until T milliseconds have passed too (default 0):
///                         runs right after a process's start are slower for a while on the
///                         machines measured (SqueezeNet 1.1 on frame: 5-6 ms for the first
///                         ~20 runs, then 3.6-3.8; ONNX Runtime alike), so W runs alone favour
///                         the engine whose session creation took longer
///   --idle-ms T           length of the idle window after the timed runs in which CPU use
///                         between runs is measured (default 200; 0 skips it and reports no
///                         idle_cpu_pct: warm_start.py times a process from start to exit, and
///                         the window, which comes after the first result, is not part of that)
///   --input NAME=FILE     a graph input from an .npy file (repeat per input)
///   --output NAME=D0,D1   a graph output and its shape (the ORT driver binds a buffer of
///                         that shape; the frame driver checks it)
///   --save-dir DIR        after the last run, write each output to DIR/NAME.npy
///   --lib PATH            the ORT driver: libonnxruntime.so.1 to load
///   --session             the frame driver: run through a Session (onnx::open_session, the
///                         path of `frame run` and Python; symbolic dims take the input's
///                         shape); compile_ms is its prepare()
///   --cache-dir DIR       the frame driver: a Session (as --session) with this compile cache
///                         on disk (SessionOptions::cache_dir)
///   --save-optimized PATH the ORT driver: write the optimized model file at session creation
///   --opt-level N         the ORT driver: graph optimization level (default 99, all)
/// Stream mode (varying shapes), instead of --input, --warmup and --runs:
///   --stream MANIFEST     one run per line, `NAME=FILE.npy[;NAME=FILE.npy...]` (blank lines
///                         and lines starting with '#' skipped; a relative FILE is relative to
///                         the manifest's folder). Every file is read before the first run;
///                         then each line runs once, in order, timed, with the engine
///                         allocating the outputs (their shapes change from run to run).
///                         --warmup and --runs are refused: there is no untimed run.
///   --passes P            run the whole manifest P times in one process (default 1); a later
///                         pass shows the steady state once every shape has been seen
///   --save-every K        with --save-dir DIR: write the outputs of manifest lines 0, K, 2K,
///                         ... of every pass to DIR/run<i>_<NAME>.npy, i the run's index over
///                         all passes (i = pass * lines + line); written after that run's
///                         timing, and such a run's outputs are released untimed
/// Result: one line `RESULT {json}` on stdout with engine, version, load_ms, compile_ms,
/// run_ms (every timed run, in order; in stream mode every run of every pass) and max_rss_kib
/// (peak RSS, see max_rss_kib()); outside stream mode also cpu_ms_per_run and idle_cpu_pct
/// (CpuUse). In stream mode it also has "stream_runs" (manifest lines) and "passes".

#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace bench {

/// Parsed driver command line.
struct DriverArgs {
  std::string model;
  int threads = 1;
  int warmup = 3;
  double warmup_ms = 0;  ///< --warmup-ms: minimum warm-up time
  double idle_ms = 200;  ///< --idle-ms: idle window after the timed runs (0: none)
  int runs = 10;
  std::vector<std::pair<std::string, std::string>> inputs;            ///< name, .npy path
  std::vector<std::pair<std::string, std::vector<int64_t>>> outputs;  ///< name, shape
  std::string save_dir;
  std::string lib;
  bool session = false;        ///< --session or --cache-dir (frame driver)
  std::string cache_dir;       ///< --cache-dir (frame driver)
  std::string save_optimized;  ///< --save-optimized (ORT driver)
  int opt_level = -1;          ///< --opt-level (ORT driver); -1 = all optimizations
  std::string profile;         ///< --profile PREFIX (ORT driver): ORT's per-node profile
  std::string stream;          ///< --stream manifest; empty outside stream mode
  int passes = 1;              ///< --passes: times the manifest is run (stream mode)
  int save_every = 0;  ///< --save-every: save every K-th line's outputs (stream mode); 0 = none
};

/// One line of a stream manifest: the graph inputs of one run, name -> .npy path.
using StreamRun = std::vector<std::pair<std::string, std::string>>;

/// Splits "NAME=VALUE" at the last '=' (ONNX names may contain '=' rarely, paths never do).
inline std::pair<std::string, std::string> split_pair(const std::string& s) {
  size_t p = s.rfind('=');
  if (p == std::string::npos) throw std::runtime_error("expected NAME=VALUE, got '" + s + "'");
  return {s.substr(0, p), s.substr(p + 1)};
}

/// Parses argv; throws std::runtime_error with a usage hint on a bad command line.
inline DriverArgs parse_args(int argc, char** argv) {
  DriverArgs a;
  bool counts_given = false;  // --warmup or --runs, which stream mode refuses
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--session") {  // the one flag without a value
      a.session = true;
      continue;
    }
    if (i + 1 >= argc) throw std::runtime_error("option " + k + " needs a value");
    std::string v = argv[++i];
    if (k == "--model") {
      a.model = v;
    } else if (k == "--threads") {
      a.threads = std::stoi(v);
    } else if (k == "--warmup") {
      a.warmup = std::stoi(v);
      counts_given = true;
    } else if (k == "--warmup-ms") {
      a.warmup_ms = std::stod(v);
      counts_given = true;
    } else if (k == "--idle-ms") {
      a.idle_ms = std::stod(v);
      if (!(a.idle_ms >= 0)) throw std::runtime_error("--idle-ms must be at least 0");
    } else if (k == "--runs") {
      a.runs = std::stoi(v);
      counts_given = true;
    } else if (k == "--input") {
      a.inputs.push_back(split_pair(v));
    } else if (k == "--output") {
      auto [name, dims] = split_pair(v);
      std::vector<int64_t> shape;
      size_t start = 0;
      while (start < dims.size()) {
        size_t end = dims.find(',', start);
        if (end == std::string::npos) end = dims.size();
        shape.push_back(std::stoll(dims.substr(start, end - start)));
        start = end + 1;
      }
      a.outputs.emplace_back(name, shape);
    } else if (k == "--save-dir") {
      a.save_dir = v;
    } else if (k == "--lib") {
      a.lib = v;
    } else if (k == "--cache-dir") {
      a.cache_dir = v;
      a.session = true;
    } else if (k == "--save-optimized") {
      a.save_optimized = v;
    } else if (k == "--opt-level") {
      a.opt_level = std::stoi(v);
    } else if (k == "--profile") {
      a.profile = v;
    } else if (k == "--stream") {
      a.stream = v;
    } else if (k == "--passes") {
      a.passes = std::stoi(v);
    } else if (k == "--save-every") {
      a.save_every = std::stoi(v);
    } else {
      throw std::runtime_error("unknown option " + k);
    }
  }
  const char* usage =
      "usage: --model PATH --input NAME=FILE.npy [--output NAME=D0,D1] [--threads N] "
      "[--warmup W] [--warmup-ms T] [--runs R] [--idle-ms T] [--save-dir DIR]\n"
      "   or: --model PATH --stream MANIFEST [--passes P] [--threads N] "
      "[--save-every K --save-dir DIR]";
  if (a.model.empty()) throw std::runtime_error(usage);
  if (!a.stream.empty()) {
    if (!a.inputs.empty()) {
      throw std::runtime_error(
          "--stream and --input exclude each other: the manifest names "
          "every run's inputs");
    }
    if (counts_given) {
      throw std::runtime_error(
          "--warmup and --runs do not apply with --stream: every manifest "
          "line runs once per pass, timed (use --passes for more)");
    }
    if (a.passes < 1) throw std::runtime_error("--passes must be at least 1");
    if (a.save_every < 0) throw std::runtime_error("--save-every must be at least 0");
    if (a.save_every > 0 && a.save_dir.empty()) {
      throw std::runtime_error("--save-every K needs --save-dir DIR (where the outputs go)");
    }
    return a;
  }
  if (a.passes != 1 || a.save_every != 0) {
    throw std::runtime_error("--passes and --save-every apply only with --stream");
  }
  if (a.inputs.empty() || a.runs < 1) throw std::runtime_error(usage);
  return a;
}

/// Reads a stream manifest (see the file comment): one StreamRun per non-blank, non-comment
/// line, in order. Relative .npy paths are resolved against the manifest's folder. Throws
/// std::runtime_error naming the file and line on a malformed line, or when the manifest has
/// no run.
inline std::vector<StreamRun> read_manifest(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open stream manifest " + path);
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  std::vector<StreamRun> runs;
  std::string line;
  for (int number = 1; std::getline(f, line); ++number) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const size_t last = line.find_last_not_of(" \t\r");
    line = line.substr(first, last - first + 1);
    StreamRun run;
    size_t start = 0;
    while (start <= line.size()) {
      size_t end = line.find(';', start);
      if (end == std::string::npos) end = line.size();
      const std::string item = line.substr(start, end - start);
      const size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == item.size()) {
        throw std::runtime_error(path + ":" + std::to_string(number) +
                                 ": expected NAME=FILE.npy[;NAME=FILE.npy...], got '" + item + "'");
      }
      std::string file = item.substr(eq + 1);
      if (file[0] != '/') file = dir + file;
      run.emplace_back(item.substr(0, eq), file);
      start = end + 1;
    }
    runs.push_back(std::move(run));
  }
  if (runs.empty()) throw std::runtime_error("stream manifest " + path + " has no run");
  return runs;
}

/// Whether run `i` of a stream (index over all passes, `lines` manifest lines per pass) has its
/// outputs saved under --save-every.
inline bool saves_run(const DriverArgs& args, size_t i, size_t lines) {
  return args.save_every > 0 && (i % lines) % static_cast<size_t>(args.save_every) == 0;
}

/// CPU time this process has used so far (every thread), in ms.
inline double process_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

/// CPU use measured by timed_runs: CPU ms per timed run (all threads; wall time x busy
/// threads) and CPU use in the idle window after them, in percent of one core.
struct CpuUse {
  bool measured = false;
  double per_run_ms = 0;
  double idle_pct = 0;
};
inline CpuUse& cpu_use() {
  static CpuUse u;
  return u;
}

/// Milliseconds since `t0` on the monotonic clock.
inline double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// Runs `run_once` untimed args.warmup times and until args.warmup_ms have passed, then
/// args.runs times; returns each timed run's milliseconds.
template <typename F>
std::vector<double> timed_runs(const DriverArgs& args, F&& run_once) {
  const auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < args.warmup || ms_since(w0) < args.warmup_ms; ++i) run_once();
  std::vector<double> run_ms;
  const double cpu0 = process_cpu_ms();
  for (int i = 0; i < args.runs; ++i) {
    auto t = std::chrono::steady_clock::now();
    run_once();
    run_ms.push_back(ms_since(t));
  }
  cpu_use().per_run_ms = (process_cpu_ms() - cpu0) / std::max(1, args.runs);
  // Between runs: a caller idle for args.idle_ms right after a run (a server between
  // requests). Threads an engine keeps spinning burn CPU here (ORT's pool spins by default,
  // libgomp spins GOMP_SPINCOUNT iterations before it sleeps).
  cpu_use().measured = true;
  if (args.idle_ms > 0) {
    const double idle0 = process_cpu_ms();
    const auto ns = static_cast<long long>(args.idle_ms * 1e6);
    const timespec pause{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
    nanosleep(&pause, nullptr);
    cpu_use().idle_pct = 100.0 * (process_cpu_ms() - idle0) / args.idle_ms;
  } else {
    cpu_use().idle_pct = -1;  // not measured
  }
  return run_ms;
}

/// Peak resident set size of this process so far, in KiB: VmHWM of /proc/self/status.
/// Not getrusage's ru_maxrss: Linux keeps that across fork + exec, so a driver started by a
/// large parent (compare.py with torch loaded) would report the parent's peak.
inline long max_rss_kib() {
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    long kib = -1;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (std::sscanf(line, "VmHWM: %ld kB", &kib) == 1) break;
    }
    std::fclose(f);
    if (kib >= 0) return kib;
  }
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

/// Prints the RESULT line. `extra` is a JSON fragment without braces appended as-is
/// (e.g. "\"placements\": {...}") or empty.
inline void print_result(const std::string& engine, const std::string& version, double load_ms,
                         double compile_ms, const std::vector<double>& run_ms,
                         const std::string& extra) {
  std::string runs;
  for (double r : run_ms) runs += (runs.empty() ? "" : ",") + std::to_string(r);
  char cpu[128] = "";
  if (cpu_use().measured) {
    std::snprintf(cpu, sizeof cpu, ", \"cpu_ms_per_run\": %.4f, \"idle_cpu_pct\": %.2f",
                  cpu_use().per_run_ms, cpu_use().idle_pct);
  }
  std::printf(
      "RESULT {\"engine\": \"%s\", \"version\": \"%s\", \"load_ms\": %.4f, \"compile_ms\": "
      "%.4f, \"run_ms\": [%s], \"max_rss_kib\": %ld%s%s%s}\n",
      engine.c_str(), version.c_str(), load_ms, compile_ms, runs.c_str(), max_rss_kib(), cpu,
      extra.empty() ? "" : ", ", extra.c_str());
  std::fflush(stdout);
}

/// A driver's main(): parses argv and returns `run(args)`; an exception (a bad command line, a
/// failed load or run) is printed as "`name`: what" on stderr and exits 1.
template <typename Run>
int driver_main(const char* name, int argc, char** argv, Run run) {
  try {
    return run(parse_args(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace bench
