// The onednn backend's warm-up (src/backends/onednn/warm_up.h): a model holding a conv whose
// shapes vary starts oneDNN's gemm kernel generation on a thread of its own; one without conv
// or recurrent nodes, or a conv of fixed shapes, does not; a fork() right after the start leaves a
// child that runs a gemm and exits, and the parent goes on. The fork case means most in a process
// whose gemm kernels were not generated yet: ctest runs this suite on its own too
// (onednn_warm_up_fresh_process). Expected products are by hand.

#include "backends/onednn/warm_up.h"

#include <dnnl.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <vector>

#include "frame/ops/backend_availability.h"

namespace frame::backends::onednn {
namespace {

TEST(OnednnWarmUp, AConvModelStartsItAndAForkRightAfterLeavesTheChildAGemm) {
  if (!gemm_warm_up_started()) {  // else an earlier test of this process started it
    ops::start_warm_up("onednn", {"matmul", "relu", "reshape"}, true);
    ops::start_warm_up("onednn", {"add", "conv"}, false);
    EXPECT_FALSE(gemm_warm_up_started());
  }
  ops::start_warm_up("onednn", {"add", "conv"}, true);
  EXPECT_TRUE(gemm_warm_up_started());
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(60);               // a child that inherited the generation half done would wait forever
    omp_set_num_threads(1);  // no OpenMP team: the parent's pool does not exist here
    const float a[4] = {1, 2, 3, 4}, b[4] = {0, 1, 1, 0};
    float c[4] = {};
    const dnnl_status_t st = dnnl_sgemm('N', 'N', 2, 2, 2, 1.0F, a, 2, b, 2, 0.0F, c, 2);
    // [1 2; 3 4] x [0 1; 1 0] = [2 1; 4 3]
    const bool ok = st == dnnl_success && c[0] == 2 && c[1] == 1 && c[2] == 4 && c[3] == 3;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status)) << "child ended by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  // The parent's own gemm after the warm-up.
  ops::wait_warm_up("onednn");
  const float a[4] = {1, 2, 3, 4}, b[4] = {1, 1, 1, 1};
  float c[4] = {};
  ASSERT_EQ(dnnl_sgemm('N', 'N', 2, 2, 2, 1.0F, a, 2, b, 2, 0.0F, c, 2), dnnl_success);
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{3, 3, 7, 7}));
}

}  // namespace
}  // namespace frame::backends::onednn
