// The onednn backend's own Winograd conv: F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks", 2016) for f32 3x3 convs with stride 1, no dilation and one
// group, its activations plain NCHW or laid out (nhwc, nChw8c, nChw16c). A 2x2 output tile takes 16
// multiplies per input channel instead of 36: per block of tiles, the input transform
// (VecTable::wino23_input) writes 16 matrices [tiles][C], each is multiplied by the matching
// transformed weights [C][M] (VecTable::gemm_packed over panels packed once per model), and the
// output transform (VecTable::wino23_output) adds the bias; the fused post-ops (own loops) run on
// the block before it is stored in the output's layout. oneDNN 2.6 has Winograd only on AVX-512
// (jit_fp32_wino_2x3, opt-in there). Measurements and the accuracy bound:
// docs/backends/onednn.md#convolution-matmul-and-gemm.

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/parallel.h"
#include "backends/onednn/kernels/primitive_util.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;
using ops::fused::ActivationLayout;

// Bytes of transformed input per block of tiles (16 matrices [tiles][C]): the block and the
// products it yields stay in L2 while each of the 16 weight matrices streams past them once.
constexpr int64_t kBlockBytes = int64_t{256} << 10;
// Tiles per block at least (a block's products are kGemmRows-row tiles of gemm_packed; fewer
// rows leave it short of its peak and stream the weights once more per block).
constexpr int64_t kMinBlockTiles = 24;
constexpr int64_t kMaxBlockTiles = 96;
// Floats after each plane of the transformed input and of the products (WinogradConv::run_item).
constexpr int64_t kPlanePad = 16;
// Channels on the other side of a plain NCHW side at least (make_winograd_conv).
constexpr int64_t kWinogradPlainMinChannels = 64;

// Offsets, in floats, of each group of 8 channels of one image stored in `layout` (channels
// `c`, pixels `hw`).
std::vector<int64_t> group_offsets(ActivationLayout layout, int64_t c, int64_t hw) {
  std::vector<int64_t> off(static_cast<size_t>(c / 8));
  for (int64_t q = 0; q < c / 8; ++q) {
    off[static_cast<size_t>(q)] = ops::fused::layout_offset(layout, c, hw, 0, 8 * q, 0);
  }
  return off;
}

int64_t pixel_stride(ActivationLayout layout, int64_t c) {
  if (layout == ActivationLayout::kPlain) return 1;
  return layout == ActivationLayout::kNhwc ? c : ops::fused::channel_block(layout);
}

// Floats between adjacent channels of a group of 8 (`hw` pixels per image).
int64_t channel_stride(ActivationLayout layout, int64_t hw) {
  return layout == ActivationLayout::kPlain ? hw : 1;
}

// Copies 8 channels from `src` (`stride` floats apart) to `dst` (`dst_stride` apart).
inline void copy8(float* dst, int64_t dst_stride, const float* src, int64_t stride) {
  if (stride == 1 && dst_stride == 1) {
    std::memcpy(dst, src, 8 * sizeof(float));
    return;
  }
  for (int64_t e = 0; e < 8; ++e) dst[e * dst_stride] = src[e * stride];
}

class WinogradConv final : public LinearPrimitive {
 public:
  int64_t n = 0, c = 0, m = 0, h = 0, w = 0, oh = 0, ow = 0, th = 0, tw = 0;
  int64_t tb = 0;        // tiles per block
  int64_t blocks = 0;    // blocks per image
  int64_t m_splits = 1;  // output channels cut into this many ranges (few blocks)
  int64_t m_range = 0;   // output channels per range, a multiple of the gemm strip and of 8
  WinoTiles geo;
  std::vector<int64_t> x_groups, y_groups, r_groups;
  int64_t y_pixel = 0, r_pixel = 0, y_channel = 1, r_channel = 1;
  bool has_bias = false, residual = false;
  const VecTable* vt = nullptr;
  VecBinaryFn add = nullptr;
  std::vector<OwnPostOp> post;
  // The transformed weights: 16 matrices [C][M] (U = G g G^T per channel pair), each packed
  // for gemm_packed, `u_plane` floats apart.
  std::shared_ptr<const OwnPackedWeights> u;
  size_t u_plane = 0;

  std::string_view implementation() const override { return "frame:winograd_2x3"; }

  Status run(KernelContext& ctx) const override {
    const float* x = ctx.input(0).data<float>();
    const float* bias = has_bias ? ctx.input(2).data<float>() : nullptr;
    const float* r = residual ? ctx.input(ops::fused::kResidualInput).data<float>() : nullptr;
    float* y = ctx.output(0).data<float>();
    const int64_t items = n * blocks * m_splits;
    const int threads = static_cast<int>(std::min<int64_t>(std::max(ctx.num_threads, 1), items));
    ops::parallel_ranges(items, threads, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) run_item(i, x, bias, r, y);
    });
    return Status();
  }

 private:
  // Work item `item`: output channels [j0, j1) of one block of tiles of one image.
  void run_item(int64_t item, const float* x, const float* bias, const float* r, float* y) const {
    const int64_t split = item % m_splits, b = item / m_splits;
    const int64_t img = b / blocks, t0 = (b % blocks) * tb;
    const int64_t count = std::min(tb, th * tw - t0);
    const int64_t j0 = split * m_range, j1 = std::min(m, j0 + m_range), mj = j1 - j0;
    // Per-thread scratch, grown and kept: V (16 x [tb][C]), the products (16 x [tb][mj]),
    // and the output pixels (4 per tile) with the residual's beside them.
    thread_local std::vector<float> scratch;
    // Planes a cache line longer than their data: the 16 planes a transform reads or writes
    // at once would otherwise lie a multiple of 4 KiB apart and share L1 sets.
    const auto v_plane = static_cast<size_t>(tb * c + kPlanePad),
               p_plane = static_cast<size_t>(tb * m_range + kPlanePad);
    const size_t out_size = static_cast<size_t>(4 * tb * m_range);
    const size_t need = 16 * (v_plane + p_plane) + 2 * out_size;
    if (scratch.size() < need) scratch.resize(need);
    float* v = scratch.data();
    float* prod = v + 16 * v_plane;
    float* out = prod + 16 * p_plane;
    float* res = out + out_size;
    const int64_t hw = h * w, ohw = oh * ow;
    vt->wino23_input(x + img * c * hw, geo, t0, count, v, v_plane);
    const size_t strip = vt->gemm_strip;
    for (size_t k = 0; k < 16; ++k) {
      vt->gemm_packed(static_cast<size_t>(count), static_cast<size_t>(mj), static_cast<size_t>(c),
                      1.0F, v + k * v_plane, static_cast<size_t>(c),
                      u->data() + k * u_plane +
                          static_cast<size_t>(j0 / static_cast<int64_t>(strip)) *
                              static_cast<size_t>(c) * strip,
                      prod + k * p_plane, static_cast<size_t>(mj));
    }
    vt->wino23_output(prod, p_plane, mj, count, bias != nullptr ? bias + j0 : nullptr, out);
    // Output pixel q (0..3) of tile i: its place in the image, or -1 past the output's edge
    // (the tile's row or column beyond an odd size).
    const auto pixel = [&](int64_t i, int64_t q) -> int64_t {
      const int64_t t = t0 + i;
      const int64_t oy = 2 * (t / tw) + q / 2, ox = 2 * (t % tw) + q % 2;
      return oy < oh && ox < ow ? oy * ow + ox : -1;
    };
    const int64_t g0 = j0 / 8, groups = mj / 8;
    if (!post.empty()) {
      if (residual) {
        const float* ri = r + img * m * ohw;
        for (int64_t i = 0; i < count; ++i) {
          for (int64_t q = 0; q < 4; ++q) {
            float* dst = res + (4 * i + q) * mj;
            const int64_t p = pixel(i, q);
            if (p < 0) {
              std::fill(dst, dst + mj, 0.0F);
              continue;
            }
            for (int64_t gq = 0; gq < groups; ++gq) {
              copy8(dst + gq * 8, 1, ri + r_groups[static_cast<size_t>(g0 + gq)] + p * r_pixel,
                    r_channel);
            }
          }
        }
      }
      apply_own_post_ops(post, add, out, res, static_cast<size_t>(4 * count * mj));
    }
    float* yi = y + img * m * ohw;
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t q = 0; q < 4; ++q) {
        const int64_t p = pixel(i, q);
        if (p < 0) continue;
        const float* src = out + (4 * i + q) * mj;
        for (int64_t gq = 0; gq < groups; ++gq) {
          copy8(yi + y_groups[static_cast<size_t>(g0 + gq)] + p * y_pixel, y_channel, src + gq * 8,
                1);
        }
      }
    }
  }
};

// U = G g G^T for each output / input channel pair (G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2;
// 0 0 1]), as 16 row-major matrices [C][M], each packed by gemm_pack into `panels` (`plane`
// floats apart).
void transform_weights(const VecTable& vt, const float* wt, int64_t c, int64_t m, size_t plane,
                       float* panels) {
  std::vector<float> mat(static_cast<size_t>(16 * c * m));
  for (int64_t o = 0; o < m; ++o) {
    for (int64_t i = 0; i < c; ++i) {
      const float* g = wt + (o * c + i) * 9;
      float gg[4][3];  // G g
      for (int s = 0; s < 3; ++s) {
        gg[0][s] = g[s];
        gg[1][s] = 0.5F * (g[s] + g[3 + s] + g[6 + s]);
        gg[2][s] = 0.5F * (g[s] - g[3 + s] + g[6 + s]);
        gg[3][s] = g[6 + s];
      }
      for (int r = 0; r < 4; ++r) {  // (G g) G^T
        const float u4[4] = {gg[r][0], 0.5F * (gg[r][0] + gg[r][1] + gg[r][2]),
                             0.5F * (gg[r][0] - gg[r][1] + gg[r][2]), gg[r][2]};
        for (int s = 0; s < 4; ++s) {
          mat[static_cast<size_t>(((4 * r + s) * c + i) * m + o)] = u4[s];
        }
      }
    }
  }
  for (size_t k = 0; k < 16; ++k) {
    vt.gemm_pack(mat.data() + k * static_cast<size_t>(c * m), static_cast<size_t>(m),
                 static_cast<size_t>(c), static_cast<size_t>(m), panels + k * plane);
  }
}

}  // namespace

bool winograd_conv_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("FRAME_WINOGRAD");
    return e == nullptr || std::string_view(e) != "0";
  }();
  return on;
}

Result<std::shared_ptr<LinearPrimitive>> make_winograd_conv(
    const NodeContext& ctx, std::span<const ops::fused::PostOp> post, const ConvLayouts& layouts,
    bool build) {
  if (!winograd_conv_enabled()) return unimplemented("FRAME_WINOGRAD=0");
  if (ctx.run_once) return unimplemented("a conv prepared for one run");
  const Shape& x = ctx.input_types[0].shape;
  const Shape& ws = ctx.input_types[1].shape;
  if (x.size() != 4 || ws.size() != 4) return unimplemented("not a 2-d conv");
  if (ws[2] != 3 || ws[3] != 3) return unimplemented("a {}x{} kernel", ws[2], ws[3]);
  const Tensor* wconst = ctx.constant_input(1);
  if (wconst == nullptr) return unimplemented("weights given at run time");
  if (ctx.attr_or<int64_t>("group", 1) != 1) return unimplemented("a grouped conv");
  const int64_t c = x[1], m = ws[0];
  if (c % 8 != 0 || m % 8 != 0 || c < kWinogradMinChannels || m < kWinogradMinChannels) {
    return unimplemented("{} input and {} output channels", c, m);
  }
  // A plain NCHW side is gathered (X) or scattered (Y, R) channel by channel, h * w apart: per
  // tile that costs in proportion to its channels, while the products cost in proportion to
  // both counts, so the other side's channels must be many enough to carry it (32 -> 32 at
  // 256x256 ran 10% slower than the direct conv with a plain X).
  if (layouts.src == ActivationLayout::kPlain && m < kWinogradPlainMinChannels) {
    return unimplemented("a plain NCHW X with {} output channels", m);
  }
  const bool adds = std::any_of(post.begin(), post.end(), [](const ops::fused::PostOp& o) {
    return o.kind == ops::fused::PostOpKind::kAdd;
  });
  if ((layouts.dst == ActivationLayout::kPlain ||
       (adds && layouts.residual == ActivationLayout::kPlain)) &&
      c < kWinogradPlainMinChannels) {
    return unimplemented("a plain NCHW Y with {} input channels", c);
  }
  FRAME_ASSIGN_OR_RETURN(
      ops::nn::WindowGeometry g,
      ops::nn::resolve_window(ctx, std::span(x.data() + 2, 2), std::span(ws.data() + 2, 2),
                              ops::nn::WindowKind::kConv));
  for (size_t d = 0; d < 2; ++d) {
    if (g.strides[d] != 1 || g.dilations[d] != 1) return unimplemented("a stride or a dilation");
  }
  const VecTable& vt = vec_table();
  const int add = binary_index("add");
  if (vt.wino23_input == nullptr || vt.gemm_packed == nullptr || vt.gemm_strip == 0 || add < 0) {
    return unimplemented("no Winograd loops on this target");
  }
  auto p = std::make_shared<WinogradConv>();
  p->n = x[0];
  p->c = c;
  p->m = m;
  p->h = x[2];
  p->w = x[3];
  p->oh = g.out[0];
  p->ow = g.out[1];
  if (p->oh <= 0 || p->ow <= 0 || p->n <= 0) return unimplemented("an empty output");
  p->th = (p->oh + 1) / 2;
  p->tw = (p->ow + 1) / 2;
  p->has_bias = ctx.has_input(2);
  p->vt = &vt;
  p->add = vt.binary[static_cast<size_t>(add)];
  std::optional<std::vector<OwnPostOp>> chain = own_post_ops(post);
  if (!chain) return unimplemented("a post-op without an own loop");
  if (adds) {
    const Shape& rs = ctx.input_types[ops::fused::kResidualInput].shape;
    if (rs != Shape{p->n, m, p->oh, p->ow}) {
      return unimplemented("a residual {} not of the output's shape", shape_to_string(rs));
    }
  }
  p->residual = adds;
  p->post = std::move(*chain);
  if (!build) return std::shared_ptr<LinearPrimitive>(std::move(p));
  const int64_t hw = p->h * p->w, ohw = p->oh * p->ow;
  p->x_groups = group_offsets(layouts.src, c, hw);
  p->y_groups = group_offsets(layouts.dst, m, ohw);
  p->y_pixel = pixel_stride(layouts.dst, m);
  p->y_channel = channel_stride(layouts.dst, ohw);
  if (p->residual) {
    p->r_groups = group_offsets(layouts.residual, m, ohw);
    p->r_pixel = pixel_stride(layouts.residual, m);
    p->r_channel = channel_stride(layouts.residual, ohw);
  }
  p->geo.h = p->h;
  p->geo.w = p->w;
  p->geo.pt = g.pad_begin[0];
  p->geo.pl = g.pad_begin[1];
  p->geo.tw = p->tw;
  p->geo.c = c;
  p->geo.x_pixel = pixel_stride(layouts.src, c);
  p->geo.x_channel = channel_stride(layouts.src, hw);
  p->geo.x_groups = p->x_groups.data();
  // Blocks of tiles: as many as kBlockBytes of transformed input hold (at least
  // kMinBlockTiles), then evened out over the image.
  const int64_t tiles = p->th * p->tw;
  const int64_t want = std::clamp(kBlockBytes / (16 * c * 4), kMinBlockTiles, kMaxBlockTiles);
  p->blocks = (tiles + want - 1) / want;
  p->tb = (tiles + p->blocks - 1) / p->blocks;
  // Too few blocks for the threads (a deep layer's 7x7 map is 16 tiles): the output channels
  // are cut into ranges too, each a work item reading its part of the weights.
  // A range starts at a strip of the packed weights and at a group of 8 channels.
  const auto strip = static_cast<int64_t>(vt.gemm_strip);
  const int64_t unit = std::max<int64_t>(strip, 8);  // both powers of two
  const int threads = std::max(omp_get_max_threads(), 1);
  p->m_range = m;
  while (p->n * p->blocks * p->m_splits < 2 * threads && p->m_range >= 4 * unit) {
    p->m_splits *= 2;
    p->m_range = ((m + p->m_splits - 1) / p->m_splits + unit - 1) / unit * unit;
  }
  p->m_splits = (m + p->m_range - 1) / p->m_range;
  const int64_t strips = (m + strip - 1) / strip;
  p->u_plane = static_cast<size_t>(strips * strip * c);
  const float* wt = wconst->data<float>();
  p->u = pack_weights_own(*wconst, fmt::format("wino23 {} {} {}", c, m, strip), 16 * p->u_plane,
                          [&](float* out) { transform_weights(vt, wt, c, m, p->u_plane, out); });
  return std::shared_ptr<LinearPrimitive>(std::move(p));
}

}  // namespace frame::backends::onednn
