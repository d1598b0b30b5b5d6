#pragma once
/// \file
/// Packed constants (private to frame's sources; docs/architecture/execution-model.md,
/// "Compile cache on disk", and docs/backends/onednn.md, "Packed weights"): a constant tensor's
/// bytes rearranged for a kernel (oneDNN's blocked weight layouts, a kernel's own tap-major
/// copy) are made once per (constant, layout) and shared by every kernel, compile and session
/// of the process while one holds them (ADR 0007, stage A). Backends find and record them here;
/// the compile cache on disk lists the live copies of an entry's constants to store them, and
/// offers what it read back so that a later process maps them instead of packing again.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frame/core/tensor.h"

namespace frame::detail {

/// One packed form of a constant. Backends derive their own object from it (oneDNN's adds the
/// dnnl::memory over `storage`); it is read-only once recorded.
struct PackedConstant {
  virtual ~PackedConstant() = default;
  Tensor source;   ///< the constant packed: held so that its address keeps naming it
  Tensor storage;  ///< the packed bytes where they are a copy; no data where `source` is used as is
};

/// Counters of the packed constants over the process, for tests and reports.
struct PackedConstantStats {
  uint64_t packs = 0;    ///< objects recorded (a constant packed, or wrapped, anew)
  uint64_t reuses = 0;   ///< finds served by a live object
  uint64_t adopted = 0;  ///< packs whose bytes came from an offer (the compile cache on disk)
  size_t live = 0;       ///< objects alive now
};

/// The live object packed from `source` (found by its data address and byte count) into
/// `layout` (a backend's name for the arrangement: every parameter the bytes depend on), or
/// nullptr. Thread-safe.
std::shared_ptr<const PackedConstant> find_packed(const Tensor& source, std::string_view layout);

/// Records `packed`, made from `source` into `layout` (held weakly: it lives while a kernel
/// holds it). Thread-safe.
void record_packed(const Tensor& source, std::string layout,
                   const std::shared_ptr<const PackedConstant>& packed);

/// Bytes offered for `source` in `layout` (read back from the compile cache on disk) when they
/// hold exactly `nbytes`, else a tensor without data (raw_data() null). A backend that would pack
/// uses them instead (counted in `adopted`). Thread-safe.
Tensor offered_packed(const Tensor& source, std::string_view layout, size_t nbytes);

/// (layout, storage) of every live object packed from the storage of `nbytes` bytes at `data`
/// whose bytes are a copy, for the compile cache on disk to store. Thread-safe.
std::vector<std::pair<std::string, Tensor>> packed_copies_of(const void* data, size_t nbytes);

/// Offers packed bytes for as long as it lives (the compile cache on disk holds one while it
/// builds the executable of an entry; the kernels built then keep what they adopted).
class PackedOffers {
 public:
  PackedOffers() = default;
  PackedOffers(const PackedOffers&) = delete;
  PackedOffers& operator=(const PackedOffers&) = delete;
  ~PackedOffers();
  /// Offers `packed` as the bytes of the storage of `nbytes` bytes at `data` in `layout`.
  void add(const void* data, size_t nbytes, std::string layout, Tensor packed);

 private:
  std::vector<uint64_t> ids_;
};

/// A snapshot of the counters.
PackedConstantStats packed_constant_stats();

}  // namespace frame::detail
