// onednn kernels of matmul_integer (ONNX MatMulInteger 10) and qlinear_matmul (ONNX
// QLinearMatMul 10): oneDNN's int8 matmul primitive (u8/s8 x s8, int32 accumulation; VNNI where
// the CPU has it), built once in prepare with constant B reordered into the layout it prefers.
// Zero points are runtime s32 values; qlinear_matmul's requantization is the primitive's
// output scale a_scale * b_scale / y_scale (per tensor, or per column of B) plus the dst zero
// point, rounded to nearest even and saturated by oneDNN. Per-row zero points or scales of A,
// per-column zero points of B and u8 B fall back to the cpu kernels (M10).
// docs/backends/onednn.md#quantized-matmul-and-convolution.

#include <algorithm>
#include <memory>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/primitive_util.h"
#include "frame/ops/kernel_registry.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;

// Input positions of the two ops: {A, a_zero_point, B, b_zero_point, a_scale, b_scale,
// y_scale, y_zero_point}; -1 where the op has none.
struct QIndex {
  int a, azp, b, bzp, as, bs, ys, yzp;
};
constexpr QIndex kMatmulInteger{0, 2, 1, 3, -1, -1, -1, -1};
constexpr QIndex kQLinear{0, 2, 3, 5, 1, 4, 6, 7};

bool one_element(const Shape& s) { return numel_of(s) == 1 && s.size() <= 1; }

class QMatmulPrimitive final : public LinearPrimitive {
 public:
  QIndex ix{};
  dnnl::primitive prim;
  memory::desc a_md, b_user, b_md, y_md, scratch_md, zp_md, scale_md;
  std::shared_ptr<const PackedWeights> b_packed;  // constant B in b_md's layout, or null
  int64_t n_scales = 0;                           // 0 (matmul_integer), 1 or N
  std::vector<float> scales;  // the output scales when every scale input is a constant
  bool scales_constant = false;

  // a_scale * b_scale[j] / y_scale in float32, as the cpu kernel's factor.
  static void factors(const Tensor& as, const Tensor& bs, const Tensor& ys, int64_t n, float* out) {
    const float a = as.data<float>()[0], y = ys.data<float>()[0];
    const float* b = bs.data<float>();
    for (int64_t j = 0; j < n; ++j) out[j] = a * b[bs.numel() > 1 ? j : 0] / y;
  }

  int32_t zero_point(const KernelContext& ctx, int i) const {
    if (i < 0 || !ctx.node->has_input(static_cast<size_t>(i))) return 0;
    return static_cast<int32_t>(ctx.input(static_cast<size_t>(i)).element_as_int64(0));
  }

  Status run(KernelContext& ctx) const override {
    const NodeContext& node = *ctx.node;
    try {
      int32_t zps[3] = {zero_point(ctx, ix.azp), zero_point(ctx, ix.bzp), zero_point(ctx, ix.yzp)};
      const memory a = wrap(a_md, ctx.input(static_cast<size_t>(ix.a)));
      const memory b =
          b_packed != nullptr ? b_packed->mem : wrap(b_user, ctx.input(static_cast<size_t>(ix.b)));
      const memory y = wrap(y_md, ctx.output(0));
      const memory scratch = scratchpad(scratch_md);
      const memory zp_a(zp_md, engine(), &zps[0]), zp_b(zp_md, engine(), &zps[1]);
      const memory zp_y(zp_md, engine(), &zps[2]);
      // Non-constant scales: computed per run into the thread's reusable buffer.
      thread_local std::vector<float> run_scales;
      const float* sp = scales.data();
      if (n_scales > 0 && !scales_constant) {
        run_scales.resize(static_cast<size_t>(n_scales));
        factors(ctx.input(static_cast<size_t>(ix.as)), ctx.input(static_cast<size_t>(ix.bs)),
                ctx.input(static_cast<size_t>(ix.ys)), n_scales, run_scales.data());
        sp = run_scales.data();
      }
      const memory sc =
          n_scales > 0 ? memory(scale_md, engine(), const_cast<float*>(sp)) : memory();
      const ExecArg args[] = {
          {DNNL_ARG_SRC, &a},
          {DNNL_ARG_WEIGHTS, &b},
          {DNNL_ARG_DST, &y},
          {DNNL_ARG_SCRATCHPAD, &scratch},
          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, &zp_a},
          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS, &zp_b},
          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, n_scales > 0 ? &zp_y : nullptr},
          {DNNL_ARG_ATTR_OUTPUT_SCALES, n_scales > 0 ? &sc : nullptr},
      };
      return execute(node, prim, args);
    } catch (const dnnl::error& e) {
      return dnnl_failure(node, "int8 matmul", e);
    }
  }
};

Result<std::shared_ptr<QMatmulPrimitive>> make_qmatmul(const NodeContext& ctx, const QIndex& ix,
                                                       bool build) {
  const auto in = [&](int i) -> const ir::TensorType& {
    return ctx.input_types[static_cast<size_t>(i)];
  };
  FRAME_RETURN_IF_ERROR(int8_sums_exact());
  // An accepts()-time check of B's dtype (the registry checks input 0's only).
  if (!DTypeSet{DTypeCode::kInt8}.contains(in(ix.b).dtype)) {
    return unimplemented("B of dtype {} (oneDNN int8 matmul weights are s8)",
                         dtype_name(in(ix.b).dtype));
  }
  for (int i : {ix.azp, ix.bzp, ix.as, ix.ys, ix.yzp}) {
    if (i >= 0 && ctx.has_input(static_cast<size_t>(i)) && !one_element(in(i).shape)) {
      return unimplemented("input {} {} is per row or per column (one element only)", i,
                           shape_to_string(in(i).shape));
    }
  }
  const Shape &as = in(ix.a).shape, &bs = in(ix.b).shape;
  for (const Shape* s : {&as, &bs}) {
    for (int64_t d : *s) {
      if (d == 0) return unimplemented("an empty operand {}", shape_to_string(*s));
    }
  }
  auto p = std::make_shared<QMatmulPrimitive>();
  p->ix = ix;
  const MatmulDims md = matmul_dims(as, bs);
  const memory::dims &ad = md.a, &bd = md.b, &yd = md.y;
  const size_t rank = yd.size();
  const int64_t n = yd[rank - 1];
  const DTypeCode out = ix.yzp >= 0 ? in(ix.yzp).dtype : DTypeCode::kInt32;
  p->a_md = plain_desc(ad, *to_dnnl(in(ix.a).dtype));
  p->b_user = plain_desc(bd, memory::data_type::s8);
  p->y_md = plain_desc(yd, *to_dnnl(out));
  p->zp_md = memory::desc({1}, memory::data_type::s32, memory::format_tag::x);
  dnnl::primitive_attr attr = default_attr();
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {DNNL_RUNTIME_S32_VAL});
  if (ix.ys >= 0) {
    p->n_scales = one_element(in(ix.bs).shape) ? 1 : n;
    p->scale_md = memory::desc({p->n_scales}, memory::data_type::f32, memory::format_tag::x);
    // Per column of B: the last dst dim.
    attr.set_output_scales(p->n_scales > 1 ? 1 << (rank - 1) : 0, {DNNL_RUNTIME_F32_VAL});
    attr.set_zero_points(DNNL_ARG_DST, 0, {DNNL_RUNTIME_S32_VAL});
    const Tensor* ca = ctx.constant_input(static_cast<size_t>(ix.as));
    const Tensor* cb = ctx.constant_input(static_cast<size_t>(ix.bs));
    const Tensor* cy = ctx.constant_input(static_cast<size_t>(ix.ys));
    if (build && ca != nullptr && cb != nullptr && cy != nullptr) {
      p->scales.resize(static_cast<size_t>(p->n_scales));
      QMatmulPrimitive::factors(*ca, *cb, *cy, p->n_scales, p->scales.data());
      p->scales_constant = true;
    }
  }
  const Tensor* bc = ctx.constant_input(static_cast<size_t>(ix.b));
  const memory::desc b_any =
      bc != nullptr ? memory::desc(bd, memory::data_type::s8, memory::format_tag::any) : p->b_user;
  try {
    dnnl::matmul::desc d(p->a_md, b_any, p->y_md);
    dnnl::matmul::primitive_desc pd(d, attr, engine());
    p->scratch_md = pd.scratchpad_desc();
    p->b_md = pd.weights_desc();
    if (!build) return p;
    p->prim = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    return dnnl_declines("int8 matmul", e);
  }
  if (bc != nullptr) {
    // Constant B: packed once per process and layout, shared by every specialization.
    FRAME_ASSIGN_OR_RETURN(p->b_packed, pack_weights(ctx, p->b_user, p->b_md, *bc));
  }
  return p;
}

FRAME_REGISTER_KERNEL(matmul_integer, "onednn", run_linear)
    .dtypes(kQ8DTypes)
    .accepts(accepts_linear<make_qmatmul, kMatmulInteger>)
    .prepare(prepare_linear<make_qmatmul, kMatmulInteger>);

FRAME_REGISTER_KERNEL(qlinear_matmul, "onednn", run_linear)
    .dtypes(kQ8DTypes)
    .accepts(accepts_linear<make_qmatmul, kQLinear>)
    .prepare(prepare_linear<make_qmatmul, kQLinear>);

}  // namespace
}  // namespace frame::backends::onednn
