// Index arithmetic both GPU backends' kernels share (layout_util.h).

#include "backends/gpu/layout_util.h"

#include <fmt/format.h>

#include <cstring>

#include "ops/schemas/schema_util.h"

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

Result<std::vector<int64_t>> resize_meta(const ops::dm::ResizeParams& p, const Shape& in,
                                         const ResizeTable& table, DTypeCode dtype) {
  std::vector<int64_t> meta(p.out_shape.begin(), p.out_shape.end());
  const std::vector<int64_t> st = contiguous_strides(in);
  meta.insert(meta.end(), st.begin(), st.end());
  meta.insert(meta.end(), table.axis_base.begin(), table.axis_base.end());
  meta.push_back(table.record);
  FRAME_ASSIGN_OR_RETURN(Tensor v, ops::filled_tensor(dtype, {}, p.extrapolation_value));
  uint64_t bits = 0;
  std::memcpy(&bits, v.raw_data(), dtype_size(dtype));
  meta.push_back(static_cast<int32_t>(bits & 0xffffffffu));
  meta.push_back(static_cast<int32_t>(bits >> 32));
  return meta;
}

IndexError index_range_error(const ops::NodeContext& ctx, int64_t dim) {
  return [node = std::string(ctx.node_name), op = std::string(ctx.op), dim](int64_t position,
                                                                            int64_t value) {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("node '{}' ({}): input 1 (indices) value {} at {} out of range "
                              "[{}, {}]",
                              node, op, value, position, -dim, dim - 1));
  };
}

Result<GatherNdGeometry> gather_nd_geometry(const ops::NodeContext& ctx) {
  const Shape& data = ctx.input_types[0].shape;
  const Shape& idx = ctx.input_types[1].shape;
  GatherNdGeometry g;
  g.batch_dims = ctx.attr_or<int64_t>("batch_dims", 0);
  const int64_t b = g.batch_dims;
  if (idx.empty() || b < 0 || static_cast<size_t>(b) >= data.size()) {
    return ctx.error("gather_nd with batch_dims {} over ranks {} and {}", b, data.size(),
                     idx.size());
  }
  g.k = idx.back();
  if (g.k < 1 || static_cast<size_t>(b + g.k) > data.size()) {
    return ctx.error("gather_nd tuples of {} over data of rank {}", g.k, data.size());
  }
  const std::vector<int64_t> st = contiguous_strides(data);
  int64_t batch = 1;
  for (int64_t d = 0; d < b; ++d) batch *= data[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(b + g.k); d < data.size(); ++d) g.slice *= data[d];
  const int64_t tuples = numel_of(idx) / g.k;
  g.per_batch = std::max<int64_t>(batch == 0 ? 0 : tuples / batch, 1);
  g.batch_stride = b == 0 ? 0 : st[static_cast<size_t>(b - 1)];
  for (int64_t j = 0; j < g.k; ++j) {
    g.dims.push_back(data[static_cast<size_t>(b + j)]);
    g.strides.push_back(st[static_cast<size_t>(b + j)]);
  }
  return g;
}

IndexError gather_nd_error(const ops::NodeContext& ctx, const GatherNdGeometry& g) {
  return [node = std::string(ctx.node_name), op = std::string(ctx.op), g](int64_t position,
                                                                          int64_t value) {
    const auto j = static_cast<size_t>(position % g.k);
    const int64_t dim = g.dims[j];
    return Status(
        StatusCode::kInvalidArgument,
        fmt::format("node '{}' ({}): input 1 (indices) value {} out of range [{}, {}] "
                    "for data dim {}",
                    node, op, value, -dim, dim - 1, g.batch_dims + static_cast<int64_t>(j)));
  };
}

}  // namespace frame::backends::gpu
