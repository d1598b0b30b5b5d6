// The onednn backend's choice of Highway target (hwy_targets.h): CPUID through the compiler's
// __builtin_cpu_supports, once per process, instead of libhwy.so's HWY_DYNAMIC_DISPATCH.

#include "backends/onednn/kernels/hwy_targets.h"
// clang-format off
#include "hwy/base.h"  // after hwy_targets.h (it sets the targets)
// clang-format on

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#if HWY_ARCH_X86
#include <cpuid.h>
#endif

namespace frame::backends::onednn {
namespace {

#if HWY_ARCH_X86
// CPUID bits neither compiler's __builtin_cpu_supports names (clang 14 knows neither string):
// F16C (leaf 1, ECX bit 29) and LZCNT (leaf 0x80000001, ECX bit 5).
bool cpuid_bit(unsigned leaf, int ecx_bit) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(leaf, &a, &b, &c, &d) != 0 && ((c >> ecx_bit) & 1U) != 0;
}

// The features each Highway x86 target requires (Highway 1.0.3's groups, plus CLMUL, AES and
// AVX512CD, which later releases require: asking for more only ever picks a lower target).
// __builtin_cpu_supports also checks that the OS saves the AVX and AVX-512 registers.
bool cpu_has_sse4() {
  return __builtin_cpu_supports("sse3") && __builtin_cpu_supports("ssse3") &&
         __builtin_cpu_supports("sse4.1") && __builtin_cpu_supports("sse4.2") &&
         __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("aes");
}
bool cpu_has_avx2() {
  return cpu_has_sse4() && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi") &&
         __builtin_cpu_supports("bmi2") && cpuid_bit(1, 29) && cpuid_bit(0x80000001U, 5);
}
bool cpu_has_avx3() {
  return cpu_has_avx2() && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512cd");
}
#endif

// The targets of this build's set (HWY_TARGETS under hwy_targets.h) the CPU runs, best first.
std::vector<int64_t> detect() {
  std::vector<int64_t> out;
#if HWY_ARCH_X86
  __builtin_cpu_init();
  if ((HWY_TARGETS & HWY_AVX3) != 0 && cpu_has_avx3()) out.push_back(HWY_AVX3);
  if ((HWY_TARGETS & HWY_AVX2) != 0 && cpu_has_avx2()) out.push_back(HWY_AVX2);
  if ((HWY_TARGETS & HWY_SSE4) != 0 && cpu_has_sse4()) out.push_back(HWY_SSE4);
#endif
  out.push_back(HWY_STATIC_TARGET);  // the baseline every build compiles
  return out;
}

const std::vector<int64_t>& supported() {
  static const std::vector<int64_t> targets = detect();
  return targets;
}

std::atomic<int64_t> g_forced{0};

}  // namespace

int64_t vec_target() {
  const int64_t forced = g_forced.load(std::memory_order_relaxed);
  if (forced != 0) return forced;
  static const int64_t best = supported().front();
  return best;
}

std::vector<int64_t> vec_targets_supported() { return supported(); }

void set_vec_target_for_test(int64_t target) {
  if (target != 0) {
    bool ok = false;
    for (int64_t t : supported()) ok = ok || t == target;
    if (!ok) {
      std::fprintf(stderr, "set_vec_target_for_test: target %lld is not supported here\n",
                   static_cast<long long>(target));
      std::abort();
    }
  }
  g_forced.store(target, std::memory_order_relaxed);
}

}  // namespace frame::backends::onednn

// Highway's headers call hwy::Abort where a failed HWY_ASSERT is compiled in and not optimized
// away (the sanitizer build's kernels at -O0). libhwy.so defines it, and libframe.so links no
// Highway library (hwy_targets.h), so the onednn backend defines it: the place and the message
// on stderr, then abort().
namespace hwy {
void Abort(const char* file, int line, const char* format, ...) {
  char message[2048];
  va_list args;
  va_start(args, format);
  std::vsnprintf(message, sizeof(message), format, args);
  va_end(args);
  std::fprintf(stderr, "Highway check failed at %s:%d: %s\n", file, line, message);
  std::fflush(stderr);
  std::abort();
}
}  // namespace hwy
