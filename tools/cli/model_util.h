#pragma once
// Helpers shared by the model verbs (`frame run`, `frame inspect`): option parsing, the
// bundled model's location, random inputs, output summaries and a progress line.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/types.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/session.h"

namespace frame::cli {

/// Parses "NAME=d0,d1,..." entries (an empty dim list is a scalar). Errors: kInvalidArgument
/// naming the bad entry.
Result<std::map<std::string, Shape>> parse_shapes(const std::vector<std::string>& specs);
/// Parses "NAME=FILE" entries.
Result<std::map<std::string, std::string>> parse_inputs(const std::vector<std::string>& specs);
/// Backend chain for --backend: a comma-separated list ("onednn,cpu"); "auto" = the optimized
/// backends of this build, then cpu (runtime::resolve_backends). Errors: kInvalidArgument for
/// an empty item, kNotFound for an unknown name listing the available backends; messages start
/// with `option` ("--backend: ").
Result<std::vector<std::string>> backends_for(const std::string& flag,
                                              std::string_view option = "--backend");

/// Parses a --max-memory value: a byte count with an optional suffix K, M, G or T (powers of
/// 1024; "KB", "KiB" and lower case accepted), e.g. "512M", "4G", "1073741824". Errors:
/// kInvalidArgument naming the text (no digits, unknown suffix, more than 2^64 bytes).
Result<size_t> parse_byte_size(const std::string& text);
/// --max-memory BYTES: sets CompileOptions::max_memory_bytes and LoadLimits::
/// max_initializer_bytes to `max_memory`, and caps both max_tensor_bytes by it
/// (docs/security.md).
void apply_memory_limit(size_t max_memory, runtime::CompileOptions& compile,
                        onnx::LoadLimits& load);
/// Loads each `--plugin` library in order (runtime::load_plugin: its ops, kernels and ONNX
/// mappings register all or nothing). Errors: the first plugin that fails, naming its path.
Status load_plugins(const std::vector<std::string>& paths);

/// Files of the model bundled with frame (models/small_cnn.*).
struct BundledModel {
  std::filesystem::path model;
  std::filesystem::path input;
  std::filesystem::path expected;
};
/// Looks in the source tree the binary was built from, next to the binary, and in the
/// install share directory. Errors: kNotFound listing the places searched.
Result<BundledModel> find_bundled_model();

/// A tensor of `type` filled from a fixed-seed generator: floats ~ N(0, 1), integers in
/// [0, 4), bools fair coin. Same seed, same values. Errors: those of Tensor::empty (a shape
/// whose byte count overflows or cannot be allocated).
Result<Tensor> random_tensor(const ir::TensorType& type, uint64_t seed);
/// "min -0.53 max 1.2 mean 0.01 first [0.1, 0.2, ...]" over at most `n_first` values.
std::string summarize(const Tensor& t, int n_first = 6);
/// Summary statistics for JSON output.
struct Stats {
  double min = 0, max = 0, mean = 0;
  std::vector<double> first;
};
Stats tensor_stats(const Tensor& t, int n_first = 6);
/// Output file stem: characters outside [A-Za-z0-9._-] become '_'.
std::string sanitize_file_name(const std::string& name);
/// File stems for `names` (outputs, in order), unique within the list: sanitize_file_name, and
/// a stem taken by an earlier name gets "_2", "_3", ... (outputs 'a/b' and 'a_b' would both
/// be a_b otherwise, and the second file would overwrite the first).
std::vector<std::string> unique_file_stems(const std::vector<std::string>& names);

/// Writes `data` to `path` through a temporary file in the same directory, checking every
/// write and the close, then renames it over `path`: on an error the temporary file is
/// removed and an existing `path` is left as it was. Errors: kIo naming `path` and the reason.
Status write_file_replacing(const std::string& path, std::string_view data);

/// Reports a bad option value (docs/cli.md: exit 2): prints "frame VERB: MESSAGE" on stderr
/// and returns kExitUsage.
int usage_error(const std::string& verb, const Status& s);

/// Largest |a - b| over elements (shapes must match; returns +inf otherwise).
double max_abs_error(const Tensor& a, const Tensor& b);

/// Prints "frame: <what>..." on stderr when the step is still running after one second, and
/// "frame: <what> done in X s" when it then finishes. RAII; cheap for fast steps.
class Progress {
 public:
  explicit Progress(std::string what);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  std::string what_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  bool announced_ = false;
  std::thread watcher_;
};

/// A text table whose columns are as wide as their longest cell (header included), so long
/// op or node names never push later columns out of line. The last column is not padded.
class Table {
 public:
  /// `right[i]`: column i is right-aligned (numbers); missing entries mean left-aligned.
  explicit Table(std::vector<std::string> header, std::vector<bool> right = {});
  /// Adds a row; missing cells print empty, extra cells are ignored.
  void add(std::vector<std::string> row);
  /// Adds a line printed as is (after `indent`) below the last row, outside the columns.
  void note(std::string line);
  /// Prints the header and the rows, each line prefixed with `indent` and cells separated by
  /// two spaces.
  void print(const std::string& indent = "  ") const;

 private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  // Each row's cells and the notes printed after it.
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> rows_;
};

/// Seconds since `t0`.
inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Fills `inputs` with a tensor for every input of `session` without one: random values (a
/// fixed seed per input position, random_tensor) of the --shape given, else of the declared
/// static shape. A shape-determining input (ADR 0006) needs its value from a file. Returns the
/// names of the inputs given random values. Errors: kInvalidArgument naming the input and what
/// to pass (unknown --input/--shape name, --shape disagreeing with a file, a symbolic dim
/// without --shape, a shape-determining input without a file).
Result<std::vector<std::string>> complete_inputs(const runtime::Session& session,
                                                 const std::map<std::string, Shape>& shapes,
                                                 runtime::TensorMap& inputs);
/// Reads the `--input NAME=FILE.npy` files of `files` into a tensor map. Errors: the .npy
/// reader's, prefixed with "--input NAME: ".
Result<runtime::TensorMap> read_input_files(const std::map<std::string, std::string>& files);

/// Reads `--input` values for a model with sequence or optional inputs (docs/cli.md): `none`
/// is an absent optional, a directory is a sequence of its 0.npy, 1.npy, ... (in order, up to
/// the first number missing; `elem_dtype` set from the first, or from the declared input when
/// empty), any other path a .npy tensor. Errors: the .npy reader's, prefixed with
/// "--input NAME: ".
Result<runtime::ValueMap> read_input_values(const std::map<std::string, std::string>& files,
                                            const runtime::Session& session);

/// complete_inputs for values: inputs without a value get random ones (a sequence input a
/// one-element sequence of the declared element shape, an optional input a present tensor).
Result<std::vector<std::string>> complete_input_values(const runtime::Session& session,
                                                       const std::map<std::string, Shape>& shapes,
                                                       runtime::ValueMap& inputs);

/// Whether a model takes or returns a sequence or optional (then it runs with run_values()).
bool has_non_tensor_values(const runtime::Session& session);

}  // namespace frame::cli
