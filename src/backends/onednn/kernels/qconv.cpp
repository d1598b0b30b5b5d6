// onednn kernels of conv_integer (ONNX ConvInteger 10) and qlinear_conv (ONNX QLinearConv
// 10): oneDNN's int8 convolution (u8/s8 x with s8 w, int32 accumulation; VNNI where the CPU
// has it), 1-d to 3-d, grouped, dilated, strided, padded. Built once in prepare: the
// primitive, reorders between the plain NCHW tensors and the activation layout oneDNN picks
// (format_tag::any), constant weights reordered once. The x zero point is a run-time s32 value
// (padding contributes 0, as in ONNX); qlinear_conv's requantization is the output scale
// x_scale * w_scale[m] / y_scale (per tensor or per output channel; oneDNN 2.6 convolutions
// take scales at creation only, so the three scales must be constants) and the dst zero
// point, with the int32 bias added to the accumulator first. oneDNN 2.6 convolutions take no weight
// zero point, so a w_zero_point that is not a constant 0 falls back to the cpu kernels (M10),
// as does a u8 w. docs/backends/onednn.md#quantized-matmul-and-convolution.

#include <cstring>
#include <memory>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/primitive_util.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;

// Input positions: {x, w, x_zero_point, w_zero_point, x_scale, w_scale, y_scale,
// y_zero_point, B}; -1 where the op has none.
struct QConvIndex {
  int x, w, xzp, wzp, xs, ws, ys, yzp, b;
};
constexpr QConvIndex kConvInteger{0, 1, 2, 3, -1, -1, -1, -1, -1};
constexpr QConvIndex kQLinearConv{0, 3, 2, 5, 1, 4, 6, 7, 8};

bool one_element(const Shape& s) { return numel_of(s) == 1 && s.size() <= 1; }

class QConvPrimitive final : public LinearPrimitive {
 public:
  QConvIndex ix{};
  dnnl::primitive prim;
  memory::desc src_user, src_md, dst_user, dst_md, w_user, w_md, bias_md, scratch_md, zp_md;
  Reorder src_reorder, dst_reorder, w_reorder;
  std::shared_ptr<const PackedWeights> w_packed;  // constant weights in w_md's layout, or null
  int64_t n_scales = 0;                           // 0 (conv_integer), 1 or M
  std::vector<float> scales;                      // the output scales, fixed at creation

  int reorders_per_run() const override {
    return int{src_reorder.active} + int{dst_reorder.active} +
           int{w_packed == nullptr && w_reorder.active};
  }

  // x_scale * w_scale[m] / y_scale in float32, as the cpu kernel's factor.
  static void factors(const Tensor& xs, const Tensor& ws, const Tensor& ys, int64_t n, float* out) {
    const float a = xs.data<float>()[0], y = ys.data<float>()[0];
    const float* w = ws.data<float>();
    for (int64_t j = 0; j < n; ++j) out[j] = a * w[ws.numel() > 1 ? j : 0] / y;
  }

  int32_t zero_point(const KernelContext& ctx, int i) const {
    if (i < 0 || !ctx.node->has_input(static_cast<size_t>(i))) return 0;
    return static_cast<int32_t>(ctx.input(static_cast<size_t>(i)).element_as_int64(0));
  }

  Status run(KernelContext& ctx) const override {
    const NodeContext& node = *ctx.node;
    try {
      int32_t zps[2] = {zero_point(ctx, ix.xzp), zero_point(ctx, ix.yzp)};
      FRAME_ASSIGN_OR_RETURN(const memory src,
                             in_layout(node, src_reorder, BufferSlot::kSrc, src_md,
                                       wrap(src_user, ctx.input(static_cast<size_t>(ix.x)))));
      memory w;
      if (w_packed != nullptr) {
        w = w_packed->mem;
      } else {
        FRAME_ASSIGN_OR_RETURN(w, in_layout(node, w_reorder, BufferSlot::kWeights, w_md,
                                            wrap(w_user, ctx.input(static_cast<size_t>(ix.w)))));
      }
      const memory y_user = wrap(dst_user, ctx.output(0));
      const memory dst = dst_reorder.active ? thread_buffer(BufferSlot::kDst, dst_md) : y_user;
      const bool has_bias = ix.b >= 0 && ctx.node->has_input(static_cast<size_t>(ix.b));
      const memory bias = has_bias ? wrap(bias_md, ctx.input(static_cast<size_t>(ix.b))) : memory();
      const memory zp_x(zp_md, engine(), &zps[0]), zp_y(zp_md, engine(), &zps[1]);
      const memory scratch = scratchpad(scratch_md);
      const ExecArg args[] = {
          {DNNL_ARG_SRC, &src},
          {DNNL_ARG_WEIGHTS, &w},
          {DNNL_ARG_BIAS, has_bias ? &bias : nullptr},
          {DNNL_ARG_DST, &dst},
          {DNNL_ARG_SCRATCHPAD, &scratch},
          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, &zp_x},
          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, n_scales > 0 ? &zp_y : nullptr},
      };
      FRAME_RETURN_IF_ERROR(execute(node, prim, args));
      if (dst_reorder.active) FRAME_RETURN_IF_ERROR(run_reorder(node, dst_reorder, dst, y_user));
    } catch (const dnnl::error& e) {
      return dnnl_failure(node, "int8 convolution", e);
    }
    return Status();
  }
};

Result<std::shared_ptr<QConvPrimitive>> make_qconv(const NodeContext& ctx, const QConvIndex& ix,
                                                   bool build) {
  const auto in = [&](int i) -> const ir::TensorType& {
    return ctx.input_types[static_cast<size_t>(i)];
  };
  const Shape& x = in(ix.x).shape;
  const Shape& w = in(ix.w).shape;
  FRAME_RETURN_IF_ERROR(int8_sums_exact());
  if (!DTypeSet{DTypeCode::kInt8}.contains(in(ix.w).dtype)) {
    return unimplemented("w of dtype {} (oneDNN int8 convolution weights are s8)",
                         dtype_name(in(ix.w).dtype));
  }
  if (x.size() < 3 || x.size() > 5) {
    return unimplemented("{}-d spatial input (oneDNN convolutions are 1-d to 3-d)",
                         static_cast<int64_t>(x.size()) - 2);
  }
  for (int64_t d : x) {
    if (d == 0) return unimplemented("an empty input {}", shape_to_string(x));
  }
  if (ctx.has_input(static_cast<size_t>(ix.wzp))) {
    const Tensor* z = ctx.constant_input(static_cast<size_t>(ix.wzp));
    bool zero = z != nullptr;
    for (int64_t i = 0; zero && i < z->numel(); ++i) zero = z->element_as_int64(i) == 0;
    if (!zero) return unimplemented("a w_zero_point that is not a constant 0");
  }
  for (int i : {ix.xzp, ix.xs, ix.ys, ix.yzp}) {
    if (i >= 0 && ctx.has_input(static_cast<size_t>(i)) && !one_element(in(i).shape)) {
      return unimplemented("input {} {} has more than one element", i,
                           shape_to_string(in(i).shape));
    }
  }
  const size_t sr = x.size() - 2;
  FRAME_ASSIGN_OR_RETURN(
      ops::nn::WindowGeometry g,
      ops::nn::resolve_window(ctx, std::span(x.data() + 2, sr), std::span(w.data() + 2, sr),
                              ops::nn::WindowKind::kConv));
  const int64_t group = ctx.attr_or<int64_t>("group", 1);
  const int64_t n = x[0], c = x[1], m = w[0];
  memory::dims y_dims{n, m}, strides(sr), dilates(sr), pad_l(sr), pad_r(sr);
  for (size_t d = 0; d < sr; ++d) {
    y_dims.push_back(g.out[d]);
    strides[d] = g.strides[d];
    dilates[d] = g.dilations[d] - 1;  // oneDNN counts the gap, ONNX the step
    pad_l[d] = g.pad_begin[d];
    pad_r[d] = g.pad_end[d];
  }
  memory::dims w_dims = group > 1 ? memory::dims{group, m / group, c / group} : memory::dims{m, c};
  for (size_t d = 0; d < sr; ++d) w_dims.push_back(g.kernel[d]);
  const DTypeCode out = ix.yzp >= 0 ? in(ix.yzp).dtype : DTypeCode::kInt32;
  auto p = std::make_shared<QConvPrimitive>();
  p->ix = ix;
  const memory::data_type xdt = *to_dnnl(in(ix.x).dtype), ydt = *to_dnnl(out);
  p->src_user = plain_desc(x, xdt);
  p->dst_user = plain_desc(y_dims, ydt);
  p->w_user = plain_desc(w_dims, memory::data_type::s8);
  const bool has_bias = ix.b >= 0 && ctx.has_input(static_cast<size_t>(ix.b));
  p->bias_md =
      has_bias ? plain_desc(std::vector<int64_t>{m}, memory::data_type::s32) : memory::desc();
  p->zp_md = memory::desc({1}, memory::data_type::s32, memory::format_tag::x);
  dnnl::primitive_attr attr = default_attr();
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  if (ix.ys >= 0) {
    p->n_scales = one_element(in(ix.ws).shape) ? 1 : m;
    // oneDNN 2.6 convolutions take output scales only at creation: the scales must be
    // constants (the usual case in quantized models).
    const Tensor* cx = ctx.constant_input(static_cast<size_t>(ix.xs));
    const Tensor* cw = ctx.constant_input(static_cast<size_t>(ix.ws));
    const Tensor* cy = ctx.constant_input(static_cast<size_t>(ix.ys));
    if (cx == nullptr || cw == nullptr || cy == nullptr) {
      return unimplemented("x_scale, w_scale and y_scale that are not all constants");
    }
    p->scales.resize(static_cast<size_t>(p->n_scales));
    QConvPrimitive::factors(*cx, *cw, *cy, p->n_scales, p->scales.data());
    // Per output channel: dst dim 1.
    attr.set_output_scales(p->n_scales > 1 ? 1 << 1 : 0, p->scales);
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
  }
  const memory::desc src_any(memory::dims(x.begin(), x.end()), xdt, memory::format_tag::any);
  const memory::desc dst_any(y_dims, ydt, memory::format_tag::any);
  const memory::desc w_any(w_dims, memory::data_type::s8, memory::format_tag::any);
  try {
    dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_direct, src_any, w_any,
                                      p->bias_md, dst_any, strides, dilates, pad_l, pad_r);
    dnnl::convolution_forward::primitive_desc pd(d, attr, engine());
    p->src_md = pd.src_desc();
    p->dst_md = pd.dst_desc();
    p->w_md = pd.weights_desc();
    p->scratch_md = pd.scratchpad_desc();
    if (!build) return p;
    p->prim = dnnl::convolution_forward(pd);
    p->src_reorder = make_reorder(p->src_user, p->src_md);
    p->dst_reorder = make_reorder(p->dst_md, p->dst_user);
    p->w_reorder = make_reorder(p->w_user, p->w_md);
  } catch (const dnnl::error& e) {
    return dnnl_declines("int8 convolution", e);
  }
  if (const Tensor* wc = ctx.constant_input(static_cast<size_t>(ix.w)); wc != nullptr) {
    // Constant weights: packed once per process and layout, shared by every specialization.
    FRAME_ASSIGN_OR_RETURN(p->w_packed, pack_weights(ctx, p->w_user, p->w_md, *wc));
  }
  return p;
}

FRAME_REGISTER_KERNEL(conv_integer, "onednn", run_linear)
    .dtypes(kQ8DTypes)
    .reorders(linear_reorders)
    .accepts(accepts_linear<make_qconv, kConvInteger>)
    .prepare(prepare_linear<make_qconv, kConvInteger>);

FRAME_REGISTER_KERNEL(qlinear_conv, "onednn", run_linear)
    .dtypes(kQ8DTypes)
    .reorders(linear_reorders)
    .accepts(accepts_linear<make_qconv, kQLinearConv>)
    .prepare(prepare_linear<make_qconv, kQLinearConv>);

}  // namespace
}  // namespace frame::backends::onednn
