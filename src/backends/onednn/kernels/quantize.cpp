// Vector QuantizeLinear / DequantizeLinear of the onednn backend (Highway, per target like
// ew_vec.cpp; docs/backends/onednn.md#quantized-inference): the conversions a QDQ model keeps
// between its int8 primitives (activations entering the first conv, residual adds). fp32 x
// and scales, u8/i8 values, per tensor or per axis; other dtypes run on cpu. The arithmetic is
// the cpu kernel's, lane for lane: quantize divides by the scale (x / s, not x * (1 / s)),
// clamps to the integer range minus the zero point (NaN to the lowest value), rounds half to
// even (cvtps in the default rounding mode) and adds the zero point; dequantize computes
// float(x - zp) * s: bit for bit the cpu kernel (op database cases OpDb.*quantize_linear/*@onednn).

#include "backends/onednn/kernels/hwy_targets.h"
// clang-format off
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "backends/onednn/kernels/quantize.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
// clang-format on
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <type_traits>

#include "backends/onednn/kernels/parallel.h"
#include "frame/ops/kernel_registry.h"
#include "hwy/highway.h"

#ifndef FRAME_ONEDNN_QUANTIZE_LOOPS_
#define FRAME_ONEDNN_QUANTIZE_LOOPS_
namespace frame::backends::onednn {
namespace {
// One contiguous run of one channel: quantize y[i] = q(x[i] / scale) + zp, dequantize
// y[i] = (x[i] - zp) * scale, for i < n.
template <typename Q>
using QuantizeRun = void (*)(const float* x, Q* y, size_t n, float scale, int32_t zp);
template <typename Q>
using DequantizeRun = void (*)(const Q* x, float* y, size_t n, float scale, int32_t zp);

// The loops of one Highway target.
struct QuantLoops {
  QuantizeRun<uint8_t> q_u8 = nullptr;
  QuantizeRun<int8_t> q_i8 = nullptr;
  DequantizeRun<uint8_t> dq_u8 = nullptr;
  DequantizeRun<int8_t> dq_i8 = nullptr;
};

// The scalar step (vector tails): the same clamp, half-even rounding and zero point.
template <typename Q>
inline Q quantize_one(float v, float scale, int32_t zp, float lo, float hi) {
  float q = v / scale;
  q = q >= lo ? q : lo;  // also NaN -> lo
  q = q <= hi ? q : hi;
  return static_cast<Q>(static_cast<int32_t>(std::nearbyint(q)) + zp);
}
}  // namespace
}  // namespace frame::backends::onednn
#endif  // FRAME_ONEDNN_QUANTIZE_LOOPS_

HWY_BEFORE_NAMESPACE();
namespace frame::backends::onednn {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <typename Q>
void quantize_loop(const float* x, Q* y, size_t n, float scale, int32_t zp) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<Q, decltype(df)> dq;
  const float lo = static_cast<float>(std::numeric_limits<Q>::lowest()) - static_cast<float>(zp);
  const float hi = static_cast<float>(std::numeric_limits<Q>::max()) - static_cast<float>(zp);
  const auto vs = hn::Set(df, scale), vlo = hn::Set(df, lo), vhi = hn::Set(df, hi);
  const auto vz = hn::Set(di, zp);
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    auto q = hn::Div(hn::LoadU(df, x + i), vs);
    q = hn::IfThenElse(hn::Ge(q, vlo), q, vlo);
    q = hn::IfThenElse(hn::Le(q, vhi), q, vhi);
    hn::StoreU(hn::DemoteTo(dq, hn::Add(hn::NearestInt(q), vz)), dq, y + i);
  }
  for (; i < n; ++i) y[i] = quantize_one<Q>(x[i], scale, zp, lo, hi);
}

template <typename Q>
void dequantize_loop(const Q* x, float* y, size_t n, float scale, int32_t zp) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di;
  const hn::Rebind<Q, decltype(df)> dq;
  const auto vs = hn::Set(df, scale);
  const auto vz = hn::Set(di, zp);
  const size_t lanes = hn::Lanes(df);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto v = hn::Sub(hn::PromoteTo(di, hn::LoadU(dq, x + i)), vz);
    hn::StoreU(hn::Mul(hn::ConvertTo(df, v), vs), df, y + i);
  }
  for (; i < n; ++i) y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zp) * scale;
}

const QuantLoops* get_quant_loops() {
  static const QuantLoops loops{&quantize_loop<uint8_t>, &quantize_loop<int8_t>,
                                &dequantize_loop<uint8_t>, &dequantize_loop<int8_t>};
  return &loops;
}

}  // namespace HWY_NAMESPACE
}  // namespace frame::backends::onednn
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace frame::backends::onednn {
namespace {

using ops::KernelContext;
using ops::NodeContext;

constexpr DTypeSet kF32{DTypeCode::kFloat32};
constexpr DTypeSet kQ8{DTypeCode::kUInt8, DTypeCode::kInt8};

// Per node, from prepare: the loops of this CPU's best target and the quantization axis
// (-1 per tensor).
struct QuantState {
  const QuantLoops* loops = nullptr;
  int64_t axis = -1;
};

// Scale and zero point: fp32 scale, one element or 1-D along `axis`; zero point absent or the
// quantized dtype; no blocked quantization; quantize reads fp32 x (dequantize's u8/i8 x is
// checked by the registered dtypes).
Status accepts_quant(const NodeContext& ctx, bool quantize) {
  if (!kF32.contains(ctx.input_types[1].dtype)) {
    return Status(StatusCode::kUnimplemented, "scale other than f32");
  }
  if (ctx.attr_or<int64_t>("block_size", 0) != 0) {
    return Status(StatusCode::kUnimplemented, "blocked quantization");
  }
  if (quantize && !kF32.contains(ctx.input_types[0].dtype)) {
    return Status(StatusCode::kUnimplemented, "x other than f32");
  }
  if (ctx.has_input(2)) {
    const DTypeCode z = ctx.input_types[2].dtype;
    if (!kQ8.contains(z)) {
      return Status(StatusCode::kUnimplemented, "zero point other than u8/i8");
    }
  } else if (quantize) {
    const int64_t od = ctx.attr_or<int64_t>("output_dtype", 0);
    if (od != 0 && od != 2 && od != 3) {
      return Status(StatusCode::kUnimplemented, "output dtype other than u8/i8");
    }
  }
  return Status();
}

Status accepts_quantize(const NodeContext& ctx) { return accepts_quant(ctx, true); }
Status accepts_dequantize(const NodeContext& ctx) { return accepts_quant(ctx, false); }

Result<std::shared_ptr<void>> prepare_quant(const NodeContext& ctx) {
  auto s = std::make_shared<QuantState>();
  s->loops = FRAME_HWY_DISPATCH(get_quant_loops)();
  const Shape& scale = ctx.input_types[1].shape;
  if (!(scale.size() == 0 || (scale.size() == 1 && scale[0] == 1))) {
    const int64_t rank = static_cast<int64_t>(ctx.input_types[0].shape.size());
    s->axis = ctx.attr_or<int64_t>("axis", 1);
    if (s->axis < 0) s->axis += rank;
  }
  return std::shared_ptr<void>(std::move(s));
}

// Runs run(x + b, y + b, len, scale, zp) over x viewed as rows of one channel, split over
// threads by bytes moved (parallel.h); per tensor the whole tensor is one row.
template <typename Q, typename In, typename Out, typename Run>
void over_channels(KernelContext& ctx, const QuantState& st, const In* x, Out* y, Run run) {
  const Shape& xs = ctx.input(0).shape();
  const int64_t n = ctx.input(0).numel();
  int64_t channels = 1, inner = n;
  if (st.axis >= 0) {
    channels = xs[static_cast<size_t>(st.axis)];
    inner = 1;
    for (size_t d = static_cast<size_t>(st.axis) + 1; d < xs.size(); ++d) inner *= xs[d];
  }
  const float* sp = ctx.input(1).data<float>();
  const Q* zp = ctx.node->has_input(2) ? ctx.input(2).data<Q>() : nullptr;
  const int nt = threads_for_bytes(n * static_cast<int64_t>(sizeof(float)), ctx.num_threads);
  parallel_ranges(n, nt, [&](int64_t b, int64_t e) {
    while (b < e) {
      const int64_t row = inner > 0 ? b / inner : 0;
      const int64_t end = std::min(e, (row + 1) * inner);
      const int64_t c = row % channels;
      run(x + b, y + b, static_cast<size_t>(end - b), sp[c],
          zp != nullptr ? static_cast<int32_t>(zp[c]) : 0);
      b = end;
    }
  });
}

// The loops of quantized dtype Q.
template <typename Q>
QuantizeRun<Q> quantize_loop_of(const QuantLoops& l) {
  if constexpr (std::is_same_v<Q, int8_t>) {
    return l.q_i8;
  } else {
    return l.q_u8;
  }
}
template <typename Q>
DequantizeRun<Q> dequantize_loop_of(const QuantLoops& l) {
  if constexpr (std::is_same_v<Q, int8_t>) {
    return l.dq_i8;
  } else {
    return l.dq_u8;
  }
}

Status quantize_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const QuantState*>(ctx.state);
  const float* x = ctx.input(0).data<float>();
  Tensor& y = ctx.output(0);
  return dispatch_dtype<kQ8>(y.dtype(), [&]<typename Q>() {
    over_channels<Q>(ctx, st, x, y.data<Q>(), quantize_loop_of<Q>(*st.loops));
  });
}

Status dequantize_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const QuantState*>(ctx.state);
  const Tensor& x = ctx.input(0);
  float* y = ctx.output(0).data<float>();
  return dispatch_dtype<kQ8>(x.dtype(), [&]<typename Q>() {
    over_channels<Q>(ctx, st, x.data<Q>(), y, dequantize_loop_of<Q>(*st.loops));
  });
}

FRAME_REGISTER_KERNEL(quantize_linear, "onednn", quantize_kernel)
    .dtypes(kF32)
    .accepts(accepts_quantize)
    .prepare(prepare_quant);

FRAME_REGISTER_KERNEL(dequantize_linear, "onednn", dequantize_kernel)
    .dtypes(kQ8)
    .accepts(accepts_dequantize)
    .prepare(prepare_quant);

}  // namespace
}  // namespace frame::backends::onednn
#endif  // HWY_ONCE
