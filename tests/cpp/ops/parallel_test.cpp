// ops::parallel_for / ops::parallel_ranges (include/frame/ops/parallel.h): every index exactly
// once, ranges contiguous and disjoint, and no OpenMP region where the loop gets one thread.

#include "frame/ops/parallel.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <vector>

namespace frame::ops {
namespace {

TEST(ParallelFor, VisitsEveryIndexOnceForAnyThreadCount) {
  for (const int64_t n : {0, 1, 2, 7, 1000}) {
    for (const int threads : {0, 1, 2, 3, 8}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      parallel_for(n, threads, [&](int64_t i) { seen[static_cast<size_t>(i)].fetch_add(1); });
      for (int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(seen[static_cast<size_t>(i)].load(), 1) << "n " << n << " threads " << threads;
      }
    }
  }
  int calls = 0;
  parallel_for(-3, 2, [&](int64_t) { ++calls; });
  EXPECT_EQ(calls, 0);
}

TEST(ParallelFor, OneThreadRunsInlineWithoutARegion) {
  bool in_region = true;
  parallel_for(100, 1, [&](int64_t i) {
    if (i == 0) in_region = omp_get_level() != 0;  // counts inactive regions too
  });
  EXPECT_FALSE(in_region);
  in_region = true;
  parallel_ranges(100, 1, [&](int64_t, int64_t) { in_region = omp_get_level() != 0; });
  EXPECT_FALSE(in_region);
  // Two threads over two or more items open a region.
  std::atomic<bool> any_region{false};
  parallel_for(64, 2, [&](int64_t) {
    if (omp_in_parallel() != 0) any_region = true;
  });
  EXPECT_TRUE(any_region.load());
}

TEST(ParallelRanges, CoverTheRangeInDisjointContiguousPieces) {
  for (const int64_t n : {0, 1, 2, 5, 999}) {
    for (const int threads : {1, 2, 4, 7}) {
      std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
      std::atomic<int> calls{0};
      parallel_ranges(n, threads, [&](int64_t b, int64_t e) {
        EXPECT_LT(b, e);
        ++calls;
        for (int64_t i = b; i < e; ++i) seen[static_cast<size_t>(i)].fetch_add(1);
      });
      for (int64_t i = 0; i < n; ++i) EXPECT_EQ(seen[static_cast<size_t>(i)].load(), 1);
      EXPECT_LE(calls.load(), std::max(1, threads)) << "n " << n;
      if (n == 0) {
        EXPECT_EQ(calls.load(), 0);
      }
    }
  }
}

}  // namespace
}  // namespace frame::ops
