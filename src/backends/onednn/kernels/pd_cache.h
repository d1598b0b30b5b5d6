#pragma once
// Process-wide caches of oneDNN primitive descriptors (and their primitives) by a key of
// everything that shapes them (bytes, not text: built for every accepts() and prepare()): one
// node's accepts(), the layout choice and the fusion patterns that ask it again, its prepare(), and
// every later compile with equal operands (another specialization, a tier-up, another session)
// build a descriptor once (ADR 0007 stage A). oneDNN's own primitive cache dedupes JIT code but not
// descriptor creation, which for a JIT convolution or matmul is the implementation search and its
// blocking heuristics.

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/linear_kernels.h"

namespace frame::backends::onednn {

/// Appends the bytes of `v` to a cache key. Keys are compared whole, so fields of fixed size
/// appended in a fixed order (lengths before variable parts) cannot collide.
template <typename T>
void key_append(std::string& key, const T& v) {
  static_assert(std::is_trivially_copyable_v<T>);
  key.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

/// Appends a length, then the elements.
template <typename T>
void key_append(std::string& key, std::span<const T> v) {
  key_append(key, v.size());
  key.append(reinterpret_cast<const char*>(v.data()), v.size_bytes());
}

/// Appends what one operand contributes to a descriptor cache key: its data type and dims,
/// then for a plain, strided or blocked descriptor (nChw16c) its strides and inner blocks, or
/// nothing more for format_tag::any.
inline void append_desc_key(std::string& key, const dnnl::memory::desc& d) {
  const dnnl_memory_desc_t& m = d.data;
  key_append(key, m.ndims);
  key_append(key, m.data_type);
  key_append(key, m.format_kind);
  key.append(reinterpret_cast<const char*>(m.dims), sizeof(m.dims[0]) * m.ndims);
  if (m.format_kind != dnnl_blocked) return;
  const dnnl_blocking_desc_t& b = m.format_desc.blocking;
  key.append(reinterpret_cast<const char*>(b.strides), sizeof(b.strides[0]) * m.ndims);
  key_append(key, b.inner_nblks);
  key.append(reinterpret_cast<const char*>(b.inner_blks), sizeof(b.inner_blks[0]) * b.inner_nblks);
  key.append(reinterpret_cast<const char*>(b.inner_idxs), sizeof(b.inner_idxs[0]) * b.inner_nblks);
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
