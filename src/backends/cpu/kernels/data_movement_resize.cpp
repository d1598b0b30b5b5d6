/// \file
/// cpu reference kernel of resize (ONNX Resize, opset 19): nearest, linear and cubic, all
/// coordinate transformation modes. Interpolation is separable: each axis gets a list of
/// (input index, weight) taps per output index, and an output element is the weighted sum over
/// the product of its axes' taps (accumulated in double, rounded once to the output dtype).

#include <algorithm>
#include <cmath>
#include <vector>

#include "backends/cpu/kernels/data_movement_util.h"
#include "backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::backends::cpu {
namespace {

using ops::KernelContext;
using ops::dm::CoordMode;
using ops::dm::NearestMode;
using ops::dm::ResizeMode;
using ops::dm::ResizeParams;

// Taps of one axis in CSR form: output index o uses taps [begin[o], begin[o + 1]).
struct AxisTaps {
  std::vector<int64_t> begin;
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<uint8_t> outside;  // per output index: tf_crop_and_resize extrapolates
};

AxisTaps make_taps(const ResizeParams& p, size_t a, int64_t in, int64_t out) {
  AxisTaps t;
  t.begin.push_back(0);
  auto add = [&](int64_t i, double w) {
    if (w == 0.0) return;  // zero taps change nothing and keep non-resized axes to one tap
    t.idx.push_back(std::clamp<int64_t>(i, 0, in - 1));
    t.w.push_back(w);
  };
  for (int64_t o = 0; o < out; ++o) {
    double x = ops::dm::resize_source_coord(p, a, o, in, out);
    t.outside.push_back(p.coord == CoordMode::kTfCropAndResize &&
                        (x < 0.0 || x > static_cast<double>(in - 1)));
    if (p.mode == ResizeMode::kNearest) {
      add(ops::dm::resize_nearest_index(p.nearest, x), 1.0);
    } else if (p.mode == ResizeMode::kLinear) {
      x = std::clamp(x, 0.0, static_cast<double>(in - 1));
      const double x0 = std::floor(x), r = x - x0;
      add(static_cast<int64_t>(x0), 1.0 - r);
      add(static_cast<int64_t>(x0) + 1, r);
    } else {
      const double x0 = std::floor(x), r = x - x0, A = p.cubic_a;
      const double d[4] = {r + 1.0, r, 1.0 - r, 2.0 - r};
      double c[4] = {((A * d[0] - 5 * A) * d[0] + 8 * A) * d[0] - 4 * A,
                     ((A + 2) * d[1] - (A + 3)) * d[1] * d[1] + 1,
                     ((A + 2) * d[2] - (A + 3)) * d[2] * d[2] + 1,
                     ((A * d[3] - 5 * A) * d[3] + 8 * A) * d[3] - 4 * A};
      const int64_t base = static_cast<int64_t>(x0) - 1;
      if (p.exclude_outside) {
        double sum = 0.0;
        for (int k = 0; k < 4; ++k) {
          if (base + k < 0 || base + k >= in) c[k] = 0.0;
          sum += c[k];
        }
        for (double& v : c) v = sum != 0.0 ? v / sum : 0.0;
      }
      for (int k = 0; k < 4; ++k) add(base + k, c[k]);
    }
    t.begin.push_back(static_cast<int64_t>(t.idx.size()));
  }
  return t;
}

template <typename T>
double accumulate(const T* src, const std::vector<AxisTaps>& taps, const std::vector<int64_t>& st,
                  const int64_t* coord, size_t a, int64_t off) {
  if (a == taps.size()) return static_cast<double>(to_compute(src[off]));
  const AxisTaps& t = taps[a];
  const size_t o = static_cast<size_t>(coord[a]);
  double s = 0.0;
  for (int64_t k = t.begin[o]; k < t.begin[o + 1]; ++k) {
    const size_t uk = static_cast<size_t>(k);
    s += t.w[uk] * accumulate(src, taps, st, coord, a + 1, off + t.idx[uk] * st[a]);
  }
  return s;
}

Status resize_cpu(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  ops::NodeContext rt = runtime_context(ctx);
  FRAME_ASSIGN_OR_RETURN(ResizeParams p, ops::dm::resize_params(rt, x.shape()));
  if (p.out_shape != y.shape()) {
    return ctx.node->error("output shape {} differs from computed {}", shape_to_string(y.shape()),
                           shape_to_string(p.out_shape));
  }
  if (y.numel() == 0) return Status();
  const size_t r = static_cast<size_t>(x.rank());
  std::vector<AxisTaps> taps;
  for (size_t a = 0; a < r; ++a) taps.push_back(make_taps(p, a, x.dim(a), y.dim(a)));
  const std::vector<int64_t> st = strides_of(x.shape());
  const std::vector<int64_t> out_st = strides_of(y.shape());
  const int64_t n = y.numel();
  const int nt = threads_for(n, ctx.num_threads);
  // Decodes output element e into per-axis coordinates; true if it lies outside the roi.
  auto decode = [&](int64_t e, int64_t* coord) {
    bool outside = false;
    for (size_t a = 0; a < r; ++a) {
      coord[a] = e / out_st[a];
      e %= out_st[a];
      outside = outside || taps[a].outside[static_cast<size_t>(coord[a])] != 0;
    }
    return outside;
  };
  if (p.mode == ResizeMode::kNearest) {
    return dispatch_dtype(x.dtype(), [&]<typename T>() {
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      const T extrapolated = from_compute<T>(static_cast<compute_t<T>>(p.extrapolation_value));
#pragma omp parallel num_threads(nt) if (nt > 1)
      {
        std::vector<int64_t> coord(r);  // one buffer per thread, not per element
#pragma omp for schedule(static)
        for (int64_t e = 0; e < n; ++e) {
          if (decode(e, coord.data())) {
            dst[e] = extrapolated;
            continue;
          }
          int64_t off = 0;
          for (size_t a = 0; a < r; ++a) {
            const AxisTaps& t = taps[a];
            off += t.idx[static_cast<size_t>(t.begin[static_cast<size_t>(coord[a])])] * st[a];
          }
          dst[e] = src[off];
        }
      }
    });
  }
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = y.data<T>();
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
      std::vector<int64_t> coord(r);
#pragma omp for schedule(static)
      for (int64_t e = 0; e < n; ++e) {
        const double v = decode(e, coord.data()) ? p.extrapolation_value
                                                 : accumulate(src, taps, st, coord.data(), 0, 0);
        dst[e] = from_compute<T>(static_cast<compute_t<T>>(v));
      }
    }
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(resize, "cpu", resize_cpu).dtypes(kAllDTypes);

}  // namespace frame::backends::cpu
