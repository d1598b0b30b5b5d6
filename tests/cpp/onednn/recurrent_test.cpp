// The onednn LSTM of small batches (src/backends/onednn/kernels/recurrent.cpp, lstm_panels):
// hidden units in blocks of 16 split over the node's threads, one barrier per step. Compared
// with the cpu kernel (an independent transcription of the ONNX equations) at 1 and 2 threads,
// with hidden sizes that leave a partial last block and that give each thread several blocks,
// both directions, initial states, and every output, on every Highway target this CPU has; and
// the barrier its threads meet at.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "backends/onednn/kernels/hwy_targets.h"
#include "backends/onednn/kernels/team_barrier.h"
#include "cpp/onednn/linear_test_util.h"

namespace frame::test::linear {
namespace {

struct LstmShape {
  int64_t seq, batch, input, hidden;
  std::string direction;
};

// Values in [-1, 1] / `scale` (multiples of 1/8 before scaling).
Tensor scaled(Shape shape, uint32_t seed, float scale) {
  Tensor t = grid_tensor(std::move(shape), seed);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] *= 0.5F / scale;
  return t;
}

TEST(OnednnLstm, SmallBatchesMatchCpuAtEveryThreadCount) {
  const std::vector<LstmShape> shapes = {
      {7, 1, 5, 37, "forward"},          // three blocks, the last of 5 units
      {6, 3, 9, 64, "bidirectional"},    // four full blocks per direction
      {5, 4, 3, 16, "reverse"},          // one block: one thread whatever the count
      {9, 2, 11, 100, "bidirectional"},  // seven blocks, split 3 + 4
  };
  uint32_t seed = 1;
  for (const LstmShape& s : shapes) {
    SCOPED_TRACE(::testing::Message() << "T " << s.seq << " N " << s.batch << " I " << s.input
                                      << " H " << s.hidden << " " << s.direction);
    const int64_t D = s.direction == "bidirectional" ? 2 : 1;
    // Weights scaled down with the fan-in so the gates stay away from saturation.
    const float fan = static_cast<float>(s.input + s.hidden) / 8.0F;
    OpCall call;
    call.op = "lstm";
    call.inputs = {scaled({s.seq, s.batch, s.input}, seed++, 1.0F),
                   scaled({D, 4 * s.hidden, s.input}, seed++, fan),
                   scaled({D, 4 * s.hidden, s.hidden}, seed++, fan),
                   scaled({D, 8 * s.hidden}, seed++, 1.0F),
                   Tensor(),
                   scaled({D, s.batch, s.hidden}, seed++, 1.0F),
                   scaled({D, s.batch, s.hidden}, seed++, 1.0F)};
    call.attrs = {{"hidden_size", s.hidden}, {"direction", s.direction}};
    call.num_outputs = 3;
    call.constant_inputs = {1, 2, 3};
    Result<std::vector<Tensor>> want = run_op(call, "cpu");
    ASSERT_TRUE(want.is_ok()) << want.status().message();
    // 3 threads on a 2-core machine: a team mate descheduled at a step (TeamBarrier's sleep).
    // Every Highway target this CPU supports (VecTable::panel_gemv groups its panels by the
    // target's vectors per panel row).
    for (int64_t target : backends::onednn::vec_targets_supported()) {
      backends::onednn::set_vec_target_for_test(target);
      for (int threads : {1, 2, 3}) {
        call.num_threads = threads;
        Result<std::vector<Tensor>> got = run_op(call, "onednn");
        ASSERT_TRUE(got.is_ok()) << got.status().message();
        ASSERT_EQ(got->size(), 3U);
        for (size_t o = 0; o < 3; ++o) {
          const CompareResult c =
              compare_tensors((*got)[o], (*want)[o],
                              tolerance_for(DTypeCode::kFloat32, ToleranceClass::kCrossBackend));
          EXPECT_TRUE(c.ok) << "output " << o << " at " << threads << " thread(s), target "
                            << target << ": " << c.message;
        }
      }
    }
    backends::onednn::set_vec_target_for_test(0);
  }
}

// Every thread writes its meeting number into its slot before each meeting and, after it, reads
// every slot: all must hold that meeting's number (no thread left early, none ran ahead into the
// next meeting's writes before the others read). A late thread every 250 meetings makes the
// others sleep (the futex path); 5 threads on a 2-core machine do too. About 0.2 s.
TEST(TeamBarrier, NoThreadPassesAMeetingBeforeAllArrive) {
  for (int threads : {1, 2, 5}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    constexpr int kMeetings = 1000;
    backends::onednn::TeamBarrier barrier(threads);
    std::vector<std::atomic<int>> slots(static_cast<size_t>(threads));
    std::atomic<int> wrong{0};
    std::vector<std::thread> team;
    for (int id = 0; id < threads; ++id) {
      team.emplace_back([&, id] {
        for (int m = 1; m <= kMeetings; ++m) {
          slots[static_cast<size_t>(id)].store(m, std::memory_order_relaxed);
          // Now and then the last thread arrives 2 ms late, so the others outlast their spin
          // and sleep (the futex path) whatever the machine's core count.
          if (id == threads - 1 && m % 250 == 0) {
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
          }
          barrier.wait();
          for (const std::atomic<int>& s : slots) {
            if (s.load(std::memory_order_relaxed) != m) wrong.fetch_add(1);
          }
          barrier.wait();  // nobody writes meeting m + 1 before all have read meeting m
        }
      });
    }
    for (std::thread& t : team) t.join();
    EXPECT_EQ(wrong.load(), 0);
  }
}

}  // namespace
}  // namespace frame::test::linear
