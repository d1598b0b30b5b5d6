// Index arithmetic both GPU backends' kernels share (layout_util.h).

#include "backends/gpu/layout_util.h"

namespace frame::backends::gpu {

std::vector<int64_t> aligned_strides(const Shape& s, std::span<const int64_t> norm) {
  std::vector<int64_t> out(norm.size(), 0);
  int64_t st = 1;
  for (size_t d = 0; d < norm.size() && d < s.size(); ++d) {
    const int64_t sd = s[s.size() - 1 - d];
    if (sd != 1) out[norm.size() - 1 - d] = st;
    st *= sd;
  }
  return out;
}

}  // namespace frame::backends::gpu
