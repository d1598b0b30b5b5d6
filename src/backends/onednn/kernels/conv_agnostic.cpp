// A conv prepared for one run of a first-seen shape (NodeContext::run_once: the interpreted tier,
// ADR 0007) without a oneDNN convolution primitive: the primitive's JIT code is specific to the
// sizes, so a stream of new image sizes created one per conv per size (DeepLabV3-MobileNetV3: 250
// 1x1 and 25 3x3 primitives over 5 sizes, about 8 ms per run), and the plain-layout tensors the
// interpreted tier hands it were reordered to nhwc and back around every conv (about 9 ms per run).
// Here nothing depends on the sizes beyond loop bounds:
// - a 1x1 conv with unit stride and no padding is one matrix product per image and group,
//   Y[m, hw] = W[m, c] X[c, hw], straight over the NCHW tensors (dnnl_sgemm, whose kernels are
//   generated once per process, not per shape);
// - a depthwise conv (one input channel per group) is a direct vector loop over each channel's
//   plane (VecTable::dw_plane, over a zero-padded copy of the plane), also where the output
//   rows are narrow: transposing the image to channels-last and back cost more than the lanes
//   a narrow row leaves empty (960 channels of 11 x 12, 5 x 5 taps: 136 us against 298 us);
// - any other 1-d or 2-d conv copies input patches into columns (im2col), a block of output
//   rows at a time, and multiplies them by W the same way. Taps that read only padding at
//   these sizes are dropped from the columns and from a copy of constant weights made at
//   prepare: DeepLabV3's ASPP convs (3x3, dilation 12 to 36 over maps of 8 to 16 pixels) keep
//   one to four of their nine taps, and one whose only tap is its centre is a 1x1 conv;
// - where the taps left read the input over well under the whole output (a dilation little
//   smaller than the map), each tap is one product over the rectangle it reads instead: in
//   place for whole rows, else gathered and added into the rectangle.
// ONNX Conv (opset 22) semantics: group, strides, dilations, pads, auto_pad as resolved by
// ops::nn::resolve_window. The compiled plan of a recurring shape keeps oneDNN's primitives.

#include <fmt/format.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/primitive_util.h"
#include "core/aligned_memory.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;

// Columns a block of im2col holds at most (floats, 4 MiB): a large layer's columns are built and
// multiplied a block of output rows at a time instead of all at once.
constexpr int64_t kColumnBlockFloats = int64_t{1} << 20;

// Most columns per output pixel (C / group x taps) a conv may have to run a row at a time
// (AgnosticConv::by_rows): a 7 x 7 conv over 3 channels has 147.
constexpr int64_t kRowColumnsMax = 160;

// Fewest multiply-adds for which a 1x1 conv on more than one thread splits its output channels
// over them (AgnosticConv::by_channels); below, one dnnl_sgemm call takes the node's threads.
constexpr int64_t kSplitChannelsMacs = int64_t{1} << 17;

// The outputs [lo, hi) along one axis whose input index o * stride + off lies in [0, in), for
// `out` outputs: where a tap offset by `off` reads the input (empty: lo == hi).
void tap_range(int64_t off, int64_t stride, int64_t in, int64_t out, int64_t& lo, int64_t& hi) {
  lo = off >= 0 ? 0 : (-off + stride - 1) / stride;
  hi = in - 1 - off < 0 ? 0 : std::min(out, (in - 1 - off) / stride + 1);
  lo = std::min(lo, hi);
}

// A thread's scratch buffer `slot` (0: columns, 1: a tap's products), grown to the largest
// size it has held: no allocation (and no first touch of new pages) per run once warm.
float* scratch(int slot, size_t floats) {
  thread_local std::array<frame::detail::GrowBuffer, 2> bufs;
  return bufs[static_cast<size_t>(slot)].get_as<float>(floats);
}

// A tap and the output rectangle [r0, r1) x [c0, c1) where it reads the input (row r reads input
// row r * sh + ioff, column c input column c * sw + joff).
struct TapRect {
  int64_t t = 0;
  int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0, ioff = 0, joff = 0;
  // The rectangle is whole output rows reading whole input rows in place: one product over x.
  bool in_place = false;
};

class AgnosticConv final : public LinearPrimitive {
 public:
  // Sizes as 2-d (a 1-d conv has h = kh = oh = 1, stride and dilation 1, no padding in h).
  int64_t n = 0, c = 0, h = 0, w = 0, m = 0, oh = 0, ow = 0, kh = 0, kw = 0;
  int64_t sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0, group = 1;
  bool has_bias = false;
  const VecTable* vt = nullptr;  // depthwise planes, by_rows' products
  // The taps (i, j) that read the input somewhere, kh * kw of them unless some read only
  // padding; then `packed` holds constant W restricted to them, [m][c / group][taps].
  std::vector<std::pair<int64_t, int64_t>> taps;
  std::shared_ptr<const OwnPackedWeights> packed;  // shared per constant (pack_weights_own)
  // One tap reading input pixel (r, o) for output pixel (r, o): a 1x1 conv over x as is.
  bool direct = false;
  // Set where the taps' rectangles cover well under all of the columns im2col would build
  // (dilated convs over small maps): each tap is then its own product over its rectangle,
  // with its weights `tap_w`, [taps][m][c / group].
  std::vector<TapRect> rects;
  std::shared_ptr<const OwnPackedWeights> tap_w;
  // A fused node's post-ops (own_post_ops), applied to each plane or group of output channels
  // once it is computed; `add` adds the residual R (input 3, the output's shape).
  std::vector<OwnPostOp> post;
  VecBinaryFn add = nullptr;

  Status run(KernelContext& ctx) const override {
    const float* x = ctx.input(0).data<float>();
    const float* wt = packed != nullptr ? packed->data() : ctx.input(1).data<float>();
    const float* bias = has_bias ? ctx.input(2).data<float>() : nullptr;
    float* y = ctx.output(0).data<float>();
    const int nt = std::max(ctx.num_threads, 1);
    if (group == c && c > 0) {
      depthwise(ctx, x, wt, bias, y, nt);
      return Status();
    }
    const int64_t cg = c / group, mg = m / group, hw = h * w, ohw = oh * ow;
    if (!rects.empty()) return by_taps(ctx, x, bias, y, nt);
    const int64_t k = cg * static_cast<int64_t>(taps.size());
    if (nt > 1 && !direct && k <= kRowColumnsMax && vt != nullptr && vt->gemm != nullptr) {
      by_rows(ctx, x, wt, bias, y, nt);
      return Status();
    }
    const bool pointwise = direct;
    if (pointwise && nt > 1 && group == 1 && m >= 2 * nt && m * hw * c >= kSplitChannelsMacs) {
      return by_channels(ctx, x, wt, bias, y, nt);
    }
    const int64_t rows =
        std::clamp<int64_t>(kColumnBlockFloats / std::max<int64_t>(k * ow, 1), 1, oh);
    float* col = pointwise ? nullptr : scratch(0, static_cast<size_t>(k * rows * ow));
    for (int64_t b = 0; b < n; ++b) {
      float* yb = y + b * m * ohw;
      fill_bias(bias, yb, ohw, nt);
      const float beta = bias != nullptr ? 1.0F : 0.0F;
      for (int64_t gi = 0; gi < group; ++gi) {
        const float* xg = x + (b * c + gi * cg) * hw;
        const float* wg = wt + gi * mg * k;
        float* yg = yb + gi * mg * ohw;
        if (pointwise) {
          FRAME_RETURN_IF_ERROR(gemm(ctx, mg, ohw, k, wg, xg, ohw, beta, yg, ohw));
        } else {
          for (int64_t r0 = 0; r0 < oh; r0 += rows) {
            const int64_t rn = std::min(rows, oh - r0);
            im2col(xg, cg, r0, rn, col, nt);
            FRAME_RETURN_IF_ERROR(
                gemm(ctx, mg, rn * ow, k, wg, col, rn * ow, beta, yg + r0 * ow, ohw));
          }
        }
        finish(ctx, y, (b * m + gi * mg) * ohw, mg * ohw, nt);
      }
    }
    return Status();
  }

  // A conv with few columns per output pixel (k = C / group x taps <= kRowColumnsMax: a
  // network's first conv over 3 channels) on more than one thread: one output row at a time,
  // the rows split over the threads in one parallel region; the row's columns (k x ow) are
  // gathered into the thread's buffer and multiplied by W straight into the output rows
  // (VecTable::gemm, one thread, ldc = oh * ow), then the bias and post-ops run on those rows
  // while they are in cache. The whole-image im2col + dnnl_sgemm split its product (M = 16,
  // K = 27) badly over two threads: DeepLabV3-MobileNetV3's first conv (3 -> 16, 3x3, stride
  // 2, hard-swish) over the 100 image sizes of benchmarks/shape_stream.py took 0.49 ms per call
  // at 2 threads that way and 0.39 ms this way; on one thread the whole-image way stays (0.53
  // ms against 0.60).
  void by_rows(const KernelContext& ctx, const float* x, const float* wt, const float* bias,
               float* y, int nt) const {
    const int64_t cg = c / group, mg = m / group, hw = h * w, ohw = oh * ow;
    const int64_t k = cg * static_cast<int64_t>(taps.size());
    const float* r = add != nullptr ? ctx.input(ops::fused::kResidualInput).data<float>() : nullptr;
    // Rows of every image in one range, so a batch splits over the threads too.
    ops::parallel_ranges(n * oh, std::min<int64_t>(nt, n * oh), [&](int64_t q0, int64_t q1) {
      float* col = scratch(0, static_cast<size_t>(k * ow));
      for (int64_t q = q0; q < q1; ++q) {
        const int64_t b = q / oh, row = q % oh;
        for (int64_t gi = 0; gi < group; ++gi) {
          im2col(x + (b * c + gi * cg) * hw, cg, row, 1, col, 1);
          const int64_t ch0 = b * m + gi * mg;
          float* yr = y + ch0 * ohw + row * ow;
          vt->gemm(static_cast<size_t>(mg), static_cast<size_t>(ow), static_cast<size_t>(k), 1.0F,
                   wt + gi * mg * k, static_cast<size_t>(k), col, static_cast<size_t>(ow), yr,
                   static_cast<size_t>(ohw));
          for (int64_t j = 0; j < mg; ++j) {
            float* yj = yr + j * ohw;
            if (bias != nullptr) {
              const float bj = bias[gi * mg + j];
              for (int64_t o = 0; o < ow; ++o) yj[o] += bj;
            }
            if (!post.empty()) {
              apply_own_post_ops(post, add, yj, r != nullptr ? r + (yj - y) : nullptr,
                                 static_cast<size_t>(ow));
            }
          }
        }
      }
    });
  }

  // A 1x1 conv (one group) on more than one thread: the output channels split into one
  // contiguous range per thread, each thread setting its channels' bias, multiplying them
  // (dnnl_sgemm on that thread) and applying their post-ops in one parallel region, so the
  // planes a thread wrote stay in its cache for a next node that splits the channels the same
  // way (a depthwise conv, an elementwise node), where a dnnl_sgemm on all the threads split
  // the product its own way. On a 2-core VM, where data another core wrote costs more to read
  // than the arithmetic on it (ADR 0007, "Revisited (2026-12-07, evening)"): DeepLabV3-
  // MobileNetV3's 100-size stream at 2 threads, six rounds interleaved, 7.56-8.49 -> 7.26-7.62
  // ms per run (median of pass 2).
  Status by_channels(const KernelContext& ctx, const float* x, const float* wt, const float* bias,
                     float* y, int nt) const {
    const int64_t hw = h * w;
    const float* r = add != nullptr ? ctx.input(ops::fused::kResidualInput).data<float>() : nullptr;
    std::atomic<bool> failed{false};
    for (int64_t b = 0; b < n; ++b) {
      const float* xb = x + b * c * hw;
      float* yb = y + b * m * hw;
      ops::parallel_ranges(m, nt, [&](int64_t j0, int64_t j1) {
        float* yj = yb + j0 * hw;
        if (bias != nullptr) {
          for (int64_t j = j0; j < j1; ++j) std::fill_n(yb + j * hw, hw, bias[j]);
        }
        if (dnnl_sgemm('N', 'N', j1 - j0, hw, c, 1.0F, wt + j0 * c, c, xb, hw,
                       bias != nullptr ? 1.0F : 0.0F, yj, hw) != dnnl_success) {
          failed = true;
          return;
        }
        if (!post.empty()) {
          apply_own_post_ops(post, add, yj, r != nullptr ? r + (yj - y) : nullptr,
                             static_cast<size_t>((j1 - j0) * hw));
        }
      });
      if (failed) return ctx.node->error("dnnl_sgemm failed ({} x {} x {})", m, hw, c);
    }
    return Status();
  }

  // The post-ops on y[off, off + count) (a plane or a group's channels, computed), on up to
  // `nt` threads in chunks of whole vectors.
  void finish(const KernelContext& ctx, float* y, int64_t off, int64_t count, int nt) const {
    if (post.empty() || count <= 0) return;
    const float* r =
        add != nullptr ? ctx.input(ops::fused::kResidualInput).data<float>() + off : nullptr;
    constexpr int64_t kChunk = 4096;
    const int64_t chunks = (count + kChunk - 1) / kChunk;
    ops::parallel_for(chunks, count >= 65536 ? nt : 1, [&](int64_t i) {
      const int64_t a = off + i * kChunk, e = std::min(off + count, a + kChunk);
      apply_own_post_ops(post, add, y + a, r != nullptr ? r + (a - off) : nullptr,
                         static_cast<size_t>(e - a));
    });
  }

 private:
  // The conv as one product per tap over its rectangle (`rects`): y starts at the bias, and
  // each tap adds W_t x (the input its rectangle reads), in place where the rectangle is whole
  // rows, else through a gathered copy and a product added into the rectangle.
  Status by_taps(const KernelContext& ctx, const float* x, const float* bias, float* y,
                 int nt) const {
    const int64_t cg = c / group, mg = m / group, hw = h * w, ohw = oh * ow;
    for (int64_t b = 0; b < n; ++b) {
      float* yb = y + b * m * ohw;
      if (bias != nullptr) {
        fill_bias(bias, yb, ohw, nt);
      } else {
        std::fill_n(yb, m * ohw, 0.0F);
      }
      for (int64_t gi = 0; gi < group; ++gi) {
        const float* xg = x + (b * c + gi * cg) * hw;
        float* yg = yb + gi * mg * ohw;
        for (const TapRect& rc : rects) {
          const float* a = tap_w->data() + (rc.t * m + gi * mg) * cg;
          const int64_t nr = rc.r1 - rc.r0, nc = rc.c1 - rc.c0;
          if (rc.in_place) {
            FRAME_RETURN_IF_ERROR(gemm(ctx, mg, nr * ow, cg, a, xg + (rc.r0 + rc.ioff) * w, hw,
                                       1.0F, yg + rc.r0 * ow, ohw));
            continue;
          }
          float* cols = scratch(0, static_cast<size_t>(cg * nr * nc));
          float* prod = scratch(1, static_cast<size_t>(mg * nr * nc));
          for (int64_t ci = 0; ci < cg; ++ci) {
            for (int64_t r = rc.r0; r < rc.r1; ++r) {
              const float* src = xg + ci * hw + (r * sh + rc.ioff) * w + rc.joff;
              float* dst = cols + (ci * nr + (r - rc.r0)) * nc;
              for (int64_t o = 0; o < nc; ++o) dst[o] = src[(rc.c0 + o) * sw];
            }
          }
          FRAME_RETURN_IF_ERROR(gemm(ctx, mg, nr * nc, cg, a, cols, nr * nc, 0.0F, prod, nr * nc));
          for (int64_t mo = 0; mo < mg; ++mo) {
            for (int64_t r = 0; r < nr; ++r) {
              float* yr = yg + mo * ohw + (rc.r0 + r) * ow + rc.c0;
              const float* pr = prod + (mo * nr + r) * nc;
              for (int64_t o = 0; o < nc; ++o) yr[o] += pr[o];
            }
          }
        }
        finish(ctx, y, (b * m + gi * mg) * ohw, mg * ohw, nt);
      }
    }
    return Status();
  }

  // C[mm, nn] (row stride ldc) = A[mm, kk] B[kk, nn] (row stride ldb) + beta C, row-major.
  static Status gemm(const KernelContext& ctx, int64_t mm, int64_t nn, int64_t kk, const float* a,
                     const float* b, int64_t ldb, float beta, float* cm, int64_t ldc) {
    if (mm == 0 || nn == 0) return Status();
    if (kk == 0) {
      if (beta == 0.0F) {
        for (int64_t i = 0; i < mm; ++i) std::fill_n(cm + i * ldc, nn, 0.0F);
      }
      return Status();
    }
    if (dnnl_sgemm('N', 'N', mm, nn, kk, 1.0F, a, kk, b, ldb, beta, cm, ldc) != dnnl_success) {
      return ctx.node->error("dnnl_sgemm failed ({} x {} x {})", mm, nn, kk);
    }
    return Status();
  }

  // Every output channel's plane of one image set to its bias (the products then add on).
  void fill_bias(const float* bias, float* yb, int64_t ohw, int nt) const {
    if (bias == nullptr) return;
    ops::parallel_for(m, m * ohw >= 65536 ? nt : 1,
                      [&](int64_t j) { std::fill_n(yb + j * ohw, ohw, bias[j]); });
  }

  // The output columns [lo, hi) whose input column ow * sw - pw + j * dw lies in [0, w).
  void valid_columns(int64_t j, int64_t& lo, int64_t& hi) const {
    tap_range(j * dw - pw, sw, w, ow, lo, hi);
  }

  // col[ci * taps + t][(r - r0) * ow + o] = x[ci][r * sh - ph + i * dh][o * sw - pw + j * dw]
  // for tap t = (i, j), 0 outside the input, for output rows r in [r0, r0 + rn).
  void im2col(const float* xg, int64_t cg, int64_t r0, int64_t rn, float* col, int nt) const {
    const auto nt_taps = static_cast<int64_t>(taps.size());
    const int64_t k = cg * nt_taps, width = rn * ow;
    ops::parallel_for(k, (k * width >= 65536) ? nt : 1, [&](int64_t q) {
      const int64_t ci = q / nt_taps;
      const auto [i, j] = taps[static_cast<size_t>(q % nt_taps)];
      int64_t lo = 0, hi = 0;
      valid_columns(j, lo, hi);
      const int64_t off = j * dw - pw;
      float* dst = col + q * width;
      for (int64_t r = 0; r < rn; ++r) {
        float* d = dst + r * ow;
        const int64_t ih = (r0 + r) * sh - ph + i * dh;
        if (ih < 0 || ih >= h) {
          std::fill_n(d, ow, 0.0F);
          continue;
        }
        const float* row = xg + (ci * h + ih) * w;
        std::fill_n(d, lo, 0.0F);
        if (sw == 1) {
          if (hi > lo) std::copy(row + lo + off, row + hi + off, d + lo);
        } else if (sw == 2 && vt != nullptr && vt->even_copy != nullptr) {
          // A scalar strided loop took ~1.6 ns per element here (DeepLabV3's first conv, 3x3
          // stride 2 over 3 channels: 400 us of im2col against 100 us of gemm).
          if (hi > lo) vt->even_copy(row + 2 * lo + off, d + lo, static_cast<size_t>(hi - lo));
        } else {
          for (int64_t o = lo; o < hi; ++o) d[o] = row[o * sw + off];
        }
        std::fill(d + hi, d + ow, 0.0F);
      }
    });
  }

  // One input channel per group: output channel j reads input channel j / (m / c) only.
  void depthwise(const KernelContext& ctx, const float* x, const float* wt, const float* bias,
                 float* y, int nt) const {
    const int64_t mult = m / c, planes = n * m;
    DwPlane g;
    g.h = h, g.w = w, g.oh = oh, g.ow = ow, g.kh = kh, g.kw = kw;
    g.sh = sh, g.sw = sw, g.dh = dh, g.dw = dw, g.ph = ph, g.pw = pw;
    ops::parallel_for(planes, nt, [&](int64_t p) {
      const int64_t b = p / m, j = p % m;
      vt->dw_plane(x + (b * c + j / mult) * h * w, wt + j * kh * kw,
                   bias != nullptr ? bias[j] : 0.0F, y + p * oh * ow, g);
      finish(ctx, y, p * oh * ow, oh * ow, 1);
    });
  }
};

// What a tap-major arrangement of W depends on besides W itself (pack_weights_own's key).
std::string taps_layout(std::string_view kind, const AgnosticConv& p) {
  std::string key =
      fmt::format("agnostic-conv {} {}x{}x{}x{}:", kind, p.m, p.c / p.group, p.kh, p.kw);
  for (const auto& [i, j] : p.taps) key += fmt::format(" {},{}", i, j);
  return key;
}

// Sets p.rects and p.tap_w where one product per tap over its rectangle multiplies at most
// 60% of what im2col's columns would (taps dropped already): dilated convs over maps little
// larger than the dilation, whose off-centre taps read the input for a few rows and columns.
// With `pack` false only p.rects (the accepts() check: no copy of W).
void plan_taps(AgnosticConv& p, const Tensor& wt, bool pack = true) {
  std::vector<TapRect> rects;
  int64_t area = 0;
  for (size_t t = 0; t < p.taps.size(); ++t) {
    const auto [i, j] = p.taps[t];
    TapRect rc;
    rc.t = static_cast<int64_t>(t);
    rc.ioff = i * p.dh - p.ph;
    rc.joff = j * p.dw - p.pw;
    tap_range(rc.ioff, p.sh, p.h, p.oh, rc.r0, rc.r1);
    tap_range(rc.joff, p.sw, p.w, p.ow, rc.c0, rc.c1);
    rc.in_place =
        p.sh == 1 && p.sw == 1 && rc.joff == 0 && p.ow == p.w && rc.c0 == 0 && rc.c1 == p.ow;
    area += (rc.r1 - rc.r0) * (rc.c1 - rc.c0);
    rects.push_back(rc);
  }
  const auto ntaps = static_cast<int64_t>(p.taps.size());
  if (area * 10 > ntaps * p.oh * p.ow * 6) return;
  if (!pack) {
    p.rects = std::move(rects);
    return;
  }
  const int64_t cg = p.c / p.group;
  const float* w = wt.data<float>();
  p.tap_w = pack_weights_own(
      wt, taps_layout("tap-major", p), static_cast<size_t>(ntaps * p.m * cg), [&](float* tw) {
        for (int64_t t = 0; t < ntaps; ++t) {
          const auto [i, j] = p.taps[static_cast<size_t>(t)];
          for (int64_t mo = 0; mo < p.m; ++mo) {
            for (int64_t ci = 0; ci < cg; ++ci) {
              tw[(t * p.m + mo) * cg + ci] = w[((mo * cg + ci) * p.kh + i) * p.kw + j];
            }
          }
        }
      });
  p.rects = std::move(rects);
}

}  // namespace

Result<std::shared_ptr<LinearPrimitive>> make_shape_agnostic_conv(
    const NodeContext& ctx, bool build, std::span<const ops::fused::PostOp> post,
    AgnosticConvUse use) {
  const Shape& x = ctx.input_types[0].shape;
  const Shape& wshape = ctx.input_types[1].shape;
  const bool skipping = use == AgnosticConvUse::kSkipsPaddingTaps;
  if (!ctx.run_once && !skipping) return unimplemented("not a conv prepared for one run");
  if (skipping && ctx.constant_input(1) == nullptr) {
    return unimplemented("weights given at run time (every tap is computed)");
  }
  if (x.size() != 3 && x.size() != 4) {
    return unimplemented("{}-d spatial input (the shape-agnostic conv takes 1-d and 2-d)",
                         static_cast<int64_t>(x.size()) - 2);
  }
  if (wshape.size() != x.size()) return unimplemented("W of rank {}", wshape.size());
  const size_t sr = x.size() - 2;
  FRAME_ASSIGN_OR_RETURN(
      ops::nn::WindowGeometry g,
      ops::nn::resolve_window(ctx, std::span(x.data() + 2, sr), std::span(wshape.data() + 2, sr),
                              ops::nn::WindowKind::kConv));
  auto p = std::make_shared<AgnosticConv>();
  p->n = x[0];
  p->c = x[1];
  p->m = wshape[0];
  p->group = ctx.attr_or<int64_t>("group", 1);
  if (p->group <= 0 || p->c % p->group != 0 || p->m % p->group != 0 ||
      wshape[1] * p->group != p->c) {
    return unimplemented("group {} over {} input and {} output channels", p->group, p->c, p->m);
  }
  const size_t a = sr - 1;  // the last (w) spatial axis; h is axis 0 when there are two
  p->w = x.back();
  p->kw = wshape.back();
  p->ow = g.out[a];
  p->sw = g.strides[a];
  p->dw = g.dilations[a];
  p->pw = g.pad_begin[a];
  if (sr == 2) {
    p->h = x[2];
    p->kh = wshape[2];
    p->oh = g.out[0];
    p->sh = g.strides[0];
    p->dh = g.dilations[0];
    p->ph = g.pad_begin[0];
  } else {
    p->h = p->kh = p->oh = 1;
  }
  p->has_bias = ctx.has_input(2);
  if (!post.empty()) {
    std::optional<std::vector<OwnPostOp>> chain = own_post_ops(post);
    if (!chain) return unimplemented("a post-op without an own loop");
    for (const OwnPostOp& o : *chain) {
      if (o.kind != ops::fused::PostOpKind::kAdd) continue;
      // A compiled plan may give Y the residual's buffer (KernelDef::in_place_input); this
      // conv writes Y before it adds R.
      if (skipping) return unimplemented("a residual add in a compiled plan");
      const Shape& r = ctx.input_types[ops::fused::kResidualInput].shape;
      Shape y = {p->n, p->m};
      if (x.size() == 4) y.push_back(p->oh);
      y.push_back(p->ow);
      if (r != y) {
        return unimplemented("a residual {} not of the output's shape", shape_to_string(r));
      }
      const int add = binary_index("add");
      p->add = add < 0 ? nullptr : vec_table().binary[static_cast<size_t>(add)];
      if (p->add == nullptr) return unimplemented("no add loop on this target");
    }
    p->post = std::move(*chain);
  }
  p->vt = &vec_table();
  if (p->group == p->c && p->c > 0) {
    if (skipping) return unimplemented("a depthwise conv (its loop skips the padding already)");
    if (p->vt->dw_plane == nullptr) return unimplemented("no depthwise plane loop on this target");
    return std::shared_ptr<LinearPrimitive>(std::move(p));
  }
  if (!build && !skipping) return std::shared_ptr<LinearPrimitive>(std::move(p));  // no copies
  // Taps that read the input for some output pixel (a stride may step over a small input).
  const auto reads = [](int64_t t, int64_t step, int64_t pad, int64_t stride, int64_t in,
                        int64_t out) {
    int64_t lo = 0, hi = 0;
    tap_range(t * step - pad, stride, in, out, lo, hi);
    return lo < hi;
  };

  for (int64_t i = 0; i < p->kh; ++i) {
    if (!reads(i, p->dh, p->ph, p->sh, p->h, p->oh)) continue;
    for (int64_t j = 0; j < p->kw; ++j) {
      if (reads(j, p->dw, p->pw, p->sw, p->w, p->ow)) p->taps.emplace_back(i, j);
    }
  }
  const auto all = static_cast<size_t>(p->kh * p->kw);
  const Tensor* wconst = ctx.constant_input(1);
  if (p->taps.size() < all && wconst == nullptr) {
    p->taps.clear();  // weights given at run time: every tap, as they come
    for (int64_t i = 0; i < p->kh; ++i) {
      for (int64_t j = 0; j < p->kw; ++j) p->taps.emplace_back(i, j);
    }
  }
  if (p->taps.size() == 1 && p->sh == 1 && p->sw == 1 && p->oh == p->h && p->ow == p->w) {
    const auto [i, j] = p->taps[0];
    p->direct = i * p->dh == p->ph && j * p->dw == p->pw;
  }
  if (!p->direct && wconst != nullptr) plan_taps(*p, *wconst, build);
  if (skipping && p->taps.size() == all && p->rects.empty()) {
    return unimplemented("every tap reads the input somewhere");
  }
  if (!build) return std::shared_ptr<LinearPrimitive>(std::move(p));  // accepts(): no copies
  if (!p->rects.empty()) return std::shared_ptr<LinearPrimitive>(std::move(p));
  if (p->taps.size() < all) {
    const int64_t cg = p->c / p->group, nt = static_cast<int64_t>(p->taps.size());
    const float* src = wconst->data<float>();
    const AgnosticConv& q = *p;
    p->packed = pack_weights_own(
        *wconst, taps_layout("taps", q), static_cast<size_t>(p->m * cg * nt), [&](float* packed) {
          for (int64_t mo = 0; mo < q.m; ++mo) {
            for (int64_t ci = 0; ci < cg; ++ci) {
              for (int64_t t = 0; t < nt; ++t) {
                const auto [i, j] = q.taps[static_cast<size_t>(t)];
                packed[(mo * cg + ci) * nt + t] = src[((mo * cg + ci) * q.kh + i) * q.kw + j];
              }
            }
          }
        });
  }
  return std::shared_ptr<LinearPrimitive>(std::move(p));
}

}  // namespace frame::backends::onednn
