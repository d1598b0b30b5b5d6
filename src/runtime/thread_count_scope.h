#pragma once
// ThreadCountScope: the OpenMP nthreads ICV of the calling thread set for one scope
// (docs/backends/onednn.md "Threads and the wait policy").

#include <omp.h>

namespace frame::runtime::detail {

// Sets the OpenMP nthreads ICV of the calling thread to the compiled thread count for one run
// and restores the caller's value: oneDNN sizes its parallel regions by omp_get_max_threads()
// of the calling thread, the cpu kernels by PartIO::num_threads; both then agree ("One
// thread pool"). compile() holds one while kernels prepare, because oneDNN fixes a
// primitive's thread partition when it is created. Two TLS reads/writes when the value differs,
// nothing otherwise.
class ThreadCountScope {
 public:
  explicit ThreadCountScope(int n) : saved_(omp_get_max_threads()) {
    if (saved_ != n) omp_set_num_threads(n);
    changed_ = saved_ != n;
  }
  ~ThreadCountScope() {
    if (changed_) omp_set_num_threads(saved_);
  }
  ThreadCountScope(const ThreadCountScope&) = delete;
  ThreadCountScope& operator=(const ThreadCountScope&) = delete;

 private:
  int saved_;
  bool changed_ = false;
};

}  // namespace frame::runtime::detail
