// Per-backend hooks a backend layer registers at static init without including the runtime
// (ARCH-001): availability probes and warm-ups (include/frame/ops/backend_availability.h) and
// device group compilers (include/frame/ops/device_group.h).

#include <sched.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>

#include "frame/ops/backend_availability.h"
#include "frame/ops/device_group.h"

namespace frame::ops {
namespace {

// One function pointer per backend name.
template <typename Fn>
class HookTable {
 public:
  static HookTable& get() {
    static HookTable* t = new HookTable();  // never destroyed: used from static registrations
    return *t;
  }
  void set(std::string backend, Fn fn) {
    std::unique_lock lock(mu_);
    fns_[std::move(backend)] = fn;
  }
  Fn find(std::string_view backend) {
    std::shared_lock lock(mu_);
    auto it = fns_.find(backend);
    return it == fns_.end() ? nullptr : it->second;
  }

 private:
  std::shared_mutex mu_;
  std::map<std::string, Fn, std::less<>> fns_;
};

}  // namespace

void register_availability_probe(std::string backend, AvailabilityProbe probe) {
  HookTable<AvailabilityProbe>::get().set(std::move(backend), probe);
}

std::string backend_unavailable_reason(std::string_view backend) {
  AvailabilityProbe probe = HookTable<AvailabilityProbe>::get().find(backend);
  return probe == nullptr ? std::string() : probe();
}

void register_warm_up(std::string backend, WarmUpStart start, WarmUpWait wait) {
  HookTable<WarmUpStart>::get().set(backend, start);
  HookTable<WarmUpWait>::get().set(std::move(backend), wait);
}

bool start_warm_up(std::string_view backend, const std::vector<std::string>& ops,
                   bool shapes_vary) {
  WarmUpStart fn = HookTable<WarmUpStart>::get().find(backend);
  return fn != nullptr && fn(ops, shapes_vary);
}

void wait_warm_up(std::string_view backend) {
  if (WarmUpWait fn = HookTable<WarmUpWait>::get().find(backend); fn != nullptr) fn();
}

void register_device_group_compiler(std::string backend, DeviceGroupCompiler compiler) {
  HookTable<DeviceGroupCompiler>::get().set(std::move(backend), compiler);
}

DeviceGroupCompiler find_device_group_compiler(std::string_view backend) {
  return HookTable<DeviceGroupCompiler>::get().find(backend);
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 1;
  return std::max(CPU_COUNT(&set), 1);
}

}  // namespace frame::ops
