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

/// The wait policy frame recommends: idle workers spin for a bounded time, then sleep
/// (OMP_WAIT_POLICY=PASSIVE with GOMP_SPINCOUNT=kRecommendedSpinCount, about 0.3 ms). A short
/// spin lets the workers catch the next parallel region of the same run (oneDNN opens several
/// per node) without a futex wake-up; the bound limits what they take from other threads when
/// the machine is busy. Measurements in docs/backends/onednn.md "Threads and the wait policy".
inline constexpr const char* kRecommendedWaitPolicy = "PASSIVE";
/// GOMP_SPINCOUNT that goes with kRecommendedWaitPolicy (iterations of busy waiting, ~100 per
/// microsecond on the reference machine).
inline constexpr const char* kRecommendedSpinCount = "30000";

/// Makes this process run with the recommended wait policy: when neither OMP_WAIT_POLICY nor
/// GOMP_SPINCOUNT is set, sets both and re-executes /proc/self/exe with `argv` (the OpenMP
/// runtime read the environment when it was loaded, before main()). Returns only when nothing
/// was re-executed: a variable was already set (by the user, whose choice wins, or by the
/// re-execution itself), `argv` is null, or execv failed (the run then continues with
/// libgomp's defaults). Call it first thing in main(), before any thread starts; not
/// thread-safe (it changes the environment).
void use_recommended_wait_policy(char** argv);

/// The OpenMP wait policy in effect, from OMP_WAIT_POLICY and GOMP_SPINCOUNT as they were when
/// frame was loaded (after the OpenMP runtime read them), e.g. "PASSIVE, GOMP_SPINCOUNT=30000" or
/// "libgomp default (spin ~300000 iterations, then sleep)".
std::string openmp_wait_policy();

/// How many fork()s separate this process from the one that loaded frame: 0 there, 1 in its
/// child, and so on (counted by a pthread_atfork child handler).
int fork_generation();

/// The compute threads a compile or run may use for `requested` (0: the OpenMP default,
/// omp_get_max_threads()): `requested` itself, except 1 in a forked process
/// (fork_generation() > 0). OpenMP's worker threads do not survive fork(), and libgomp waits
/// forever in the first parallel region of more than one thread in the child; with one
/// thread, compiles and runs there work (docs/python.md, "Threads and the GIL").
int usable_threads(int requested);

/// The cores this process may run on (its CPU affinity mask, sched_getaffinity), at least 1.
/// A Session compiles in the background only where its compute threads leave one of these
/// spare (SessionOptions::background_compile).
int available_cores();

/// Whether the calling thread is a Session's background compile thread
/// (SessionOptions::background_compile). Code that must not run there returns an error instead,
/// and the compile then runs on the path of the key's next run: the Python binding's
/// trampolines (a Python op's shape function or kernel), which would take the GIL from a thread
/// Python does not know, where destroying a session or exiting the interpreter waits for it.
bool in_background_compile();

}  // namespace frame::runtime
