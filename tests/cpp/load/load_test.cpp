// Load and leaks (docs/fuzzing.md "Load and leaks"): one compiled model run from 16 threads,
// every output compared bit for bit with a single-threaded run that itself matches the
// reference computed by numpy/torch when the model was made (models/small_cnn.expected.npy);
// resident memory measured after warm-up and at the end; and load/compile/run/destroy cycles,
// checked for leaks by LeakSanitizer in the ASan build.

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "common/tolerance.h"
#include "frame/core/npy.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/compile.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FRAME_LOAD_SANITIZED 1
#endif
#if __has_feature(thread_sanitizer)
#define FRAME_LOAD_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define FRAME_LOAD_LSAN 1
#endif
#endif

namespace frame {
namespace {

std::string source_dir() {
  const char* env = std::getenv("FRAME_SOURCE_DIR");
  return env != nullptr ? env : FRAME_SOURCE_DIR;
}

// Runs per thread: 1,000, or 100 under ThreadSanitizer (an order of magnitude slower per
// run); FRAME_LOAD_RUNS overrides both.
int runs_per_thread() {
  if (const char* env = std::getenv("FRAME_LOAD_RUNS")) return std::atoi(env);
#ifdef FRAME_LOAD_TSAN
  return 100;
#else
  return 1000;
#endif
}

// Resident set size in bytes (second field of /proc/self/statm, in pages).
int64_t rss_bytes() {
  std::ifstream f("/proc/self/statm");
  int64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<int64_t>(sysconf(_SC_PAGESIZE));
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;
}

TEST(Load, SixteenThreadsShareOneExecutable) {
  const std::string dir = source_dir() + "/models/";
  Result<ir::Graph> g = onnx::load(dir + "small_cnn.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  Result<Tensor> input = read_npy(dir + "small_cnn.input.npy");
  ASSERT_TRUE(input.is_ok()) << input.status().to_string();
  Result<Tensor> expected = read_npy(dir + "small_cnn.expected.npy");
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  runtime::CompileOptions options;
  options.num_threads = 1;  // concurrency comes from the 16 callers
  Result<runtime::Executable> exe = runtime::compile(*g, options);
  ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();

  const runtime::TensorMap inputs{{"input", *input}};
  Result<runtime::TensorMap> single = exe->run(inputs);
  ASSERT_TRUE(single.is_ok()) << single.status().to_string();
  const Tensor& reference = single->at("probs");
  test::CompareResult cmp = test::compare_tensors(
      reference, *expected,
      test::tolerance_for(DTypeCode::kFloat32, test::ToleranceClass::kDeepNetwork));
  ASSERT_TRUE(cmp.ok) << cmp.message;

  constexpr int kThreads = 16;
  const int runs = runs_per_thread();
  constexpr int kWarmup = 20;
  std::vector<int> failures(kThreads, 0);
  std::atomic<int> warmed{0};
  std::atomic<bool> measured{false};
  int64_t rss_warm = 0;
  std::vector<std::thread> threads;
  for (int tid = 0; tid < kThreads; ++tid) {
    threads.emplace_back([&, tid] {
      for (int r = 0; r < runs; ++r) {
        if (r == kWarmup) {
          // Every thread has warmed up (its arenas and oneDNN scratch exist) before RSS is read.
          if (warmed.fetch_add(1) + 1 == kThreads) {
            rss_warm = rss_bytes();
            measured = true;
          }
          while (!measured) std::this_thread::yield();
        }
        Result<runtime::TensorMap> out = exe->run(inputs);
        if (!out.is_ok() || !same_bits(out->at("probs"), reference)) ++failures[tid];
      }
    });
  }
  for (auto& t : threads) t.join();
  const int64_t rss_end = rss_bytes();
  for (int tid = 0; tid < kThreads; ++tid) EXPECT_EQ(failures[tid], 0) << "thread " << tid;
  std::printf(
      "load: %d threads x %d runs; RSS after warm-up %.1f MB, at the end %.1f MB "
      "(growth %.1f MB)\n",
      kThreads, runs, static_cast<double>(rss_warm) / 1e6, static_cast<double>(rss_end) / 1e6,
      static_cast<double>(rss_end - rss_warm) / 1e6);
#ifndef FRAME_LOAD_SANITIZED
  // Sanitizers keep freed memory in quarantine, so RSS is only bounded in a plain build.
  if (runs > kWarmup) {
    EXPECT_LT(rss_end - rss_warm, int64_t{64} << 20);
  }
#endif
}

// Load, compile (no process-wide cache), run and destroy, again and again: LeakSanitizer
// (ASan build) must find nothing afterwards; in every build each run must still be right.
TEST(Load, LoadCompileRunDestroyCyclesLeakNothing) {
  const std::string dir = source_dir() + "/models/";
  Result<Tensor> input = read_npy(dir + "small_cnn.input.npy");
  ASSERT_TRUE(input.is_ok()) << input.status().to_string();
  Result<Tensor> expected = read_npy(dir + "small_cnn.expected.npy");
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  for (int cycle = 0; cycle < 10; ++cycle) {
    Result<ir::Graph> g = onnx::load(dir + "small_cnn.onnx");
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    runtime::CompileOptions options;
    options.use_cache = false;
    options.backends = {cycle % 2 == 0 ? "auto" : "cpu"};
    Result<runtime::Executable> exe = runtime::compile(*g, options);
    ASSERT_TRUE(exe.is_ok()) << exe.status().to_string();
    Result<runtime::TensorMap> out = exe->run({{"input", *input}});
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    test::CompareResult cmp = test::compare_tensors(
        out->at("probs"), *expected,
        test::tolerance_for(DTypeCode::kFloat32, test::ToleranceClass::kDeepNetwork));
    ASSERT_TRUE(cmp.ok) << "cycle " << cycle << ": " << cmp.message;
  }
#ifdef FRAME_LOAD_LSAN
  EXPECT_EQ(__lsan_do_recoverable_leak_check(), 0) << "LeakSanitizer reported leaks above";
#endif
}

}  // namespace
}  // namespace frame
