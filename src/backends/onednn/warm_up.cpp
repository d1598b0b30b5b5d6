// The onednn backend's warm-up (warm_up.h): the first dnnl_sgemm call of the process, on a
// thread of its own, while the ONNX frontend imports a model that will call it.

#include "backends/onednn/warm_up.h"

#include <dnnl.h>
#include <omp.h>
#include <pthread.h>

#include <mutex>
#include <string>
#include <system_error>
#include <thread>

#include "frame/ops/backend_availability.h"

namespace frame::backends::onednn {
namespace {

struct WarmUpThread {
  std::mutex mu;
  std::thread thread;
  bool started = false;
  void join() {
    std::lock_guard lock(mu);
    if (thread.joinable()) thread.join();
  }
  // An exit while a warm-up runs (only possible while another thread is opening a model)
  // waits for it here; statics oneDNN built on the warm-up thread are gone by then.
  ~WarmUpThread() { join(); }
};

WarmUpThread& warm_up_thread() {
  static WarmUpThread w;
  return w;
}

}  // namespace

bool start_gemm_warm_up() {
  WarmUpThread& w = warm_up_thread();
  std::lock_guard lock(w.mu);
  if (w.started) return w.thread.joinable();
  w.started = true;
  if (ops::available_cores() < 2) return false;
  // A fork() joins the thread first: the child must not inherit oneDNN's kernel generation half
  // done on a thread it does not have. The OpenMP runtime is initialized on this thread before
  // the handler is registered, so its own fork handlers (LLVM's libomp takes its locks in
  // them) run after ours, not while the thread they would wait for needs those locks.
  static const int registered = [] {
    (void)omp_get_max_threads();
    return pthread_atfork([] { warm_up_thread().join(); }, nullptr, nullptr);
  }();
  (void)registered;
  try {
    w.thread = std::thread([] {
      omp_set_num_threads(1);  // this thread's own setting: no OpenMP team for an 8x8 product
      float a[64] = {}, b[64] = {}, c[64] = {};
      (void)dnnl_sgemm('N', 'N', 8, 8, 8, 1.0F, a, 8, b, 8, 0.0F, c, 8);
    });
  } catch (const std::system_error&) {
    return false;  // no thread to spare: the first gemm generates the kernels, as without this
  }
  return true;
}

bool gemm_warm_up_started() {
  WarmUpThread& w = warm_up_thread();
  std::lock_guard lock(w.mu);
  return w.started;
}

void join_gemm_warm_up() { warm_up_thread().join(); }

bool warm_up_for(const std::vector<std::string>& ops, bool shapes_vary) {
  for (const std::string& op : ops) {
    if (op == "lstm" || op == "gru" || op == "rnn" || (op == "conv" && shapes_vary)) {
      return start_gemm_warm_up();
    }
  }
  return false;
}

namespace {
[[maybe_unused]] const bool kWarmUpRegistered = [] {
  ops::register_warm_up("onednn", &warm_up_for, &join_gemm_warm_up);
  return true;
}();
}  // namespace

}  // namespace frame::backends::onednn
