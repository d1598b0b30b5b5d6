// Threads: CompileOptions::num_threads reaches kernels both as KernelContext::num_threads and
// as the OpenMP nthreads ICV of the running thread (what oneDNN follows), the caller's ICV is
// restored; kernels prepare under the compiled count; the cost-based split helper of the cpu
// kernels; the wait-policy report.

#include "frame/runtime/threads.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../../../src/backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {
namespace {

std::atomic<int> g_seen_icv{-1};
std::atomic<int> g_seen_budget{-1};

// relu that records the thread budget it was given and the ICV of the thread running it.
Status probe_relu(ops::KernelContext& ctx) {
  g_seen_icv = omp_get_max_threads();
  g_seen_budget = ctx.num_threads;
  const float* x = ctx.input(0).data<float>();
  float* y = ctx.output(0).data<float>();
  for (int64_t i = 0; i < ctx.output(0).numel(); ++i) y[i] = x[i] > 0 ? x[i] : 0.0F;
  return Status();
}
FRAME_REGISTER_KERNEL(relu, "rt_omp_probe", probe_relu).dtypes({DTypeCode::kFloat32});

// The probes' input: large enough (2 x 1 MiB: 42 us at the node_threads.h cost model) that the
// node runs on the compiled thread count, not on one thread as a small node would.
constexpr int64_t kProbeNumel = int64_t{1} << 18;

Tensor probe_input() {
  std::vector<float> v(static_cast<size_t>(kProbeNumel), 1.0F);
  v[0] = -1;
  v[1] = 2;
  v[2] = -3;
  return Tensor::from_vector<float>({kProbeNumel}, v);
}

// One relu node compiled for `backend` (one of the probe backends here) and `threads`.
Executable probe_executable(int threads, const std::string& backend = "rt_omp_probe") {
  ir::Graph g("omp_probe");
  ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {kProbeNumel}});
  auto id = g.create_node("relu", "r", {x}, 1, {}, {"r"});
  EXPECT_TRUE(id.is_ok());
  g.add_output(g.node(*id).outputs[0]);
  CompileOptions o;
  o.backends = {backend};
  o.num_threads = threads;
  o.use_cache = false;
  auto exe = compile(g, o);
  EXPECT_TRUE(exe.is_ok()) << exe.status().to_string();
  return *exe;
}

void run_and_check(const Executable& exe) {
  auto out = exe.run({{"x", probe_input()}});
  ASSERT_TRUE(out.is_ok()) << out.status().to_string();
  EXPECT_EQ(out->at("r").data<float>()[1], 2.0F);
  EXPECT_EQ(out->at("r").data<float>()[0], 0.0F);
}

TEST(Threads, NumThreadsSetsTheOpenMpIcvOfTheRunningThreadAndIsRestored) {
  const int caller = omp_get_max_threads();
  for (int n : {1, 3, 5}) {
    Executable exe = probe_executable(n);
    EXPECT_EQ(exe.report().num_threads, n);
    g_seen_icv = g_seen_budget = -1;
    run_and_check(exe);
    EXPECT_EQ(g_seen_icv.load(), n);
    EXPECT_EQ(g_seen_budget.load(), n);
    EXPECT_EQ(omp_get_max_threads(), caller);  // the caller's ICV is back

    // A thread that never touched OpenMP gets the same.
    g_seen_icv = g_seen_budget = -1;
    int after = -1;
    std::thread t([&] {
      run_and_check(exe);
      after = omp_get_max_threads();
    });
    t.join();
    EXPECT_EQ(g_seen_icv.load(), n);
    EXPECT_EQ(g_seen_budget.load(), n);
    EXPECT_EQ(after, caller);
  }
}

TEST(Threads, ZeroMeansTheOpenMpDefault) {
  Executable exe = probe_executable(0);
  g_seen_icv = g_seen_budget = -1;
  run_and_check(exe);
  EXPECT_EQ(g_seen_budget.load(), omp_get_max_threads());
  EXPECT_EQ(g_seen_icv.load(), omp_get_max_threads());
}

std::atomic<int> g_prepare_icv{-1};

// Records the OpenMP ICV its prepare step runs under (oneDNN fixes a primitive's thread
// partition when the primitive is made, i.e. in prepare).
Result<std::shared_ptr<void>> probe_prepare(const ops::NodeContext&) {
  g_prepare_icv = omp_get_max_threads();
  return std::shared_ptr<void>();
}
FRAME_REGISTER_KERNEL(relu, "rt_prepare_probe", probe_relu)
    .dtypes({DTypeCode::kFloat32})
    .prepare(probe_prepare);

// A kernel that declares at most 2 threads for every node (KernelDef::max_threads).
int at_most_two(const ops::NodeContext&) { return 2; }
FRAME_REGISTER_KERNEL(relu, "rt_cap_probe", probe_relu)
    .dtypes({DTypeCode::kFloat32})
    .prepare(probe_prepare)
    .max_threads(at_most_two);

// The node prepares and runs with min(declared, compiled) threads: its budget and the OpenMP
// ICV of both steps; a compile for fewer threads than declared keeps its own count.
TEST(Threads, AKernelsDeclaredMostThreadsLimitsItsNode) {
  for (const auto& [compiled, want] : {std::pair{3, 2}, std::pair{2, 2}, std::pair{1, 1}}) {
    g_prepare_icv = g_seen_icv = g_seen_budget = -1;
    const Executable exe = probe_executable(compiled, "rt_cap_probe");
    EXPECT_EQ(g_prepare_icv.load(), want) << "compiled for " << compiled;
    run_and_check(exe);
    EXPECT_EQ(g_seen_budget.load(), want) << "compiled for " << compiled;
    EXPECT_EQ(g_seen_icv.load(), want) << "compiled for " << compiled;
  }
}

TEST(Threads, KernelsPrepareUnderTheCompiledThreadCount) {
  const int caller = omp_get_max_threads();
  // Compiled count 1 while the process ICV is 2, and 2 while it is 1.
  for (const auto& [icv, compiled] : {std::pair{2, 1}, std::pair{1, 2}}) {
    omp_set_num_threads(icv);
    ir::Graph g("prepare_probe");
    ir::ValueId x = g.add_input("x", ir::TensorType{DTypeCode::kFloat32, {kProbeNumel}});
    auto id = g.create_node("relu", "r", {x}, 1, {}, {"r"});
    ASSERT_TRUE(id.is_ok());
    g.add_output(g.node(*id).outputs[0]);
    CompileOptions o;
    o.backends = {"rt_prepare_probe"};
    o.num_threads = compiled;
    o.use_cache = false;
    g_prepare_icv = -1;
    auto exe = compile(g, o);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    EXPECT_EQ(g_prepare_icv.load(), compiled) << "process ICV " << icv;
    EXPECT_EQ(omp_get_max_threads(), icv);  // compile restores the caller's ICV
    run_and_check(*exe);
  }
  omp_set_num_threads(caller);
}

TEST(Threads, CostBasedSplit) {
  using backends::cpu::threads_for_cost;
  // Model: ns = items * (bytes / 4 + flops / 2); one thread per 25 us, at least 2 to split.
  EXPECT_EQ(threads_for_cost(1000, 8.0, 0.0, 4), 1);     // 2 us: inline
  EXPECT_EQ(threads_for_cost(24999, 8.0, 0.0, 4), 1);    // 49.998 us
  EXPECT_EQ(threads_for_cost(25000, 8.0, 0.0, 4), 2);    // 50 us
  EXPECT_EQ(threads_for_cost(37500, 8.0, 0.0, 4), 3);    // 75 us
  EXPECT_EQ(threads_for_cost(1000000, 8.0, 0.0, 4), 4);  // capped by the budget
  EXPECT_EQ(threads_for_cost(1000, 0.0, 100.0, 8), 2);   // 50 us of arithmetic
  EXPECT_EQ(threads_for_cost(3, 1e9, 0.0, 8), 3);        // never more threads than items
  EXPECT_EQ(threads_for_cost(1000000, 8.0, 0.0, 1), 1);  // budget 1
  EXPECT_EQ(threads_for_cost(1000000, 8.0, 0.0, 0), 1);  // budget 0
  EXPECT_EQ(threads_for_cost(0, 8.0, 0.0, 4), 1);        // nothing to do
  EXPECT_EQ(backends::cpu::threads_for(25000, 2), 2);    // 8 bytes per element
  EXPECT_EQ(backends::cpu::threads_for(20000, 2), 1);
}

TEST(Threads, ParallelRangesCoverEveryItemOnce) {
  for (int64_t items : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{100000}}) {
    std::vector<int> hits(static_cast<size_t>(items), 0);
    backends::cpu::parallel_ranges(items, 8.0, 0.0, 2, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) ++hits[static_cast<size_t>(i)];
    });
    for (int64_t i = 0; i < items; ++i) ASSERT_EQ(hits[static_cast<size_t>(i)], 1) << i;
  }
}

TEST(Threads, WaitPolicyReportFollowsTheEnvironmentAtLoad) {
  // Nothing in this process changes the variables, so the environment now is the one at load.
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  const char* spin = std::getenv("GOMP_SPINCOUNT");
  const std::string report = openmp_wait_policy();
  if (policy == nullptr && spin == nullptr) {
    EXPECT_EQ(report, "libgomp default (spin ~300000 iterations, then sleep)");
  } else {
    if (policy != nullptr) {
      EXPECT_NE(report.find(policy), std::string::npos) << report;
    }
    if (spin != nullptr) {
      EXPECT_NE(report.find(std::string("GOMP_SPINCOUNT=") + spin), std::string::npos) << report;
    }
  }
}

// In a forked child every compile uses one thread: a parallel region of two threads there would
// wait forever for libgomp workers that did not survive the fork. The parent has used two.
TEST(Threads, AForkedChildUsesOneThread) {
  EXPECT_EQ(fork_generation(), 0);
  EXPECT_EQ(usable_threads(3), 3);
  EXPECT_EQ(usable_threads(0), omp_get_max_threads());
  std::atomic<int> in_team{0};
#pragma omp parallel num_threads(2)
  in_team.fetch_add(1);
  ASSERT_EQ(in_team.load(), 2);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Exit codes name the first failed check; no gtest macros in the child.
    if (fork_generation() != 1) _exit(2);
    if (usable_threads(3) != 1 || usable_threads(0) != 1) _exit(3);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(usable_threads(3), 3);  // the parent is unchanged
}

}  // namespace
}  // namespace frame::runtime
