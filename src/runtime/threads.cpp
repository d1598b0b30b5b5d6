// The OpenMP wait policy: choosing it before the OpenMP runtime reads it (by re-executing the
// program once) and reporting the one in effect; the thread count usable after fork().

#include "frame/runtime/threads.h"

#include <omp.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string>

#include "frame/ops/backend_availability.h"

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

std::atomic<int> g_fork_generation{0};

// In the child of a fork(): OpenMP's workers are gone, so every later parallel region must have
// one thread (usable_threads; runs and compiles set the ICV to their count). Nothing here calls
// the OpenMP runtime: LLVM's libomp (the sanitizer builds') resets its own state in an atfork
// handler that may run after this one, and an OpenMP call before it waits on a lock forever.
void on_fork_child() { g_fork_generation.fetch_add(1, std::memory_order_relaxed); }

const int g_atfork_registered = pthread_atfork(nullptr, nullptr, &on_fork_child);

}  // namespace

int fork_generation() {
  (void)g_atfork_registered;
  return g_fork_generation.load(std::memory_order_relaxed);
}

int usable_threads(int requested) {
  if (fork_generation() > 0) return 1;
  return requested > 0 ? requested : omp_get_max_threads();
}

namespace detail {
thread_local bool t_background_compile = false;
}  // namespace detail

bool in_background_compile() { return detail::t_background_compile; }

int available_cores() { return ops::available_cores(); }

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
