// cpu reference kernels of the quantization ops (QuantizeLinear, DequantizeLinear,
// DynamicQuantizeLinear, MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv). Products
// accumulate in int32 (ONNX); requantization multiplies the int32 sum by the float32 factor
// in_scale * w_scale / y_scale in double (as the ONNX reference implementation's numpy
// promotion does), rounds half to even (std::nearbyint in the default rounding mode) and
// saturates to the output type. dtype dispatch happens once per call, outside every loop
// (ARCH-042).

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/kernels/linalg_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::cpu {
namespace {

using ops::KernelContext;
using ops::nn::WindowGeometry;

constexpr DTypeSet kQ8{DTypeCode::kInt8, DTypeCode::kUInt8};
constexpr DTypeSet kDequantIn{DTypeCode::kInt8, DTypeCode::kUInt8, DTypeCode::kInt32};
constexpr DTypeSet kScale{DTypeCode::kFloat32, DTypeCode::kFloat16, DTypeCode::kBFloat16};

// round_half_even(v) + zp saturated to Q. NaN saturates to the lowest value (undefined in
// ONNX); fmax/fmin keep that branch-free.
template <typename Q>
inline Q saturate_round(double v, int32_t zp) {
  constexpr double lo = std::numeric_limits<Q>::lowest(), hi = std::numeric_limits<Q>::max();
  const double r = std::nearbyint(v) + static_cast<double>(zp);
  return static_cast<Q>(std::fmin(std::fmax(r, lo), hi));
}

// Values of an optional integer tensor as int32 (`fallback` repeated `n` times when absent).
std::vector<int32_t> ints_of(KernelContext& ctx, size_t i, size_t n) {
  if (!ctx.node->has_input(i)) return std::vector<int32_t>(n, 0);
  const Tensor& t = ctx.input(i);
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  for (size_t k = 0; k < v.size(); ++k) {
    v[k] = static_cast<int32_t>(t.element_as_int64(static_cast<int64_t>(k)));
  }
  return v;
}

// Values of a float32 tensor input.
std::vector<float> floats_of(KernelContext& ctx, size_t i) {
  const Tensor& t = ctx.input(i);
  const float* p = t.data<float>();
  return std::vector<float>(p, p + t.numel());
}

// x viewed as [outer, channels, inner] for per-axis parameters (channels = 1 per tensor).
struct AxisView {
  int64_t outer = 1, channels = 1, inner = 1;
};

AxisView axis_view(const KernelContext& ctx, const Shape& x, int64_t param_numel,
                   const Shape& param_shape) {
  AxisView v;
  if (param_numel == 1 && param_shape.size() <= 1) {
    v.inner = numel_of(x);
    return v;
  }
  const int64_t r = static_cast<int64_t>(x.size());
  int64_t axis = ctx.node->attr_or<int64_t>("axis", 1);
  if (axis < 0) axis += r;
  for (int64_t d = 0; d < axis; ++d) v.outer *= x[static_cast<size_t>(d)];
  v.channels = x[static_cast<size_t>(axis)];
  for (int64_t d = axis + 1; d < r; ++d) v.inner *= x[static_cast<size_t>(d)];
  return v;
}

// Calls fn(begin, end, channel) over the elements of an AxisView in runs of one channel,
// split across threads (a per-tensor view is one long run, cut into chunks).
template <typename Fn>
void for_channel_runs(const AxisView& v, int num_threads, Fn&& fn) {
  const int64_t rows = v.outer * v.channels;
  const int64_t chunk = rows == 1 ? int64_t{16384} : v.inner;
  const int64_t per_row = (v.inner + chunk - 1) / std::max<int64_t>(chunk, 1);
  const int64_t items = rows * per_row;
  ops::parallel_for(items, (rows * v.inner > 65536) ? num_threads : 1, [&](int64_t it) {
    const int64_t r = it / per_row, b = (it % per_row) * chunk;
    const int64_t e = std::min(v.inner, b + chunk);
    fn(r * v.inner + b, r * v.inner + e, r % v.channels);
  });
}

Status quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  Tensor& y = ctx.output(0);
  const AxisView v = axis_view(ctx, x.shape(), s.numel(), s.shape());
  const std::vector<int32_t> zp = ints_of(ctx, 2, static_cast<size_t>(s.numel()));
  return dispatch_dtype<kScale>(x.dtype(), [&]<typename T>() {
    const T* xp = x.data<T>();
    const T* sp = s.data<T>();
    return dispatch_dtype<kQ8>(y.dtype(), [&]<typename Q>() {
      Q* yp = y.data<Q>();
      for_channel_runs(v, ctx.num_threads, [&](int64_t b, int64_t e, int64_t c) {
        const float scale = static_cast<float>(to_compute(sp[c]));
        const int32_t z = zp[static_cast<size_t>(c)];
        // Clamping to the integer bounds before rounding equals clamping after it; within
        // them v + 1.5 * 2^23 - 1.5 * 2^23 rounds half to even (default rounding mode) and
        // the loop vectorizes (compare-and-select clamps). NaN clamps to the lowest value.
        const float lo =
            static_cast<float>(std::numeric_limits<Q>::lowest()) - static_cast<float>(z);
        const float hi = static_cast<float>(std::numeric_limits<Q>::max()) - static_cast<float>(z);
        constexpr float kMagic = 12582912.0f;
        for (int64_t i = b; i < e; ++i) {
          float q = static_cast<float>(to_compute(xp[i])) / scale;
          q = q >= lo ? q : lo;  // also NaN -> lo
          q = q <= hi ? q : hi;
          yp[i] = static_cast<Q>(static_cast<int32_t>((q + kMagic) - kMagic) + z);
        }
      });
    });
  });
}

FRAME_REGISTER_KERNEL(quantize_linear, "cpu", quantize_kernel).dtypes(kScale);

Status dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& s = ctx.input(1);
  Tensor& y = ctx.output(0);
  const AxisView v = axis_view(ctx, x.shape(), s.numel(), s.shape());
  const std::vector<int32_t> zp = ints_of(ctx, 2, static_cast<size_t>(s.numel()));
  return dispatch_dtype<kDequantIn>(x.dtype(), [&]<typename Q>() {
    const Q* xp = x.data<Q>();
    return dispatch_dtype<kScale>(s.dtype(), [&]<typename S>() {
      const S* sp = s.data<S>();
      S* yp = y.data<S>();
      for_channel_runs(v, ctx.num_threads, [&](int64_t b, int64_t e, int64_t c) {
        const float scale = static_cast<float>(to_compute(sp[c]));
        const int64_t z = zp[static_cast<size_t>(c)];
        for (int64_t i = b; i < e; ++i) {
          const float d = static_cast<float>(static_cast<int64_t>(xp[i]) - z);
          yp[i] = from_compute<S>(static_cast<compute_t<S>>(d * scale));
        }
      });
    });
  });
}

FRAME_REGISTER_KERNEL(dequantize_linear, "cpu", dequantize_kernel).dtypes(kDequantIn);

Status dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const float* xp = x.data<float>();
  const int64_t n = x.numel();
  // min(0, min x) and max(0, max x): the range always contains 0.
  float lo = 0.0f, hi = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    lo = std::fmin(lo, xp[i]);
    hi = std::fmax(hi, xp[i]);
  }
  const float scale = (hi - lo) / 255.0f;
  // An all-zero input has scale 0: quantize everything to 0 with zero point 0.
  const float inv_guard = scale == 0.0f ? 0.0f : 1.0f;
  const float safe = scale == 0.0f ? 1.0f : scale;
  const float zp_f = std::fmin(std::fmax(0.0f - lo / safe, 0.0f), 255.0f);
  const auto zp = static_cast<uint8_t>(std::nearbyint(zp_f));
  uint8_t* yp = ctx.output(0).data<uint8_t>();
  ops::parallel_for(n, (n > 65536) ? ctx.num_threads : 1, [&](int64_t i) {
    yp[i] = saturate_round<uint8_t>(inv_guard * (xp[i] / safe), zp);
  });
  *ctx.output(1).data<float>() = scale;
  *ctx.output(2).data<uint8_t>() = zp;
  return Status();
}

FRAME_REGISTER_KERNEL(dynamic_quantize_linear, "cpu", dynamic_quantize_kernel)
    .dtypes(DTypeSet{DTypeCode::kFloat32});

// int32 product of a [..., M, K] and b [..., K, N] (numpy.matmul shapes) with zero points
// per tensor or per row of a (azp: 1 or M values) and per column of b (bzp: 1 or N). Calls
// emit(r, i, acc_row) for every output row r (batch * M + i), acc_row holding N sums.
template <typename Emit>
Status int_matmul(KernelContext& ctx, const Tensor& a, const Tensor& b,
                  const std::vector<int32_t>& azp, const std::vector<int32_t>& bzp, Emit&& emit) {
  FRAME_ASSIGN_OR_RETURN(const MatmulBatches mb, matmul_batches(a.shape(), b.shape()));
  const int64_t m = mb.m, k = mb.k, n = mb.n, nb_blocks = mb.b_blocks;
  const auto nbatch = static_cast<int64_t>(mb.a_block.size());
  const std::vector<int64_t>&a_blk = mb.a_block, &b_blk = mb.b_block;
  const bool a_rows = azp.size() > 1, b_cols = bzp.size() > 1;
  return dispatch_dtype<kQ8>(a.dtype(), [&]<typename A>() {
    return dispatch_dtype<kQ8>(b.dtype(), [&]<typename B>() {
      // B - b_zero_point, packed once per distinct B matrix as int32 [K, N].
      std::vector<int32_t> bp(static_cast<size_t>(nb_blocks * k * n));
      const B* braw = b.data<B>();
      for (int64_t i = 0; i < nb_blocks * k * n; ++i) {
        bp[static_cast<size_t>(i)] =
            static_cast<int32_t>(braw[i]) - bzp[b_cols ? static_cast<size_t>(i % n) : 0];
      }
      const A* araw = a.data<A>();
      for_rows<int32_t>(nbatch * m, n, ctx.num_threads, [&](int64_t r, int32_t* row) {
        const int64_t t = r / m, i = r % m;
        const A* arow = araw + (a_blk[static_cast<size_t>(t)] * m + i) * k;
        const int32_t* bm = bp.data() + b_blk[static_cast<size_t>(t)] * k * n;
        const int32_t z = azp[a_rows ? static_cast<size_t>(i) : 0];
        std::fill(row, row + n, 0);
        for (int64_t kk = 0; kk < k; ++kk) {
          const int32_t av = static_cast<int32_t>(arow[kk]) - z;
          const int32_t* brow = bm + kk * n;
          for (int64_t j = 0; j < n; ++j) row[j] += av * brow[j];
        }
        emit(r, i, row);
      });
      return Status();
    });
  });
}

Status matmul_integer_kernel(KernelContext& ctx) {
  const std::vector<int32_t> azp = ints_of(ctx, 2, 1), bzp = ints_of(ctx, 3, 1);
  Tensor& y = ctx.output(0);
  int32_t* out = y.data<int32_t>();
  const int64_t n = ctx.input(1).shape().size() == 1 ? 1 : ctx.input(1).shape().back();
  return int_matmul(
      ctx, ctx.input(0), ctx.input(1), azp, bzp,
      [&](int64_t r, int64_t, const int32_t* row) { std::copy(row, row + n, out + r * n); });
}

FRAME_REGISTER_KERNEL(matmul_integer, "cpu", matmul_integer_kernel).dtypes(kQ8);

// float32 factor in_scale * w_scale / y_scale, evaluated in float as ONNX's reference does.
inline float requant_factor(float in_scale, float w_scale, float y_scale) {
  return in_scale * w_scale / y_scale;
}

Status qlinear_matmul_kernel(KernelContext& ctx) {
  const std::vector<float> as = floats_of(ctx, 1), bs = floats_of(ctx, 4);
  const std::vector<int32_t> azp = ints_of(ctx, 2, 1), bzp = ints_of(ctx, 5, 1);
  const float ys = floats_of(ctx, 6)[0];
  const int32_t yzp = ints_of(ctx, 7, 1)[0];
  const Shape& bshape = ctx.input(3).shape();
  const int64_t n = bshape.size() == 1 ? 1 : bshape.back();
  const int64_t m = ctx.input(0).shape().size() == 1 ? 1 : ctx.input(0).shape().end()[-2];
  // Factor per (row, column); rows/columns collapse to one when the scale is per tensor.
  const int64_t fm = as.size() > 1 ? m : 1, fn = bs.size() > 1 ? n : 1;
  std::vector<double> factor(static_cast<size_t>(fm * fn));
  for (int64_t i = 0; i < fm; ++i) {
    for (int64_t j = 0; j < fn; ++j) {
      factor[static_cast<size_t>(i * fn + j)] =
          requant_factor(as[static_cast<size_t>(i)], bs[static_cast<size_t>(j)], ys);
    }
  }
  Tensor& y = ctx.output(0);
  return dispatch_dtype<kQ8>(y.dtype(), [&]<typename Q>() {
    Q* out = y.data<Q>();
    return int_matmul(
        ctx, ctx.input(0), ctx.input(3), azp, bzp, [&](int64_t r, int64_t i, const int32_t* row) {
          const double* f = factor.data() + (fm > 1 ? i : 0) * fn;
          Q* orow = out + r * n;
          for (int64_t j = 0; j < n; ++j) {
            orow[j] = saturate_round<Q>(static_cast<double>(row[j]) * f[fn > 1 ? j : 0], yzp);
          }
        });
  });
}

FRAME_REGISTER_KERNEL(qlinear_matmul, "cpu", qlinear_matmul_kernel).dtypes(kQ8);

// Geometry of an integer convolution, resolved once per node by the kernels' prepare step:
// sizes, and the input offset of every (output position, tap) of the first tile of
// `tile` positions, -1 where the tap falls in the padding. The tile keeps the table under
// kConvScratchBytes (or one position): with one tile the table is built once here, with more
// each run rebuilds it tile by tile (security.md, "Memory outside the plan").
struct ConvPlan {
  int64_t group = 1, nb = 0, c_in = 0, m_out = 0, cg = 0, mg = 0, plane = 0, npos = 0, taps = 1;
  int64_t tile = 1;
  WindowGeometry g;
  std::vector<int64_t> tab;
};

// Writes the offsets of positions [p0, p0 + count) into tab (count x taps).
void fill_conv_tab(const ConvPlan& p, int64_t p0, int64_t count, std::vector<int64_t>& tab) {
  const WindowGeometry& g = p.g;
  const size_t r = static_cast<size_t>(g.rank);
  const std::vector<int64_t> in_strides = contiguous_strides(g.in);
  tab.resize(static_cast<size_t>(count * p.taps));
  std::vector<int64_t> pos(r, 0), tap(r, 0);
  for (size_t d = r, rem = static_cast<size_t>(p0); d-- > 0;) {
    pos[d] = static_cast<int64_t>(rem % static_cast<size_t>(g.out[d]));
    rem /= static_cast<size_t>(g.out[d]);
  }
  for (int64_t q = 0; q < count; ++q) {
    std::fill(tap.begin(), tap.end(), 0);
    for (int64_t t = 0; t < p.taps; ++t) {
      int64_t off = 0;
      for (size_t d = 0; d < r; ++d) {
        const int64_t c = pos[d] * g.strides[d] - g.pad_begin[d] + tap[d] * g.dilations[d];
        if (c < 0 || c >= g.in[d]) {
          off = -1;
          break;
        }
        off += c * in_strides[d];
      }
      tab[static_cast<size_t>(q * p.taps + t)] = off;
      for (size_t d = r; d-- > 0;) {
        if (++tap[d] < g.kernel[d]) break;
        tap[d] = 0;
      }
    }
    for (size_t d = r; d-- > 0;) {
      if (++pos[d] < g.out[d]) break;
      pos[d] = 0;
    }
  }
}

Result<ConvPlan> make_conv_plan(const ops::NodeContext& node, const Shape& xs, const Shape& ws) {
  ConvPlan p;
  FRAME_ASSIGN_OR_RETURN(p.g, ops::nn::resolve_window(node, std::span(xs.data() + 2, xs.size() - 2),
                                                      std::span(ws.data() + 2, ws.size() - 2),
                                                      ops::nn::WindowKind::kConv));
  p.group = node.attr_or<int64_t>("group", 1);
  p.nb = xs[0];
  p.c_in = xs[1];
  p.m_out = ws[0];
  p.cg = p.c_in / p.group;
  p.mg = p.m_out / p.group;
  p.plane = numel_of(p.g.in);
  p.npos = numel_of(p.g.out);
  for (int64_t kd : p.g.kernel) p.taps *= kd;
  p.tile = conv_tile_positions(p.taps, static_cast<int64_t>(sizeof(int64_t)), p.npos);
  fill_conv_tab(p, 0, std::min(p.tile, p.npos), p.tab);
  return p;
}

// prepare of conv_integer (`w` at input 1) and qlinear_conv (`w` at input 3).
template <size_t kW>
Result<std::shared_ptr<void>> prepare_conv_plan(const ops::NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(ConvPlan p,
                         make_conv_plan(ctx, ctx.input_types[0].shape, ctx.input_types[kW].shape));
  return std::shared_ptr<void>(std::make_shared<ConvPlan>(std::move(p)));
}

// int32 convolution of (x - x_zero_point) and (w - w_zero_point[m]) with ONNX Conv geometry;
// padded positions contribute 0. Calls emit(n, m, p0, count, acc) per (batch, output channel)
// and tile of positions [p0, p0 + count). Uses the prepared plan (ctx.state), or builds one
// when the caller ran no prepare step (constant folding).
template <typename Emit>
Status int_conv(KernelContext& ctx, const Tensor& x, const Tensor& w, int32_t xzp,
                const std::vector<int32_t>& wzp, Emit&& emit) {
  ConvPlan local;
  const ConvPlan* plan = static_cast<const ConvPlan*>(ctx.state);
  if (plan == nullptr) {
    FRAME_ASSIGN_OR_RETURN(local, make_conv_plan(*ctx.node, x.shape(), w.shape()));
    plan = &local;
  }
  const int64_t nb = plan->nb, c_in = plan->c_in, m_out = plan->m_out, cg = plan->cg, mg = plan->mg,
                plane = plan->plane, npos = plan->npos, taps = plan->taps, tile = plan->tile;
  const bool per_channel = wzp.size() > 1;
  return dispatch_dtype<kQ8>(x.dtype(), [&]<typename X>() {
    return dispatch_dtype<kQ8>(w.dtype(), [&]<typename W>() {
      std::vector<int32_t> xi(static_cast<size_t>(x.numel())), wi(static_cast<size_t>(w.numel()));
      const X* xr = x.data<X>();
      for (size_t i = 0; i < xi.size(); ++i) xi[i] = static_cast<int32_t>(xr[i]) - xzp;
      const W* wr = w.data<W>();
      const int64_t per_m = cg * taps;
      for (size_t i = 0; i < wi.size(); ++i) {
        wi[i] = static_cast<int32_t>(wr[i]) - wzp[per_channel ? i / static_cast<size_t>(per_m) : 0];
      }
      std::vector<int64_t> tile_tab;
      for (int64_t p0 = 0; p0 < npos; p0 += tile) {
        const int64_t np = std::min(tile, npos - p0);
        if (p0 > 0) fill_conv_tab(*plan, p0, np, tile_tab);
        const std::vector<int64_t>& tab = p0 == 0 ? plan->tab : tile_tab;
        ops::parallel_ranges(
            nb * m_out, np * per_m > 4096 ? ctx.num_threads : 1, [&](int64_t nm0, int64_t nm1) {
              std::vector<int32_t> acc(static_cast<size_t>(np));
              for (int64_t nm = nm0; nm < nm1; ++nm) {
                const int64_t bi = nm / m_out, mi = nm % m_out, gi = mi / mg;
                std::fill(acc.begin(), acc.end(), 0);
                for (int64_t c = 0; c < cg; ++c) {
                  const int32_t* xc = xi.data() + (bi * c_in + gi * cg + c) * plane;
                  const int32_t* wc = wi.data() + (mi * cg + c) * taps;
                  for (int64_t p = 0; p < np; ++p) {
                    const int64_t* tp = tab.data() + p * taps;
                    int32_t s = 0;
                    for (int64_t t = 0; t < taps; ++t) {
                      if (tp[t] >= 0) s += xc[tp[t]] * wc[t];
                    }
                    acc[static_cast<size_t>(p)] += s;
                  }
                }
                emit(bi, mi, p0, np, acc.data());
              }
            });
      }
      return Status();
    });
  });
}

Status conv_integer_kernel(KernelContext& ctx) {
  const int32_t xzp = ints_of(ctx, 2, 1)[0];
  const std::vector<int32_t> wzp = ints_of(ctx, 3, 1);
  Tensor& y = ctx.output(0);
  const int64_t m_out = y.dim(1), npos = y.numel() / std::max<int64_t>(1, y.dim(0) * m_out);
  int32_t* out = y.data<int32_t>();
  return int_conv(ctx, ctx.input(0), ctx.input(1), xzp, wzp,
                  [&](int64_t bi, int64_t mi, int64_t p0, int64_t np, const int32_t* acc) {
                    std::copy(acc, acc + np, out + (bi * m_out + mi) * npos + p0);
                  });
}

FRAME_REGISTER_KERNEL(conv_integer, "cpu", conv_integer_kernel)
    .dtypes(kQ8)
    .prepare(prepare_conv_plan<1>);

Status qlinear_conv_kernel(KernelContext& ctx) {
  const float xs = floats_of(ctx, 1)[0];
  const int32_t xzp = ints_of(ctx, 2, 1)[0];
  const std::vector<float> ws = floats_of(ctx, 4);
  const std::vector<int32_t> wzp = ints_of(ctx, 5, 1);
  const float ys = floats_of(ctx, 6)[0];
  const int32_t yzp = ints_of(ctx, 7, 1)[0];
  Tensor& y = ctx.output(0);
  const int64_t m_out = y.dim(1), npos = y.numel() / std::max<int64_t>(1, y.dim(0) * m_out);
  std::vector<double> factor(static_cast<size_t>(m_out));
  for (int64_t m = 0; m < m_out; ++m) {
    factor[static_cast<size_t>(m)] =
        requant_factor(xs, ws[ws.size() > 1 ? static_cast<size_t>(m) : 0], ys);
  }
  const std::vector<int32_t> bias = ctx.node->has_input(8)
                                        ? ints_of(ctx, 8, static_cast<size_t>(m_out))
                                        : std::vector<int32_t>(static_cast<size_t>(m_out), 0);
  return dispatch_dtype<kQ8>(y.dtype(), [&]<typename Q>() {
    Q* out = y.data<Q>();
    return int_conv(ctx, ctx.input(0), ctx.input(3), xzp, wzp,
                    [&](int64_t bi, int64_t mi, int64_t p0, int64_t np, const int32_t* acc) {
                      const double f = factor[static_cast<size_t>(mi)];
                      const int32_t b = bias[static_cast<size_t>(mi)];
                      Q* o = out + (bi * m_out + mi) * npos + p0;
                      for (int64_t p = 0; p < np; ++p) {
                        o[p] = saturate_round<Q>(static_cast<double>(acc[p] + b) * f, yzp);
                      }
                    });
  });
}

FRAME_REGISTER_KERNEL(qlinear_conv, "cpu", qlinear_conv_kernel)
    .dtypes(kQ8)
    .prepare(prepare_conv_plan<3>);

}  // namespace
}  // namespace frame::cpu
