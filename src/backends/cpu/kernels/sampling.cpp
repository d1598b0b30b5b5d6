// cpu reference kernels for GridSample (ONNX opset 16/20, 4-D), RoiAlign (opset 10/16) and
// TfIdfVectorizer (opset 9, integer inputs). GridSample follows the ONNX reference
// implementation step by step (coordinate padding, then per-tap padding; bicubic with border
// padding pads only its taps, as PyTorch does), in double (rounded once to T), so f32 results
// carry no cancellation error of the 16-tap bicubic sum.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;

// ---------------------------------------------------------------------------------------------
// GridSample

enum class GsMode { kBilinear, kNearest, kBicubic };
enum class GsPad { kZeros, kBorder, kReflection };

// Reflects x at the borders lo/hi until it lies within them (ONNX reference _gs_reflect).
template <typename C>
C gs_reflect(C x, C lo, C hi) {
  const C range = hi - lo;
  if (range <= C(0)) return lo;
  if (x < lo) {
    const C d = lo - x;
    const C n = std::floor(d / range);  // a far-out x: beyond int64, so kept in C
    const C r = d - n * range;
    return std::fmod(n, C(2)) == C(0) ? lo + r : hi - r;
  }
  if (x > hi) {
    const C d = x - hi;
    const C n = std::floor(d / range);  // a far-out x: beyond int64, so kept in C
    const C r = d - n * range;
    return std::fmod(n, C(2)) == C(0) ? hi - r : lo + r;
  }
  return x;
}

// Cubic convolution weights of the four taps at offsets -1, 0, 1, 2 from floor(x), t = x -
// floor(x), A = -0.75 (ONNX reference _gs_get_cubic_coeffs).
template <typename C>
void gs_cubic_coeffs(C t, C (&w)[4]) {
  const C a = C(-0.75);
  const C x0 = t + 1, x1 = t, x2 = 1 - t, x3 = 2 - t;
  w[0] = ((a * x0 - 5 * a) * x0 + 8 * a) * x0 - 4 * a;
  w[1] = ((a + 2) * x1 - (a + 3)) * x1 * x1 + 1;
  w[2] = ((a + 2) * x2 - (a + 3)) * x2 * x2 + 1;
  w[3] = ((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a;
}

// One [H, W] plane sampled at npts grid points; mode and padding are template parameters so
// the per-point loop carries no branch on them.
template <GsMode M, GsPad P, typename T>
void grid_sample_plane(const T* im, int64_t h, int64_t w, const T* grid, int64_t npts, T* out,
                       bool align) {
  using C = double;
  if (h == 0 || w == 0) {  // no pixel to read (border/reflection would clamp into nothing)
    for (int64_t i = 0; i < npts; ++i) out[i] = from_compute<T>(compute_t<T>(0));
    return;
  }
  // Borders of the reflection and of the out-of-bound test (ONNX reference _prepare_border).
  const C x_min = align ? C(0) : C(-0.5), x_max = align ? C(w - 1) : C(w) - C(0.5);
  const C y_min = align ? C(0) : C(-0.5), y_max = align ? C(h - 1) : C(h) - C(0.5);
  auto denorm = [align](C v, int64_t len) {
    return align ? (v + 1) / 2 * C(len - 1) : ((v + 1) * C(len) - 1) / 2;
  };
  auto pixel = [&](int64_t r, int64_t col) -> C {
    if constexpr (P == GsPad::kZeros) {
      if (r < 0 || r >= h || col < 0 || col >= w) return C(0);
    } else if constexpr (P == GsPad::kBorder) {
      r = std::clamp<int64_t>(r, 0, h - 1);
      col = std::clamp<int64_t>(col, 0, w - 1);
    } else {
      col = std::clamp<int64_t>(static_cast<int64_t>(gs_reflect(C(col), x_min, x_max)), 0, w - 1);
      r = std::clamp<int64_t>(static_cast<int64_t>(gs_reflect(C(r), y_min, y_max)), 0, h - 1);
    }
    return to_compute(im[r * w + col]);
  };
  for (int64_t i = 0; i < npts; ++i) {
    C x = denorm(to_compute(grid[2 * i]), w);
    C y = denorm(to_compute(grid[2 * i + 1]), h);
    if constexpr (M == GsMode::kNearest) {
      x = std::nearbyint(x);
      y = std::nearbyint(y);
    }
    // Bicubic under border padding clamps each of its 16 taps, never the point itself
    // (torch.nn.functional.grid_sample; the ONNX reference moves an outside point onto the
    // border first, which changes the taps' weights). Reflection is symmetric about the
    // border, so reflecting the point first gives the same taps and keeps far-out points
    // bounded.
    constexpr bool kMovePoint = !(M == GsMode::kBicubic && P == GsPad::kBorder);
    if (kMovePoint && (x < x_min || x > x_max || y < y_min || y > y_max)) {
      if constexpr (P == GsPad::kBorder) {
        x = std::clamp(x, C(0), C(w - 1));
        y = std::clamp(y, C(0), C(h - 1));
      } else if constexpr (P == GsPad::kReflection) {
        x = gs_reflect(x, x_min, x_max);
        y = gs_reflect(y, y_min, y_max);
      }
    }
    // A grid value can be anything: NaN and coordinates beyond every tap (cubic reads
    // floor(x) - 1 .. floor(x) + 2) read only padding, and bounding them keeps the int64
    // casts below defined.
    x = std::isnan(x) ? C(-4) : std::clamp(x, C(-4), C(w + 3));
    y = std::isnan(y) ? C(-4) : std::clamp(y, C(-4), C(h + 3));
    C v;
    if constexpr (M == GsMode::kNearest) {
      v = pixel(static_cast<int64_t>(y), static_cast<int64_t>(x));
    } else if constexpr (M == GsMode::kBilinear) {
      const C fx = std::floor(x), fy = std::floor(y);
      const auto x1 = static_cast<int64_t>(fx), y1 = static_cast<int64_t>(fy);
      const C dx1 = x - fx, dx2 = 1 - dx1, dy1 = y - fy, dy2 = 1 - dy1;
      v = dy2 * (dx2 * pixel(y1, x1) + dx1 * pixel(y1, x1 + 1)) +
          dy1 * (dx2 * pixel(y1 + 1, x1) + dx1 * pixel(y1 + 1, x1 + 1));
    } else {
      const C fx = std::floor(x), fy = std::floor(y);
      const int64_t x0 = static_cast<int64_t>(fx) - 1, y0 = static_cast<int64_t>(fy) - 1;
      C wx[4], wy[4];
      gs_cubic_coeffs(x - fx, wx);
      gs_cubic_coeffs(y - fy, wy);
      v = 0;
      for (int64_t r = 0; r < 4; ++r) {
        C row = 0;
        for (int64_t k = 0; k < 4; ++k) row += wx[k] * pixel(y0 + r, x0 + k);
        v += wy[r] * row;
      }
    }
    out[i] = from_compute<T>(static_cast<compute_t<T>>(v));
  }
}

// Every (n, c) plane, split across threads.
template <GsMode M, GsPad P, typename T>
void grid_sample_all(const Tensor& x, const Tensor& g, Tensor& y, bool align, int nt) {
  const int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t npts = g.dim(1) * g.dim(2);
  const T* xp = x.data<T>();
  const T* gp = g.data<T>();
  T* yp = y.data<T>();
  ops::parallel_for(n * ch, nt, [&](int64_t plane) {
    const int64_t b = plane / ch;
    grid_sample_plane<M, P>(xp + plane * h * w, h, w, gp + b * npts * 2, npts, yp + plane * npts,
                            align);
  });
}

template <GsMode M, typename T>
void grid_sample_pad(GsPad pad, const Tensor& x, const Tensor& g, Tensor& y, bool align, int nt) {
  switch (pad) {
    case GsPad::kZeros:
      return grid_sample_all<M, GsPad::kZeros, T>(x, g, y, align, nt);
    case GsPad::kBorder:
      return grid_sample_all<M, GsPad::kBorder, T>(x, g, y, align, nt);
    case GsPad::kReflection:
      return grid_sample_all<M, GsPad::kReflection, T>(x, g, y, align, nt);
  }
}

Status grid_sample_kernel(KernelContext& ctx) {
  const ops::NodeContext& node = *ctx.node;
  const std::string mode = node.attr_or<std::string>("mode", "bilinear");
  const std::string pad = node.attr_or<std::string>("padding_mode", "zeros");
  const GsMode m = mode == "nearest"                        ? GsMode::kNearest
                   : (mode == "bicubic" || mode == "cubic") ? GsMode::kBicubic
                                                            : GsMode::kBilinear;
  const GsPad p = pad == "border"       ? GsPad::kBorder
                  : pad == "reflection" ? GsPad::kReflection
                                        : GsPad::kZeros;
  const bool align = node.attr_or<int64_t>("align_corners", 0) != 0;
  const Tensor& x = ctx.input(0);
  const Tensor& g = ctx.input(1);
  Tensor& y = ctx.output(0);
  const int nt = ctx.num_threads;
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    switch (m) {
      case GsMode::kNearest:
        return grid_sample_pad<GsMode::kNearest, T>(p, x, g, y, align, nt);
      case GsMode::kBilinear:
        return grid_sample_pad<GsMode::kBilinear, T>(p, x, g, y, align, nt);
      case GsMode::kBicubic:
        return grid_sample_pad<GsMode::kBicubic, T>(p, x, g, y, align, nt);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// RoiAlign

// One bilinear sample: the four corner offsets in the plane and their weights (all zero for a
// sample beyond [-1, H] x [-1, W]), as onnxruntime's pre_calc_for_bilinear_interpolate.
template <typename C>
struct RoiSample {
  int64_t pos[4] = {0, 0, 0, 0};
  C w[4] = {0, 0, 0, 0};
};

template <typename C>
RoiSample<C> roi_sample(C y, C x, int64_t h, int64_t w) {
  RoiSample<C> s;
  if (y < C(-1) || y > C(h) || x < C(-1) || x > C(w)) return s;
  y = std::max(y, C(0));
  x = std::max(x, C(0));
  auto y_lo = static_cast<int64_t>(y), x_lo = static_cast<int64_t>(x);
  int64_t y_hi = y_lo + 1, x_hi = x_lo + 1;
  if (y_lo >= h - 1) {
    y_lo = y_hi = h - 1;
    y = C(y_lo);
  }
  if (x_lo >= w - 1) {
    x_lo = x_hi = w - 1;
    x = C(x_lo);
  }
  const C ly = y - C(y_lo), lx = x - C(x_lo), hy = 1 - ly, hx = 1 - lx;
  s.pos[0] = y_lo * w + x_lo;
  s.pos[1] = y_lo * w + x_hi;
  s.pos[2] = y_hi * w + x_lo;
  s.pos[3] = y_hi * w + x_hi;
  s.w[0] = hy * hx;
  s.w[1] = hy * lx;
  s.w[2] = ly * hx;
  s.w[3] = ly * lx;
  return s;
}

Status roi_align_kernel(KernelContext& ctx) {
  const ops::NodeContext& node = *ctx.node;
  const bool max_mode = node.attr_or<std::string>("mode", "avg") == "max";
  const bool half_pixel =
      node.attr_or<std::string>("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const int64_t sampling_ratio = node.attr_or<int64_t>("sampling_ratio", 0);
  const double spatial_scale = node.attr_or<double>("spatial_scale", 1.0);
  const Tensor& x = ctx.input(0);
  const Tensor& rois = ctx.input(1);
  const int64_t* bidx = ctx.input(2).data<int64_t>();
  Tensor& y = ctx.output(0);
  const int64_t n = x.dim(0), ch = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t nroi = y.dim(0), oh = y.dim(2), ow = y.dim(3);
  for (int64_t r = 0; r < nroi; ++r) {
    if (bidx[r] < 0 || bidx[r] >= n) {
      return node.error("input 2 (batch_indices) value {} at roi {} is outside [0, {})", bidx[r], r,
                        n);
    }
  }
  return dispatch_dtype<kFloatDTypes>(x.dtype(), [&]<typename T>() {
    using C = double;
    const T* xp = x.data<T>();
    const T* rp = rois.data<T>();
    T* yp = y.data<T>();
    const C offset = half_pixel ? C(0.5) : C(0);
    const C scale = spatial_scale;
    const int nt = ctx.num_threads;
    ops::parallel_for(nroi, nt, [&](int64_t r) {
      const C x1 = to_compute(rp[r * 4]) * scale - offset;
      const C y1 = to_compute(rp[r * 4 + 1]) * scale - offset;
      C rw = to_compute(rp[r * 4 + 2]) * scale - offset - x1;
      C rh = to_compute(rp[r * 4 + 3]) * scale - offset - y1;
      if (!half_pixel) {
        rw = std::max(rw, C(1));
        rh = std::max(rh, C(1));
      }
      const C bin_h = rh / C(oh), bin_w = rw / C(ow);
      const int64_t gh =
          sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(rh / C(oh)));
      const int64_t gw =
          sampling_ratio > 0 ? sampling_ratio : static_cast<int64_t>(std::ceil(rw / C(ow)));
      const C count = C(std::max<int64_t>(gh * gw, 1));
      const T* plane0 = xp + bidx[r] * ch * h * w;
      // The sample points and weights depend on the roi and bin only: computed once per roi,
      // then applied to every channel (the same sums, in the same order).
      const int64_t per_bin = gh * gw;
      std::vector<RoiSample<C>> samples(static_cast<size_t>(oh * ow * per_bin));
      for (int64_t ph = 0; ph < oh; ++ph) {
        for (int64_t pw = 0; pw < ow; ++pw) {
          RoiSample<C>* bin = samples.data() + (ph * ow + pw) * per_bin;
          for (int64_t iy = 0; iy < gh; ++iy) {
            const C sy = y1 + C(ph) * bin_h + (C(iy) + C(0.5)) * bin_h / C(gh);
            for (int64_t ix = 0; ix < gw; ++ix) {
              const C sx = x1 + C(pw) * bin_w + (C(ix) + C(0.5)) * bin_w / C(gw);
              bin[iy * gw + ix] = roi_sample(sy, sx, h, w);
            }
          }
        }
      }
      for (int64_t c = 0; c < ch; ++c) {
        const T* im = plane0 + c * h * w;
        T* out = yp + (r * ch + c) * oh * ow;
        for (int64_t b = 0; b < oh * ow; ++b) {
          const RoiSample<C>* bin = samples.data() + b * per_bin;
          C acc = 0;
          for (int64_t k = 0; k < per_bin; ++k) {
            const RoiSample<C>& s = bin[k];
            if (max_mode) {
              C v = s.w[0] * to_compute(im[s.pos[0]]);
              for (int q = 1; q < 4; ++q) v = std::max(v, s.w[q] * to_compute(im[s.pos[q]]));
              acc = k == 0 ? v : std::max(acc, v);
            } else {
              for (int q = 0; q < 4; ++q) acc += s.w[q] * to_compute(im[s.pos[q]]);
            }
          }
          out[b] = from_compute<T>(static_cast<compute_t<T>>(max_mode ? acc : acc / count));
        }
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// TfIdfVectorizer

constexpr DTypeSet kTfIdfDTypes{DTypeCode::kInt32, DTypeCode::kInt64};

enum class TfIdfMode { kTF, kIDF, kTFIDF };

// The pool grouped by n-gram length, each group's n-grams sorted so a strided window of X is
// looked up by binary search without allocating; built once per node (prepare).
struct TfIdfPlan {
  struct Group {
    std::vector<int64_t> items;  // sorted n-grams, n items each
    std::vector<int64_t> cols;   // output column of each
  };
  std::vector<Group> groups;  // groups[n - 1]: the n-grams
  std::vector<float> col_weight;
  int64_t min_n = 1, max_n = 1, max_skip = 0;
  TfIdfMode mode = TfIdfMode::kTF;
};

// Builds the plan from attributes the schema has validated (shape inference).
TfIdfPlan make_tf_idf_plan(const ops::NodeContext& node) {
  TfIdfPlan p;
  p.min_n = node.attr_or<int64_t>("min_gram_length", 1);
  p.max_n = node.attr_or<int64_t>("max_gram_length", 1);
  p.max_skip = node.attr_or<int64_t>("max_skip_count", 0);
  const std::string mode = node.attr_or<std::string>("mode", "TF");
  p.mode = mode == "IDF" ? TfIdfMode::kIDF : mode == "TFIDF" ? TfIdfMode::kTFIDF : TfIdfMode::kTF;
  const auto pool = node.attr_or<std::vector<int64_t>>("pool_int64s", {});
  const auto counts = node.attr_or<std::vector<int64_t>>("ngram_counts", {});
  const auto indexes = node.attr_or<std::vector<int64_t>>("ngram_indexes", {});
  const auto* weights = node.attr<std::vector<double>>("weights");
  int64_t cols = 0;
  for (int64_t v : indexes) cols = std::max(cols, v + 1);
  p.col_weight.assign(static_cast<size_t>(cols), 1.0F);
  size_t id = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const auto n = static_cast<int64_t>(k + 1);
    const int64_t begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : static_cast<int64_t>(pool.size());
    std::vector<std::pair<const int64_t*, int64_t>> grams;  // (first item, column)
    for (int64_t at = begin; at + n <= end; at += n, ++id) {
      grams.emplace_back(pool.data() + at, indexes[id]);
      if (weights != nullptr) {
        p.col_weight[static_cast<size_t>(indexes[id])] = static_cast<float>((*weights)[id]);
      }
    }
    std::sort(grams.begin(), grams.end(), [n](const auto& a, const auto& b) {
      return std::lexicographical_compare(a.first, a.first + n, b.first, b.first + n);
    });
    TfIdfPlan::Group& g = p.groups.emplace_back();
    for (const auto& [first, col] : grams) {
      g.items.insert(g.items.end(), first, first + n);
      g.cols.push_back(col);
    }
  }
  return p;
}

Result<std::shared_ptr<void>> prepare_tf_idf(const ops::NodeContext& node) {
  return std::shared_ptr<void>(std::make_shared<TfIdfPlan>(make_tf_idf_plan(node)));
}

// Adds 1 to y[col] for every pool n-gram equal to x[0], x[s], ..., x[(n - 1) s].
template <typename X>
void count_ngram(const TfIdfPlan::Group& g, int64_t n, const X* x, int64_t s, float* y) {
  // -1 / 0 / 1: pool n-gram `i` compared with the window.
  auto cmp = [&](size_t i) {
    const int64_t* it = g.items.data() + static_cast<int64_t>(i) * n;
    for (int64_t k = 0; k < n; ++k) {
      const auto v = static_cast<int64_t>(x[k * s]);
      if (it[k] != v) return it[k] < v ? -1 : 1;
    }
    return 0;
  };
  size_t lo = 0, hi = g.cols.size();
  while (lo < hi) {  // first n-gram not less than the window
    const size_t mid = lo + (hi - lo) / 2;
    if (cmp(mid) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  for (; lo < g.cols.size() && cmp(lo) == 0; ++lo) y[g.cols[lo]] += 1.0F;
}

Status tf_idf_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t cols = y.dim(y.rank() - 1);
  TfIdfPlan local;
  const auto* plan = static_cast<const TfIdfPlan*>(ctx.state);
  if (plan == nullptr) {  // no prepare step (constant folding)
    local = make_tf_idf_plan(*ctx.node);
    plan = &local;
  }
  if (static_cast<int64_t>(plan->col_weight.size()) != cols) {
    return ctx.node->error("output 0 (Y) has {} columns, the prepared plan {}", cols,
                           plan->col_weight.size());
  }
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t len = x.dim(x.rank() - 1);
  float* yp = y.data<float>();
  std::fill(yp, yp + rows * cols, 0.0F);
  return dispatch_dtype<kTfIdfDTypes>(x.dtype(), [&]<typename X>() {
    const X* xp = x.data<X>();
    const int64_t top = std::min<int64_t>(plan->max_n, static_cast<int64_t>(plan->groups.size()));
    for (int64_t b = 0; b < rows; ++b) {
      const X* row = xp + b * len;
      float* yr = yp + b * cols;
      for (int64_t n = plan->min_n; n <= top; ++n) {
        const TfIdfPlan::Group& g = plan->groups[static_cast<size_t>(n - 1)];
        if (g.cols.empty()) continue;
        const int64_t smax = n == 1 ? 1 : plan->max_skip + 1;  // a 1-gram has no skip
        for (int64_t s = 1; s <= smax; ++s) {
          for (int64_t start = 0; start + (n - 1) * s < len; ++start) {
            count_ngram(g, n, row + start, s, yr);
          }
        }
      }
      for (int64_t c = 0; c < cols; ++c) {
        const float w = plan->col_weight[static_cast<size_t>(c)];
        if (plan->mode == TfIdfMode::kIDF) {
          yr[c] = yr[c] > 0.0F ? w : 0.0F;
        } else if (plan->mode == TfIdfMode::kTFIDF) {
          yr[c] *= w;
        }
      }
    }
  });
}

}  // namespace

FRAME_REGISTER_KERNEL(grid_sample, "cpu", grid_sample_kernel).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(roi_align, "cpu", roi_align_kernel).dtypes(kFloatDTypes);
FRAME_REGISTER_KERNEL(tf_idf_vectorizer, "cpu", tf_idf_kernel)
    .dtypes(kTfIdfDTypes)
    .prepare(prepare_tf_idf);

}  // namespace frame::cpu
