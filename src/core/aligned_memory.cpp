// Aligned allocation, large buffers on transparent huge pages (aligned_memory.h).

#include "core/aligned_memory.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <unordered_map>
#include <utility>
#include <vector>

namespace frame::detail {

namespace {

constexpr size_t kPageBytes = 4096;

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// Whether an allocation of `bytes` is a huge-page mapping: the same answer at allocation and
// release, since huge_pages_enabled() is fixed per process.
bool mapped(size_t bytes) { return bytes >= kHugePageBytes && huge_pages_enabled(); }

}  // namespace

bool huge_pages_enabled() {
  static const bool enabled = [] {
#if !defined(__x86_64__) || defined(__SANITIZE_ADDRESS__)
    // 2 MiB huge pages over 4 KiB pages is x86-64's arrangement; under AddressSanitizer the
    // sanitizer's allocator keeps its redzones and leak tracking for every buffer.
    return false;
#else
    const char* v = std::getenv("FRAME_HUGE_PAGES");
    if (v != nullptr && std::strcmp(v, "0") == 0) return false;
    // Transparent huge pages off (or absent): own mappings would only cost fresh 4 KiB pages
    // where malloc's heap reuses them.
    std::FILE* f = std::fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f == nullptr) return false;
    char mode[128] = {};
    const size_t n = std::fread(mode, 1, sizeof(mode) - 1, f);
    std::fclose(f);
    mode[n] = '\0';
    return std::strstr(mode, "[never]") == nullptr;
#endif
  }();
  return enabled;
}

namespace {

// Released huge-page mappings kept for reuse (up to kKeptMappingBytes), and the length of every
// mapping handed out. An output a run allocates and its caller drops, run after run, then takes
// back the pages it faulted in last time instead of a fresh mapping each run (glibc's heap did
// that for such buffers before they had mappings of their own).
struct Mappings {
  std::mutex mu;
  std::unordered_map<void*, size_t> live;  // start -> mapped length
  std::multimap<size_t, void*> kept;       // mapped length -> start
  size_t kept_bytes = 0;
};

Mappings& mappings() {
  // Never destroyed: tensors may be released at exit. fork() takes the lock first and releases
  // it in both processes (as glibc's malloc does for its own), so a child forked while another
  // thread held it can still allocate.
  static Mappings* m = [] {
    auto* made = new Mappings();
    pthread_atfork([] { mappings().mu.lock(); }, [] { mappings().mu.unlock(); },
                   [] { mappings().mu.unlock(); });
    return made;
  }();
  return *m;
}

// A new mapping of `len` bytes (a multiple of the page size) starting on a 2 MiB boundary,
// advised for huge pages over its whole huge pages; nullptr when mmap fails.
void* map_aligned(size_t len) {
  // One huge page more than needed, then the unaligned head and the tail are unmapped.
  void* raw = mmap(nullptr, len + kHugePageBytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto base = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t start = round_up(base, kHugePageBytes);
  if (start > base) munmap(raw, start - base);
  if (const size_t tail = base + len + kHugePageBytes - (start + len); tail > 0) {
    munmap(reinterpret_cast<void*>(start + len), tail);
  }
  void* p = reinterpret_cast<void*>(start);
#ifdef MADV_HUGEPAGE
  // Whole huge pages only: a partial one would be faulted in whole on first touch. A refusal
  // (no transparent huge pages in this kernel) leaves 4 KiB pages, which is what it was.
  (void)madvise(p, len / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return p;
}

}  // namespace

void* allocate_aligned(size_t bytes, size_t alignment) {
  if (bytes == 0) bytes = alignment;
  if (!mapped(bytes)) {
    void* p = nullptr;
    return posix_memalign(&p, alignment, bytes) == 0 ? p : nullptr;
  }
  const size_t len = round_up(bytes, kPageBytes);
  Mappings& m = mappings();
  {
    // The smallest kept mapping that holds `len` and is at most twice it.
    std::lock_guard lock(m.mu);
    if (auto it = m.kept.lower_bound(len); it != m.kept.end() && it->first <= 2 * len) {
      void* p = it->second;
      m.live.emplace(p, it->first);
      m.kept_bytes -= it->first;
      m.kept.erase(it);
      return p;
    }
  }
  void* p = map_aligned(len);
  if (p == nullptr) return nullptr;
  try {
    std::lock_guard lock(m.mu);
    m.live.emplace(p, len);
  } catch (...) {
    munmap(p, len);
    return nullptr;
  }
  return p;
}

void free_aligned(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes == 0) bytes = 1;
  if (!mapped(bytes)) {
    std::free(p);
    return;
  }
  Mappings& m = mappings();
  size_t len = round_up(bytes, kPageBytes);
  std::vector<std::pair<void*, size_t>> drop;
  {
    std::lock_guard lock(m.mu);
    if (auto it = m.live.find(p); it != m.live.end()) {
      len = it->second;
      m.live.erase(it);
    }
    if (len <= kKeptMappingBytes) {
      m.kept.emplace(len, p);
      m.kept_bytes += len;
      // Over the bound: the largest kept mappings go (the one just kept among them if it is).
      while (m.kept_bytes > kKeptMappingBytes) {
        auto last = std::prev(m.kept.end());
        drop.emplace_back(last->second, last->first);
        m.kept_bytes -= last->first;
        m.kept.erase(last);
      }
    } else {
      drop.emplace_back(p, len);
    }
  }
  for (const auto& [q, n] : drop) munmap(q, n);
}

void drop_kept_mappings() {
  Mappings& m = mappings();
  std::multimap<size_t, void*> drop;
  {
    std::lock_guard lock(m.mu);
    drop.swap(m.kept);
    m.kept_bytes = 0;
  }
  for (const auto& [n, q] : drop) munmap(q, n);
}

size_t kept_mapping_bytes() {
  Mappings& m = mappings();
  std::lock_guard lock(m.mu);
  return m.kept_bytes;
}

void* GrowBuffer::get(size_t bytes) {
  if (bytes <= bytes_ && p_ != nullptr) return p_;
  free_aligned(p_, bytes_);  // before the new one is touched
  p_ = nullptr;
  bytes_ = 0;
  void* p = allocate_aligned(std::max<size_t>(bytes, 64), 64);
  if (p == nullptr) throw std::bad_alloc();
  p_ = p;
  bytes_ = std::max<size_t>(bytes, 64);
  return p_;
}

}  // namespace frame::detail
