#pragma once
/// \file
/// The compile cache on disk (private to src/runtime; docs/architecture/execution-model.md,
/// "Compile cache on disk"). An entry holds what a later process needs to skip import and the
/// pass pipeline for one specialization: the compiled graph after every pass (IR text with
/// tensor refs), its placements (kernel choices) and memory plan, and the report fields a
/// compile produced. Tensors of 4 KiB and more live in content-addressed blob files shared by
/// every entry (a model's weights are stored once, not once per shape); smaller ones sit in the
/// entry. Entries are written once through a temporary file and rename(), checked on read
/// (format, build, CPU, key, length, digest, structure) and treated as untrusted input: a bad
/// one is ignored with a warning and rebuilt.

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "frame/core/status.h"
#include "frame/runtime/compile.h"

namespace frame::runtime::detail {

/// The entry format version; bumped whenever the layout or the meaning of a field changes.
inline constexpr int kDiskCacheFormat = 2;

/// "frame <version> <git revision>" of the library that writes or reads an entry.
std::string build_fingerprint();

/// The CPU features kernel choices depend on, as cpuid words ("x86:<vendor>:<hex words>"):
/// an entry written on a machine with other features is not used.
std::string cpu_fingerprint();

/// Counters of one DiskCache (all monotonic).
struct DiskCacheCounters {
  uint64_t hits = 0;      ///< entries read and used
  uint64_t misses = 0;    ///< lookups that found no usable entry
  uint64_t writes = 0;    ///< entries written
  uint64_t rejected = 0;  ///< entries found but ignored (damaged, truncated, other build/CPU)
};

/// One cache directory as a session uses it. Thread-safe.
class DiskCache {
 public:
  /// `dir` is created on the first write; `max_bytes` bounds entries plus blobs.
  DiskCache(std::string dir, size_t max_bytes);

  /// The executable stored under `key` (the full key text: model fingerprint, specialization,
  /// options; the build and CPU are checked apart so an old entry is reported, not missed),
  /// built without running a pass; nullopt when there is none or it cannot be used (then a
  /// warning on stderr says why, and a later store() replaces it). `resolved` are the
  /// session's compile options with backends and threads resolved.
  std::optional<Executable> load(const std::string& key, const CompileOptions& resolved);

  /// Writes `exe` under `key` unless the cache is disabled. A directory that cannot be made or
  /// written (a path under a regular file, a full disk, a file-size limit) disables the cache
  /// for this object with one warning; the run goes on uncached. An entry over `max_bytes`
  /// is stored without its packed weights where that fits, else not at all (one warning per
  /// object). A blob file already there is kept only once it is known intact (checked by this
  /// process before, or checked now); a damaged one is written again.
  void store(const std::string& key, const Executable& exe);

  DiskCacheCounters counters() const;
  const std::string& dir() const { return dir_; }

  /// Parses and checks one entry's bytes and builds its executable (the fuzz target's entry
  /// point; load() reads the file and calls it). Blob refs are read from `blob_dir`. Errors:
  /// kDataLoss naming what is wrong (format, build, CPU, key, length, digest, JSON field,
  /// graph text, placement, buffer), and the errors of building the plan.
  static Result<Executable> parse_entry(std::string_view bytes, const std::string& key,
                                        const CompileOptions& resolved,
                                        const std::string& blob_dir);

 private:
  void warn(const std::string& message) const;
  void disable(const std::string& why);
  void evict_over_budget();

  std::string dir_;
  size_t max_bytes_;
  mutable std::mutex mu_;
  bool disabled_ = false;
  bool warned_oversize_ = false;
  DiskCacheCounters counters_;
};

}  // namespace frame::runtime::detail
