#pragma once
// A barrier for the threads of one OpenMP team that meet many times in one parallel region
// (lstm_panels: one meeting per time step, every few microseconds).
//
// libgomp's `#pragma omp barrier` cost about 1.2 us per meeting on the 2-core virtual machine
// this project measures on with both threads already waiting, and 3-4 us per step of a
// panel_gemv recurrence (512 KiB of weights per thread, 5 us of work), where this barrier cost
// about 0.6 us (0.08 us with nothing else to do). The last thread to arrive releases the others
// by bumping a generation counter that they spin on; a thread that spins longer than kSpins
// pauses (an oversubscribed machine, a descheduled team mate) sleeps in std::atomic::wait (a
// futex) instead, so a team of more threads than free cores still makes progress.

#include <atomic>
#include <cstdint>

namespace frame::backends::onednn {

/// A reusable barrier for exactly `threads` threads (>= 1), each calling wait() once per
/// meeting. Memory written before wait() by any thread is visible to every thread after it
/// (acquire/release on the generation counter). Not copyable; one per parallel region.
class TeamBarrier {
 public:
  explicit TeamBarrier(int threads) : threads_(threads) {}
  TeamBarrier(const TeamBarrier&) = delete;
  TeamBarrier& operator=(const TeamBarrier&) = delete;

  /// Returns once all `threads` threads have called wait() for this meeting.
  void wait() {
    const uint32_t gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) == threads_ - 1) {
      // No thread can arrive at the next meeting before the generation moves, so the count is
      // reset first.
      arrived_.store(0, std::memory_order_relaxed);
      // seq_cst, not release: notify_all then reads libstdc++'s count of sleepers and skips the
      // wake where it sees none; a release store could be ordered after that read (x86's store
      // buffer), missing a thread that had just gone to sleep on the old generation.
      gen_.store(gen + 1, std::memory_order_seq_cst);
      gen_.notify_all();
      return;
    }
    for (int i = 0; i < kSpins; ++i) {
      if (gen_.load(std::memory_order_acquire) != gen) return;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    while (gen_.load(std::memory_order_acquire) == gen) gen_.wait(gen, std::memory_order_acquire);
  }

 private:
  static constexpr int kSpins =
      1 << 11;  // 40 us of pauses here (20 ns each; 140 cycles on newer Intel cores)
  const int threads_;
  alignas(64) std::atomic<int> arrived_{0};
  alignas(64) std::atomic<uint32_t> gen_{0};
};

}  // namespace frame::backends::onednn
