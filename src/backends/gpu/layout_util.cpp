// Index arithmetic both GPU backends' kernels share (layout_util.h).

#include "backends/gpu/layout_util.h"

#include <fmt/format.h>

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

int pad_mode_code(ops::dm::PadMode m) {
  switch (m) {
    case ops::dm::PadMode::kConstant:
      return 0;
    case ops::dm::PadMode::kEdge:
      return 1;
    case ops::dm::PadMode::kWrap:
      return 2;
    case ops::dm::PadMode::kReflect:
      return 3;
  }
  return 0;
}

std::string pad_source_index_code(Dialect d, std::string_view int_type) {
  return fmt::format(
      R"({0} {1} frame_pad_src(int mode, {1} o, {1} begin, {1} d) {{
  const {1} i = o - begin;
  if (i >= 0 && i < d) return i;
  if (mode == 0 || d == 0) return -1;
  if (mode == 1) return i < 0 ? 0 : d - 1;
  if (mode == 2) return ((i % d) + d) % d;
  if (d == 1) return 0;
  const {1} period = 2 * (d - 1);
  const {1} r = ((i % period) + period) % period;
  return r < d ? r : period - r;
}}
)",
      device_fn(d), int_type);
}

}  // namespace frame::backends::gpu
