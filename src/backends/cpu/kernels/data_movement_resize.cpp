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
#include "frame/ops/parallel.h"
#include "ops/schemas/data_movement_shapes.h"

namespace frame::backends::cpu {
namespace {

using ops::KernelContext;
using ops::dm::CoordMode;
using ops::dm::NearestMode;
using ops::dm::ResizeMode;
using ops::dm::ResizeParams;

constexpr int kMaxTaps = ops::dm::kResizeMaxTaps;

int axis_taps(const ResizeParams& p, size_t a, int64_t in, int64_t out, int64_t o, int64_t* idx,
              double* w, bool* outside) {
  return ops::dm::resize_axis_taps(p, a, in, out, o, idx, w, outside);
}

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
  int64_t idx[kMaxTaps];
  double w[kMaxTaps];
  for (int64_t o = 0; o < out; ++o) {
    bool outside = false;
    const int n = axis_taps(p, a, in, out, o, idx, w, &outside);
    t.idx.insert(t.idx.end(), idx, idx + n);
    t.w.insert(t.w.end(), w, w + n);
    t.outside.push_back(outside);
    t.begin.push_back(static_cast<int64_t>(t.idx.size()));
  }
  return t;
}

// The taps of one output element on one axis: a view into an AxisTaps table or into a
// per-thread buffer computed for this element.
struct ElemTaps {
  const int64_t* idx = nullptr;
  const double* w = nullptr;
  int64_t n = 0;
};

template <typename T>
double accumulate(const T* src, const ElemTaps* taps, size_t r, const std::vector<int64_t>& st,
                  size_t a, int64_t off) {
  if (a == r) return static_cast<double>(to_compute(src[off]));
  const ElemTaps& t = taps[a];
  double s = 0.0;
  for (int64_t k = 0; k < t.n; ++k) {
    s += t.w[k] * accumulate(src, taps, r, st, a + 1, off + t.idx[k] * st[a]);
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
  // Per-axis tables (up to ~73 bytes per output index) only while they stay within the
  // output's own size (or 1 MiB); a thin output whose tables would be the larger part computes
  // each element's taps on the fly instead (docs/security.md, "Memory outside the plan").
  int64_t sum_out = 0;
  for (size_t a = 0; a < r; ++a) sum_out += y.dim(a);
  const bool tables = static_cast<uint64_t>(sum_out) * (8 * (1 + 2 * kMaxTaps) + 1) <=
                      std::max<uint64_t>(y.nbytes(), uint64_t{1} << 20);
  std::vector<AxisTaps> taps;
  for (size_t a = 0; tables && a < r; ++a) taps.push_back(make_taps(p, a, x.dim(a), y.dim(a)));
  const std::vector<int64_t> st = strides_of(x.shape());
  const std::vector<int64_t> out_st = strides_of(y.shape());
  const int64_t n = y.numel();
  const int nt = threads_for(n, ctx.num_threads);
  // Per-thread scratch: coordinates and each axis's taps of the current element.
  struct Scratch {
    std::vector<int64_t> coord, idx;
    std::vector<double> w;
    std::vector<ElemTaps> et;
    explicit Scratch(size_t rank)
        : coord(rank), idx(rank * kMaxTaps), w(rank * kMaxTaps), et(rank) {}
  };
  // Decodes output element e into each axis's taps; true if it lies outside the roi.
  auto decode = [&](int64_t e, Scratch& sc) {
    bool outside = false;
    for (size_t a = 0; a < r; ++a) {
      const int64_t c = e / out_st[a];
      e %= out_st[a];
      if (tables) {
        const AxisTaps& t = taps[a];
        const auto uc = static_cast<size_t>(c);
        const auto b = static_cast<size_t>(t.begin[uc]);
        sc.et[a] = {t.idx.data() + b, t.w.data() + b, t.begin[uc + 1] - t.begin[uc]};
        outside = outside || t.outside[uc] != 0;
      } else {
        int64_t* idx = sc.idx.data() + a * kMaxTaps;
        double* w = sc.w.data() + a * kMaxTaps;
        bool out_a = false;
        const int k = axis_taps(p, a, x.dim(a), y.dim(a), c, idx, w, &out_a);
        sc.et[a] = {idx, w, k};
        outside = outside || out_a;
      }
    }
    return outside;
  };
  if (p.mode == ResizeMode::kNearest) {
    return dispatch_dtype(x.dtype(), [&]<typename T>() {
      const T* src = x.data<T>();
      T* dst = y.data<T>();
      const T extrapolated = from_compute<T>(static_cast<compute_t<T>>(p.extrapolation_value));
      ops::parallel_ranges(n, nt, [&](int64_t e0, int64_t e1) {
        Scratch sc(r);  // one buffer per thread, not per element
        for (int64_t e = e0; e < e1; ++e) {
          if (decode(e, sc)) {
            dst[e] = extrapolated;
            continue;
          }
          int64_t off = 0;
          for (size_t a = 0; a < r; ++a) off += sc.et[a].idx[0] * st[a];
          dst[e] = src[off];
        }
      });
    });
  }
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* src = x.data<T>();
    T* dst = y.data<T>();
    ops::parallel_ranges(n, nt, [&](int64_t e0, int64_t e1) {
      Scratch sc(r);
      for (int64_t e = e0; e < e1; ++e) {
        const double v =
            decode(e, sc) ? p.extrapolation_value : accumulate(src, sc.et.data(), r, st, 0, 0);
        dst[e] = from_compute<T>(static_cast<compute_t<T>>(v));
      }
    });
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(resize, "cpu", resize_cpu).dtypes(kAllDTypes);

}  // namespace frame::backends::cpu
