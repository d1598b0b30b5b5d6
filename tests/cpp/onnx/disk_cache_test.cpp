// The compile cache on disk (SessionOptions::cache_dir; docs/architecture/execution-model.md,
// "Compile cache on disk"): a second session reads the entry and runs no pass, with outputs
// bit-identical to the cold compile and matching the bundled PyTorch reference; damaged,
// truncated, other-build, other-CPU and structurally wrong entries are ignored with a warning
// and rebuilt; concurrent writers; a directory under a regular file and a file-size limit run
// uncached with one warning; the size bound evicts; edited model and weight files are never
// served from old entries; packed weights are stored and taken by a warm session. Cost: about 2.5 s
// in all (2.1 s of it one test's sleep; small_cnn and one-node graphs compiled a few dozen times).

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/reshape_graph.h"
#include "core/packed_constants.h"
#include "cpp/onnx/model_builder.h"
#include "frame/core/digest.h"
#include "frame/core/npy.h"
#include "frame/onnx/session.h"
#include "frame/runtime/session.h"

namespace frame::onnx {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* env = std::getenv("FRAME_SOURCE_DIR");
  return env != nullptr ? env : FRAME_SOURCE_DIR;
}

std::string model_path() { return source_dir() + "/models/small_cnn.onnx"; }

// A fresh empty directory under the system temp dir, removed when the test ends.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> n{0};
    path_ = fs::temp_directory_path() /
            ("frame_disk_cache_test_" + std::to_string(getpid()) + "_" + std::to_string(n++));
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string str() const { return path_.string(); }
  fs::path path() const { return path_; }

 private:
  fs::path path_;
};

runtime::SessionOptions options_for(const std::string& dir) {
  runtime::SessionOptions o;
  o.compile.num_threads = 1;
  o.cache_dir = dir;
  return o;
}

Tensor bundled_input() {
  Result<Tensor> t = read_npy(source_dir() + "/models/small_cnn.input.npy");
  EXPECT_TRUE(t.is_ok()) << t.status().to_string();
  return *t;
}

// One run of small_cnn through a new session over `dir`; the session is returned for its
// counters and report.
struct Ran {
  std::optional<runtime::Session> session;
  Tensor output;
};

Ran run_once(const runtime::SessionOptions& options) {
  Ran r;
  Result<runtime::Session> s = open_session(model_path(), options);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  if (!s.is_ok()) return r;
  Result<runtime::TensorMap> out = s->run({{"input", bundled_input()}});
  EXPECT_TRUE(out.is_ok()) << out.status().to_string();
  if (out.is_ok()) r.output = out->begin()->second;
  r.session = std::move(*s);
  return r;
}

Ran run_once(const std::string& dir) { return run_once(options_for(dir)); }

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

// The PyTorch reference of the bundled model, under the deep-network tolerance (BUILD-011).
void expect_matches_reference(const Tensor& y) {
  Result<Tensor> expected = read_npy(source_dir() + "/models/small_cnn.expected.npy");
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  ASSERT_EQ(y.shape(), expected->shape());
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double e = expected->element_as_double(i);
    ASSERT_NEAR(y.element_as_double(i), e, 1e-4 + 1e-3 * std::fabs(e)) << "element " << i;
  }
}

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << bytes;
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The one entry under `dir`: its header (through the empty line), JSON document and binary
// section.
struct EntryParts {
  fs::path path;
  std::string header;
  nlohmann::json json;
  std::string binary;
};

EntryParts read_entry(const fs::path& dir) {
  const std::vector<fs::path> entries = files_in(dir / "entries");
  EXPECT_EQ(entries.size(), 1u);
  if (entries.size() != 1) return {};
  const std::string bytes = read_all(entries[0]);
  const size_t end = bytes.find("\n\n") + 2;
  EntryParts e{entries[0], bytes.substr(0, end), {}, {}};
  const size_t at = e.header.find("\njson ") + 6;
  const size_t json_bytes = std::stoull(e.header.substr(at, e.header.find('\n', at) - at));
  e.json = nlohmann::json::parse(bytes.substr(end, json_bytes));
  e.binary = bytes.substr(end + json_bytes);
  return e;
}

// Rewrites the one entry under `dir` through `edit` on its JSON document, keeping the header
// consistent (section sizes and digest), so only the structural checks can reject it.
void edit_entry_json(const fs::path& dir, const std::function<void(nlohmann::json&)>& edit) {
  EntryParts e = read_entry(dir);
  ASSERT_FALSE(e.path.empty());
  edit(e.json);
  const std::string js = e.json.dump();
  const std::string payload = js + e.binary;
  std::string out;
  std::istringstream lines(e.header);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("json ", 0) == 0) {
      line = "json " + std::to_string(js.size());
    } else if (line.rfind("digest ", 0) == 0) {
      line = "digest " + digest_hex(payload.data(), payload.size());
    }
    out += line + "\n";
  }
  write_all(e.path, out + payload);
}

// The blob file of the entry's first packed form (small_cnn: its second conv's weights in the
// conv's blocked layout).
fs::path packed_blob(const fs::path& dir) {
  const nlohmann::json j = read_entry(dir).json;
  EXPECT_FALSE(j["packed"].empty()) << j.dump();
  if (j["packed"].empty()) return {};
  return dir / "blobs" / (j["packed"][0][3].get<std::string>() + ".blob");
}

TEST(DiskCache, SecondSessionReadsTheEntryRunsNoPassAndMatchesBitForBit) {
  TempDir dir;
  Ran cold = run_once(dir.str());
  ASSERT_TRUE(cold.session);
  runtime::CacheStats cs = cold.session->cache_stats();
  EXPECT_EQ(cs.disk_misses, 1u);
  EXPECT_EQ(cs.disk_writes, 1u);
  EXPECT_EQ(files_in(dir.path() / "entries").size(), 1u);
  EXPECT_FALSE(files_in(dir.path() / "blobs").empty());  // the conv and gemm weights
  EXPECT_FALSE(cold.session->last_report()->pass_times_ms.empty());
  expect_matches_reference(cold.output);

  Ran warm = run_once(dir.str());
  ASSERT_TRUE(warm.session);
  cs = warm.session->cache_stats();
  EXPECT_EQ(cs.disk_hits, 1u);
  EXPECT_EQ(cs.disk_misses, 0u);
  EXPECT_EQ(cs.disk_writes, 0u);
  const runtime::CompileReport r = *warm.session->last_report();
  EXPECT_TRUE(r.disk_cache_hit);
  EXPECT_TRUE(r.pass_times_ms.empty());  // no pass ran
  std::vector<std::string> stages;
  for (const auto& [stage, ms] : r.stage_times_ms) stages.push_back(stage);
  EXPECT_EQ(stages, (std::vector<std::string>{"disk_read", "check", "prepare"}));
  // The kernel choices are the cold compile's.
  const runtime::CompileReport cr = *cold.session->last_report();
  ASSERT_EQ(r.placements.size(), cr.placements.size());
  for (size_t i = 0; i < r.placements.size(); ++i) {
    EXPECT_EQ(r.placements[i].node, cr.placements[i].node);
    EXPECT_EQ(r.placements[i].backend, cr.placements[i].backend);
  }
  EXPECT_EQ(r.peak_arena_bytes, cr.peak_arena_bytes);
  EXPECT_TRUE(same_bytes(warm.output, cold.output));
  // Steady-state runs of the read entry stay identical.
  Result<runtime::TensorMap> again = warm.session->run({{"input", bundled_input()}});
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(same_bytes(again->begin()->second, cold.output));
}

// The packed forms kernels made of an entry's large constants are stored with it (a blob each)
// and taken by a later session's kernels instead of packing again (ADR 0007; issue: "packed
// weights stored once per model"); outputs stay bit-identical.
TEST(DiskCache, AWarmSessionTakesThePackedWeightsFromTheCache) {
  TempDir dir;
  Ran cold = run_once(dir.str());
  ASSERT_TRUE(cold.session);
  const nlohmann::json j = read_entry(dir.path()).json;
  // small_cnn's one constant of 4 KiB or more, the [16, 8, 3, 3] conv weight, in the oneDNN
  // conv's blocked layout: at least its own bytes (a block may pad channels).
  ASSERT_EQ(j["packed"].size(), 1u) << j["packed"].dump();
  const nlohmann::json& p = j["packed"][0];
  const size_t storage = p[0].get<size_t>();
  ASSERT_LT(storage, j["storages"].size());
  EXPECT_EQ(j["storages"][storage]["bytes"].get<size_t>(), size_t{16 * 8 * 3 * 3 * 4});
  EXPECT_EQ(p[1].get<std::string>().rfind("dnnl:", 0), 0u) << p[1];
  EXPECT_GE(p[2].get<size_t>(), size_t{16 * 8 * 3 * 3 * 4});
  const fs::path blob = packed_blob(dir.path());
  ASSERT_TRUE(fs::exists(blob));
  EXPECT_EQ(fs::file_size(blob), 64 + p[2].get<size_t>());  // the 64-byte blob header
  // The header's blob list names it too (eviction reads only that line).
  EXPECT_NE(read_entry(dir.path()).header.find(p[3].get<std::string>()), std::string::npos);

  const frame::detail::PackedConstantStats before = frame::detail::packed_constant_stats();
  Ran warm = run_once(dir.str());
  const frame::detail::PackedConstantStats after = frame::detail::packed_constant_stats();
  ASSERT_TRUE(warm.session);
  EXPECT_EQ(warm.session->cache_stats().disk_hits, 1u);
  EXPECT_EQ(after.adopted - before.adopted, 1u);
  EXPECT_TRUE(same_bytes(warm.output, cold.output));
  expect_matches_reference(warm.output);
}

// Two damaged blobs, the weight and its packed form: the one rebuild rewrites both (a store keeps
// a blob file it did not write or check itself only after checking it), so the next session
// reads the entry instead of rejecting it for the second blob.
TEST(DiskCache, OneRebuildRewritesEveryDamagedBlob) {
  TempDir dir;
  Tensor reference = run_once(dir.str()).output;
  const std::vector<fs::path> blobs = files_in(dir.path() / "blobs");
  ASSERT_EQ(blobs.size(), 2u);
  for (const fs::path& b : blobs) {
    std::string bytes = read_all(b);
    bytes[bytes.size() - 3] ^= 0x04;
    write_all(b, bytes);
  }
  ::testing::internal::CaptureStderr();
  {
    Ran again = run_once(dir.str());
    ASSERT_TRUE(again.session);
    EXPECT_EQ(again.session->cache_stats().disk_rejected, 1u);
    EXPECT_EQ(again.session->cache_stats().disk_writes, 1u);
    EXPECT_TRUE(same_bytes(again.output, reference));
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "warning"), 1u) << err;
  ::testing::internal::CaptureStderr();
  Ran fixed = run_once(dir.str());
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  ASSERT_TRUE(fixed.session);
  EXPECT_EQ(fixed.session->cache_stats().disk_hits, 1u);
  EXPECT_TRUE(same_bytes(fixed.output, reference));
}

// A bound that holds the entry and its weights but not their packed forms as well stores the
// entry without them (a warm start then packs, but runs no pass); a bound that holds not even
// that stores nothing and says so once.
TEST(DiskCache, AnEntryOverTheBoundGoesWithoutItsPackedWeightsOrWithAWarning) {
  TempDir full;
  const Tensor reference = run_once(full.str()).output;
  const size_t entry = fs::file_size(files_in(full.path() / "entries").at(0));
  const fs::path packed = packed_blob(full.path());
  ASSERT_FALSE(packed.empty());
  size_t weights = 0;
  for (const fs::path& b : files_in(full.path() / "blobs")) {
    if (b != packed) weights += fs::file_size(b);
  }
  const size_t packed_bytes = fs::file_size(packed);

  TempDir dir;
  runtime::SessionOptions o = options_for(dir.str());
  o.max_cache_dir_bytes = entry + weights + packed_bytes / 2;
  ::testing::internal::CaptureStderr();
  {
    Ran r = run_once(o);
    ASSERT_TRUE(r.session);
    EXPECT_EQ(r.session->cache_stats().disk_writes, 1u);
  }
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_TRUE(read_entry(dir.path()).json["packed"].empty());
  EXPECT_EQ(files_in(dir.path() / "blobs").size(), 1u);
  Ran warm = run_once(o);
  ASSERT_TRUE(warm.session);
  EXPECT_EQ(warm.session->cache_stats().disk_hits, 1u);
  EXPECT_TRUE(same_bytes(warm.output, reference));

  TempDir small;
  runtime::SessionOptions tiny = options_for(small.str());
  tiny.max_cache_dir_bytes = weights;
  ::testing::internal::CaptureStderr();
  Ran r = run_once(tiny);
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(r.session);
  EXPECT_EQ(r.session->cache_stats().disk_writes, 0u);
  EXPECT_EQ(count(err, "warning"), 1u) << err;
  EXPECT_NE(err.find("over the directory's bound"), std::string::npos) << err;
  EXPECT_TRUE(same_bytes(r.output, reference));
}

// Each way an entry can be wrong: the session ignores it with a warning naming the problem,
// compiles, runs correctly, and writes a good entry the next session reads.
struct Damage {
  const char* name;
  const char* message;  // part of the warning
  std::function<void(const fs::path& dir)> apply;
};

void replace_header_line(const fs::path& dir, const std::string& key, const std::string& value) {
  const fs::path entry = files_in(dir / "entries").at(0);
  std::string bytes = read_all(entry);
  const size_t at = bytes.find("\n" + key + " ") + 1;
  const size_t end = bytes.find('\n', at);
  bytes.replace(at, end - at, key + " " + value);
  write_all(entry, bytes);
}

std::vector<Damage> damages() {
  return {
      {"flipped payload byte", "do not match their digest",
       [](const fs::path& d) {
         const fs::path e = files_in(d / "entries").at(0);
         std::string b = read_all(e);
         b[b.size() - 3] ^= 0x20;
         write_all(e, b);
       }},
      {"truncated", "truncated",
       [](const fs::path& d) {
         const fs::path e = files_in(d / "entries").at(0);
         std::string b = read_all(e);
         write_all(e, b.substr(0, b.size() / 2));
       }},
      {"empty file", "not a frame compile cache entry",
       [](const fs::path& d) { write_all(files_in(d / "entries").at(0), ""); }},
      {"other build", "written by 'frame 0.0.1 0000000'",
       [](const fs::path& d) { replace_header_line(d, "build", "frame 0.0.1 0000000"); }},
      {"control bytes in the build line", "written by 'frame \\x1b[2J'",
       [](const fs::path& d) { replace_header_line(d, "build", "frame \x1b[2J"); }},
      {"entry replaced by a FIFO", "is not a regular file",
       [](const fs::path& d) {
         const fs::path e = files_in(d / "entries").at(0);
         fs::remove(e);
         ASSERT_EQ(mkfifo(e.c_str(), 0644), 0);
       }},
      {"blob replaced by a FIFO", "not a regular file",
       [](const fs::path& d) {
         const fs::path b = files_in(d / "blobs").at(0);
         fs::remove(b);
         ASSERT_EQ(mkfifo(b.c_str(), 0644), 0);
       }},
      {"other CPU", "CPU with other features",
       [](const fs::path& d) { replace_header_line(d, "cpu", "x86:OtherVendor:0.0.0.0.0.0"); }},
      {"old format", "entry format 0",
       [](const fs::path& d) {
         const fs::path e = files_in(d / "entries").at(0);
         std::string b = read_all(e);
         b.replace(0, std::string("frame-compile-cache 1").size(), "frame-compile-cache 0");
         write_all(e, b);
       }},
      {"foreign file", "not a frame compile cache entry",
       [](const fs::path& d) { write_all(files_in(d / "entries").at(0), "hello\n\n"); }},
      {"damaged blob", "do not match their digest",
       [](const fs::path& d) {
         const fs::path blob = files_in(d / "blobs").at(0);
         std::string b = read_all(blob);
         b[b.size() - 1] ^= 0x01;
         write_all(blob, b);
       }},
      {"truncated blob", "expected",
       [](const fs::path& d) {
         const fs::path blob = files_in(d / "blobs").at(0);
         write_all(blob, read_all(blob).substr(0, 100));
       }},
      {"damaged packed weights", "do not match their digest",
       [](const fs::path& d) {
         const fs::path blob = packed_blob(d);
         std::string b = read_all(blob);
         b[b.size() - 5] ^= 0x10;
         write_all(blob, b);
       }},
      {"packed form of an inline storage", "which is no blob",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) { j["packed"][0][0] = 0; });
       }},
      {"packed form with a layout of the wrong type", "packed form is not [storage, layout",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) { j["packed"][0][1] = 7; });
       }},
      {"missing blob", "cannot open",
       [](const fs::path& d) { fs::remove(files_in(d / "blobs").at(0)); }},
      {"overlapping buffers", "overlap while both are alive",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) {
           for (auto& b : j["buffers"]) b[1] = 0;  // every value at offset 0
         });
       }},
      {"buffer past the arena", "does not hold",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) { j["peak_arena_bytes"] = 64; });
       }},
      {"missing placement", "places",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) { j["placements"].erase(0); });
       }},
      {"backend outside the chain", "not in the chain",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) { j["placements"][0][1] = "elsewhere"; });
       }},
      {"storages dropped", "blob list differs from its storages",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) { j["storages"] = nlohmann::json::array(); });
       }},
      {"ref to no storage", "names no storage",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) {
           std::string g = j["graph"];
           const size_t at = g.find("ref \"0\"");
           ASSERT_NE(at, std::string::npos) << g;
           g.replace(at, 7, "ref \"999\"");
           j["graph"] = g;
         });
       }},
      {"field of the wrong type", "'buffers' is missing or has the wrong type",
       [](const fs::path& d) { edit_entry_json(d, [](nlohmann::json& j) { j["buffers"] = 3; }); }},
      {"declared type its inputs do not give", "is declared f32[1,11], its inputs give f32[1,10]",
       [](const fs::path& d) {
         edit_entry_json(d, [](nlohmann::json& j) {
           std::string g = j["graph"];
           const size_t at = g.find(": f32[1,10]");
           ASSERT_NE(at, std::string::npos) << g;
           g.replace(at, 11, ": f32[1,11]");
           j["graph"] = g;
         });
       }},
      {"another key", "another key",
       [](const fs::path& d) { edit_entry_json(d, [](nlohmann::json& j) { j["key"] = "x"; }); }},
  };
}

TEST(DiskCache, BadEntriesAreIgnoredWithAWarningAndRebuilt) {
  Tensor reference;
  for (const Damage& damage : damages()) {
    SCOPED_TRACE(damage.name);
    TempDir dir;
    Ran cold = run_once(dir.str());
    if (!reference.defined()) reference = cold.output;
    cold = Ran{};  // no session keeps the blobs mapped
    damage.apply(dir.path());

    ::testing::internal::CaptureStderr();
    Ran again = run_once(dir.str());
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_TRUE(again.session);
    const runtime::CacheStats cs = again.session->cache_stats();
    EXPECT_EQ(cs.disk_hits, 0u);
    EXPECT_EQ(cs.disk_rejected, 1u);
    EXPECT_EQ(cs.disk_writes, 1u);  // replaced
    EXPECT_EQ(count(err, "warning"), 1u) << err;
    EXPECT_NE(err.find(damage.message), std::string::npos) << err;
    EXPECT_TRUE(same_bytes(again.output, reference));
    again = Ran{};

    Ran fixed = run_once(dir.str());
    ASSERT_TRUE(fixed.session);
    EXPECT_EQ(fixed.session->cache_stats().disk_hits, 1u);
    EXPECT_TRUE(same_bytes(fixed.output, reference));
  }
}

TEST(DiskCache, ConcurrentWritersOfOneEntryBothSucceed) {
  TempDir dir;
  std::vector<Tensor> outs(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < outs.size(); ++i) {
    threads.emplace_back([&, i] { outs[i] = run_once(dir.str()).output; });
  }
  for (std::thread& t : threads) t.join();
  for (const Tensor& y : outs) expect_matches_reference(y);
  EXPECT_EQ(files_in(dir.path() / "entries").size(), 1u);
  for (const fs::path& p : files_in(dir.path() / "entries")) {
    EXPECT_EQ(p.extension(), ".entry") << "a temporary file was left behind: " << p;
  }
  Ran warm = run_once(dir.str());
  ASSERT_TRUE(warm.session);
  EXPECT_EQ(warm.session->cache_stats().disk_hits, 1u);
  EXPECT_TRUE(same_bytes(warm.output, outs[0]));
}

using test::reshape_graph;
const Tensor kX = test::reshape_input();

// Runs the reshape graph for each target through one new session; checks each output against
// the definition of reshape (same data, new shape).
runtime::Session run_reshapes(const runtime::SessionOptions& o, const std::vector<Shape>& targets) {
  Result<runtime::Session> s = runtime::Session::from_graph(reshape_graph(), o);
  EXPECT_TRUE(s.is_ok()) << s.status().to_string();
  for (const Shape& t : targets) {
    Result<runtime::TensorMap> out =
        s->run({{"x", kX}, {"target", Tensor::from_vector<int64_t>({2}, t)}});
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    if (!out.is_ok()) continue;
    test::expect_reshape(out->at("y"), t);
  }
  return *s;
}

TEST(DiskCache, BoundShapeValuesArePartOfTheKey) {
  TempDir dir;
  runtime::SessionOptions o;
  o.compile.backends = {"cpu"};
  o.cache_dir = dir.str();
  const std::vector<Shape> targets = {{3, 4}, {4, 3}, {12, 1}};
  EXPECT_EQ(run_reshapes(o, targets).cache_stats().disk_writes, 3u);
  EXPECT_EQ(files_in(dir.path() / "entries").size(), 3u);
  const runtime::CacheStats warm = run_reshapes(o, targets).cache_stats();
  EXPECT_EQ(warm.disk_hits, 3u);
  EXPECT_EQ(warm.disk_misses, 0u);
  // Other options are other entries.
  o.compile.disabled_passes = {"cse"};
  EXPECT_EQ(run_reshapes(o, {{3, 4}}).cache_stats().disk_writes, 1u);
}

TEST(DiskCache, SizeBoundEvictsTheLeastRecentlyUsedEntries) {
  TempDir dir;
  runtime::SessionOptions o;
  o.compile.backends = {"cpu"};
  o.cache_dir = dir.str();
  (void)run_reshapes(o, {{3, 4}});
  const size_t one = fs::file_size(files_in(dir.path() / "entries").at(0));
  o.max_cache_dir_bytes = one * 2 + one / 2;  // room for two entries
  (void)run_reshapes(o, {{4, 3}, {12, 1}, {1, 12}, {6, 2}});
  size_t total = 0;
  for (const char* sub : {"entries", "blobs"}) {
    for (const fs::path& p : files_in(dir.path() / sub)) total += fs::file_size(p);
  }
  EXPECT_LE(total, o.max_cache_dir_bytes);
  EXPECT_EQ(files_in(dir.path() / "entries").size(), 2u);
  // The newest two are the ones kept.
  const runtime::CacheStats cs = run_reshapes(o, {{1, 12}, {6, 2}}).cache_stats();
  EXPECT_EQ(cs.disk_hits, 2u);
}

// A temporary file a writer killed mid-write left behind (write_atomically's
// "<name>.tmp.<pid>.<n>") is removed by a later write once it is an hour old; a fresh one (a
// writer still at work) stays.
TEST(DiskCache, AStaleTemporaryFileIsRemovedByALaterWrite) {
  TempDir dir;
  (void)run_once(dir.str());
  const fs::path stale = dir.path() / "blobs" / "0123.blob.tmp.999999.0";
  const fs::path fresh = dir.path() / "entries" / "4567.entry.tmp.999999.1";
  write_all(stale, std::string(1000, 'x'));
  write_all(fresh, std::string(1000, 'y'));
  fs::last_write_time(stale, fs::file_time_type::clock::now() - std::chrono::hours(2));
  for (const fs::path& e : files_in(dir.path() / "entries")) {
    if (e.extension() == ".entry") fs::remove(e);  // the next session compiles and writes
  }
  Ran again = run_once(dir.str());
  ASSERT_TRUE(again.session);
  EXPECT_EQ(again.session->cache_stats().disk_writes, 1u);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(fresh));
}

TEST(DiskCache, DirectoryUnderARegularFileRunsUncachedWithOneWarning) {
  TempDir dir;
  write_all(dir.path() / "file", "not a directory");
  runtime::SessionOptions o;
  o.compile.backends = {"cpu"};
  o.cache_dir = (dir.path() / "file" / "cache").string();
  ::testing::internal::CaptureStderr();
  const runtime::CacheStats cs = run_reshapes(o, {{3, 4}, {4, 3}, {12, 1}}).cache_stats();
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(count(err, "warning"), 1u) << err;
  EXPECT_NE(err.find("running without the compile cache"), std::string::npos) << err;
  EXPECT_EQ(cs.disk_writes, 0u);
  EXPECT_EQ(cs.misses, 3u);
}

TEST(DiskCache, FileSizeLimitRunsUncachedWithOneWarning) {
  TempDir dir;
  rlimit saved{};
  ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
  rlimit small = saved;
  small.rlim_cur = 512;  // below any entry
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &small), 0);
  runtime::SessionOptions o;
  o.compile.backends = {"cpu"};
  o.cache_dir = dir.str();
  ::testing::internal::CaptureStderr();
  const runtime::CacheStats cs = run_reshapes(o, {{3, 4}, {4, 3}}).cache_stats();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
  EXPECT_EQ(count(err, "warning"), 1u) << err;
  EXPECT_NE(err.find("RLIMIT_FSIZE"), std::string::npos) << err;
  EXPECT_EQ(cs.disk_writes, 0u);
  EXPECT_TRUE(files_in(dir.path() / "entries").empty());
}

// A second open of a model file the directory has seen reads the declared inputs, outputs,
// classification and fingerprint from its record instead of parsing the model; they equal
// what parsing finds.
TEST(DiskCache, WarmOpenDeclaresWhatAParsedOpenDeclares) {
  TempDir dir;
  Ran cold = run_once(dir.str());
  ASSERT_TRUE(cold.session);
  EXPECT_EQ(files_in(dir.path() / "records").size(), 1u);
  Ran warm = run_once(dir.str());
  ASSERT_TRUE(warm.session);
  EXPECT_EQ(warm.session->cache_stats().disk_hits, 1u);
  ASSERT_EQ(warm.session->inputs().size(), cold.session->inputs().size());
  for (size_t i = 0; i < cold.session->inputs().size(); ++i) {
    EXPECT_EQ(warm.session->inputs()[i].name, cold.session->inputs()[i].name);
    EXPECT_EQ(warm.session->inputs()[i].to_string(), cold.session->inputs()[i].to_string());
  }
  ASSERT_EQ(warm.session->outputs().size(), cold.session->outputs().size());
  EXPECT_EQ(warm.session->outputs()[0].to_string(), cold.session->outputs()[0].to_string());
  EXPECT_EQ(warm.session->shape_determining_inputs(), cold.session->shape_determining_inputs());
  EXPECT_TRUE(same_bytes(warm.output, cold.output));
  // Opened from the record, a key the directory lacks parses the model then and compiles.
  warm = Ran{};
  for (const fs::path& p : files_in(dir.path() / "entries")) fs::remove(p);
  Ran lazy = run_once(dir.str());
  ASSERT_TRUE(lazy.session);
  EXPECT_EQ(lazy.session->cache_stats().disk_misses, 1u);
  EXPECT_EQ(lazy.session->cache_stats().disk_writes, 1u);
  EXPECT_TRUE(same_bytes(lazy.output, cold.output));
}

// The record is keyed by the file's identity: a model file rewritten in place (other weights)
// is opened and compiled again, never served from the old entry.
TEST(DiskCache, ARewrittenModelFileIsNotServedFromTheOldEntry) {
  TempDir dir;
  const fs::path model = dir.path() / "model.onnx";
  std::string bytes = read_all(model_path());
  write_all(model, bytes);
  auto run_model = [&](const std::string& cache) {
    runtime::SessionOptions o = options_for(cache);
    Result<runtime::Session> s = open_session(model.string(), o);
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    Result<runtime::TensorMap> out = s->run({{"input", bundled_input()}});
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return std::make_pair(out->begin()->second, s->cache_stats());
  };
  const std::string cache = (dir.path() / "cache").string();
  auto [before, st1] = run_model(cache);
  EXPECT_EQ(st1.disk_writes, 1u);
  // Other weights: the gemm bias gets 1 added to every element.
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  bool changed = false;
  for (::onnx::TensorProto& t : *proto.mutable_graph()->mutable_initializer()) {
    if (t.name() != "fc.b") continue;
    if (!t.raw_data().empty()) {
      std::string raw = t.raw_data();
      for (size_t i = 0; i + 4 <= raw.size(); i += 4) {
        float v;
        std::memcpy(&v, raw.data() + i, 4);
        v += 1.0f;
        std::memcpy(raw.data() + i, &v, 4);
      }
      t.set_raw_data(raw);
    } else {
      for (int i = 0; i < t.float_data_size(); ++i) t.set_float_data(i, t.float_data(i) + 1.0f);
    }
    changed = true;
  }
  ASSERT_TRUE(changed);
  bytes = proto.SerializeAsString();
  write_all(model, bytes);
  auto [after, st2] = run_model(cache);
  EXPECT_EQ(st2.disk_hits, 0u);
  EXPECT_EQ(st2.disk_writes, 1u);
  auto [reference, st3] = run_model("");  // no cache: a plain compile of the new file
  (void)st3;
  EXPECT_TRUE(same_bytes(after, reference));
  EXPECT_FALSE(same_bytes(after, before));
}

// The warm open's record also pins the model's external data files: a weight file edited in
// place (same size) after a cached run makes the next open parse the model again, and the
// result is the new weights'. The model is left alone for 2.1 s first, so a record is written
// (files changed in the last two seconds get none). Cost: 2.1 s of sleep.
TEST(DiskCache, ExternalDataEditedInPlaceIsNotServedFromTheOldEntry) {
  TempDir dir;
  const fs::path model = dir.path() / "m.onnx";
  const fs::path weights = dir.path() / "w.bin";
  std::vector<float> w(8 * 4);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i) / 8.0f;
  write_all(weights, std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4));
  testing::ModelBuilder b(17);
  b.input("x", {1, 8}).output("y").add(testing::node("MatMul", {"x", "W"}, {"y"}, "mm"));
  b.init(testing::external_tensor("W", {8, 4}, {{"location", "w.bin"}}));
  write_all(model, b.bytes());
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  const Tensor x = Tensor::from_vector<float>({1, 8}, {1, 1, 1, 1, 1, 1, 1, 1});
  auto run_model = [&](const std::string& cache) {
    Result<runtime::Session> s = open_session(model.string(), options_for(cache));
    EXPECT_TRUE(s.is_ok()) << s.status().to_string();
    Result<runtime::TensorMap> out = s->run({{"x", x}});
    EXPECT_TRUE(out.is_ok()) << out.status().to_string();
    return std::make_pair(out->at("y"), s->cache_stats());
  };
  const std::string cache = (dir.path() / "cache").string();
  auto [first, st1] = run_model(cache);
  EXPECT_EQ(files_in(dir.path() / "cache" / "records").size(), 1u);
  // y[j] = sum_i W[i][j]: column sums of i*4+j over i in 0..7, divided by 8.
  for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(first.data<float>()[j], (112.0f + 8.0f * j) / 8.0f);
  for (float& v : w) v = -v;
  {
    std::fstream f(weights, std::ios::in | std::ios::out | std::ios::binary);
    f.write(reinterpret_cast<const char*>(w.data()), static_cast<std::streamsize>(w.size() * 4));
  }
  auto [second, st2] = run_model(cache);
  EXPECT_EQ(st2.disk_hits, 0u);
  for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(second.data<float>()[j], -(112.0f + 8.0f * j) / 8.0f);
}

TEST(DiskCache, ASourceWithoutAFingerprintRefusesACacheDir) {
  runtime::ModelSource src;
  src.name = "custom";
  src.specialize = [](const runtime::Specialization&) -> Result<ir::Graph> { return ir::Graph(); };
  runtime::SessionOptions o;
  o.cache_dir = "/tmp/unused";
  Result<runtime::Session> s = runtime::Session::create(src, o);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.status().message().find("fingerprint"), std::string::npos) << s.status().message();
}

}  // namespace
}  // namespace frame::onnx
