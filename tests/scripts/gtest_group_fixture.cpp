// A GoogleTest binary whose cases pass, skip, fail, crash or hang on request (environment
// variables FIXTURE_FAIL, FIXTURE_CRASH, FIXTURE_HANG, FIXTURE_LEAK_EXIT, FIXTURE_SETUP_HANG),
// for the test of tests/scripts/gtest_group.py (tests/scripts/test_gtest_group.py).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

bool on(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v == '1';
}

// Output without a final newline: gtest's "[ OK ]" then shares the line.
TEST(Fixture, APasses) {
  std::printf("progress...");
  std::fflush(stdout);
  EXPECT_EQ(2 + 2, 4);
}

TEST(Fixture, BSkips) { GTEST_SKIP() << "no device here"; }

TEST(Fixture, CFails) { EXPECT_EQ(on("FIXTURE_FAIL") ? 1 : 2, 2) << "asked to fail"; }

TEST(Fixture, DCrashes) {
  if (on("FIXTURE_CRASH")) std::abort();
}

TEST(Fixture, EHangs) {
  if (on("FIXTURE_HANG")) std::this_thread::sleep_for(std::chrono::seconds(120));
}

TEST(Fixture, FSkipsToo) { GTEST_SKIP() << "no device here"; }

TEST(Fixture, GLastPasses) { EXPECT_TRUE(true); }

TEST(Other, Passes) { EXPECT_EQ(3 * 3, 9); }

// A non-zero exit after every case passed (as LeakSanitizer reports at exit).
class ExitCode : public ::testing::Environment {
 public:
  void SetUp() override {
    if (on("FIXTURE_SETUP_HANG")) std::this_thread::sleep_for(std::chrono::seconds(120));
  }
  void TearDown() override {
    if (on("FIXTURE_LEAK_EXIT")) std::_Exit(23);
  }
};
[[maybe_unused]] ::testing::Environment* const kEnv =
    ::testing::AddGlobalTestEnvironment(new ExitCode());

}  // namespace
