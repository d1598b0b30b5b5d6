// onednn kernels for Softmax and LogSoftmax (ONNX opset 13, and the opset < 13 form with
// legacy_flatten=1): one oneDNN softmax_v2 primitive per node, built at prepare time, on the
// input viewed as [outer, n, inner] (or [outer, n] when the axis is the last dim, the layout
// oneDNN's vectorized implementation takes), normalising over n. f32 LogSoftmax is computed
// here instead (log_softmax_f32): oneDNN 2.6's softmax_log is up to ~15 ulp off. So is an f32
// Softmax over the last axis prepared for a first-seen shape (NodeContext::
// prefer_shape_agnostic): the attention kernel's vector row loop (VecTable::softmax_rows) needs
// no primitive, whose creation (JIT code for these sizes) would cost more than the run
// (ADR 0007).

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/nn_common.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
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
  bool own_log = false;  // f32 LogSoftmax computed by log_softmax_f32, not by `prim`
  // f32 Softmax over the last axis computed by `rows` (own_rows), not by `prim`.
  void (*rows)(const float* x, float* y, size_t n, size_t rows) = nullptr;
  ops::SoftmaxView view;
};

// Whether `node` is an f32 Softmax over its last axis prepared for a first-seen shape: then
// softmax_rows runs it (the file comment says why).
bool own_rows(const NodeContext& node, const ops::SoftmaxView& view) {
  return node.prefer_shape_agnostic &&
         DTypeSet{DTypeCode::kFloat32}.contains(node.input_types[0].dtype) && view.inner == 1 &&
         vec_table().softmax_rows != nullptr;
}

// y = softmax(x) over each of the `outer` rows of n contiguous elements, by `rows`: blocks of
// kRowBlock rows split across threads.
void softmax_rows(const float* x, float* y, const ops::SoftmaxView& v,
                  void (*rows)(const float*, float*, size_t, size_t), int nt) {
  constexpr int64_t kRowBlock = 16;
  const int64_t n = v.n;
  const int64_t blocks = (v.outer + kRowBlock - 1) / kRowBlock;
  ops::parallel_for(blocks, (v.outer * n >= 4096) ? nt : 1, [&](int64_t b) {
    const int64_t r0 = b * kRowBlock, count = std::min(kRowBlock, v.outer - r0);
    rows(x + r0 * n, y + r0 * n, static_cast<size_t>(n), static_cast<size_t>(count));
  });
}

// y = x - max - log(sum(exp(x - max))) over n for each of the outer * inner positions of x
// viewed as [outer, n, inner]. oneDNN 2.6's softmax_log evaluates exp and log with short
// polynomials (3.5e-6 off at -2.83, ~15 ulp); here expf (glibc, < 1 ulp) is summed in double,
// so log(sum) is exact to f32 rounding and every output is within a few ulps of the float64
// result (issue 23). Positions are split across threads; inner > 1 is walked in blocks of
// kBlock contiguous positions so each pass over n reads whole cache lines.
void log_softmax_f32(const float* x, float* y, const ops::SoftmaxView& v, int nt) {
  constexpr int64_t kBlock = 64;
  const int64_t n = v.n, inner = v.inner;
  const int64_t blocks_per_outer = (inner + kBlock - 1) / kBlock;
  const int64_t tasks = v.outer * blocks_per_outer;
  ops::parallel_for(tasks, nt, [&](int64_t t) {
    const int64_t o = t / blocks_per_outer, i0 = (t % blocks_per_outer) * kBlock;
    const int64_t w = std::min(kBlock, inner - i0);
    const float* xp = x + o * n * inner + i0;
    float* yp = y + o * n * inner + i0;
    float m[kBlock];
    double s[kBlock];
    std::fill_n(m, w, -std::numeric_limits<float>::infinity());
    std::fill_n(s, w, 0.0);
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < w; ++i) m[i] = std::max(m[i], xp[j * inner + i]);
    }
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < w; ++i) s[i] += std::exp(xp[j * inner + i] - m[i]);
    }
    float ls[kBlock];
    for (int64_t i = 0; i < w; ++i) ls[i] = static_cast<float>(std::log(s[i]));
    // (x - max) - log(sum): two roundings; a NaN or an infinite max gives NaN, as the cpu
    // reference kernel does.
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t i = 0; i < w; ++i) yp[j * inner + i] = (xp[j * inner + i] - m[i]) - ls[i];
    }
  });
}

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
  if (!kLog && node.prefer_shape_agnostic) {
    Result<ops::SoftmaxView> view = ops::softmax_view(node, node.input_types[0].shape);
    if (view.is_ok() && own_rows(node, *view)) return Status();
  }
  bool empty = false;
  return nn::decline(plan_softmax(node, kLog, &empty).status());
}

template <bool kLog>
Result<std::shared_ptr<void>> softmax_prepare(const NodeContext& node) {
  auto st = std::make_shared<SoftmaxState>();
  if (kLog && DTypeSet{DTypeCode::kFloat32}.contains(node.input_types[0].dtype)) {
    FRAME_ASSIGN_OR_RETURN(st->view, ops::softmax_view(node, node.input_types[0].shape));
    st->own_log = true;
    return std::shared_ptr<void>(st);
  }
  if (!kLog && node.prefer_shape_agnostic) {
    FRAME_ASSIGN_OR_RETURN(st->view, ops::softmax_view(node, node.input_types[0].shape));
    if (own_rows(node, st->view)) {
      st->rows = vec_table().softmax_rows;
      return std::shared_ptr<void>(st);
    }
  }
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
  if (st.own_log) {
    log_softmax_f32(ctx.input(0).data<float>(), ctx.output(0).data<float>(), st.view,
                    ctx.num_threads);
    return Status();
  }
  if (st.rows != nullptr) {
    softmax_rows(ctx.input(0).data<float>(), ctx.output(0).data<float>(), st.view, st.rows,
                 ctx.num_threads);
    return Status();
  }
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
