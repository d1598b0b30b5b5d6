// The OpenMP wait policy: choosing it before the OpenMP runtime reads it (by re-executing the
// program once) and reporting the one in effect.

#include "frame/runtime/threads.h"

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace frame::runtime {
namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? std::string() : std::string(v);
}

// Read during static initialization, after libgomp (a dependency, initialized first) parsed
// the same variables, and before anything in the process could change them.
const std::string g_wait_policy_at_load = env_or_empty("OMP_WAIT_POLICY");
const std::string g_spin_count_at_load = env_or_empty("GOMP_SPINCOUNT");
const bool g_policy_set_at_load =
    std::getenv("OMP_WAIT_POLICY") != nullptr || std::getenv("GOMP_SPINCOUNT") != nullptr;

}  // namespace

void use_recommended_wait_policy(char** argv) {
  if (argv == nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr ||
      std::getenv("GOMP_SPINCOUNT") != nullptr) {
    return;
  }
  setenv("OMP_WAIT_POLICY", kRecommendedWaitPolicy, 1);
  setenv("GOMP_SPINCOUNT", kRecommendedSpinCount, 1);
  execv("/proc/self/exe", argv);  // returns only on failure: continue with the defaults
}

std::string openmp_wait_policy() {
  if (!g_policy_set_at_load) return "libgomp default (spin ~300000 iterations, then sleep)";
  std::string out = g_wait_policy_at_load.empty() ? "default" : g_wait_policy_at_load;
  if (!g_spin_count_at_load.empty()) out += ", GOMP_SPINCOUNT=" + g_spin_count_at_load;
  return out;
}

}  // namespace frame::runtime
