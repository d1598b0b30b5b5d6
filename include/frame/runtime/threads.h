#pragma once
/// \file
/// Threads of the runtime (docs/architecture/execution-model.md "Threads";
/// docs/backends/onednn.md "Threads and the wait policy"). One OpenMP thread pool runs the
/// loops of every backend: CompileOptions::num_threads sets the OpenMP nthreads ICV of the
/// thread calling Executable::run for the duration of the run, which is what oneDNN's loops
/// (omp_get_max_threads()) and the cpu kernels' `num_threads` budget follow.
///
/// How idle workers wait is fixed by libgomp once, when it is loaded, from OMP_WAIT_POLICY and
/// GOMP_SPINCOUNT; any program linked to frame loads it before main(), so the policy can only
/// be chosen before the process starts. use_recommended_wait_policy() does that by
/// re-executing the program once; a Python entry point has to set the variables before it
/// imports the extension.

#include <string>

namespace frame::runtime {

/// The wait policy frame recommends: idle workers sleep at once (OMP_WAIT_POLICY=PASSIVE,
/// GOMP_SPINCOUNT=0). Spinning workers take the core from the thread that has work whenever
/// the machine has no idle core, which costs up to ~0.5 ms per parallel region on the 2-core
/// reference machine (measurements in docs/backends/onednn.md).
inline constexpr const char* kRecommendedWaitPolicy = "PASSIVE";
/// GOMP_SPINCOUNT that goes with kRecommendedWaitPolicy (iterations of busy waiting).
inline constexpr const char* kRecommendedSpinCount = "0";

/// Makes this process run with the recommended wait policy: when neither OMP_WAIT_POLICY nor
/// GOMP_SPINCOUNT is set, sets both and re-executes /proc/self/exe with `argv` (the OpenMP
/// runtime read the environment when it was loaded, before main()). Returns only when nothing
/// was re-executed: a variable was already set (by the user, whose choice wins, or by the
/// re-execution itself), `argv` is null, or execv failed (the run then continues with
/// libgomp's defaults). Call it first thing in main(), before any thread starts; not
/// thread-safe (it changes the environment).
void use_recommended_wait_policy(char** argv);

/// The OpenMP wait policy in effect, from OMP_WAIT_POLICY and GOMP_SPINCOUNT as they were when
/// frame was loaded (after the OpenMP runtime read them), e.g. "PASSIVE, GOMP_SPINCOUNT=0" or
/// "libgomp default (spin ~300000 iterations, then sleep)".
std::string openmp_wait_policy();

}  // namespace frame::runtime
