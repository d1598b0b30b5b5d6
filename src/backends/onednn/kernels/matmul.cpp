// onednn kernels of matmul (ONNX MatMul opset 13, numpy semantics: 1-D operands promoted,
// batch dims broadcast) and gemm (ONNX Gemm opset 13: transA/transB as strided operands, alpha
// as the output scale, beta * C as a broadcast binary-add post-op): one oneDNN matmul
// primitive built in prepare, with constant B reordered once into the layout it prefers.
// docs/backends/onednn.md#convolution-matmul-and-gemm.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/primitive_util.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;

class MatmulPrimitive final : public LinearPrimitive {
 public:
  dnnl::primitive prim;
  memory::desc a_md, b_user, b_md, c_md, y_md, res_md, scratch_md;
  std::shared_ptr<const PackedWeights> b_packed;  // constant B in b_md's layout, or null
  int c_post = -1;                                // post-op index of gemm's C add, or -1
  int residual_post = -1;                         // post-op index of the residual add, or -1

  Status run(KernelContext& ctx) const override {
    const NodeContext& node = *ctx.node;
    try {
      const memory a = wrap(a_md, ctx.input(0));
      const memory b = b_packed != nullptr ? b_packed->mem : wrap(b_user, ctx.input(1));
      const memory y = wrap(y_md, ctx.output(0));
      const memory c = c_post >= 0 ? wrap(c_md, ctx.input(2)) : memory();
      const memory res =
          residual_post >= 0 ? wrap(res_md, ctx.input(ops::fused::kResidualInput)) : memory();
      const memory scratch = scratchpad(scratch_md);
      const ExecArg args[] = {
          {DNNL_ARG_SRC, &a},
          {DNNL_ARG_WEIGHTS, &b},
          {DNNL_ARG_DST, &y},
          {DNNL_ARG_SCRATCHPAD, &scratch},
          {DNNL_ARG_ATTR_MULTIPLE_POST_OP(c_post) | DNNL_ARG_SRC_1, c_post >= 0 ? &c : nullptr},
          {DNNL_ARG_ATTR_MULTIPLE_POST_OP(residual_post) | DNNL_ARG_SRC_1,
           residual_post >= 0 ? &res : nullptr},
      };
      return execute(node, prim, args);
    } catch (const dnnl::error& e) {
      return dnnl_failure(node, "matmul", e);
    }
  }
};

}  // namespace

Result<std::shared_ptr<LinearPrimitive>> make_matmul(const NodeContext& ctx, bool gemm,
                                                     std::span<const ops::fused::PostOp> post,
                                                     bool reorder_weights) {
  const ir::TensorType& at = ctx.input_types[0];
  // The kernels register f32 only (KernelDef::dtypes), so supports() has checked it.
  const memory::data_type dt = memory::data_type::f32;
  Shape as = at.shape, bs = ctx.input_types[1].shape;
  for (const Shape* s : {&as, &bs}) {
    for (int64_t d : *s) {
      if (d == 0) return unimplemented("an empty operand {}", shape_to_string(*s));
    }
  }
  auto p = std::make_shared<MatmulPrimitive>();
  dnnl::primitive_attr attr = default_attr();
  dnnl::post_ops pops;
  memory::desc b_user, a_md, y_md;
  if (!gemm) {
    const MatmulDims md = matmul_dims(as, bs);
    a_md = plain_desc(md.a, dt);
    b_user = plain_desc(md.b, dt);
    y_md = plain_desc(md.y, dt);
  } else {
    const bool ta = ctx.attr_or<int64_t>("transA", 0) != 0;
    const bool tb = ctx.attr_or<int64_t>("transB", 0) != 0;
    const int64_t m = ta ? as[1] : as[0], k = ta ? as[0] : as[1], n = tb ? bs[0] : bs[1];
    // op(A) and op(B) read through strides: no transposed copy.
    a_md = memory::desc({m, k}, dt, ta ? memory::dims{1, m} : memory::dims{k, 1});
    b_user = memory::desc({k, n}, dt, tb ? memory::dims{1, k} : memory::dims{n, 1});
    y_md = plain_desc(std::vector<int64_t>{m, n}, dt);
    const double alpha = ctx.attr_or<double>("alpha", 1.0);
    const double beta = ctx.attr_or<double>("beta", 1.0);
    const bool use_c = ctx.has_input(2) && beta != 0.0;
    // The 1/beta factor below would overflow f32 (inf, then inf * beta) for a tiny beta.
    if (use_c && std::abs(beta) < 0x1p-20) {
      return unimplemented("gemm with |beta| {} below 2^-20 (alpha / beta overflows)", beta);
    }
    // y = alpha*AB + beta*C as beta * ((alpha/beta)*AB + C) when beta != 1: output scales act
    // on the accumulator before the post-ops.
    const double scale = use_c ? alpha / beta : alpha;
    if (scale != 1.0) attr.set_output_scales(0, {static_cast<float>(scale)});
    if (use_c) {
      p->c_md = plain_desc(padded(ctx.input_types[2].shape, 2), dt);
      p->c_post = pops.len();
      pops.append_binary(dnnl::algorithm::binary_add, p->c_md);
      if (beta != 1.0) {
        pops.append_eltwise(1.f, dnnl::algorithm::eltwise_linear, static_cast<float>(beta), 0.f);
      }
    }
  }
  p->a_md = a_md;
  p->b_user = b_user;
  p->y_md = y_md;
  p->res_md = y_md;
  const Tensor* bc = ctx.constant_input(1);
  const memory::desc b_any =
      bc != nullptr ? memory::desc(b_user.dims(), dt, memory::format_tag::any) : b_user;
  try {
    // Inside the try: oneDNN throws on post-ops it rejects (e.g. a clip with min > max).
    p->residual_post = append_post_ops(pops, post, &y_md);
    if (pops.len() > 0) attr.set_post_ops(pops);
    dnnl::matmul::desc d(a_md, b_any, y_md);
    dnnl::matmul::primitive_desc pd(d, attr, engine());
    p->scratch_md = pd.scratchpad_desc();
    p->b_md = pd.weights_desc();
    if (!reorder_weights) return std::shared_ptr<LinearPrimitive>(p);
    p->prim = dnnl::matmul(pd);
  } catch (const dnnl::error& e) {
    return dnnl_declines("matmul", e);
  }
  if (bc != nullptr) {
    // Constant B: packed once per process and layout, shared by every specialization.
    FRAME_ASSIGN_OR_RETURN(p->b_packed, pack_weights(ctx, b_user, p->b_md, *bc));
  }
  return std::shared_ptr<LinearPrimitive>(p);
}

namespace {

template <bool kGemm>
Status accepts_matmul(const NodeContext& ctx) {
  return make_matmul(ctx, kGemm, {}, false).status();
}

template <bool kGemm>
Result<std::shared_ptr<void>> prepare_matmul(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<LinearPrimitive> p, make_matmul(ctx, kGemm, {}, true));
  return std::shared_ptr<void>(std::move(p));
}

FRAME_REGISTER_KERNEL(matmul, "onednn", run_linear)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .accepts(accepts_matmul<false>)
    .prepare(prepare_matmul<false>);

FRAME_REGISTER_KERNEL(gemm, "onednn", run_linear)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .accepts(accepts_matmul<true>)
    .prepare(prepare_matmul<true>);

}  // namespace
}  // namespace frame::backends::onednn
