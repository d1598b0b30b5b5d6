// onednn kernels for BatchNormalization (inference), InstanceNormalization, LayerNormalization
// and LRN, built at prepare time on reshaped plain views:
//   batch_normalization f32     y = x * a[c] + b[c], a and b folded from scale, B, mean, var
//                               (at prepare time when they are constants); our own loop,
//                               because oneDNN's plain-layout batch norm is slower than it
//   batch_normalization bf16    oneDNN batch_normalization, global stats, [N, C, 1, prod(D)]
//   instance_normalization f32  oneDNN layer_normalization of each (n, c) plane [N*C, prod(D)]
//                               (population variance), then y * scale[c] + B[c] in place
//   instance_normalization bf16 oneDNN batch_normalization in training mode on
//                               [1, N*C, 1, prod(D)], scale and B tiled over N
//   layer_normalization         oneDNN layer_normalization on [outer, inner]
//   lrn                         oneDNN lrn_across_channels on [N, C, prod(D), 1] (oneDNN's
//                               alpha is ONNX's: both divide it by size); odd sizes only
// Per-channel parameters are f32 vectors (nn::ParamPlan): the input itself, a copy made at
// prepare time for constants, or a per-run conversion into thread-local staging.

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/onednn/dnnl_util.h"
#include "backends/onednn/kernels/ew_vec.h"
#include "backends/onednn/kernels/laid_out.h"
#include "backends/onednn/kernels/nn_common.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/parallel.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::onednn {
namespace {

using dnnl::memory;
using dnnl::normalization_flags;
using ops::KernelContext;
using ops::NodeContext;

constexpr DTypeSet kNormDTypes{DTypeCode::kFloat32, DTypeCode::kBFloat16};

// How a batch/instance normalization or lrn node runs (decided at prepare time).
enum class Form : uint8_t {
  kPrimitive,  // one oneDNN primitive (bf16 normalizations, lrn)
  kAffine,     // f32 batch_normalization: y = x * a[c] + b[c], our own loop
  kRowNorm,    // f32 instance_normalization: oneDNN layer_normalization of each (n, c) plane,
               // then y = y * scale[c] + B[c] in place
};

// Prepared state of batch/instance normalization and lrn; read-only at run time.
struct NormState {
  Form form = Form::kPrimitive;
  bool empty = false;
  memory::desc data, scratch;
  dnnl::primitive prim;
  // kPrimitive: DNNL_ARG_* of each parameter input. kAffine: scale, B, mean, var. kRowNorm:
  // scale, B.
  std::vector<std::pair<int, nn::ParamPlan>> params;
  // > 0: MEAN and VARIANCE are primitive outputs of this many floats each, discarded (staged).
  int64_t stats = 0;
  // kAffine / kRowNorm: [n, c, s] view of the input.
  int64_t n = 0, c = 0, s = 0;
  float eps = 0;
  // kAffine with constant parameters: a = scale / sqrt(var + eps), b = B - mean * a.
  std::vector<float> a, b;
  // kAffine on a rank-4 input stored nhwc ([n * s, c] rows) or channel-blocked ([n * c / b]
  // planes of s pixels of b lanes) by laid_out_internal; kPlain for the node's own layout.
  ops::fused::ActivationLayout layout = ops::fused::ActivationLayout::kPlain;
};

struct NormPlan {
  Form form = Form::kPrimitive;
  memory::dims dims;
  memory::data_type dt{};
  std::vector<std::pair<int, nn::ParamPlan>> params;
  int64_t stats = 0;
  bool empty = false;
  int64_t n = 0, c = 0, s = 0;
};

Result<memory::data_type> data_type_of(const NodeContext& node) {
  const auto dt = to_dnnl(node.input_types[0].dtype);
  if (!dt)
    return unimplemented("no oneDNN data type for {}", dtype_name(node.input_types[0].dtype));
  return *dt;
}

// [N, C, prod(D...)] of an [N, C, D...] input (prod = 1 for rank 2).
memory::dims ncs_dims(const Shape& x) {
  const int64_t s = numel_of(std::span(x.data() + 2, x.size() - 2));
  return {x[0], x[1], s};
}

// A plan with the data type, [N, C, S] (ncs_dims) and emptiness of the node's input set.
Result<NormPlan> ncs_plan(const NodeContext& node) {
  NormPlan p;
  FRAME_ASSIGN_OR_RETURN(p.dt, data_type_of(node));
  const memory::dims ncs = ncs_dims(node.input_types[0].shape);
  p.n = ncs[0];
  p.c = ncs[1];
  p.s = ncs[2];
  p.empty = numel_of(node.input_types[0].shape) == 0;
  return p;
}

// [N, C, 1, S]: oneDNN's vectorized batch normalization takes 4-D and 5-D plain layouts only.
memory::dims nc1s(int64_t n, int64_t c, int64_t s) { return {n, c, 1, s}; }

// f32 data runs on our own loops (kAffine, kRowNorm): oneDNN's batch normalization on plain
// layouts is slower than one fused multiply-add pass.
bool is_f32(const NodeContext& node) {
  return DTypeSet{DTypeCode::kFloat32}.contains(node.input_types[0].dtype);
}

// Builds the batch_normalization primitive descriptor of a plan.
Result<dnnl::batch_normalization_forward::primitive_desc> bn_pd(const NodeContext& node,
                                                                const NormPlan& p, bool training) {
  const float eps = static_cast<float>(node.attr_or<double>("epsilon", 1e-5));
  normalization_flags flags = normalization_flags::use_scale | normalization_flags::use_shift;
  if (!training) flags = flags | normalization_flags::use_global_stats;
  try {
    dnnl::batch_normalization_forward::desc d(
        training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference,
        plain_desc(p.dims, p.dt), eps, flags);
    return dnnl::batch_normalization_forward::primitive_desc(d, default_attr(), engine());
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "batch_normalization", e);
  }
}

Result<NormPlan> plan_batch_norm(const NodeContext& node) {
  if (node.attr_or<int64_t>("training_mode", 0) != 0) {
    return unimplemented("batch_normalization with training_mode=1 (batch statistics)");
  }
  FRAME_ASSIGN_OR_RETURN(NormPlan p, ncs_plan(node));
  p.dims = nc1s(p.n, p.c, p.s);
  p.form = is_f32(node) ? Form::kAffine : Form::kPrimitive;
  static constexpr int kArgs[] = {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE};
  for (int i = 0; i < 4; ++i) {
    p.params.emplace_back(kArgs[i], nn::ParamPlan::make(node, i + 1, p.c, {}));
  }
  return p;
}

Result<NormPlan> plan_instance_norm(const NodeContext& node) {
  FRAME_ASSIGN_OR_RETURN(NormPlan p, ncs_plan(node));
  if (is_f32(node)) {
    p.form = Form::kRowNorm;
    p.dims = {p.n * p.c, p.s};
    p.params.emplace_back(DNNL_ARG_SCALE, nn::ParamPlan::make(node, 1, p.c, {}));
    p.params.emplace_back(DNNL_ARG_SHIFT, nn::ParamPlan::make(node, 2, p.c, {}));
    return p;
  }
  p.dims = nc1s(1, p.n * p.c, p.s);
  std::vector<int64_t> tile;
  if (p.n > 1) {
    tile.resize(static_cast<size_t>(p.n * p.c));
    for (int64_t i = 0; i < p.n * p.c; ++i) tile[static_cast<size_t>(i)] = i % p.c;
  }
  p.params.emplace_back(DNNL_ARG_SCALE, nn::ParamPlan::make(node, 1, p.n * p.c, tile));
  p.params.emplace_back(DNNL_ARG_SHIFT, nn::ParamPlan::make(node, 2, p.n * p.c, tile));
  p.stats = p.n * p.c;
  return p;
}

Result<NormPlan> plan_lrn(const NodeContext& node) {
  const int64_t size = node.attr_or<int64_t>("size", 1);
  if (size % 2 == 0) {
    // ONNX sums channels [c - floor((size-1)/2), c + ceil((size-1)/2)]; oneDNN's window is
    // symmetric (size - 1 neighbours split evenly), so they differ for even sizes.
    return unimplemented("lrn with an even size {} (oneDNN's channel window is symmetric)", size);
  }
  NormPlan p;
  FRAME_ASSIGN_OR_RETURN(p.dt, data_type_of(node));
  const memory::dims ncs = ncs_dims(node.input_types[0].shape);
  p.dims = {ncs[0], ncs[1], ncs[2], 1};
  p.empty = numel_of(node.input_types[0].shape) == 0;
  return p;
}

enum class NormKind : uint8_t { kBatch, kInstance, kLrn };

// The plan and primitive descriptor of a node (pd empty for an empty input or kAffine).
Result<std::pair<NormPlan, dnnl::primitive_desc>> plan_norm(const NodeContext& node,
                                                            NormKind kind) {
  NormPlan p;
  if (kind == NormKind::kBatch) {
    FRAME_ASSIGN_OR_RETURN(p, plan_batch_norm(node));
  } else if (kind == NormKind::kInstance) {
    FRAME_ASSIGN_OR_RETURN(p, plan_instance_norm(node));
  } else {
    FRAME_ASSIGN_OR_RETURN(p, plan_lrn(node));
  }
  if (p.empty || p.form == Form::kAffine) return std::pair{std::move(p), dnnl::primitive_desc()};
  try {
    if (p.form == Form::kRowNorm) {
      dnnl::layer_normalization_forward::desc d(
          dnnl::prop_kind::forward_inference, plain_desc(p.dims, p.dt),
          static_cast<float>(node.attr_or<double>("epsilon", 1e-5)), normalization_flags::none);
      dnnl::primitive_desc pd =
          dnnl::layer_normalization_forward::primitive_desc(d, default_attr(), engine());
      return std::pair{std::move(p), std::move(pd)};
    }
    if (kind != NormKind::kLrn) {
      FRAME_ASSIGN_OR_RETURN(auto pd, bn_pd(node, p, kind == NormKind::kInstance));
      return std::pair{std::move(p), dnnl::primitive_desc(std::move(pd))};
    }
    const int64_t size = node.attr_or<int64_t>("size", 1);
    dnnl::lrn_forward::desc d(dnnl::prop_kind::forward_inference,
                              dnnl::algorithm::lrn_across_channels, plain_desc(p.dims, p.dt), size,
                              static_cast<float>(node.attr_or<double>("alpha", 1e-4)),
                              static_cast<float>(node.attr_or<double>("beta", 0.75)),
                              static_cast<float>(node.attr_or<double>("bias", 1.0)));
    dnnl::primitive_desc pd = dnnl::lrn_forward::primitive_desc(d, default_attr(), engine());
    return std::pair{std::move(p), std::move(pd)};
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, kind == NormKind::kLrn ? "lrn" : "normalization", e);
  }
}

template <NormKind kKind>
Status norm_accepts(const NodeContext& node) {
  return nn::decline(plan_norm(node, kKind).status());
}

// a = scale / sqrt(var + eps) and b = B - mean * a per channel (in double, stored as f32).
void fold_affine(const float* scale, const float* bias, const float* mean, const float* var,
                 float eps, int64_t c, float* a, float* b) {
  for (int64_t i = 0; i < c; ++i) {
    const double ai = static_cast<double>(scale[i]) / std::sqrt(static_cast<double>(var[i]) + eps);
    a[i] = static_cast<float>(ai);
    b[i] = static_cast<float>(static_cast<double>(bias[i]) - static_cast<double>(mean[i]) * ai);
  }
}

// y = x * a[c] + b[c] over an [n, c, s] tensor (x may alias y), parallel over (n, c) planes.
void channel_affine(const float* x, float* y, const float* a, const float* b, int64_t n, int64_t c,
                    int64_t s, int threads) {
  ops::parallel_for(n * c, n * c * s > 32768 ? threads : 1, [&](int64_t plane) {
    const int64_t ic = plane % c;
    const float av = a[ic], bv = b[ic];
    const float* xp = x + plane * s;
    float* yp = y + plane * s;
    for (int64_t i = 0; i < s; ++i) yp[i] = xp[i] * av + bv;
  });
}

// y = x * a[c] + b[c] over `rows` pixels of c channels each (channels-last), parallel over
// pixels.
void pixel_affine(const float* x, float* y, const float* a, const float* b, int64_t rows, int64_t c,
                  int threads) {
  ops::parallel_for(rows, (rows * c > 32768) ? threads : 1, [&](int64_t r) {
    const float* xp = x + r * c;
    float* yp = y + r * c;
    for (int64_t i = 0; i < c; ++i) yp[i] = xp[i] * a[i] + b[i];
  });
}

// y = x * a[c] + b[c] over n images of c channels stored in blocks of kBlock ([n][c / kBlock]
// planes of s pixels of kBlock lanes), parallel over planes (kBlock a constant, so the lane
// loop is one vector).
template <int64_t kBlock>
void block_affine(const float* x, float* y, const float* a, const float* b, int64_t n, int64_t c,
                  int64_t s, int threads) {
  const int64_t blocks = c / kBlock;
  ops::parallel_for(n * blocks, n * c * s > 32768 ? threads : 1, [&](int64_t plane) {
    const int64_t c0 = (plane % blocks) * kBlock;
    float av[kBlock], bv[kBlock];
    std::copy_n(a + c0, kBlock, av);
    std::copy_n(b + c0, kBlock, bv);
    const float* xp = x + plane * s * kBlock;
    float* yp = y + plane * s * kBlock;
    for (int64_t p = 0; p < s; ++p) {
      for (int64_t l = 0; l < kBlock; ++l) yp[p * kBlock + l] = xp[p * kBlock + l] * av[l] + bv[l];
    }
  });
}

template <NormKind kKind>
Result<std::shared_ptr<void>> norm_prepare(const NodeContext& node) {
  FRAME_ASSIGN_OR_RETURN(auto planned, plan_norm(node, kKind));
  auto& [p, pd] = planned;
  auto st = std::make_shared<NormState>();
  st->form = p.form;
  st->empty = p.empty;
  st->params = std::move(p.params);
  st->stats = p.stats;
  st->n = p.n;
  st->c = p.c;
  st->s = p.s;
  st->eps = static_cast<float>(node.attr_or<double>("epsilon", 1e-5));
  if (st->empty) return std::shared_ptr<void>(st);
  if (st->form == Form::kAffine) {
    const Tensor* k[4];
    bool constant = true;
    for (size_t i = 0; i < 4; ++i) {
      k[i] = node.constant_input(i + 1);
      constant = constant && k[i] != nullptr;
    }
    if (constant) {
      st->a.resize(static_cast<size_t>(st->c));
      st->b.resize(static_cast<size_t>(st->c));
      for (int64_t i = 0; i < st->c; ++i) {
        const double a = k[0]->element_as_double(i) /
                         std::sqrt(k[3]->element_as_double(i) + static_cast<double>(st->eps));
        st->a[static_cast<size_t>(i)] = static_cast<float>(a);
        st->b[static_cast<size_t>(i)] =
            static_cast<float>(k[1]->element_as_double(i) - k[2]->element_as_double(i) * a);
      }
    }
    return std::shared_ptr<void>(st);
  }
  try {
    st->data = pd.src_desc();
    st->scratch = pd.scratchpad_desc();
    st->prim = dnnl::primitive(pd);
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "normalization primitive", e);
  }
  return std::shared_ptr<void>(st);
}

// f32 batch normalization: one multiply-add pass with folded per-channel a, b.
Status affine_batch_norm(KernelContext& ctx, const NormState& st) {
  const float* a = st.a.data();
  const float* b = st.b.data();
  if (st.a.empty()) {
    int64_t staged = 2 * st.c;
    for (const auto& [arg, pp] : st.params) staged += pp.staged();
    float* stage = nn::staging_floats(static_cast<size_t>(staged));
    const float* v[4];
    for (size_t i = 0; i < 4; ++i) {
      v[i] = st.params[i].second.data(ctx, stage);
      stage += st.params[i].second.staged();
    }
    fold_affine(v[0], v[1], v[2], v[3], st.eps, st.c, stage, stage + st.c);
    a = stage;
    b = stage + st.c;
  }
  if (st.layout == ops::fused::ActivationLayout::kNhwc) {
    pixel_affine(ctx.input(0).data<float>(), ctx.output(0).data<float>(), a, b, st.n * st.s, st.c,
                 ctx.num_threads);
  } else if (st.layout == ops::fused::ActivationLayout::kNChw8c) {
    block_affine<8>(ctx.input(0).data<float>(), ctx.output(0).data<float>(), a, b, st.n, st.c, st.s,
                    ctx.num_threads);
  } else if (st.layout == ops::fused::ActivationLayout::kNChw16c) {
    block_affine<16>(ctx.input(0).data<float>(), ctx.output(0).data<float>(), a, b, st.n, st.c,
                     st.s, ctx.num_threads);
  } else {
    channel_affine(ctx.input(0).data<float>(), ctx.output(0).data<float>(), a, b, st.n, st.c, st.s,
                   ctx.num_threads);
  }
  return Status();
}

Status norm_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const NormState*>(ctx.state);
  if (st.empty) return Status();
  if (st.form == Form::kAffine) return affine_batch_norm(ctx, st);
  int64_t staged = 2 * st.stats;
  for (const auto& [arg, pp] : st.params) staged += pp.staged();
  float* stage = nn::staging_floats(static_cast<size_t>(staged));
  Status s;
  try {
    nn::ArgList<8> args;
    auto add = [&](int arg, memory mem) { args.add(arg, std::move(mem)); };
    add(DNNL_ARG_SRC, wrap(st.data, ctx.input(0)));
    add(DNNL_ARG_DST, wrap(st.data, ctx.output(0)));
    if (st.form == Form::kPrimitive) {
      for (const auto& [arg, pp] : st.params) {
        add(arg, nn::wrap_floats(pp.data(ctx, stage), pp.size));
        stage += pp.staged();
      }
      for (int64_t k = 0; k < (st.stats > 0 ? 2 : 0); ++k) {
        add(k == 0 ? DNNL_ARG_MEAN : DNNL_ARG_VARIANCE, nn::wrap_floats(stage, st.stats));
        stage += st.stats;
      }
    }
    s = nn::execute(*ctx.node, st.prim, st.scratch, args.span());
  } catch (const dnnl::error& e) {
    return dnnl_failure(*ctx.node, "normalization memory", e);
  }
  if (s.is_ok() && st.form == Form::kRowNorm) {
    const float* scale = st.params[0].second.data(ctx, stage);
    stage += st.params[0].second.staged();
    const float* bias = st.params[1].second.data(ctx, stage);
    float* y = ctx.output(0).data<float>();
    channel_affine(y, y, scale, bias, st.n, st.c, st.s, ctx.num_threads);
  }
  return s;
}

FRAME_REGISTER_KERNEL(batch_normalization, "onednn", norm_kernel)
    .dtypes(kNormDTypes)
    .accepts(norm_accepts<NormKind::kBatch>)
    .prepare(norm_prepare<NormKind::kBatch>);
FRAME_REGISTER_KERNEL(instance_normalization, "onednn", norm_kernel)
    .dtypes(kNormDTypes)
    .accepts(norm_accepts<NormKind::kInstance>)
    .prepare(norm_prepare<NormKind::kInstance>);
FRAME_REGISTER_KERNEL(lrn, "onednn", norm_kernel)
    .dtypes(kNormDTypes)
    .accepts(norm_accepts<NormKind::kLrn>)
    .prepare(norm_prepare<NormKind::kLrn>);

// ---- layer_normalization ----

struct LayerNormState {
  bool empty = false;
  // A first-seen shape's f32 node (NodeContext::run_once) without statistics outputs: the row
  // loop, no primitive (a oneDNN layer_normalization primitive is JIT code for one size, about
  // 20 us to create per node and size against ~2 us to run a BERT-style row block).
  const VecTable* rows = nullptr;
  int64_t inner = 0;
  memory::desc data, stat, scratch;
  dnnl::primitive prim;
  nn::ParamPlan scale, shift;
  bool has_shift = false;
  int64_t outer = 0;
  float eps = 0;
};

// Source index of each of the numel(norm) elements of a parameter of shape `s` that
// broadcasts (unidirectionally) to `norm`; empty when it is dense (no broadcast).
std::vector<int64_t> broadcast_index(const Shape& s, std::span<const int64_t> norm) {
  const int64_t n = numel_of(norm);
  if (numel_of(s) == n) return {};
  std::vector<int64_t> idx(static_cast<size_t>(n));
  const size_t r = norm.size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, off = 0, st = 1;
    for (size_t d = 0; d < r; ++d) {
      const int64_t v = rem % norm[r - 1 - d];
      rem /= norm[r - 1 - d];
      if (d < s.size()) {
        const int64_t sd = s[s.size() - 1 - d];
        if (sd != 1) off += v * st;
        st *= sd;
      }
    }
    idx[static_cast<size_t>(i)] = off;
  }
  return idx;
}

Result<
    std::pair<std::shared_ptr<LayerNormState>, dnnl::layer_normalization_forward::primitive_desc>>
plan_layer_norm(const NodeContext& node) {
  const ir::TensorType& x = node.input_types[0];
  FRAME_ASSIGN_OR_RETURN(int64_t axis, ops::normalize_axis(node, node.attr_or<int64_t>("axis", -1),
                                                           x.rank(), "attribute 'axis'"));
  const bool stats = node.num_outputs > 1;
  if (stats && node.attr_or<int64_t>("stash_type", 1) != 1) {
    return unimplemented(
        "layer_normalization Mean/InvStdDev outputs with stash_type={} (oneDNN "
        "gives f32 statistics only)",
        node.attr_or<int64_t>("stash_type", 1));
  }
  FRAME_ASSIGN_OR_RETURN(memory::data_type dt, data_type_of(node));
  const std::span<const int64_t> norm(x.shape.data() + axis, x.shape.size() - axis);
  auto st = std::make_shared<LayerNormState>();
  const int64_t inner = numel_of(norm);
  st->outer = inner == 0 ? 0 : numel_of(x.shape) / inner;
  st->eps = static_cast<float>(node.attr_or<double>("epsilon", 1e-5));
  st->scale = nn::ParamPlan::make(node, 1, inner, broadcast_index(node.input_types[1].shape, norm));
  st->has_shift = node.has_input(2);
  if (st->has_shift) {
    st->shift =
        nn::ParamPlan::make(node, 2, inner, broadcast_index(node.input_types[2].shape, norm));
  }
  st->empty = numel_of(x.shape) == 0;
  if (st->empty) return std::pair{st, dnnl::layer_normalization_forward::primitive_desc()};
  st->inner = inner;
  if (node.run_once && !stats && DTypeSet{DTypeCode::kFloat32}.contains(x.dtype) &&
      vec_table().layer_norm_row != nullptr) {
    st->rows = &vec_table();
    return std::pair{st, dnnl::layer_normalization_forward::primitive_desc()};
  }
  normalization_flags flags = normalization_flags::use_scale;
  if (st->has_shift) flags = flags | normalization_flags::use_shift;
  const int64_t dims[2] = {st->outer, inner};
  const int64_t sdims[1] = {st->outer};
  try {
    const memory::desc md = plain_desc(dims, dt);
    const memory::desc sd = plain_desc(sdims, memory::data_type::f32);
    dnnl::layer_normalization_forward::desc d(
        stats ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, md, sd,
        st->eps, flags);
    return std::pair{
        st, dnnl::layer_normalization_forward::primitive_desc(d, default_attr(), engine())};
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "layer_normalization", e);
  }
}

Status layer_norm_accepts(const NodeContext& node) {
  return nn::decline(plan_layer_norm(node).status());
}

Result<std::shared_ptr<void>> layer_norm_prepare(const NodeContext& node) {
  FRAME_ASSIGN_OR_RETURN(auto planned, plan_layer_norm(node));
  auto& [st, pd] = planned;
  if (st->empty || st->rows != nullptr) return std::shared_ptr<void>(st);
  try {
    st->data = pd.src_desc();
    st->stat = plain_desc(std::span<const int64_t>(&st->outer, 1), memory::data_type::f32);
    st->scratch = pd.scratchpad_desc();
    st->prim = dnnl::layer_normalization_forward(pd);
  } catch (const dnnl::error& e) {
    return dnnl_failure(node, "layer_normalization primitive", e);
  }
  return std::shared_ptr<void>(st);
}

Status layer_norm_kernel(KernelContext& ctx) {
  const auto& st = *static_cast<const LayerNormState*>(ctx.state);
  if (st.empty) return Status();
  if (st.rows != nullptr) {
    float* stage = nn::staging_floats(
        static_cast<size_t>(st.scale.staged() + (st.has_shift ? st.shift.staged() : 0)));
    const float* gamma = st.scale.data(ctx, stage);
    const float* beta = st.has_shift ? st.shift.data(ctx, stage + st.scale.staged()) : nullptr;
    const float* x = ctx.input(0).data<float>();
    float* y = ctx.output(0).data<float>();
    const auto n = static_cast<size_t>(st.inner);
    ops::parallel_ranges(st.outer, ctx.num_threads, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        st.rows->layer_norm_row(x + r * st.inner, y + r * st.inner, n, st.eps, gamma, beta);
      }
    });
    return Status();
  }
  const size_t outs = ctx.outputs.size();
  // The variance goes to InvStdDev's buffer (then inverted in place) or to staging.
  const int64_t staged =
      st.scale.staged() + (st.has_shift ? st.shift.staged() : 0) + (outs == 2 ? st.outer : 0);
  float* stage = nn::staging_floats(static_cast<size_t>(staged));
  Status s;
  float* var = nullptr;
  try {
    nn::ArgList<6> args;
    auto add = [&](int arg, memory mem) { args.add(arg, std::move(mem)); };
    add(DNNL_ARG_SRC, wrap(st.data, ctx.input(0)));
    add(DNNL_ARG_DST, wrap(st.data, ctx.output(0)));
    add(DNNL_ARG_SCALE, nn::wrap_floats(st.scale.data(ctx, stage), st.scale.size));
    stage += st.scale.staged();
    if (st.has_shift) {
      add(DNNL_ARG_SHIFT, nn::wrap_floats(st.shift.data(ctx, stage), st.shift.size));
      stage += st.shift.staged();
    }
    if (outs > 1) {
      var = outs > 2 ? ctx.output(2).data<float>() : stage;
      add(DNNL_ARG_MEAN, wrap(st.stat, ctx.output(1)));
      add(DNNL_ARG_VARIANCE, nn::wrap_floats(var, st.outer));
    }
    s = nn::execute(*ctx.node, st.prim, st.scratch, args.span());
  } catch (const dnnl::error& e) {
    return dnnl_failure(*ctx.node, "layer_normalization memory", e);
  }
  if (s.is_ok() && outs > 2) {
    for (int64_t i = 0; i < st.outer; ++i) var[i] = 1.0f / std::sqrt(var[i] + st.eps);
  }
  return s;
}

FRAME_REGISTER_KERNEL(layer_normalization, "onednn", layer_norm_kernel)
    .dtypes(kNormDTypes)
    .accepts(layer_norm_accepts)
    .prepare(layer_norm_prepare);

}  // namespace

Status laid_out_batch_norm_accepts(const NodeContext& node) {
  FRAME_ASSIGN_OR_RETURN(NormPlan p, plan_batch_norm(node));
  if (p.form != Form::kAffine) {
    return unimplemented("laid-out batch_normalization runs f32 only (the affine loop)");
  }
  return Status();
}

Result<std::shared_ptr<void>> laid_out_batch_norm_prepare(const NodeContext& node,
                                                          ops::fused::ActivationLayout layout) {
  FRAME_RETURN_IF_ERROR(laid_out_batch_norm_accepts(node));
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<void> st, norm_prepare<NormKind::kBatch>(node));
  static_cast<NormState*>(st.get())->layout = layout;
  return st;
}

Status run_norm(KernelContext& ctx) { return norm_kernel(ctx); }

}  // namespace frame::backends::onednn
