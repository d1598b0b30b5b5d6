// Helpers of the model verbs; see model_util.h.
#include "model_util.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <set>
#include <sstream>

#include "commands.h"
#include "frame/core/npy.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/plugin.h"
#include "frame/runtime/session.h"

namespace frame::cli {

Result<std::map<std::string, Shape>> parse_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Shape> out;
  for (const std::string& s : specs) {
    const size_t eq = s.rfind('=');
    if (eq == std::string::npos || eq == 0) {
      return invalid_argument("--shape '{}': expected NAME=d0,d1,...", s);
    }
    Shape dims;
    std::stringstream ss(s.substr(eq + 1));
    std::string tok;
    while (std::getline(ss, tok, ',')) {
      size_t used = 0;
      int64_t d = -1;
      try {
        d = std::stoll(tok, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != tok.size() || d < 0) {
        return invalid_argument("--shape '{}': dim '{}' is not a non-negative integer", s, tok);
      }
      dims.push_back(d);
    }
    if (!out.emplace(s.substr(0, eq), std::move(dims)).second) {
      return invalid_argument("--shape {}: given twice", s.substr(0, eq));
    }
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_inputs(const std::vector<std::string>& specs) {
  std::map<std::string, std::string> out;
  for (const std::string& s : specs) {
    const size_t eq = s.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == s.size()) {
      return invalid_argument("--input '{}': expected NAME=FILE.npy", s);
    }
    const std::string name = s.substr(0, eq);
    if (!out.emplace(name, s.substr(eq + 1)).second) {
      return invalid_argument("--input {}: given twice ('{}' and '{}')", name, out[name],
                              s.substr(eq + 1));
    }
  }
  return out;
}

Result<std::vector<std::string>> backends_for(const std::string& flag, std::string_view option) {
  Result<std::vector<std::string>> list = runtime::parse_backend_list(flag);
  if (!list.is_ok()) return list.status().with_prefix(fmt::format("{}: ", option));
  Result<std::vector<std::string>> chain = runtime::resolve_backends(*list);
  if (!chain.is_ok()) return chain.status().with_prefix(fmt::format("{}: ", option));
  return chain;
}

Status load_plugins(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    Result<runtime::PluginInfo> info = runtime::load_plugin(p);
    if (!info.is_ok()) return info.status();
  }
  return Status();
}

namespace {

std::filesystem::path self_dir() {
  std::error_code ec;
  std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::filesystem::path() : exe.parent_path();
}

}  // namespace

Result<BundledModel> find_bundled_model() {
  std::vector<std::filesystem::path> dirs;
#ifdef FRAME_SOURCE_DIR
  dirs.push_back(std::filesystem::path(FRAME_SOURCE_DIR) / "models");
#endif
  const std::filesystem::path exe = self_dir();
  if (!exe.empty()) {
    dirs.push_back(exe / "models");
    dirs.push_back(exe.parent_path() / "share" / "frame" / "models");
  }
#ifdef FRAME_INSTALL_DATADIR
  dirs.push_back(std::filesystem::path(FRAME_INSTALL_DATADIR) / "models");
#endif
  std::string searched;
  for (const auto& d : dirs) {
    std::error_code ec;
    BundledModel m{d / "small_cnn.onnx", d / "small_cnn.input.npy", d / "small_cnn.expected.npy"};
    if (std::filesystem::is_regular_file(m.model, ec) &&
        std::filesystem::is_regular_file(m.input, ec)) {
      return m;
    }
    searched += (searched.empty() ? "" : ", ") + d.string();
  }
  return not_found("the bundled model small_cnn.onnx was not found (searched: {})", searched);
}

Result<size_t> parse_byte_size(const std::string& text) {
  size_t i = 0;
  uint64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t digit = static_cast<uint64_t>(text[i] - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      return invalid_argument("byte size '{}' is too large", text);
    }
    value = value * 10 + digit;
  }
  std::string unit = text.substr(i);
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'B') unit.pop_back();
  if (unit.size() == 2 && unit[1] == 'I') unit.pop_back();
  int shift = -1;
  if (unit.empty()) shift = 0;
  if (unit == "K") shift = 10;
  if (unit == "M") shift = 20;
  if (unit == "G") shift = 30;
  if (unit == "T") shift = 40;
  if (i == 0 || shift < 0) {
    return invalid_argument(
        "byte size '{}' is not a number with an optional suffix K, M, G or T (powers of 1024), "
        "e.g. 512M or 4G",
        text);
  }
  if (value > (UINT64_MAX >> shift)) return invalid_argument("byte size '{}' is too large", text);
  return static_cast<size_t>(value << shift);
}

void apply_memory_limit(size_t max_memory, runtime::CompileOptions& compile,
                        onnx::LoadLimits& load) {
  compile.max_memory_bytes = max_memory;
  compile.max_tensor_bytes = std::min(compile.max_tensor_bytes, max_memory);
  load.max_initializer_bytes = max_memory;
  load.max_tensor_bytes = std::min(load.max_tensor_bytes, max_memory);
}

Result<Tensor> random_tensor(const ir::TensorType& type, uint64_t seed) {
  FRAME_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(type.dtype, type.shape));
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  std::uniform_int_distribution<int> small(0, 3);
  (void)dispatch_dtype(type.dtype, [&]<typename T>() {
    T* p = t.data<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (small(rng) & 1) != 0;
      } else if constexpr (kIsFloating<T>) {
        p[i] = from_compute<T>(static_cast<compute_t<T>>(normal(rng)));
      } else {
        p[i] = static_cast<T>(small(rng));
      }
    }
  });
  return t;
}

Stats tensor_stats(const Tensor& t, int n_first) {
  Stats s;
  if (t.numel() == 0) return s;
  s.min = std::numeric_limits<double>::infinity();
  s.max = -std::numeric_limits<double>::infinity();
  double sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.element_as_double(i);
    s.min = std::fmin(s.min, v);
    s.max = std::fmax(s.max, v);
    sum += v;
    if (i < n_first) s.first.push_back(v);
  }
  s.mean = sum / static_cast<double>(t.numel());
  return s;
}

std::string summarize(const Tensor& t, int n_first) {
  if (t.numel() == 0) return "empty";
  Stats s = tensor_stats(t, n_first);
  std::string first;
  for (double v : s.first) first += (first.empty() ? "" : ", ") + fmt::format("{:.6g}", v);
  if (t.numel() > n_first) first += ", ...";
  return fmt::format("min {:.6g} max {:.6g} mean {:.6g} first [{}]", s.min, s.max, s.mean, first);
}

std::vector<std::string> unique_file_stems(const std::vector<std::string>& names) {
  std::vector<std::string> out;
  std::set<std::string> taken;
  for (const std::string& name : names) {
    const std::string base = sanitize_file_name(name);
    std::string stem = base;
    for (int k = 2; taken.count(stem) != 0; ++k) stem = base + "_" + std::to_string(k);
    taken.insert(stem);
    out.push_back(stem);
  }
  return out;
}

Status write_file_replacing(const std::string& path, std::string_view data) {
  const std::filesystem::path target(path);
  const std::filesystem::path dir = target.has_parent_path() ? target.parent_path() : ".";
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  const int fd = mkstemp(tmpl.data());
  if (fd < 0) {
    return make_error(StatusCode::kIo, "cannot write '{}': cannot create a file in '{}': {}", path,
                      dir.string(), std::strerror(errno));
  }
  auto fail = [&](const char* step, int err) {
    std::remove(tmpl.c_str());
    return make_error(StatusCode::kIo, "cannot write '{}': {}: {}", path, step, std::strerror(err));
  };
  // mkstemp creates 0600; give the picture the permissions a plain create would.
  const mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0) {
    const int err = errno;
    close(fd);
    return fail("chmod", err);
  }
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      close(fd);
      return fail("write", err);
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0) return fail("close", errno);
  if (std::rename(tmpl.c_str(), path.c_str()) != 0) return fail("rename", errno);
  return Status();
}

int usage_error(const std::string& verb, const Status& s) {
  std::fprintf(stderr, "frame %s: %s\n", verb.c_str(), s.message().c_str());
  return kExitUsage;
}

std::string sanitize_file_name(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) c = '_';
  }
  // "." and ".." would name directories.
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

double max_abs_error(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) return std::numeric_limits<double>::infinity();
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.element_as_double(i);
    const double y = b.element_as_double(i);
    if (std::isnan(x) != std::isnan(y)) return std::numeric_limits<double>::infinity();
    if (!std::isnan(x)) m = std::fmax(m, std::fabs(x - y));
  }
  return m;
}

Progress::Progress(std::string what)
    : what_(std::move(what)), start_(std::chrono::steady_clock::now()) {
  watcher_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, std::chrono::seconds(1), [this] { return done_; })) {
      announced_ = true;
      std::fprintf(stderr, "frame: %s...\n", what_.c_str());
    }
  });
}

Progress::~Progress() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  watcher_.join();
  if (announced_)
    std::fprintf(stderr, "frame: %s done in %.2f s\n", what_.c_str(), seconds_since(start_));
}

Table::Table(std::vector<std::string> header, std::vector<bool> right)
    : header_(std::move(header)), right_(std::move(right)) {
  right_.resize(header_.size(), false);
}

void Table::add(std::vector<std::string> row) {
  row.resize(header_.size());
  rows_.emplace_back(std::move(row), std::vector<std::string>{});
}

void Table::note(std::string line) {
  if (!rows_.empty()) rows_.back().second.push_back(std::move(line));
}

void Table::print(const std::string& indent) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
  };
  measure(header_);
  for (const auto& [row, notes] : rows_) measure(row);
  auto line = [&](const std::vector<std::string>& row) {
    std::string out = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      const bool last = c + 1 == row.size();
      if (c > 0) out += "  ";
      const std::string pad(width[c] - row[c].size(), ' ');
      if (right_[c]) {
        out += pad + row[c];
      } else {
        out += row[c];
        if (!last) out += pad;
      }
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    std::printf("%s\n", out.c_str());
  };
  line(header_);
  for (const auto& [row, notes] : rows_) {
    line(row);
    for (const std::string& n : notes) std::printf("%s%s\n", indent.c_str(), n.c_str());
  }
}

// Fills `inputs` with a tensor for every model input without a file: random values (a fixed
// seed per input position) of the --shape given, else of the declared static shape. A
// shape-determining input needs its value from a file. Returns the names of the random inputs.
// Errors name the input and what to pass.
Result<std::vector<std::string>> complete_inputs(const runtime::Session& session,
                                                 const std::map<std::string, Shape>& shapes,
                                                 runtime::TensorMap& inputs) {
  std::vector<std::string> names;
  for (const runtime::ValueInfo& vi : session.inputs()) names.push_back(vi.name);
  // An overridable initializer (an initializer that is also a graph input) may be fed from a
  // file; without one it keeps its stored value.
  std::vector<std::string> overridable;
  for (const runtime::ValueInfo& vi : session.overridable_inputs()) overridable.push_back(vi.name);
  const auto is_overridable = [&](const std::string& name) {
    return std::find(overridable.begin(), overridable.end(), name) != overridable.end();
  };
  for (const auto& [name, t] : inputs) {
    if (std::find(names.begin(), names.end(), name) == names.end() && !is_overridable(name)) {
      return invalid_argument("--input {}: the model has no input '{}' (inputs: {})", name, name,
                              fmt::join(names, ", "));
    }
  }
  for (const auto& [name, shape] : shapes) {
    if (is_overridable(name) && inputs.count(name) == 0) {
      return invalid_argument(
          "--shape {}: '{}' is an initializer the model lets a run override; feed it with "
          "--input {}=FILE.npy (without one it keeps its stored value)",
          name, name, name);
    }
    if (std::find(names.begin(), names.end(), name) == names.end() && !is_overridable(name)) {
      return invalid_argument("--shape {}: the model has no input '{}' (inputs: {})", name, name,
                              fmt::join(names, ", "));
    }
    auto it = inputs.find(name);
    if (it != inputs.end() && it->second.shape() != shape) {
      return invalid_argument("--shape {}={} disagrees with the shape {} of its --input file", name,
                              fmt::join(shape, ","), shape_to_string(it->second.shape()));
    }
  }
  const std::vector<std::string>& sd = session.shape_determining_inputs();
  std::vector<std::string> random;
  uint64_t seed = 0;
  for (const runtime::ValueInfo& vi : session.inputs()) {
    const uint64_t this_seed = seed++;
    if (inputs.count(vi.name) > 0) continue;
    if (std::find(sd.begin(), sd.end(), vi.name) != sd.end()) {
      return invalid_argument(
          "input '{}' ({}) decides output shapes (ADR 0006): its value is needed; pass "
          "--input {}=FILE.npy",
          vi.name, vi.to_string(), vi.name);
    }
    Shape shape;
    if (auto it = shapes.find(vi.name); it != shapes.end()) {
      shape = it->second;
    } else {
      bool concrete = vi.has_shape;
      for (const runtime::Dim& d : vi.dims) {
        concrete = concrete && d.is_concrete();
        shape.push_back(d.value);
      }
      if (!concrete) {
        return invalid_argument(
            "input '{}' is {}: give a concrete shape with --shape {}=d0,d1,... or its values "
            "with --input {}=FILE.npy",
            vi.name, vi.to_string(), vi.name, vi.name);
      }
    }
    // The model declares these shapes: the tensor limit applies before a byte is allocated.
    const size_t limit = session.options().compile.max_tensor_bytes;
    if (Result<size_t> b = checked_nbytes(vi.dtype, shape); !b.is_ok() || *b > limit) {
      return make_error(StatusCode::kOutOfRange,
                        "input '{}' is {}{}: {} bytes, over the limit of {} bytes per tensor "
                        "(raise it with --max-memory)",
                        vi.name, dtype_name(vi.dtype), shape_to_string(shape),
                        b.is_ok() ? fmt::format("{}", *b) : std::string("more than 2^64"), limit);
    }
    Result<Tensor> t = random_tensor(ir::TensorType{vi.dtype, shape}, this_seed);
    if (!t.is_ok()) return t.status().with_prefix(fmt::format("input '{}': ", vi.name));
    inputs[vi.name] = std::move(*t);
    random.push_back(vi.name);
  }
  return random;
}

Result<runtime::TensorMap> read_input_files(const std::map<std::string, std::string>& files) {
  runtime::TensorMap out;
  for (const auto& [name, path] : files) {
    Result<Tensor> t = read_npy(path);
    if (!t.is_ok()) return t.status().with_prefix(fmt::format("--input {}: ", name));
    out[name] = *t;
  }
  return out;
}

Result<runtime::ValueMap> read_input_values(const std::map<std::string, std::string>& files,
                                            const runtime::Session& session) {
  runtime::ValueMap out;
  for (const auto& [name, path] : files) {
    if (path == "none") {
      out[name] = runtime::Value::none();
      continue;
    }
    if (!std::filesystem::is_directory(path)) {
      Result<Tensor> t = read_npy(path);
      if (!t.is_ok()) return t.status().with_prefix(fmt::format("--input {}: ", name));
      out[name] = runtime::Value::of(std::move(*t));
      continue;
    }
    DTypeCode declared = DTypeCode::kFloat32;
    for (const runtime::ValueInfo& vi : session.inputs()) {
      if (vi.name == name) declared = vi.dtype;
    }
    // The elements are 0.npy .. (n-1).npy; a gap is an error, other files are not read.
    size_t count = 0;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      const std::string f = entry.path().filename().string();
      if (f.size() < 5 || f.substr(f.size() - 4) != ".npy") continue;
      const std::string stem = f.substr(0, f.size() - 4);
      if (stem.empty() || stem.size() > 9 ||
          !std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        continue;
      }
      count = std::max(count, static_cast<size_t>(std::stoul(stem)) + 1);
    }
    std::vector<Tensor> elements;
    for (size_t k = 0; k < count; ++k) {
      const std::filesystem::path file = std::filesystem::path(path) / fmt::format("{}.npy", k);
      if (!std::filesystem::exists(file)) {
        return invalid_argument("--input {}: the sequence directory '{}' has {}.npy but no {}",
                                name, path, count - 1, file.filename().string());
      }
      Result<Tensor> t = read_npy(file.string());
      if (!t.is_ok()) return t.status().with_prefix(fmt::format("--input {}: ", name));
      elements.push_back(std::move(*t));
    }
    const DTypeCode dt = elements.empty() ? declared : elements.front().dtype();
    out[name] = runtime::Value::of_sequence(std::move(elements), dt);
  }
  return out;
}

Result<std::vector<std::string>> complete_input_values(const runtime::Session& session,
                                                       const std::map<std::string, Shape>& shapes,
                                                       runtime::ValueMap& inputs) {
  // The tensors given, and a placeholder for each sequence or none given (so it is not
  // completed): complete_inputs checks names and --shape against them.
  runtime::TensorMap tensors;
  for (const auto& [name, v] : inputs) tensors[name] = v.is_tensor() ? v.tensor : Tensor();
  FRAME_ASSIGN_OR_RETURN(std::vector<std::string> random,
                         complete_inputs(session, shapes, tensors));
  for (const runtime::ValueInfo& vi : session.inputs()) {
    if (std::find(random.begin(), random.end(), vi.name) == random.end()) continue;
    Tensor t = tensors.at(vi.name);
    inputs[vi.name] = vi.sequence ? runtime::Value::of_sequence({std::move(t)}, vi.dtype)
                                  : runtime::Value::of(std::move(t));
  }
  return random;
}

bool has_non_tensor_values(const runtime::Session& session) {
  for (const auto* list : {&session.inputs(), &session.outputs()}) {
    for (const runtime::ValueInfo& vi : *list) {
      if (vi.sequence || vi.optional) return true;
    }
  }
  return false;
}

}  // namespace frame::cli
