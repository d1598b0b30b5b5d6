// Registry of backend availability probes (include/frame/ops/backend_availability.h).

#include "frame/ops/backend_availability.h"

#include <map>
#include <mutex>
#include <shared_mutex>

namespace frame::ops {
namespace {

struct Probes {
  std::shared_mutex mu;
  std::map<std::string, AvailabilityProbe, std::less<>> probes;
};

Probes& probes() {
  static Probes* p = new Probes();  // never destroyed: used from static registrations
  return *p;
}

}  // namespace

void register_availability_probe(std::string backend, AvailabilityProbe probe) {
  Probes& p = probes();
  std::unique_lock lock(p.mu);
  p.probes[std::move(backend)] = probe;
}

std::string backend_unavailable_reason(std::string_view backend) {
  AvailabilityProbe probe = nullptr;
  {
    Probes& p = probes();
    std::shared_lock lock(p.mu);
    auto it = p.probes.find(backend);
    if (it != p.probes.end()) probe = it->second;
  }
  return probe == nullptr ? std::string() : probe();
}

}  // namespace frame::ops
