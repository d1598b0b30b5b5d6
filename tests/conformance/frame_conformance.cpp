// frame_conformance: runs ONNX backend node-test cases through frame on the cpu backend.
//
//   frame_conformance --cases CASES.tsv --results RESULTS.tsv [--timeout S] [--filter SUBSTR]
//
// CASES.tsv lists one case directory per line (written by run_conformance.py, which applies
// classify.py's skip list). For each case: open model.onnx as a runtime::Session on "cpu" (or
// FRAME_CONFORMANCE_BACKENDS), feed test_data_set_*/input_*.pb as the inputs they name, exactly
// as the suite ships them, and compare with output_*.pb under the BUILD-011 op tolerance.
// Each case runs in a forked child so a crash or hang fails that case only. RESULTS.tsv gets
// "case<TAB>pass|fail<TAB>stage<TAB>message" per case.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "common/tolerance.h"
#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/runtime/session.h"

namespace fs = std::filesystem;
using frame::Result;
using frame::Status;
using frame::Tensor;

namespace {

struct Outcome {
  bool pass = false;
  std::string stage;  // load, compile, data, run, compare
  std::string message;
};

std::vector<fs::path> sorted_files(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (int i = 0;; ++i) {
    fs::path p = dir / (prefix + std::to_string(i) + ".pb");
    if (!fs::exists(p)) break;
    out.push_back(p);
  }
  return out;
}

std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  }
  if (s.size() > 600) s = s.substr(0, 600) + "...";
  return s;
}

// The backend chain: FRAME_CONFORMANCE_BACKENDS ("auto", "onednn,cpu", ...) runs the suite on
// another chain; the default is the cpu reference backend.
std::vector<std::string> backends() {
  std::vector<std::string> out = {"cpu"};
  if (const char* b = std::getenv("FRAME_CONFORMANCE_BACKENDS"); b != nullptr && *b != '\0') {
    out.clear();
    std::string list = b;
    for (size_t pos = 0; pos <= list.size();) {
      const size_t comma = std::min(list.find(',', pos), list.size());
      if (comma > pos) out.push_back(list.substr(pos, comma - pos));
      pos = comma + 1;
    }
  }
  return out;
}

// Compares one output value (a tensor, a sequence of tensors or an absent optional).
std::optional<std::string> compare_value(const frame::runtime::Value& got,
                                         const frame::runtime::Value& want) {
  if (got.kind != want.kind) {
    return fmt::format("got {}, expected {}", got.to_string(), want.to_string());
  }
  if (want.is_none()) return std::nullopt;
  if (want.is_tensor()) {
    frame::test::CompareResult c = frame::test::compare_tensors(
        got.tensor, want.tensor, frame::test::tolerance_for(want.tensor.dtype()));
    return c.ok ? std::nullopt : std::optional<std::string>(c.message);
  }
  if (got.sequence.size() != want.sequence.size()) {
    return fmt::format("a sequence of {} elements, expected {}", got.sequence.size(),
                       want.sequence.size());
  }
  for (size_t k = 0; k < want.sequence.size(); ++k) {
    frame::test::CompareResult c = frame::test::compare_tensors(
        got.sequence[k], want.sequence[k], frame::test::tolerance_for(want.sequence[k].dtype()));
    if (!c.ok) return fmt::format("element {}: {}", k, c.message);
  }
  return std::nullopt;
}

// One test_data_set: every input_N.pb is fed as the graph input it names, exactly as the suite
// ships it (nothing is bound as a constant by the harness; the session specializes, ADR 0006).
// Sequence and optional inputs and outputs are SequenceProto / OptionalProto files.
Outcome run_set(const frame::runtime::Session& session, const fs::path& data) {
  frame::runtime::ValueMap feeds;
  const auto& inputs = session.inputs();
  const auto in_files = sorted_files(data, "input_");
  for (size_t i = 0; i < in_files.size(); ++i) {
    if (i >= inputs.size()) {
      return {
          false, "data",
          fmt::format("{} input files, the model has {} inputs", in_files.size(), inputs.size())};
    }
    // Input files follow the graph's input order and usually carry its name.
    std::string name;
    Result<frame::runtime::Value> v =
        frame::onnx::read_value_proto(in_files[i].string(), inputs[i], &name);
    if (!v.is_ok()) return {false, "data", v.status().message()};
    feeds[name.empty() ? inputs[i].name : name] = std::move(*v);
  }
  // A staged model (data-dependent shapes, ADR 0008) compiles its stages during the run.
  if (!session.is_staged()) {
    frame::runtime::TensorMap tensors;
    for (const auto& [name, v] : feeds) tensors[name] = v.tensor;
    Result<frame::runtime::Executable> exe = session.prepare(tensors);
    if (!exe.is_ok()) return {false, "compile", exe.status().message()};
  }
  Result<frame::runtime::ValueMap> out = session.run_values(feeds);
  if (!out.is_ok()) return {false, "run", out.status().message()};
  const auto out_files = sorted_files(data, "output_");
  const auto& declared = session.outputs();
  if (out_files.size() != declared.size()) {
    return {
        false, "compare",
        fmt::format("{} expected outputs, the model has {}", out_files.size(), declared.size())};
  }
  for (size_t i = 0; i < out_files.size(); ++i) {
    Result<frame::runtime::Value> e =
        frame::onnx::read_value_proto(out_files[i].string(), declared[i]);
    if (!e.is_ok()) return {false, "data", e.status().message()};
    auto it = out->find(declared[i].name);
    if (it == out->end()) {
      return {false, "compare", fmt::format("output {} '{}' missing", i, declared[i].name)};
    }
    if (std::optional<std::string> diff = compare_value(it->second, *e)) {
      return {false, "compare", fmt::format("output {} '{}': {}", i, declared[i].name, *diff)};
    }
  }
  return {true, "", ""};
}

// One session per case, shared by its data sets (a later set with other shapes or values gets
// its own specialization).
Outcome run_case(const fs::path& dir) {
  frame::runtime::SessionOptions so;
  so.compile.backends = backends();
  so.compile.num_threads = 1;
  Result<frame::runtime::Session> session =
      frame::onnx::open_session((dir / "model.onnx").string(), so);
  int sets = 0;
  for (int set = 0;; ++set) {
    const fs::path data = dir / ("test_data_set_" + std::to_string(set));
    if (!fs::is_directory(data)) break;
    ++sets;
    if (!session.is_ok()) return {false, "load", session.status().message()};
    Outcome o = run_set(*session, data);
    if (!o.pass) return o;
  }
  if (sets == 0) return {false, "data", "no test_data_set_* directory"};
  return {true, "", ""};
}

// Runs one case in a child process; a crash, abort or timeout fails the case.
Outcome run_isolated(const fs::path& dir, int timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return {false, "harness", "pipe failed"};
  const pid_t pid = fork();
  if (pid < 0) return {false, "harness", "fork failed"};
  if (pid == 0) {
    close(fds[0]);
    Outcome o = run_case(dir);
    std::string msg = (o.pass ? "pass\t" : "fail\t") + o.stage + "\t" + one_line(o.message);
    size_t off = 0;
    while (off < msg.size()) {
      const ssize_t w = write(fds[1], msg.data() + off, msg.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
    _exit(0);
  }
  close(fds[1]);
  std::string buf;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  if (timed_out) return {false, "timeout", fmt::format("no result after {} s", timeout_s)};
  if (WIFSIGNALED(status)) {
    return {false, "crash",
            fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)))};
  }
  if (buf.empty()) return {false, "crash", "no result from the child process"};
  Outcome o;
  const size_t t1 = buf.find('\t');
  const size_t t2 = buf.find('\t', t1 + 1);
  o.pass = buf.substr(0, t1) == "pass";
  o.stage = buf.substr(t1 + 1, t2 - t1 - 1);
  o.message = buf.substr(t2 + 1);
  return o;
}

int usage() {
  std::fprintf(stderr,
               "usage: frame_conformance --cases CASES.tsv --results RESULTS.tsv "
               "[--timeout S] [--filter SUBSTR]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string cases_path;
  std::string results_path;
  std::string filter;
  int timeout_s = 120;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage();
    if (a == "--cases") {
      cases_path = argv[++i];
    } else if (a == "--results") {
      results_path = argv[++i];
    } else if (a == "--timeout") {
      timeout_s = std::atoi(argv[++i]);
    } else if (a == "--filter") {
      filter = argv[++i];
    } else {
      return usage();
    }
  }
  if (cases_path.empty() || results_path.empty() || timeout_s <= 0) return usage();
  std::ifstream cases(cases_path);
  if (!cases) {
    std::fprintf(stderr, "frame_conformance: cannot read %s\n", cases_path.c_str());
    return 1;
  }
  std::ofstream results(results_path);
  if (!results) {
    std::fprintf(stderr, "frame_conformance: cannot write %s\n", results_path.c_str());
    return 1;
  }
  std::string line;
  int passed = 0;
  int failed = 0;
  while (std::getline(cases, line)) {
    if (line.empty() || line[0] == '#') continue;
    const fs::path dir(line);
    const std::string name = dir.filename().string();
    if (!filter.empty() && name.find(filter) == std::string::npos) continue;
    Outcome o = run_isolated(dir, timeout_s);
    (o.pass ? passed : failed)++;
    results << name << '\t' << (o.pass ? "pass" : "fail") << '\t' << o.stage << '\t'
            << one_line(o.message) << '\n';
    results.flush();
  }
  std::printf("frame_conformance: %d passed, %d failed\n", passed, failed);
  return 0;
}
