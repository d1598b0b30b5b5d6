// Aligned allocation, large buffers on transparent huge pages (aligned_memory.h).

#include "core/aligned_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

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
    const char* v = std::getenv("FRAME_HUGE_PAGES");
    return v == nullptr || std::strcmp(v, "0") != 0;
  }();
  return enabled;
}

void* allocate_aligned(size_t bytes, size_t alignment) {
  if (bytes == 0) bytes = alignment;
  if (!mapped(bytes)) {
    void* p = nullptr;
    return posix_memalign(&p, alignment, bytes) == 0 ? p : nullptr;
  }
  // One huge page more than needed, then the unaligned head and the tail are unmapped: the
  // mapping left starts on a 2 MiB boundary. Its own mapping, so the advice never reaches
  // memory malloc later hands out for something else.
  const size_t len = round_up(bytes, kPageBytes);
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
  (void)madvise(p, bytes / kHugePageBytes * kHugePageBytes, MADV_HUGEPAGE);
#endif
  return p;
}

void free_aligned(void* p, size_t bytes) {
  if (p == nullptr) return;
  if (bytes == 0) bytes = 1;
  if (mapped(bytes)) {
    munmap(p, round_up(bytes, kPageBytes));
  } else {
    std::free(p);
  }
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
