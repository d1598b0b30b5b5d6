// Tests for core/aligned_memory.h (docs/architecture/execution-model.md, "Memory"): alignment,
// the huge-page path's own 2 MiB-aligned mapping and its advice as the kernel reports them in
// /proc/self/smaps, release, GrowBuffer, and Tensor storage taking the same path. ctest runs
// these cases twice: as they are, and with FRAME_HUGE_PAGES=0 (core_aligned_memory_no_huge_pages).
#include "core/aligned_memory.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "frame/core/tensor.h"

namespace frame::detail {
namespace {

// The transparent huge page mode ("always", "madvise", "never"), "" where the kernel has none.
std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  const size_t a = line.find('['), b = line.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

// The value of `field` (e.g. "THPeligible") in the /proc/self/smaps entry of the mapping that
// holds `p`; nullopt where no mapping holds it or the entry has no such field.
std::optional<std::string> smaps_field(const void* p, const std::string& field) {
  std::ifstream f("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    const size_t dash = line.find('-');
    const size_t space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space &&
        line.find(':') > space) {  // a mapping's header line: "start-end perms ..."
      const uintptr_t lo = std::stoull(line.substr(0, dash), nullptr, 16);
      const uintptr_t hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
      inside = addr >= lo && addr < hi;
      continue;
    }
    if (inside && line.rfind(field + ":", 0) == 0) {
      std::istringstream in(line.substr(field.size() + 1));
      std::string value;
      in >> value;
      return value;
    }
  }
  return std::nullopt;
}

// The start and end of the /proc/self/smaps mapping that holds `p`; nullopt where none does.
std::optional<std::pair<uintptr_t, uintptr_t>> mapping_of(const void* p) {
  std::ifstream f("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  std::string line;
  while (std::getline(f, line)) {
    const size_t dash = line.find('-'), space = line.find(' ');
    if (dash == std::string::npos || space == std::string::npos || dash > space ||
        line.find(':') < space) {
      continue;
    }
    const uintptr_t lo = std::stoull(line.substr(0, dash), nullptr, 16);
    const uintptr_t hi = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
    if (addr >= lo && addr < hi) return std::make_pair(lo, hi);
  }
  return std::nullopt;
}

// Why this process cannot be expected to get huge pages where it advises them: empty if it can.
std::string no_thp_reason() {
  const std::string mode = thp_mode();
  if (mode != "madvise" && mode != "always") return "transparent huge pages: '" + mode + "'";
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("THP_enabled:", 0) == 0 && line.find('0') != std::string::npos) {
      return "THP disabled for this process (prctl)";
    }
  }
  return "";
}

TEST(AlignedMemory, TheEnvironmentTurnsItOff) {
  const char* v = std::getenv("FRAME_HUGE_PAGES");
  if (v == nullptr || std::strcmp(v, "0") != 0) GTEST_SKIP() << "FRAME_HUGE_PAGES is not 0";
  EXPECT_FALSE(huge_pages_enabled());
}

TEST(AlignedMemory, SmallAllocationsAreAlignedAndWritable) {
  for (size_t bytes :
       {size_t{0}, size_t{1}, size_t{64}, size_t{4096}, size_t{100000}, kHugePageBytes - 64}) {
    for (size_t alignment : {size_t{64}, size_t{4096}}) {
      auto* p = static_cast<unsigned char*>(allocate_aligned(bytes, alignment));
      ASSERT_NE(p, nullptr) << bytes;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % alignment, 0u) << bytes;
      std::memset(p, 0x5a, bytes == 0 ? 1 : bytes);
      EXPECT_EQ(p[bytes == 0 ? 0 : bytes - 1], 0x5a);
      free_aligned(p, bytes);
    }
  }
  free_aligned(nullptr, 123);  // ignored
}

TEST(AlignedMemory, LargeAllocationsAreHugePageMappings) {
  drop_kept_mappings();  // a fresh mapping, not one an earlier test released
  // Two whole huge pages and a tail: the advice covers the two, the tail keeps 4 KiB pages.
  const size_t bytes = 2 * kHugePageBytes + 12345;
  auto* p = static_cast<unsigned char*>(allocate_aligned(bytes, 64));
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, bytes);
  EXPECT_EQ(p[0], 7);
  EXPECT_EQ(p[bytes - 1], 7);
  const std::optional<std::pair<uintptr_t, uintptr_t>> area = mapping_of(p);
  if (!area) {
    free_aligned(p, bytes);
    GTEST_SKIP() << "/proc/self/smaps is not readable here";
  }
  const std::string no_thp = no_thp_reason();
  if (huge_pages_enabled()) {
    // Its own mapping, which the advice splits in two: the whole huge pages from p (on a 2 MiB
    // boundary), then the tail up to the last page of `bytes`.
    const auto start = reinterpret_cast<uintptr_t>(p);
    EXPECT_EQ(start % kHugePageBytes, 0u);
    EXPECT_EQ(area->first, start);
    EXPECT_EQ(area->second, start + 2 * kHugePageBytes);
    const std::optional<std::pair<uintptr_t, uintptr_t>> tail = mapping_of(p + bytes - 1);
    ASSERT_TRUE(tail.has_value());
    EXPECT_EQ(tail->first, start + 2 * kHugePageBytes);
    EXPECT_EQ(tail->second, start + (bytes + 4095) / 4096 * 4096);
    if (no_thp.empty()) {
      // The advice splits the mapping: the whole huge pages are eligible, the tail is not.
      EXPECT_EQ(smaps_field(p, "THPeligible"), "1");
      EXPECT_EQ(smaps_field(p + 2 * kHugePageBytes, "THPeligible"), "0");
    }
  } else if (no_thp.empty() && thp_mode() == "madvise" &&
             std::string(std::getenv("GLIBC_TUNABLES") ? std::getenv("GLIBC_TUNABLES") : "")
                     .find("hugetlb") == std::string::npos) {
    // malloc's memory, never advised: no huge page may back it in madvise mode.
    EXPECT_EQ(smaps_field(p, "THPeligible"), "0");
  }
  free_aligned(p, bytes);
}

// A released huge-page mapping is kept and handed to the next request it holds (up to twice
// its size): a run's large output dropped by its caller comes back with its pages faulted in.
// Kept mappings total at most kKeptMappingBytes; a larger one is unmapped at once.
TEST(AlignedMemory, ReleasedMappingsAreReusedWithinABound) {
  if (!huge_pages_enabled()) {
    void* p = allocate_aligned(3 * kHugePageBytes, 64);
    ASSERT_NE(p, nullptr);
    free_aligned(p, 3 * kHugePageBytes);
    EXPECT_EQ(kept_mapping_bytes(), 0u);  // malloc's memory: nothing kept here
    return;
  }
  drop_kept_mappings();
  EXPECT_EQ(kept_mapping_bytes(), 0u);
  const size_t bytes = 3 * kHugePageBytes + 100;
  auto* p = static_cast<unsigned char*>(allocate_aligned(bytes, 64));
  ASSERT_NE(p, nullptr);
  p[bytes - 1] = 9;
  free_aligned(p, bytes);
  EXPECT_GE(kept_mapping_bytes(), bytes);
  EXPECT_TRUE(smaps_field(p, "Rss").has_value());  // still mapped
  // A smaller request it holds (not under half of it) takes it back, pages and all.
  auto* q = static_cast<unsigned char*>(allocate_aligned(2 * kHugePageBytes + 5, 64));
  EXPECT_EQ(q, p);
  EXPECT_EQ(q[bytes - 1], 9);
  EXPECT_EQ(kept_mapping_bytes(), 0u);
  // Handed back with the smaller size it was asked for: the mapping's own length is kept.
  free_aligned(q, 2 * kHugePageBytes + 5);
  auto* r = static_cast<unsigned char*>(allocate_aligned(bytes, 64));
  EXPECT_EQ(r, p);
  free_aligned(r, bytes);
  // Under half of it: a new mapping, the kept one stays kept.
  void* small = allocate_aligned(kHugePageBytes, 64);
  EXPECT_NE(small, p);
  free_aligned(small, kHugePageBytes);
  // Over the bound: never kept, unmapped at once; many kept ones stay within the bound.
  const size_t huge = kKeptMappingBytes + kHugePageBytes;
  void* h = allocate_aligned(huge, 64);
  ASSERT_NE(h, nullptr);
  free_aligned(h, huge);
  EXPECT_FALSE(smaps_field(h, "Rss").has_value());
  std::vector<void*> many;
  for (int i = 0; i < 12; ++i) many.push_back(allocate_aligned(8 * kHugePageBytes, 64));
  for (void* m : many) free_aligned(m, 8 * kHugePageBytes);
  EXPECT_LE(kept_mapping_bytes(), kKeptMappingBytes);
  EXPECT_GE(kept_mapping_bytes(), kKeptMappingBytes - 8 * kHugePageBytes);
  drop_kept_mappings();
  EXPECT_EQ(kept_mapping_bytes(), 0u);
  EXPECT_FALSE(smaps_field(p, "Rss").has_value());
}

// A child forked while another thread allocates and releases large buffers can allocate one
// itself: fork() takes the kept mappings' lock first and releases it in both processes. Each
// child must finish within 10 s (a child that inherited the lock held would wait forever; the
// first such child ends the test). Takes about 0.3 s.
TEST(AlignedMemory, AForkedChildCanAllocate) {
  std::atomic<bool> stop{false};
  std::thread churn([&] {
    while (!stop.load()) {
      void* p = allocate_aligned(3 * kHugePageBytes, 64);
      free_aligned(p, 3 * kHugePageBytes);
    }
  });
  int hung = 0, failed = 0;
  for (int i = 0; i < 20; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      void* p = allocate_aligned(5 * kHugePageBytes, 64);
      if (p != nullptr) static_cast<unsigned char*>(p)[0] = 1;
      free_aligned(p, 5 * kHugePageBytes);
      _exit(p != nullptr ? 0 : 1);
    }
    int status = 0;
    bool done = false;
    for (int waited = 0; waited < 1000 && !done; ++waited) {
      done = waitpid(pid, &status, WNOHANG) == pid;
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!done) {
      ++hung;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++failed;
    }
  }
  stop = true;
  churn.join();
  EXPECT_EQ(hung, 0);
  EXPECT_EQ(failed, 0);
}

TEST(AlignedMemory, GrowBufferGrowsOnlyWhenAskedForMore) {
  GrowBuffer b;
  auto* small = b.get_as<float>(100);
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small) % 64, 0u);
  small[99] = 1.5F;
  EXPECT_EQ(b.get_as<float>(10), small);  // fits: the same memory, contents kept
  EXPECT_EQ(small[99], 1.5F);
  const size_t big = kHugePageBytes / sizeof(float) + 1000;  // over 2 MiB: the huge-page path
  auto* large = b.get_as<float>(big);
  ASSERT_NE(large, nullptr);
  large[0] = 2.0F;
  large[big - 1] = 3.0F;
  if (huge_pages_enabled()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(large) % kHugePageBytes, 0u);
  }
  EXPECT_EQ(b.get_as<float>(big / 2), large);
  EXPECT_EQ(large[big - 1], 3.0F);
}

TEST(AlignedMemory, LargeTensorsTakeTheHugePagePath) {
  Result<Tensor> t = Tensor::empty(DTypeCode::kFloat32, {3, 1024, 1024});  // 12 MiB
  ASSERT_TRUE(t.is_ok());
  if (huge_pages_enabled()) {
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kHugePageBytes, 0u);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t->raw_data()) % kTensorAlignment, 0u);
  float* d = t->data<float>();
  for (int64_t i = 0; i < t->numel(); i += 4096) d[i] = static_cast<float>(i);
  EXPECT_EQ(d[4096 * 700], 4096.0F * 700);
  Result<Tensor> small = Tensor::empty(DTypeCode::kFloat32, {3});
  ASSERT_TRUE(small.is_ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->raw_data()) % kTensorAlignment, 0u);
}

}  // namespace
}  // namespace frame::detail
