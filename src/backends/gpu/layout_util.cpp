// Index arithmetic both GPU backends' kernels share (layout_util.h).

#include "backends/gpu/layout_util.h"

#include <fmt/format.h>

#include <cstring>

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

ResizeTable resize_table(const ops::dm::ResizeParams& p, const Shape& in, bool double_weights) {
  constexpr int kTaps = ops::dm::kResizeMaxTaps;
  ResizeTable t;
  t.record = 2 + kTaps + kTaps * (double_weights ? 2 : 1);
  for (size_t a = 0; a < in.size(); ++a) {
    t.axis_base.push_back(static_cast<int64_t>(t.data.size()));
    for (int64_t o = 0; o < p.out_shape[a]; ++o) {
      int64_t idx[kTaps] = {};
      double w[kTaps] = {};
      bool outside = false;
      const int n = ops::dm::resize_axis_taps(p, a, in[a], p.out_shape[a], o, idx, w, &outside);
      t.data.push_back(n);
      t.data.push_back(outside ? 1 : 0);
      for (int k = 0; k < kTaps; ++k) t.data.push_back(static_cast<int32_t>(idx[k]));
      for (int k = 0; k < kTaps; ++k) {
        if (double_weights) {
          int32_t bits[2];
          std::memcpy(bits, &w[k], sizeof(bits));
          t.data.push_back(bits[0]);
          t.data.push_back(bits[1]);
        } else {
          const float f = static_cast<float>(w[k]);
          int32_t bits = 0;
          std::memcpy(&bits, &f, sizeof(bits));
          t.data.push_back(bits);
        }
      }
    }
  }
  return t;
}

}  // namespace frame::backends::gpu
