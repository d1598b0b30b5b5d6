// Packed constants shared process-wide (src/core/packed_constants.h).

#include "core/packed_constants.h"

#include <iterator>
#include <mutex>
#include <unordered_map>

namespace frame::detail {

namespace {

// The live packed objects and the offers, both found by their source's data address: an
// address names one constant while an object packed from it lives (the object holds the
// source), and while an offer lives (the compile cache's mapping holds it). Entries whose object
// died are dropped on the next insert into their bucket and in a periodic sweep.
class Registry {
 public:
  std::shared_ptr<const PackedConstant> find(const Tensor& w, std::string_view layout) {
    std::lock_guard lock(mu_);
    auto [lo, hi] = live_.equal_range(w.raw_data());
    for (auto it = lo; it != hi; ++it) {
      const Live& e = it->second;
      if (e.nbytes != w.nbytes() || e.layout != layout) continue;
      if (std::shared_ptr<const PackedConstant> p = e.packed.lock()) {
        ++stats_.reuses;
        return p;
      }
    }
    return nullptr;
  }

  void record(const Tensor& w, std::string layout, const std::shared_ptr<const PackedConstant>& p) {
    std::lock_guard lock(mu_);
    ++stats_.packs;
    auto [lo, hi] = live_.equal_range(w.raw_data());
    for (auto it = lo; it != hi;)
      it = it->second.packed.expired() ? live_.erase(it) : std::next(it);
    live_.emplace(w.raw_data(), Live{w.nbytes(), std::move(layout), p});
    if (++inserts_ % 256 == 0) {
      for (auto it = live_.begin(); it != live_.end();) {
        it = it->second.packed.expired() ? live_.erase(it) : std::next(it);
      }
    }
  }

  Tensor offered(const Tensor& w, std::string_view layout, size_t nbytes) {
    std::lock_guard lock(mu_);
    auto [lo, hi] = offers_.equal_range(w.raw_data());
    for (auto it = lo; it != hi; ++it) {
      const Offer& o = it->second;
      if (o.source_bytes == w.nbytes() && o.layout == layout && o.packed.nbytes() == nbytes) {
        ++stats_.adopted;
        return o.packed;
      }
    }
    return Tensor();
  }

  std::vector<std::pair<std::string, Tensor>> copies_of(const void* data, size_t nbytes) {
    std::vector<std::pair<std::string, Tensor>> out;
    std::lock_guard lock(mu_);
    auto [lo, hi] = live_.equal_range(data);
    for (auto it = lo; it != hi; ++it) {
      if (it->second.nbytes != nbytes) continue;
      if (std::shared_ptr<const PackedConstant> p = it->second.packed.lock()) {
        if (p->storage.raw_data() != nullptr) out.emplace_back(it->second.layout, p->storage);
      }
    }
    return out;
  }

  uint64_t offer(const void* data, size_t nbytes, std::string layout, Tensor packed) {
    std::lock_guard lock(mu_);
    const uint64_t id = ++offer_ids_;
    offers_.emplace(data, Offer{id, nbytes, std::move(layout), std::move(packed)});
    return id;
  }

  void withdraw(const std::vector<uint64_t>& ids) {
    if (ids.empty()) return;
    std::lock_guard lock(mu_);
    for (auto it = offers_.begin(); it != offers_.end();) {
      bool mine = false;
      for (uint64_t id : ids) mine = mine || it->second.id == id;
      it = mine ? offers_.erase(it) : std::next(it);
    }
  }

  PackedConstantStats stats() {
    std::lock_guard lock(mu_);
    PackedConstantStats s = stats_;
    s.live = 0;
    for (const auto& [k, e] : live_) s.live += e.packed.expired() ? 0 : 1;
    return s;
  }

 private:
  struct Live {
    size_t nbytes;  // the source's
    std::string layout;
    std::weak_ptr<const PackedConstant> packed;
  };
  struct Offer {
    uint64_t id;
    size_t source_bytes;
    std::string layout;
    Tensor packed;
  };
  std::mutex mu_;
  std::unordered_multimap<const void*, Live> live_;
  std::unordered_multimap<const void*, Offer> offers_;
  PackedConstantStats stats_;
  uint64_t inserts_ = 0;
  uint64_t offer_ids_ = 0;
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: kernels release at exit
  return *r;
}

}  // namespace

std::shared_ptr<const PackedConstant> find_packed(const Tensor& source, std::string_view layout) {
  return registry().find(source, layout);
}

void record_packed(const Tensor& source, std::string layout,
                   const std::shared_ptr<const PackedConstant>& packed) {
  registry().record(source, std::move(layout), packed);
}

Tensor offered_packed(const Tensor& source, std::string_view layout, size_t nbytes) {
  return registry().offered(source, layout, nbytes);
}

std::vector<std::pair<std::string, Tensor>> packed_copies_of(const void* data, size_t nbytes) {
  return registry().copies_of(data, nbytes);
}

PackedOffers::~PackedOffers() { registry().withdraw(ids_); }

void PackedOffers::add(const void* data, size_t nbytes, std::string layout, Tensor packed) {
  ids_.push_back(registry().offer(data, nbytes, std::move(layout), std::move(packed)));
}

PackedConstantStats packed_constant_stats() { return registry().stats(); }

}  // namespace frame::detail
