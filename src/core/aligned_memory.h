#pragma once
/// \file
/// Aligned allocation of tensor storage (private to frame's sources; docs/architecture/
/// execution-model.md, "Memory"): the large buffers the runtime and the onednn backend allocate
/// (tensors, so also a plan's arena and constants; the interpreted tier's buffer pool; packed
/// weights; per-thread kernel buffers) come from here, so large ones sit on transparent huge
/// pages.

#include <cstddef>

namespace frame::detail {

/// Allocations of at least this many bytes (2 MiB, one x86-64 huge page) are mapped on their
/// own (anonymous mmap, aligned to 2 MiB) and advised for transparent huge pages (madvise
/// MADV_HUGEPAGE on every whole 2 MiB page inside them; a tail under 2 MiB stays on 4 KiB
/// pages, so no more memory is touched than before). First touch then maps 2 MiB per page
/// fault instead of 4 KiB. Measured on a 2-core VM whose page faults are expensive: writing
/// 8 MiB of fresh memory took 23 ms on 4 KiB pages and 0.7-0.8 ms on huge pages once the guest
/// had some free; ResNet-50's load 790-820 -> 400-410 ms and compile 425 -> 125-200 ms.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/// Whether allocations of kHugePageBytes or more take the huge-page path (decided once per
/// process): on x86-64 where /sys/kernel/mm/transparent_hugepage/enabled is not "[never]",
/// unless the environment sets FRAME_HUGE_PAGES=0; never under AddressSanitizer (its allocator
/// keeps redzones and leak tracking for every buffer). Off, every allocation is malloc's.
bool huge_pages_enabled();

/// `bytes` of uninitialised memory aligned to `alignment` (a power of two, at most 4096; a
/// huge-page mapping is aligned to kHugePageBytes; a kept one may hold bytes an earlier user
/// wrote). 0 bytes allocate `alignment` bytes.
/// Returns nullptr when the memory cannot be had (never throws). Release with free_aligned and
/// the same `bytes`.
void* allocate_aligned(size_t bytes, size_t alignment);

/// Releases memory from allocate_aligned(bytes, ...); nullptr is ignored. A huge-page mapping
/// of at most kKeptMappingBytes is kept for reuse (its pages stay faulted in) while the kept
/// ones total at most that; allocate_aligned hands out the smallest kept mapping that holds
/// its request and is at most twice it before it maps a new one.
void free_aligned(void* p, size_t bytes);

/// Most bytes of released huge-page mappings kept for reuse (64 MiB).
inline constexpr size_t kKeptMappingBytes = size_t{64} << 20;

/// Bytes of released huge-page mappings kept for reuse now.
size_t kept_mapping_bytes();

/// Unmaps every kept mapping (its memory goes back to the system).
void drop_kept_mappings();

/// Scratch memory that grows to the largest size asked of it and never shrinks (a kernel's
/// per-thread buffers: no allocation per run once warm), from allocate_aligned: 64-byte
/// aligned, not zeroed, its contents dropped when it grows. One per thread (not thread-safe).
class GrowBuffer {
 public:
  GrowBuffer() = default;
  GrowBuffer(const GrowBuffer&) = delete;
  GrowBuffer& operator=(const GrowBuffer&) = delete;
  ~GrowBuffer() { free_aligned(p_, bytes_); }
  /// At least `bytes` bytes, valid until the next call that grows it. Throws std::bad_alloc
  /// when the memory cannot be had.
  void* get(size_t bytes);
  /// get(count * sizeof(T)) as T*.
  template <typename T>
  T* get_as(size_t count) {
    return static_cast<T*>(get(count * sizeof(T)));
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace frame::detail
