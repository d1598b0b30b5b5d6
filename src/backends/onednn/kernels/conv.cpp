// onednn kernels of conv and conv_transpose (ONNX Conv / ConvTranspose opset 22): oneDNN
// convolution / deconvolution primitives, 1-d to 3-d, grouped (depthwise included), dilated,
// strided, padded (explicit or auto_pad, resolved by the schema's geometry). Everything is
// built once in prepare: the primitive, reorders between the plain NCHW tensors and the
// layout oneDNN picks (format_tag::any), and constant weights reordered into the primitive's
// preferred layout. A fused conv whose src_layout / dst_layout / residual_layout says nhwc or
// nChw16c takes that tensor in that layout as is (explicit tag, no reorder): the onednn
// pattern keep_blocked_activations sets them between consecutive convs.
// docs/backends/onednn.md#convolution-matmul-and-gemm.

#include <omp.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/linear_kernels.h"
#include "backends/onednn/kernels/pd_cache.h"
#include "backends/onednn/kernels/primitive_util.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using ops::KernelContext;
using ops::NodeContext;

// Activations in the layout the primitive prefers (format_tag::any: nhwc or nChw16c on
// AVX-512), with a reorder from/to plain NCHW around each conv: on ResNet-18 this ran the convs
// about 3x faster than a plain-layout conv (oneDNN then picks its gemm implementation), reorders
// included (docs/backends/onednn.md). false selects the plain-layout conv.
constexpr bool kBlockedActivations = true;

// Below this many bytes per thread a copy stays on one thread (a parallel region's start costs
// about what a thread copies in that time).
constexpr size_t kCopyBytesPerThread = size_t{256} << 10;

// Copies `bytes` from `src` to `dst` on up to `threads` threads. A residual the sum post-op
// needs in dst is megabytes in a CNN's early blocks: on one thread its copy left the other
// cores idle between two parallel convolutions (ResNet-50's layer1 conv + add + relu ran slower
// at 2 threads than at 1).
void copy_on_threads(void* dst, const void* src, size_t bytes, int threads) {
  const auto nt = static_cast<int>(std::clamp<size_t>(bytes / kCopyBytesPerThread, 1,
                                                      static_cast<size_t>(std::max(1, threads))));
  if (nt == 1) {
    std::memcpy(dst, src, bytes);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const auto id = static_cast<size_t>(omp_get_thread_num());
    const auto team = static_cast<size_t>(omp_get_num_threads());
    // Cache-line-aligned pieces; the last thread takes the tail.
    const size_t lo = bytes * id / team / 64 * 64;
    const size_t hi = id + 1 == team ? bytes : bytes * (id + 1) / team / 64 * 64;
    std::memcpy(static_cast<std::byte*>(dst) + lo, static_cast<const std::byte*>(src) + lo,
                hi - lo);
  }
}

class ConvPrimitive final : public LinearPrimitive {
 public:
  dnnl::primitive prim;
  memory::desc src_user, src_md, dst_user, dst_md, w_user, w_md, bias_md, res_md, scratch_md;
  Reorder src_reorder, dst_reorder, w_reorder;
  Reorder res_reorder;  // residual (plain) -> dst layout, for the sum post-op
  std::shared_ptr<const PackedWeights> w_packed;  // constant weights in w_md's layout, or null
  bool has_bias = false;
  bool residual_sum = false;  // the residual is added by a sum post-op onto dst
  std::string impl;           // oneDNN's implementation name

  std::string_view implementation() const override { return impl; }

  int reorders_per_run() const override {
    return int{src_reorder.active} + int{dst_reorder.active} +
           int{residual_sum && res_reorder.active} + int{w_packed == nullptr && w_reorder.active};
  }

  Status run(KernelContext& ctx) const override {
    const NodeContext& node = *ctx.node;
    try {
      FRAME_ASSIGN_OR_RETURN(const memory src, in_layout(node, src_reorder, BufferSlot::kSrc,
                                                         src_md, wrap(src_user, ctx.input(0))));
      memory w;
      if (w_packed != nullptr) {
        w = w_packed->mem;
      } else {
        FRAME_ASSIGN_OR_RETURN(
            w, in_layout(node, w_reorder, BufferSlot::kWeights, w_md, wrap(w_user, ctx.input(1))));
      }
      const memory y_user = wrap(dst_user, ctx.output(0));
      const memory dst = dst_reorder.active ? thread_buffer(BufferSlot::kDst, dst_md) : y_user;
      const memory bias = has_bias ? wrap(bias_md, ctx.input(2)) : memory();
      if (residual_sum) {
        // The sum post-op adds onto what dst holds: put the residual there first.
        const Tensor& r = ctx.input(ops::fused::kResidualInput);
        if (res_reorder.active) {
          if (r.raw_data() == dst.get_data_handle()) {
            // A reorder cannot run in place; conv_residual_in_place shares R's buffer only
            // where R and Y have one layout (no reorder) or Y is reordered from scratch.
            return internal_error(
                "node '{}' ({}): residual shares the output's buffer but needs "
                "a layout reorder into it",
                node.node_name, node.op);
          }
          FRAME_RETURN_IF_ERROR(run_reorder(node, res_reorder, wrap(res_md, r), dst));
        } else if (r.raw_data() != dst.get_data_handle()) {
          copy_on_threads(dst.get_data_handle(), r.raw_data(), r.nbytes(), ctx.num_threads);
        }
      }
      const memory scratch = scratchpad(scratch_md);
      const ExecArg args[] = {
          {DNNL_ARG_SRC, &src},
          {DNNL_ARG_WEIGHTS, &w},
          {DNNL_ARG_BIAS, has_bias ? &bias : nullptr},
          {DNNL_ARG_DST, &dst},
          {DNNL_ARG_SCRATCHPAD, &scratch},
      };
      FRAME_RETURN_IF_ERROR(execute(node, prim, args));
      if (dst_reorder.active) FRAME_RETURN_IF_ERROR(run_reorder(node, dst_reorder, dst, y_user));
    } catch (const dnnl::error& e) {
      return dnnl_failure(node, "convolution", e);
    }
    return Status();
  }
};

memory::dims to_dims(std::span<const int64_t> s) { return memory::dims(s.begin(), s.end()); }

// Whether oneDNN's implementation `impl` runs explicit nhwc / nChw16c activations at speed: its
// reference and gemm convolutions accept any layout but run many times slower than a reorder
// around the jit one (docs/backends/onednn.md).
// Winograd F(2,3) (oneDNN's jit_fp32_wino_2x3 on AVX-512; convolution_auto never picks it
// there) for f32 3x3, stride 1, no dilation, ungrouped convs with at least kWinoMinChannels
// channels in and out and a spatial output of at least kWinoMinPixels: fewer multiplies per
// output (2.25x fewer in theory) at the cost of transforms, so it pays on wide layers. It needs
// nChw16c activations; where its descriptor cannot be created (other ISAs, an nhwc side) the
// direct algorithm is used. Opt-in (FRAME_ONEDNN_WINOGRAD=1): its transforms cost accuracy,
// and on Keypoint R-CNN's ResNet-50-FPN a detection score moved by 1.35e-3 relative, beyond
// the deep-network class the detector test holds it to (docs/backends/onednn.md).
constexpr int64_t kWinoMinChannels = 64;
constexpr int64_t kWinoMinPixels = 49;

bool winograd_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("FRAME_ONEDNN_WINOGRAD");
    return e != nullptr && std::string_view(e) == "1";
  }();
  return on;
}

// A conv with one spatial dim and at least kBrgconv1dMinChannels input channels per group skips
// oneDNN 2.6's brgconv for the next direct implementation (jit:avx512_core): brgconv's JIT
// creation grows with the output width, while their run times were within about 10% (2-core
// AMD EPYC, AVX-512; create / run ms at 2 threads, brgconv against jit:avx512_core):
//   64 -> 64 channels, k3 s2, width 3199:   14.9 / 0.100  against 0.53 / 0.107
//   64 -> 64, k3 s2, width 1599:             8.6 / 0.085  against 0.48 / 0.049
//   512 -> 512, k3 s2, width 3199:          72.8 / 6.68   against 0.54 / 6.58
//   512 -> 512, k3 s2, width 799:           19.0 / 1.54   against 0.39 / 1.64
//   256 -> 256, k5 s1, width 1000:          16.1 / 1.56   against 0.68 / 1.88
// A wav2vec-style feature extractor's compile took 110 ms, 104 of them in three brgconv
// creations. Fewer input channels (a waveform's first layer: 1 -> 512, k10 s5) keep brgconv:
// there jit:avx512_core ran 3.4x slower. Convs with two or three spatial dims keep oneDNN's
// choice (brgconv created in 2-4 ms there).
constexpr int64_t kBrgconv1dMinChannels = 16;

bool skips_brgconv(size_t spatial_rank, int64_t channels_per_group, std::string_view impl) {
  return spatial_rank == 1 && channels_per_group >= kBrgconv1dMinChannels &&
         impl.substr(0, 7) == "brgconv";
}

bool fast_blocked_impl(std::string_view impl) {
  return impl.find("ref") == std::string_view::npos && impl.find("gemm") == std::string_view::npos;
}

// Convolution and deconvolution descriptors by everything that shapes them (pd_cache.h), with
// what make_conv derives from them. The primitives are not held here: a conv's JIT code is
// large and oneDNN's own primitive cache (bounded) already dedupes it, so prepare creates the
// primitive from the held descriptor (a primitive-cache hit when another compile made it).
struct ConvEntry {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward prim;  // always empty (PdCache's interface)
  std::string impl;                // oneDNN's implementation name
  bool residual_sum = false;       // the residual add is a sum post-op
};
struct DeconvEntry {
  dnnl::deconvolution_forward::primitive_desc pd;
  dnnl::deconvolution_forward prim;  // always empty
  std::string impl;                  // oneDNN's implementation name
  bool residual_sum = false;
};
using ConvCache = PdCache<ConvEntry>;
using DeconvCache = PdCache<DeconvEntry>;

}  // namespace

PdCacheStats conv_cache_stats() {
  const PdCacheStats c = ConvCache::global().stats(), d = DeconvCache::global().stats();
  return {c.created + d.created, c.hits + d.hits, c.entries + d.entries};
}

Result<std::shared_ptr<LinearPrimitive>> make_conv(const NodeContext& ctx, bool transpose,
                                                   std::span<const ops::fused::PostOp> post,
                                                   bool reorder_weights,
                                                   const ConvLayouts& layouts) {
  using ops::fused::ActivationLayout;
  const ir::TensorType& xt = ctx.input_types[0];
  const ir::TensorType& wt = ctx.input_types[1];
  // The kernels register f32 only (KernelDef::dtypes), so supports() has checked it.
  const memory::data_type dt = memory::data_type::f32;
  const Shape& x = xt.shape;
  const Shape& w = wt.shape;
  if (x.size() < 3 || x.size() > 5 || w.size() != x.size()) {
    return unimplemented("{}-d spatial input (oneDNN convolutions are 1-d to 3-d)",
                         static_cast<int64_t>(x.size()) - 2);
  }
  for (int64_t d : x) {
    if (d == 0) return unimplemented("an empty input {}", shape_to_string(x));
  }
  const size_t sr = x.size() - 2;
  // The layout of the first non-plain activation, if any.
  ActivationLayout blocked_as = ActivationLayout::kPlain;
  for (ActivationLayout l : {layouts.src, layouts.dst, layouts.residual}) {
    if (blocked_as == ActivationLayout::kPlain) blocked_as = l;
  }
  const bool any_blocked = blocked_as != ActivationLayout::kPlain;
  if (any_blocked && x.size() != 4) {
    return unimplemented("nhwc / nChw16c activations on a rank-{} {}", x.size(),
                         transpose ? "conv_transpose" : "conv");
  }
  FRAME_ASSIGN_OR_RETURN(
      ops::nn::WindowGeometry g,
      ops::nn::resolve_window(
          ctx, std::span(x.data() + 2, sr), std::span(w.data() + 2, sr),
          transpose ? ops::nn::WindowKind::kConvTranspose : ops::nn::WindowKind::kConv));
  const int64_t group = ctx.attr_or<int64_t>("group", 1);
  const int64_t n = x[0], c = x[1];
  const int64_t m = transpose ? w[1] * group : w[0];
  memory::dims y_dims{n, m};
  memory::dims strides(sr), dilates(sr), pad_l(sr), pad_r(sr);
  int64_t taps = 1;
  for (size_t d = 0; d < sr; ++d) {
    y_dims.push_back(g.out[d]);
    strides[d] = g.strides[d];
    dilates[d] = g.dilations[d] - 1;  // oneDNN counts the gap, ONNX the step
    pad_l[d] = g.pad_begin[d];
    // Deconvolution: out = (in-1)*stride + (k-1)*dilation + 1 - pad_l - pad_r, so the
    // output_padding of ONNX becomes a smaller (possibly negative) right pad.
    pad_r[d] = transpose ? (g.in[d] - 1) * g.strides[d] + (g.kernel[d] - 1) * g.dilations[d] + 1 -
                               g.pad_begin[d] - g.out[d]
                         : g.pad_end[d];
    taps *= g.kernel[d];
  }
  // Weights as oneDNN's logical (g,) oc, ic, spatial dims over frame's memory.
  const int64_t mg = m / group, cg = c / group;
  memory::dims w_dims, w_strides;
  if (group > 1) w_dims = {group, mg, cg};
  if (group == 1) w_dims = {m, c};
  for (size_t d = 0; d < sr; ++d) w_dims.push_back(g.kernel[d]);
  memory::desc w_user;
  if (!transpose) {
    w_user = plain_desc(w_dims, dt);
  } else {
    // ONNX ConvTranspose W is [C, M/group, k...] = [g][C/g][M/g][k...].
    w_strides.assign(w_dims.size(), 0);
    const size_t o = group > 1 ? 1 : 0;
    if (group > 1) w_strides[0] = cg * mg * taps;
    w_strides[o] = taps;
    w_strides[o + 1] = mg * taps;
    int64_t st = 1;
    for (size_t d = sr; d-- > 0;) {
      w_strides[o + 2 + d] = st;
      st *= g.kernel[d];
    }
    w_user = memory::desc(w_dims, dt, w_strides);
  }
  auto p = std::make_shared<ConvPrimitive>();
  p->src_user = activation_desc(to_dims(x), dt, layouts.src);
  p->dst_user = activation_desc(y_dims, dt, layouts.dst);
  p->w_user = w_user;
  p->has_bias = ctx.has_input(2);
  p->bias_md = p->has_bias ? plain_desc(std::vector<int64_t>{m}, dt) : memory::desc();
  p->res_md = activation_desc(y_dims, dt, layouts.residual);
  // A blocked side is given with its explicit tag, so the primitive reads / writes it as is.
  // Then a plain side is given that layout too where its channels allow (reordered from / to
  // plain): with one nChw16c side and the other `any`, oneDNN 2.6 offers only its reference
  // depthwise conv.
  const bool blocked = kBlockedActivations;
  const auto side = [&](const memory::dims& dims, ActivationLayout own, int64_t channels,
                        const memory::desc& user) {
    if (own != ActivationLayout::kPlain) return user;
    if (any_blocked && channels % ops::fused::channel_block(blocked_as) == 0) {
      return activation_desc(dims, dt, blocked_as);
    }
    return blocked ? memory::desc(dims, dt, memory::format_tag::any) : user;
  };
  // Wide 3x3-like convs run on nChw16c whatever the layouts around them (reordered in and
  // out): oneDNN 2.6's brgconv, which it picks for nhwc and for `any`, takes 2-2.3x longer than
  // its jit:avx512_core nChw16c conv once the input has 1024 channels or more and the output
  // more than 7x7 pixels (1 thread here: FCN-ResNet50's 2048 -> 512 3x3 at 28x28 288 vs 123 ms,
  // 1024 -> 256 at 14x14 12.4 vs 7.2 ms, 1536 -> 256 16.6 vs 10.8; 768 channels and 7x7 outputs
  // even). Where that descriptor has no fast implementation (a large dilation gives oneDNN's
  // reference conv), the usual choice stands.
  const bool wide = !transpose && sr == 2 && group == 1 && taps > 1 && c >= 1024 && c % 16 == 0 &&
                    m % 16 == 0 && y_dims[2] * y_dims[3] > 49;
  memory::desc src_any = side(to_dims(x), layouts.src, c, p->src_user);
  memory::desc dst_any = side(y_dims, layouts.dst, m, p->dst_user);
  std::string impl;
  memory::desc src_pd, w_pd, dst_pd;
  for (int attempt = wide ? 0 : 1; attempt < 2; ++attempt) {
    if (attempt == 0) {
      src_any = activation_desc(to_dims(x), dt, ActivationLayout::kNChw16c);
      dst_any = activation_desc(y_dims, dt, ActivationLayout::kNChw16c);
    } else if (wide) {
      src_any = side(to_dims(x), layouts.src, c, p->src_user);
      dst_any = side(y_dims, layouts.dst, m, p->dst_user);
    }
    const memory::desc w_any(w_dims, dt, memory::format_tag::any);
    const auto pk = dnnl::prop_kind::forward_inference;
    // A cache entry's descriptors (the layouts oneDNN chose; deconvolution and convolution
    // descriptors expose the same ones), implementation and sum post-op.
    const auto adopt = [&](const auto& e) {
      src_pd = e.pd.src_desc();
      w_pd = e.pd.weights_desc();
      dst_pd = e.pd.dst_desc();
      p->scratch_md = e.pd.scratchpad_desc();
      p->residual_sum = e.residual_sum;
      impl = e.impl;
    };
    bool wino = !transpose && winograd_enabled() && dt == memory::data_type::f32 && group == 1 &&
                sr == 2 && taps == 9 && c >= kWinoMinChannels && m >= kWinoMinChannels &&
                y_dims[2] * y_dims[3] >= kWinoMinPixels;
    for (size_t d = 0; d < sr; ++d) wino = wino && strides[d] == 1 && dilates[d] == 0;
    // Everything the descriptor depends on (pd_cache.h): accepts(), the layout choice, the
    // fusion patterns and prepare() of this node, and later compiles of an equal conv, share one.
    std::string key;
    key.reserve(512);
    key_append(key, transpose);
    key_append(key, dt);
    append_desc_key(key, src_any);
    append_desc_key(key, w_any);
    key_append(key, p->has_bias);
    if (p->has_bias) append_desc_key(key, p->bias_md);
    append_desc_key(key, dst_any);
    for (const memory::dims* v : {&strides, &dilates, &pad_l, &pad_r}) {
      key_append(key, std::span<const memory::dim>(*v));
    }
    key_append(key, omp_get_max_threads());
    key_append(key, wino);
    for (const ops::fused::PostOp& o : post) {
      key_append(key, static_cast<int>(o.kind));
      key_append(key, o.alpha);
      key_append(key, o.beta);
    }
    // The post-ops in `attr`; whether the residual add became a sum post-op.
    const auto make_attr = [&](dnnl::primitive_attr& attr) {
      dnnl::post_ops pops;
      const bool sum = append_post_ops(pops, post, nullptr) >= 0;
      if (pops.len() > 0) attr.set_post_ops(pops);
      return sum;
    };
    try {
      // Inside the try: oneDNN throws on post-ops it rejects (e.g. a clip with min > max).
      if (transpose) {
        const DeconvEntry e = DeconvCache::global().get(
            key, false,
            [&] {
              DeconvEntry made;
              dnnl::primitive_attr attr = default_attr();
              made.residual_sum = make_attr(attr);
              dnnl::deconvolution_forward::desc d(pk, dnnl::algorithm::deconvolution_direct,
                                                  src_any, w_any, p->bias_md, dst_any, strides,
                                                  dilates, pad_l, pad_r);
              made.pd = dnnl::deconvolution_forward::primitive_desc(d, attr, engine());
              made.impl = made.pd.impl_info_str();
              return made;
            },
            [](DeconvEntry&) {});
        adopt(e);
        if (reorder_weights) p->prim = dnnl::deconvolution_forward(e.pd);
      } else {
        const ConvEntry e = ConvCache::global().get(
            key, false,
            [&] {
              ConvEntry made;
              dnnl::primitive_attr attr = default_attr();
              made.residual_sum = make_attr(attr);
              std::optional<dnnl::convolution_forward::primitive_desc> pd;
              if (wino) {
                try {
                  dnnl::convolution_forward::desc d(pk, dnnl::algorithm::convolution_winograd,
                                                    src_any, w_any, p->bias_md, dst_any, strides,
                                                    dilates, pad_l, pad_r);
                  pd.emplace(d, attr, engine());
                } catch (const dnnl::error&) {
                  pd.reset();  // no Winograd implementation here: direct below
                }
              }
              if (!pd) {
                dnnl::convolution_forward::desc d(pk, dnnl::algorithm::convolution_direct, src_any,
                                                  w_any, p->bias_md, dst_any, strides, dilates,
                                                  pad_l, pad_r);
                pd.emplace(d, attr, engine());
                if (skips_brgconv(sr, cg, pd->impl_info_str())) {
                  dnnl::convolution_forward::primitive_desc next(d, attr, engine());
                  while (next.next_impl()) {
                    if (!skips_brgconv(sr, cg, next.impl_info_str()) &&
                        fast_blocked_impl(next.impl_info_str())) {
                      pd = std::move(next);
                      break;
                    }
                  }
                }
              }
              made.pd = *std::move(pd);
              made.impl = made.pd.impl_info_str();
              return made;
            },
            [](ConvEntry&) {});
        adopt(e);
        if (reorder_weights) p->prim = dnnl::convolution_forward(e.pd);
      }
    } catch (const dnnl::error& e) {
      if (attempt == 0) continue;
      return dnnl_declines(transpose ? "deconvolution" : "convolution", e);
    }
    if (attempt == 0 && !fast_blocked_impl(impl)) continue;
    if (any_blocked && !fast_blocked_impl(impl)) {
      return unimplemented(
          "nhwc / nChw16c activations (oneDNN offers only its {} convolution for them)", impl);
    }
    break;
  }
  p->dst_md = dst_pd;
  p->impl = impl;
  if (!reorder_weights) return std::shared_ptr<LinearPrimitive>(p);
  try {
    p->src_md = src_pd;
    p->dst_md = dst_pd;
    p->w_md = w_pd;
    if (src_pd != p->src_user) p->src_reorder = make_reorder(p->src_user, src_pd);
    if (dst_pd != p->dst_user) p->dst_reorder = make_reorder(dst_pd, p->dst_user);
    if (w_pd != w_user) p->w_reorder = make_reorder(w_user, w_pd);
    if (p->residual_sum && dst_pd != p->res_md) p->res_reorder = make_reorder(p->res_md, dst_pd);
  } catch (const dnnl::error& e) {
    return dnnl_failure(ctx, "weight reorder", e);
  }
  if (const Tensor* wc = ctx.constant_input(1); wc != nullptr) {
    // Constant weights: packed once per process and layout, shared by every specialization.
    FRAME_ASSIGN_OR_RETURN(p->w_packed, pack_weights(ctx, w_user, w_pd, *wc));
  }
  return std::shared_ptr<LinearPrimitive>(p);
}

Result<ops::fused::ActivationLayout> preferred_conv_layout(const NodeContext& ctx) {
  using ops::fused::ActivationLayout;
  std::vector<ops::fused::PostOp> post;
  if (ctx.op == ops::fused::kFusedPostOpsOp) {
    FRAME_ASSIGN_OR_RETURN(ops::fused::FusedSpec spec, ops::fused::decode_fused(ctx));
    if (spec.base_op != "conv") return ActivationLayout::kPlain;
    post = std::move(spec.post_ops);
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<LinearPrimitive> lp, make_conv(ctx, false, post, false));
  const memory::desc& d = static_cast<const ConvPrimitive&>(*lp).dst_md;
  if (d.dims().size() != 4) return ActivationLayout::kPlain;
  for (ActivationLayout l :
       {ActivationLayout::kNhwc, ActivationLayout::kNChw8c, ActivationLayout::kNChw16c}) {
    if (d == activation_desc(d.dims(), d.data_type(), l)) return l;
  }
  return ActivationLayout::kPlain;
}

Status run_linear(KernelContext& ctx) {
  return static_cast<const LinearPrimitive*>(ctx.state)->run(ctx);
}

bool linear_reuse_state(const ops::NodeContext& ctx, const void* state) {
  return state != nullptr && static_cast<const LinearPrimitive*>(state)->serves(ctx);
}

int linear_reorders(const void* state) {
  return static_cast<const LinearPrimitive*>(state)->reorders_per_run();
}

Result<std::shared_ptr<LinearPrimitive>> padding_taps_conv(const NodeContext& ctx,
                                                           std::span<const ops::fused::PostOp> post,
                                                           bool build) {
  if (ctx.run_once) return unimplemented("a conv prepared for one run");
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<LinearPrimitive> base, make_conv(ctx, false, post, false));
  if (base->implementation().find("gemm") == std::string_view::npos) {
    return unimplemented("oneDNN runs it with {}", base->implementation());
  }
  return make_shape_agnostic_conv(ctx, build, post, AgnosticConvUse::kSkipsPaddingTaps);
}

namespace {

// A plain conv prepared for one run (the interpreted tier) runs without a primitive where it
// can (make_shape_agnostic_conv says why). A first-seen key's compile keeps the primitive: its
// tier-up, if the key recurs, finds it in oneDNN's cache.
template <bool kTranspose>
Status accepts_conv(const NodeContext& ctx) {
  if (!kTranspose && ctx.run_once && make_shape_agnostic_conv(ctx, false).is_ok()) {
    return Status();
  }
  return make_conv(ctx, kTranspose, {}, false).status();
}

template <bool kTranspose>
Result<std::shared_ptr<void>> prepare_conv(const NodeContext& ctx) {
  if (!kTranspose && ctx.run_once) {
    if (Result<std::shared_ptr<LinearPrimitive>> p = make_shape_agnostic_conv(ctx); p.is_ok()) {
      return std::shared_ptr<void>(std::move(p).value());
    }
  }
  if (!kTranspose) {
    if (Result<std::shared_ptr<LinearPrimitive>> p = make_winograd_conv(ctx, {}, {}, true);
        p.is_ok()) {
      return std::shared_ptr<void>(std::move(p).value());
    }
    if (Result<std::shared_ptr<LinearPrimitive>> p = padding_taps_conv(ctx, {}, true); p.is_ok()) {
      return std::shared_ptr<void>(std::move(p).value());
    }
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<LinearPrimitive> p, make_conv(ctx, kTranspose, {}, true));
  return std::shared_ptr<void>(std::move(p));
}

FRAME_REGISTER_KERNEL(conv, "onednn", run_linear)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .reorders(linear_reorders)
    .accepts(accepts_conv<false>)
    .prepare(prepare_conv<false>);

FRAME_REGISTER_KERNEL(conv_transpose, "onednn", run_linear)
    .dtypes(DTypeSet{DTypeCode::kFloat32})
    .reorders(linear_reorders)
    .accepts(accepts_conv<true>)
    .prepare(prepare_conv<true>);

}  // namespace
}  // namespace frame::backends::onednn
