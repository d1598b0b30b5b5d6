// onednn kernels for MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool (ONNX opset 22):
// one oneDNN pooling_v2 primitive per node, built at prepare time. ceil_mode becomes extra end
// padding (oneDNN sizes the output with floor); count_include_pad picks the average algorithm.
// Declined (M10 fallback takes them): the Indices output, ranks outside 3..5, configurations
// oneDNN has no implementation for, pads that make a window lie wholly in the padding, and
// count_include_pad=1 with explicit pads where ceil_mode extends the last window past them
// (oneDNN would count those taps, ONNX does not).
// Where oneDNN has only a slow plain-layout pooling for a node (its reference loops, or
// `simple_nchw`: 22.7 ms for Inception-V3's first max pool against 0.3 ms channels-last), the
// node runs channels-last between two reorders. laid_out_internal's pools (nhwc or nChw8c /
// nChw16c activations, keep_nhwc_through) use the same primitives with explicit descriptors of
// that layout (laid_out.h).
// A 2-d f32 max or average pool whose data is channels-last (laid out, or between those
// reorders) runs frame's own vector loop over each pixel's channels instead
// (VecTable::pool_nhwc_rows): oneDNN 2.6 pools nhwc on AVX2 by transposing to nChw8c and back
// around its kernel, 1.1 ms for ResNet-18's stem max pool on a 2-core AVX2 EPYC.
// In the interpreted tier (NodeContext::prefer_shape_agnostic), a plain f32 global pool is a
// row reduction (reduce_rows) instead: a pooling primitive is JIT code for one size, and a
// stream of image sizes created one per global pool per size (DeepLabV3-MobileNetV3: 9).

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/laid_out.h"
#include "backends/onednn/kernels/nn_common.h"
#include "backends/onednn/kernels/reduce.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::onednn {
namespace {

using dnnl::algorithm;
using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;
using ops::fused::ActivationLayout;

constexpr DTypeSet kPoolDTypes{DTypeCode::kFloat32, DTypeCode::kBFloat16};
constexpr DTypeSet kMaxPoolDTypes = kPoolDTypes | DTypeSet{DTypeCode::kInt8, DTypeCode::kUInt8};

enum class PoolKind : uint8_t { kMax, kAverage, kGlobalMax, kGlobalAverage };

// Prepared state: read-only at run time (Executable::run is re-entrant).
struct PoolState {
  bool empty = false;  // zero-element input: nothing to compute
  memory::desc src, dst, scratch;
  dnnl::pooling_v2_forward prim;
  // A primitive in another layout than the tensors' (channels-last for a plain node whose
  // plain pooling is slow, plan_pool): the tensors' descriptors and the reorders to and from
  // the primitive's layout.
  bool reordered = false;
  memory::desc src_user, dst_user, to_scratch, from_scratch;
  dnnl::reorder to_prim, from_prim;
  // A shape-agnostic global pool (by_rows): the mean or max of each of `rows` rows of `row`
  // elements (reduce_rows), no primitive.
  bool by_rows = false;
  ReduceKind rows_kind = ReduceKind::kMean;
  int64_t rows = 0, row = 0;
  // A 2-d f32 max or average pool computed on channels-last data by frame's own vector loop
  // (own_nhwc_pool) instead of `prim`: on the activations themselves when they are nhwc, else
  // between the reorders. `n` images of `geom`.
  bool own = false;
  int64_t n = 0;
  PoolNhwc geom;
  decltype(VecTable::pool_nhwc_rows) own_rows = nullptr;
};

// The geometry of `node` for VecTable::pool_nhwc_rows, or nullopt where that loop does not
// apply: a 2-d f32 max_pool or average_pool without an Indices output, on a target that has
// the loop. Call after plan_pool accepted the node (it validates the attributes and declines
// what ONNX and oneDNN would count differently).
std::optional<PoolNhwc> own_nhwc_pool(const NodeContext& node, PoolKind kind) {
  constexpr DTypeSet kOwnDTypes{DTypeCode::kFloat32};
  const ir::TensorType& x = node.input_types[0];
  if (x.rank() != 4 || !kOwnDTypes.contains(x.dtype) || node.num_outputs != 1 ||
      (kind != PoolKind::kMax && kind != PoolKind::kAverage) ||
      vec_table().pool_nhwc_rows == nullptr) {
    return std::nullopt;
  }
  const auto* ks = node.attr<std::vector<int64_t>>("kernel_shape");
  if (ks == nullptr) return std::nullopt;
  const std::span<const int64_t> spatial(x.shape.data() + 2, 2);
  Result<ops::nn::WindowGeometry> w =
      ops::nn::resolve_window(node, spatial, *ks, ops::nn::WindowKind::kPool);
  if (!w.is_ok()) return std::nullopt;
  const ops::nn::WindowGeometry& g = *w;
  PoolNhwc p;
  p.h = x.shape[2], p.w = x.shape[3], p.c = x.shape[1];
  p.oh = g.out[0], p.ow = g.out[1], p.kh = g.kernel[0], p.kw = g.kernel[1];
  p.sh = g.strides[0], p.sw = g.strides[1], p.dh = g.dilations[0], p.dw = g.dilations[1];
  p.ph = g.pad_begin[0], p.pw = g.pad_begin[1];
  p.max = kind == PoolKind::kMax;
  const bool explicit_pads =
      std::any_of(g.pad_begin.begin(), g.pad_begin.end(), [](int64_t v) { return v > 0; }) ||
      std::any_of(g.pad_end.begin(), g.pad_end.end(), [](int64_t v) { return v > 0; });
  // ONNX counts pad taps only with count_include_pad and explicit pads (plan_pool declined a
  // ceil_mode window past them), so then every window has all its taps.
  if (!p.max && explicit_pads && node.attr_or<int64_t>("count_include_pad", 0) != 0) {
    p.divisor = p.kh * p.kw;
  }
  return p;
}

// Runs the own loop of `st` from x to y (both channels-last) on up to `nt` threads, split by
// output rows over every image.
void run_own_pool(const PoolState& st, const float* x, float* y, int nt) {
  const PoolNhwc& g = st.geom;
  const int64_t rows = st.n * g.oh;
  const int64_t in_image = g.h * g.w * g.c * g.groups, out_image = g.oh * g.ow * g.c * g.groups;
  const int64_t work = rows * g.ow * g.c * g.groups * g.kh * g.kw;
  ops::parallel_ranges(rows, work >= (int64_t{1} << 16) ? std::min<int64_t>(nt, rows) : 1,
                       [&](int64_t q0, int64_t q1) {
                         while (q0 < q1) {
                           const int64_t b = q0 / g.oh, r0 = q0 % g.oh;
                           const int64_t r1 = std::min(g.oh, r0 + (q1 - q0));
                           st.own_rows(x + b * in_image, y + b * out_image, g, r0, r1);
                           q0 += r1 - r0;
                         }
                       });
}

// Whether `node` is a global pool run as a row reduction: the interpreted tier's plain f32
// global pools over at least one spatial dim.
bool pools_by_rows(const NodeContext& node, PoolKind kind, ActivationLayout layout) {
  constexpr DTypeSet kRowDTypes{DTypeCode::kFloat32};
  return layout == ActivationLayout::kPlain && node.prefer_shape_agnostic &&
         (kind == PoolKind::kGlobalAverage || kind == PoolKind::kGlobalMax) &&
         node.num_outputs == 1 && node.input_types[0].rank() >= 3 &&
         kRowDTypes.contains(node.input_types[0].dtype);
}

// Whether oneDNN implementation `impl` is one of its slow generic loops for pooling.
bool slow_pool_impl(std::string_view impl) {
  return impl.starts_with("ref") || impl.starts_with("simple_nchw");
}

// The descriptor of a pooling tensor of `dims` stored plain or (rank 4) in `layout`.
memory::desc pool_desc(const memory::dims& dims, memory::data_type dt, ActivationLayout layout) {
  return activation_desc(dims, dt, layout);
}

// The primitive descriptor of a node whose activations are stored plain or (rank 4) in
// `layout` (laid_out_internal: nhwc, nChw8c, nChw16c), or why oneDNN cannot run it exactly (or,
// for a laid-out node, only with its reference loops).
Result<dnnl::pooling_v2_forward::primitive_desc> plan_pool(const NodeContext& node, PoolKind kind,
                                                           ActivationLayout layout, bool* empty) {
  const ir::TensorType& x = node.input_types[0];
  const int64_t rank = x.rank();
  if (rank < 3 || rank > 5) {
    return unimplemented("oneDNN pooling takes 1 to 3 spatial dims, got rank {}", rank);
  }
  if (node.num_outputs > 1) return unimplemented("max_pool with an Indices output");
  const std::span<const int64_t> spatial(x.shape.data() + 2, x.shape.size() - 2);
  const size_t r = spatial.size();
  memory::dims strides(r, 1), kernel(spatial.begin(), spatial.end()), dil(r, 0), pl(r, 0), pr(r, 0),
      out(r, 1);
  algorithm alg = kind == PoolKind::kGlobalAverage ? algorithm::pooling_avg_exclude_padding
                                                   : algorithm::pooling_max;
  if (kind == PoolKind::kMax || kind == PoolKind::kAverage) {
    const auto* ks = node.attr<std::vector<int64_t>>("kernel_shape");
    if (ks == nullptr) return node.error("missing required attribute 'kernel_shape'");
    FRAME_ASSIGN_OR_RETURN(ops::nn::WindowGeometry g,
                           ops::nn::resolve_window(node, spatial, *ks, ops::nn::WindowKind::kPool));
    bool explicit_pads = false, extended = false;
    for (size_t i = 0; i < r; ++i) {
      strides[i] = g.strides[i];
      kernel[i] = g.kernel[i];
      dil[i] = g.dilations[i] - 1;  // oneDNN counts dilation from 0
      pl[i] = g.pad_begin[i];
      pr[i] = g.pad_end[i];
      out[i] = g.out[i];
      explicit_pads = explicit_pads || pl[i] > 0 || pr[i] > 0;
      // oneDNN sizes the output with floor: ceil_mode's extra window needs extra end padding.
      const int64_t extra = (g.out[i] - 1) * g.strides[i] + (g.kernel[i] - 1) * g.dilations[i] + 1 -
                            (g.in[i] + g.pad_begin[i] + g.pad_end[i]);
      if (extra > 0) {
        pr[i] += extra;
        extended = true;
      }
      // A window wholly in the padding is -inf (max) or 0/0 (average) in ONNX; oneDNN has no
      // such window semantics.
      const int64_t dk = (g.kernel[i] - 1) * g.dilations[i] + 1;
      if (pl[i] >= dk || pr[i] >= dk) {
        return unimplemented(
            "pads {}+{} of spatial dim {} reach the dilated kernel extent {} "
            "(a window wholly in the padding)",
            pl[i], pr[i], i, dk);
      }
    }
    if (kind == PoolKind::kAverage) {
      const bool include_pad = node.attr_or<int64_t>("count_include_pad", 0) != 0;
      // Without explicit pads, ONNX's include-pad divisor counts only taps inside X.
      alg = include_pad && explicit_pads ? algorithm::pooling_avg_include_padding
                                         : algorithm::pooling_avg_exclude_padding;
      if (include_pad && explicit_pads && extended) {
        return unimplemented(
            "average_pool with count_include_pad=1, pads and a ceil_mode window past the pads "
            "(oneDNN would count the extra taps)");
      }
    }
  }
  const auto dt = to_dnnl(x.dtype);
  if (!dt) return unimplemented("no oneDNN data type for {}", dtype_name(x.dtype));
  memory::dims dst_dims{x.shape[0], x.shape[1]};
  dst_dims.insert(dst_dims.end(), out.begin(), out.end());
  *empty = numel_of(x.shape) == 0;
  if (*empty) return dnnl::pooling_v2_forward::primitive_desc();
  try {
    dnnl::pooling_v2_forward::desc d(
        dnnl::prop_kind::forward_inference, alg, pool_desc(x.shape, *dt, layout),
        pool_desc(dst_dims, *dt, layout), strides, kernel, dil, pl, pr);
    dnnl::pooling_v2_forward::primitive_desc pd(d, default_attr(), engine());
    const bool own = own_nhwc_pool(node, kind).has_value();
    if (layout != ActivationLayout::kPlain) {
      if (!own && slow_pool_impl(pd.impl_info_str())) {
        return unimplemented("oneDNN offers only its {} pooling for activations in layout {}",
                             pd.impl_info_str(), static_cast<int64_t>(layout));
      }
      return pd;
    }
    // oneDNN pools some nodes in a plain NCHW layout only with its generic loops (int8: about
    // 100x the f32 time on a ResNet stem; f32 `simple_nchw`: Inception-V3's 147x147x64 max
    // pool); channels-last has a jit one: run that between two reorders (pool_prepare). QDQ
    // models pool u8 after quantize_before_max_pool (qdq_patterns.cpp).
    if (rank == 4 && slow_pool_impl(pd.impl_info_str())) {
      dnnl::pooling_v2_forward::desc dcl(dnnl::prop_kind::forward_inference, alg,
                                         memory::desc(x.shape, *dt, memory::format_tag::nhwc),
                                         memory::desc(dst_dims, *dt, memory::format_tag::nhwc),
                                         strides, kernel, dil, pl, pr);
      dnnl::pooling_v2_forward::primitive_desc pcl(dcl, default_attr(), engine());
      if (own || !slow_pool_impl(pcl.impl_info_str())) return pcl;
    }
    return pd;
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "pooling", e);
  }
}

Status accepts_pool(const NodeContext& node, PoolKind kind, ActivationLayout layout) {
  if (pools_by_rows(node, kind, layout)) return Status();
  bool empty = false;
  return nn::decline(plan_pool(node, kind, layout, &empty).status());
}

template <PoolKind kKind>
Status pool_accepts(const NodeContext& node) {
  return accepts_pool(node, kKind, ActivationLayout::kPlain);
}

Result<std::shared_ptr<void>> prepare_pool(const NodeContext& node, PoolKind kind,
                                           ActivationLayout layout) {
  auto st = std::make_shared<PoolState>();
  if (pools_by_rows(node, kind, layout)) {
    const Shape& x = node.input_types[0].shape;
    st->by_rows = true;
    st->rows_kind = kind == PoolKind::kGlobalMax ? ReduceKind::kMax : ReduceKind::kMean;
    st->rows = x[0] * x[1];
    st->row = numel_of(Shape(x.begin() + 2, x.end()));
    st->empty = st->rows == 0;  // empty rows: mean 0/0 = NaN, max -inf (ONNX's formulas)
    return std::shared_ptr<void>(st);
  }
  FRAME_ASSIGN_OR_RETURN(dnnl::pooling_v2_forward::primitive_desc pd,
                         plan_pool(node, kind, layout, &st->empty));
  if (st->empty) return std::shared_ptr<void>(st);
  try {
    st->src = pd.src_desc();
    st->dst = pd.dst_desc();
    st->scratch = pd.scratchpad_desc();
    const memory::data_type dt = st->src.data_type();
    // Channels-last f32 max and average pools run frame's own loop (no primitive to create);
    // so do channel-blocked ones, each block of b channels an image of b channels-last
    // (oneDNN 2.6's AVX2 nChw8c max pool took 0.73 ms for SqueezeNet's 111x111x64 stem pool,
    // the own loop 0.13).
    const Shape& xs = node.input_types[0].shape;
    const int64_t block = ops::fused::channel_block(layout);
    if (std::optional<PoolNhwc> g = own_nhwc_pool(node, kind);
        g && (st->src == pool_desc(xs, dt, ActivationLayout::kNhwc) ||
              (block > 1 && st->src == pool_desc(xs, dt, layout)))) {
      st->own = true;
      st->n = xs[0];
      st->geom = *g;
      if (block > 1 && st->src == pool_desc(xs, dt, layout)) {
        st->geom.c = block;
        st->geom.groups = xs[1] / block;
        st->geom.x_group = g->h * g->w * block;
        st->geom.y_group = g->oh * g->ow * block;
      }
      st->own_rows = vec_table().pool_nhwc_rows;
    } else {
      st->prim = dnnl::pooling_v2_forward(pd);
    }
    st->src_user = pool_desc(node.input_types[0].shape, dt, layout);
    st->dst_user = pool_desc(st->dst.dims(), dt, layout);
    if (st->src != st->src_user) {
      st->reordered = true;
      dnnl::reorder::primitive_desc to(engine(), st->src_user, engine(), st->src, default_attr());
      dnnl::reorder::primitive_desc from(engine(), st->dst, engine(), st->dst_user, default_attr());
      st->to_scratch = to.scratchpad_desc();
      st->from_scratch = from.scratchpad_desc();
      st->to_prim = dnnl::reorder(to);
      st->from_prim = dnnl::reorder(from);
    }
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "pooling primitive", e);
  }
  return std::shared_ptr<void>(st);
}

template <PoolKind kKind>
Result<std::shared_ptr<void>> pool_prepare(const NodeContext& node) {
  return prepare_pool(node, kKind, ActivationLayout::kPlain);
}

// ops::ReordersFn: to and from the primitive's layout when the node is reordered.
int pool_reorders(const void* state) {
  return static_cast<const PoolState*>(state)->reordered ? 2 : 0;
}

Status pool_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const PoolState*>(ctx.state);
  if (st.empty) return Status();
  if (st.by_rows) {
    if (ctx.input(0).numel() != st.rows * st.row || ctx.output(0).numel() != st.rows) {
      return ctx.node->error("input has {} elements, prepared for {}", ctx.input(0).numel(),
                             st.rows * st.row);
    }
    reduce_rows(st.rows_kind, ctx.input(0).data<float>(), ctx.output(0).data<float>(), st.rows,
                st.row, ctx.num_threads);
    return Status();
  }
  try {
    if (st.reordered) {
      const memory src = wrap(st.src_user, ctx.input(0));
      const memory dst = wrap(st.dst_user, ctx.output(0));
      const memory src_cl = thread_buffer(BufferSlot::kSrc, st.src);
      const memory dst_cl = thread_buffer(BufferSlot::kDst, st.dst);
      FRAME_RETURN_IF_ERROR(nn::execute(*ctx.node, st.to_prim, st.to_scratch,
                                        {{DNNL_ARG_FROM, &src}, {DNNL_ARG_TO, &src_cl}}));
      if (st.own) {
        run_own_pool(st, static_cast<const float*>(src_cl.get_data_handle()),
                     static_cast<float*>(dst_cl.get_data_handle()), ctx.num_threads);
      } else {
        FRAME_RETURN_IF_ERROR(nn::execute(*ctx.node, st.prim, st.scratch,
                                          {{DNNL_ARG_SRC, &src_cl}, {DNNL_ARG_DST, &dst_cl}}));
      }
      return nn::execute(*ctx.node, st.from_prim, st.from_scratch,
                         {{DNNL_ARG_FROM, &dst_cl}, {DNNL_ARG_TO, &dst}});
    }
    if (st.own) {
      run_own_pool(st, ctx.input(0).data<float>(), ctx.output(0).data<float>(), ctx.num_threads);
      return Status();
    }
    const memory src = wrap(st.src, ctx.input(0));
    const memory dst = wrap(st.dst, ctx.output(0));
    return nn::execute(*ctx.node, st.prim, st.scratch,
                       {{DNNL_ARG_SRC, &src}, {DNNL_ARG_DST, &dst}});
  } catch (const dnnl::error& e) {
    return dnnl_failure(*ctx.node, "pooling memory", e);
  }
}

FRAME_REGISTER_KERNEL(max_pool, "onednn", pool_kernel)
    .dtypes(kMaxPoolDTypes)
    .reorders(pool_reorders)
    .accepts(pool_accepts<PoolKind::kMax>)
    .prepare(pool_prepare<PoolKind::kMax>);
FRAME_REGISTER_KERNEL(average_pool, "onednn", pool_kernel)
    .dtypes(kPoolDTypes)
    .reorders(pool_reorders)
    .accepts(pool_accepts<PoolKind::kAverage>)
    .prepare(pool_prepare<PoolKind::kAverage>);
FRAME_REGISTER_KERNEL(global_max_pool, "onednn", pool_kernel)
    .dtypes(kPoolDTypes)
    .reorders(pool_reorders)
    .accepts(pool_accepts<PoolKind::kGlobalMax>)
    .prepare(pool_prepare<PoolKind::kGlobalMax>);
FRAME_REGISTER_KERNEL(global_average_pool, "onednn", pool_kernel)
    .dtypes(kPoolDTypes)
    .reorders(pool_reorders)
    .accepts(pool_accepts<PoolKind::kGlobalAverage>)
    .prepare(pool_prepare<PoolKind::kGlobalAverage>);

// The pooling kind of laid_out_internal base op `base_op`.
Result<PoolKind> pool_kind(const NodeContext& node, std::string_view base_op) {
  if (base_op == "max_pool") return PoolKind::kMax;
  if (base_op == "average_pool") return PoolKind::kAverage;
  if (base_op == "global_max_pool") return PoolKind::kGlobalMax;
  if (base_op == "global_average_pool") return PoolKind::kGlobalAverage;
  return node.error("'{}' is not a pooling op", base_op);
}

}  // namespace

Status laid_out_pool_accepts(const NodeContext& node, std::string_view base_op,
                             ActivationLayout layout) {
  FRAME_ASSIGN_OR_RETURN(PoolKind kind, pool_kind(node, base_op));
  return accepts_pool(node, kind, layout);
}

Result<std::shared_ptr<void>> laid_out_pool_prepare(const NodeContext& node,
                                                    std::string_view base_op,
                                                    ActivationLayout layout) {
  FRAME_ASSIGN_OR_RETURN(PoolKind kind, pool_kind(node, base_op));
  return prepare_pool(node, kind, layout);
}

Status run_pool(KernelContext& ctx) { return pool_kernel(ctx); }

}  // namespace frame::backends::onednn
