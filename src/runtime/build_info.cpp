// The build and CPU fingerprints of compile-cache entries on disk (src/runtime/disk_cache.h).
// Kept in its own file: it is the one library source that includes the generated revision
// header, so a new commit recompiles only this file.

#include <fmt/format.h>

#include <string>

#include "frame_git_revision.h"
#include "runtime/disk_cache.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace frame::runtime::detail {

std::string build_fingerprint() {
  return fmt::format("frame {} {}", FRAME_VERSION, FRAME_GIT_REVISION);
}

std::string cpu_fingerprint() {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d) == 0) return "x86:no-cpuid";
  const unsigned max_leaf = a;
  char vendor[13] = {};
  __builtin_memcpy(vendor, &b, 4);
  __builtin_memcpy(vendor + 4, &d, 4);
  __builtin_memcpy(vendor + 8, &c, 4);
  // Leaf 1 ECX/EDX (SSE..AVX, FMA, F16C, OSXSAVE), leaf 7.0 EBX/ECX/EDX (AVX2, AVX-512*,
  // AMX), leaf 7.1 EAX (AVX-VNNI, AVX512-BF16): the features kernels are chosen by. Family,
  // model and the APIC id (leaf 1 EAX/EBX) are left out: they vary between machines, and
  // between cores of one machine, with no effect on the choice.
  unsigned l1c = 0, l1d = 0, l7b = 0, l7c = 0, l7d = 0, l71a = 0;
  __get_cpuid(1, &a, &b, &l1c, &l1d);
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, a, l7b, l7c, l7d);
    unsigned x = 0;
    __cpuid_count(7, 1, l71a, x, x, x);
  }
  // The APIC-related and hypervisor bits of leaf 1 ECX are not features.
  l1c &= ~((1u << 21) | (1u << 31));
  return fmt::format("x86:{}:{:08x}.{:08x}.{:08x}.{:08x}.{:08x}.{:08x}", vendor, l1c, l1d, l7b, l7c,
                     l7d, l71a);
#else
  return "unknown-architecture";
#endif
}

}  // namespace frame::runtime::detail
