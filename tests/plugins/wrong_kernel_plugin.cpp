// A plugin with a deliberately wrong kernel (`frame compare`, docs/debugging.md): softmax under
// the test backend name "wrong_test" (a second kernel for an existing (op, backend) is refused,
// so it needs its own backend) that scales every probability by 1.01.
#include <algorithm>
#include <cmath>

#include "plugin_common.h"

namespace {

// Softmax over the last axis, then * 1.01: wrong by 1% everywhere.
frame::Status wrong_softmax(frame::ops::KernelContext& ctx) {
  const frame::Tensor& x = ctx.input(0);
  const int64_t cols = x.rank() == 0 ? 1 : x.shape().back();
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const float* in = x.data<float>();
  float* out = ctx.output(0).data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = in + r * cols;
    float* y = out + r * cols;
    const float m = *std::max_element(row, row + cols);
    float sum = 0.0F;
    for (int64_t c = 0; c < cols; ++c) sum += y[c] = std::exp(row[c] - m);
    for (int64_t c = 0; c < cols; ++c) y[c] = y[c] / sum * 1.01F;
  }
  return frame::Status();
}

}  // namespace

FRAME_REGISTER_KERNEL(softmax, "wrong_test", wrong_softmax).dtypes(plugin_test::kF32);
