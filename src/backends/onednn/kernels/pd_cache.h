#pragma once
// Process-wide caches of oneDNN primitive descriptors (and their primitives) by a text key of
// everything that shapes them: one node's accepts(), the layout choice and the fusion
// patterns that ask it again, its prepare(), and every later compile with equal operands
// (another specialization, a tier-up, another session) build a descriptor once (ADR 0007
// stage A). oneDNN's own primitive cache dedupes JIT code but not descriptor creation, which
// for a JIT convolution or matmul is the implementation search and its blocking heuristics.

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/linear_kernels.h"

namespace frame::backends::onednn {

/// "dims:strides" of a plain or strided descriptor (then "/blocks@dims" for a blocked one such
/// as nChw16c), "dims:any" for format_tag::any: the part of a descriptor cache key one
/// operand contributes.
inline std::string desc_key(const dnnl::memory::desc& d) {
  if (d.data.format_kind != dnnl_blocked) return fmt::format("{}:any", fmt::join(d.dims(), ","));
  const auto& b = d.data.format_desc.blocking;
  std::string key = fmt::format("{}:{}", fmt::join(d.dims(), ","),
                                fmt::join(b.strides, b.strides + d.data.ndims, ","));
  if (b.inner_nblks > 0) {
    key += fmt::format("/{}@{}", fmt::join(b.inner_blks, b.inner_blks + b.inner_nblks, ","),
                       fmt::join(b.inner_idxs, b.inner_idxs + b.inner_nblks, ","));
  }
  return key;
}

/// An LRU of `Entry` by key, at most `kCapacity` entries; thread-safe. `Entry` has a `prim`
/// member (a dnnl primitive, empty until a prepare() needs it) next to its descriptor.
template <typename Entry, size_t kCapacity = 1024>
class PdCache {
 public:
  /// The one cache of this entry type, never destroyed (kernels may outlive statics).
  static PdCache& global() {
    static PdCache* c = new PdCache();
    return *c;
  }

  /// The entry for `key`: `make()` creates it (it may throw dnnl::error, which propagates)
  /// when none is held; when `with_primitive`, `make_prim(entry)` adds the primitive if the
  /// held entry has none (accepts() made only the descriptor).
  template <typename Make, typename MakePrim>
  Entry get(const std::string& key, bool with_primitive, Make&& make, MakePrim&& make_prim) {
    std::optional<Entry> held;
    {
      std::lock_guard lock(mu_);
      if (auto it = index_.find(key); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++stats_.hits;
        if (!with_primitive || it->second->second.prim) return it->second->second;
        held = it->second->second;
      }
    }
    Entry e = held ? *std::move(held) : make();
    if (!held) {
      std::lock_guard lock(mu_);
      ++stats_.created;
    }
    if (with_primitive) make_prim(e);  // oneDNN's primitive cache dedupes the JIT
    std::lock_guard lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      if (with_primitive && !it->second->second.prim) it->second->second.prim = e.prim;
      return it->second->second;
    }
    lru_.emplace_front(key, e);
    index_.emplace(lru_.front().first, lru_.begin());
    while (lru_.size() > kCapacity) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
    return e;
  }

  /// A snapshot of the counters.
  PdCacheStats stats() {
    std::lock_guard lock(mu_);
    PdCacheStats s = stats_;
    s.entries = lru_.size();
    return s;
  }

 private:
  std::mutex mu_;
  PdCacheStats stats_;
  std::list<std::pair<std::string, Entry>> lru_;  // most recently used first
  std::unordered_map<std::string_view, typename std::list<std::pair<std::string, Entry>>::iterator>
      index_;
};

}  // namespace frame::backends::onednn
