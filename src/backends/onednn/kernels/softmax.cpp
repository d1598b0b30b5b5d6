// onednn kernels for Softmax and LogSoftmax (ONNX opset 13, and the opset < 13 form with
// legacy_flatten=1): one oneDNN softmax_v2 primitive per node, built at prepare time, on the
// input viewed as [outer, n, inner] (or [outer, n] when the axis is the last dim, the layout
// oneDNN's vectorized implementation takes), normalising over n.

#include <memory>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/nn_common.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;

constexpr DTypeSet kSoftmaxDTypes{DTypeCode::kFloat32, DTypeCode::kBFloat16};

struct SoftmaxState {
  bool empty = false;
  memory::desc data, scratch;
  dnnl::softmax_v2_forward prim;
};

Result<dnnl::softmax_v2_forward::primitive_desc> plan_softmax(const NodeContext& node, bool log,
                                                              bool* empty) {
  const ir::TensorType& x = node.input_types[0];
  FRAME_ASSIGN_OR_RETURN(const ops::SoftmaxView view, ops::softmax_view(node, x.shape));
  const int64_t outer = view.outer, n = view.n, inner = view.inner;
  const auto dt = to_dnnl(x.dtype);
  if (!dt) return unimplemented("no oneDNN data type for {}", dtype_name(x.dtype));
  *empty = outer * n * inner == 0;
  if (*empty) return dnnl::softmax_v2_forward::primitive_desc();
  memory::dims dims{outer, n};
  if (inner > 1) dims.push_back(inner);
  try {
    const memory::desc md = plain_desc(dims, *dt);
    dnnl::softmax_v2_forward::desc d(
        dnnl::prop_kind::forward_inference,
        log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate, md, md, 1);
    return dnnl::softmax_v2_forward::primitive_desc(d, default_attr(), engine());
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "softmax", e);
  }
}

template <bool kLog>
Status softmax_accepts(const NodeContext& node) {
  bool empty = false;
  return nn::decline(plan_softmax(node, kLog, &empty).status());
}

template <bool kLog>
Result<std::shared_ptr<void>> softmax_prepare(const NodeContext& node) {
  auto st = std::make_shared<SoftmaxState>();
  FRAME_ASSIGN_OR_RETURN(dnnl::softmax_v2_forward::primitive_desc pd,
                         plan_softmax(node, kLog, &st->empty));
  if (st->empty) return std::shared_ptr<void>(st);
  try {
    st->data = pd.src_desc();
    st->scratch = pd.scratchpad_desc();
    st->prim = dnnl::softmax_v2_forward(pd);
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "softmax primitive", e);
  }
  return std::shared_ptr<void>(st);
}

Status softmax_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const SoftmaxState*>(ctx.state);
  if (st.empty) return Status();
  try {
    const memory src = wrap(st.data, ctx.input(0));
    const memory dst = wrap(st.data, ctx.output(0));
    return nn::execute(*ctx.node, st.prim, st.scratch,
                       {{DNNL_ARG_SRC, &src}, {DNNL_ARG_DST, &dst}});
  } catch (const dnnl::error& e) {
    return dnnl_failure(*ctx.node, "softmax memory", e);
  }
}

FRAME_REGISTER_KERNEL(softmax, "onednn", softmax_kernel)
    .dtypes(kSoftmaxDTypes)
    .accepts(softmax_accepts<false>)
    .prepare(softmax_prepare<false>);
FRAME_REGISTER_KERNEL(log_softmax, "onednn", softmax_kernel)
    .dtypes(kSoftmaxDTypes)
    .accepts(softmax_accepts<true>)
    .prepare(softmax_prepare<true>);

}  // namespace
}  // namespace frame::backends::onednn
