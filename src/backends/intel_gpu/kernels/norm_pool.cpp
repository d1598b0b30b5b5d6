// intel_gpu kernels of layer_normalization, instance_normalization (one work-item per
// normalized row / plane: two-pass mean and population variance, then the cpu kernels'
// formulas of nn_norm.cpp) and average_pool (one work-item per output element, the cpu
// kernel's window walk and divisor of nn_pool.cpp). Float dtypes; statistics and sums are in
// the compute type T (the cpu uses double; the cross-backend tolerance covers the difference),
// f16/bf16 outputs are rounded once on store.

#include <fmt/format.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/gpu/layout_util.h"
#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/nn_geometry.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::intel_gpu {
namespace {

using ops::NodeContext;
using ops::nn::WindowGeometry;

// The float spelling of input 0, shared by every present input (an absent optional bias has
// no dtype), or why the node cannot run.
Result<const ClType*> float_type(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  const ClType* t = cl_type(ctx.input_types[0].dtype);
  if (t == nullptr) return unimplemented("no OpenCL spelling of the node's dtype");
  const Device* dev = selected_device();
  if (t->fp64 && !dev->fp64) {
    return unimplemented("the OpenCL device '{}' has no cl_khr_fp64", dev->device_name);
  }
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.input_types[k].dtype != t->dtype) {
      return unimplemented("inputs of different dtypes");
    }
  }
  return t;
}

// Mean and population variance of row `base`, stride 1, `n` elements, into `mean`, `var`.
std::string moments_code(const ClType& t) {
  const std::string x = cl_load(t, "in0", "base + j");
  return fmt::format(
      "  T sum = (T)0;\n"
      "  for (int j = 0; j < n; ++j) sum += {0};\n"
      "  const T mean = sum / (T)n;\n"
      "  T sq = (T)0;\n"
      "  for (int j = 0; j < n; ++j) {{\n"
      "    const T d = {0} - mean;\n"
      "    sq += d * d;\n"
      "  }}\n"
      "  const T var = sq / (T)n;\n",
      x);
}

// ---- layer_normalization ----

// meta: n (normalized elements per row), nr, normalized dims[nr], scale strides[nr], bias
// strides[nr] (0 where scale / bias broadcast). y = (x - mean) * inv * scale + bias with
// inv = 1 / sqrt(var + eps), in the cpu kernel's order.
std::string layer_norm_source(const ClType& t, bool has_bias) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_layer_norm(__global const {0}* in0, __global const {0}* in1, "
             "__global const {0}* in2, __global {0}* out, const int rank, __global const int* m, "
             "const T eps) {{\n"
             "  const int n = m[0], nr = m[1];\n"
             "  __global const int* nd = m + 2;\n"
             "  __global const int* ss = nd + nr;\n"
             "  __global const int* bs = ss + nr;\n"
             "  const int base = (int)get_global_id(0) * n;\n{1}"
             "  const T inv = (T)1 / sqrt(var + eps);\n"
             "  for (int j = 0; j < n; ++j) {{\n"
             "    int rem = j, so = 0, bo = 0;\n"
             "    for (int d = nr - 1; d >= 0; --d) {{\n"
             "      const int q = rem % nd[d];\n"
             "      rem /= nd[d];\n"
             "      so += q * ss[d];\n"
             "      bo += q * bs[d];\n"
             "    }}\n"
             "    const T v = ({2} - mean) * inv * {3}{4};\n"
             "    {5}\n"
             "  }}\n"
             "}}\n",
             t.pointee, moments_code(t), cl_load(t, "in0", "base + j"), cl_load(t, "in1", "so"),
             has_bias ? " + " + cl_load(t, "in2", "bo") : "", cl_store(t, "out", "base + j", "v"));
}

Status layer_norm_accepts(const NodeContext& ctx) {
  if (ctx.num_outputs > 1)
    return unimplemented("layer_normalization with Mean / InvStdDev outputs");
  return float_type(ctx).status();
}

Result<std::shared_ptr<void>> layer_norm_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(layer_norm_accepts(ctx).with_prefix(where(ctx)));
  const ClType& t = *float_type(ctx).value();
  const Shape& x = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(int64_t axis,
                         ops::normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1),
                                             static_cast<int64_t>(x.size()), "attribute 'axis'"));
  const std::span<const int64_t> norm(x.data() + axis, x.size() - static_cast<size_t>(axis));
  const int64_t n = numel_of(norm);
  const bool has_bias = ctx.has_input(2);
  LaunchSpec spec = float_spec(t, layer_norm_source(t, has_bias), "frame_layer_norm", x);
  spec.work_items = static_cast<size_t>(n == 0 ? 0 : numel_of(x) / n);
  spec.raw_meta = std::vector<int64_t>{n, static_cast<int64_t>(norm.size())};
  spec.raw_meta->insert(spec.raw_meta->end(), norm.begin(), norm.end());
  for (size_t k : {size_t{1}, size_t{2}}) {
    const std::vector<int64_t> st = ctx.has_input(k)
                                        ? gpu::aligned_strides(ctx.input_types[k].shape, norm)
                                        : std::vector<int64_t>(norm.size(), 0);
    spec.raw_meta->insert(spec.raw_meta->end(), st.begin(), st.end());
  }
  if (!has_bias) spec.num_inputs = 2;
  spec.input_slots = 3;  // the kernel declares in2 (read only with a bias)
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  FRAME_RETURN_IF_ERROR(set_t_arg(*l, t, 6, ctx.attr_or<double>("epsilon", 1e-5)));
  return std::shared_ptr<void>(std::move(l));
}

// ---- instance_normalization ----

// meta: C, plane. y = (x - mean) * a + bias[c], a = scale[c] / sqrt(var + eps) (the cpu
// kernel's formula).
std::string instance_norm_source(const ClType& t) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_instance_norm(__global const {0}* in0, __global const {0}* "
             "in1, __global const {0}* in2, __global {0}* out, const int rank, __global const "
             "int* m, const T eps) {{\n"
             "  const int p = (int)get_global_id(0);\n"
             "  const int c = p % m[0], n = m[1], base = p * n;\n{1}"
             "  const T a = {2} / sqrt(var + eps);\n"
             "  const T b = {3};\n"
             "  for (int j = 0; j < n; ++j) {{\n"
             "    const T v = ({4} - mean) * a + b;\n"
             "    {5}\n"
             "  }}\n"
             "}}\n",
             t.pointee, moments_code(t), cl_load(t, "in1", "c"), cl_load(t, "in2", "c"),
             cl_load(t, "in0", "base + j"), cl_store(t, "out", "base + j", "v"));
}

Status instance_norm_accepts(const NodeContext& ctx) { return float_type(ctx).status(); }

Result<std::shared_ptr<void>> instance_norm_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = float_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& x = ctx.input_types[0].shape;
  if (x.size() < 2) return ctx.error("input rank {} < 2", x.size());
  const int64_t planes = x[0] * x[1];
  LaunchSpec spec = float_spec(**t, instance_norm_source(**t), "frame_instance_norm", x);
  spec.work_items = static_cast<size_t>(planes);
  spec.raw_meta = std::vector<int64_t>{x[1], planes == 0 ? 0 : numel_of(x) / planes};
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  FRAME_RETURN_IF_ERROR(set_t_arg(*l, **t, 6, ctx.attr_or<double>("epsilon", 1e-5)));
  return std::shared_ptr<void>(std::move(l));
}

// ---- average_pool ----

// meta: count_include_pad, r, in[r], kernel[r], strides[r], dilations[r], pad_begin[r],
// pad_end[r], out[r]. A tap counts when inside the input, or with count_include_pad when
// inside the padded input (the explicit pads; ceil_mode windows may reach beyond them); a
// window with nothing counted gives NaN, as on cpu.
std::string average_pool_source(const ClType& t) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_average_pool(__global const {0}* in0, __global {0}* out, "
             "const int rank, __global const int* m) {{\n"
             "  const int include_pad = m[0], r = m[1];\n"
             "  __global const int* in_d = m + 2;\n"
             "  __global const int* ker = in_d + r;\n"
             "  __global const int* str = ker + r;\n"
             "  __global const int* dil = str + r;\n"
             "  __global const int* pb = dil + r;\n"
             "  __global const int* pe = pb + r;\n"
             "  __global const int* out_d = pe + r;\n"
             "  int in_plane = 1, taps = 1, out_plane = 1;\n"
             "  for (int d = 0; d < r; ++d) {{\n"
             "    in_plane *= in_d[d];\n"
             "    taps *= ker[d];\n"
             "    out_plane *= out_d[d];\n"
             "  }}\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const int p = i % out_plane, base = (i / out_plane) * in_plane;\n"
             "  T sum = (T)0;\n"
             "  int count = 0;\n"
             "  for (int t = 0; t < taps; ++t) {{\n"
             "    int pr = p, tr = t, off = 0, scale = 1;\n"
             "    bool inside = true, padded = true;\n"
             "    for (int d = r - 1; d >= 0; --d) {{\n"
             "      const int od = pr % out_d[d];\n"
             "      pr /= out_d[d];\n"
             "      const int kd = tr % ker[d];\n"
             "      tr /= ker[d];\n"
             "      const int c = od * str[d] - pb[d] + kd * dil[d];\n"
             "      inside = inside && c >= 0 && c < in_d[d];\n"
             "      padded = padded && c >= -pb[d] && c < in_d[d] + pe[d];\n"
             "      off += c * scale;\n"
             "      scale *= in_d[d];\n"
             "    }}\n"
             "    if (inside) sum += {1};\n"
             "    if (include_pad ? padded : inside) ++count;\n"
             "  }}\n"
             "  const T v = count > 0 ? sum / (T)count : (T)NAN;\n"
             "  {2}\n"
             "}}\n",
             t.pointee, cl_load(t, "in0", "base + off"), cl_store(t, "out", "i", "v"));
}

Status average_pool_accepts(const NodeContext& ctx) { return float_type(ctx).status(); }

Result<std::shared_ptr<void>> average_pool_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = float_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& x = ctx.input_types[0].shape;
  if (x.size() < 3) return ctx.error("input rank {} < 3", x.size());
  const auto* ks = ctx.attr<std::vector<int64_t>>("kernel_shape");
  if (ks == nullptr) return ctx.error("missing required attribute 'kernel_shape'");
  FRAME_ASSIGN_OR_RETURN(WindowGeometry g,
                         ops::nn::resolve_window(ctx, std::span(x.data() + 2, x.size() - 2), *ks,
                                                 ops::nn::WindowKind::kPool));
  Shape out = {x[0], x[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  LaunchSpec spec = float_spec(**t, average_pool_source(**t), "frame_average_pool", std::move(out));
  spec.raw_meta =
      std::vector<int64_t>{ctx.attr_or<int64_t>("count_include_pad", 0) != 0 ? 1 : 0, g.rank};
  for (const auto* v :
       {&g.in, &g.kernel, &g.strides, &g.dilations, &g.pad_begin, &g.pad_end, &g.out}) {
    spec.raw_meta->insert(spec.raw_meta->end(), v->begin(), v->end());
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

}  // namespace

FRAME_REGISTER_KERNEL(layer_normalization, "intel_gpu", run_launch)
    .prepare(layer_norm_prepare)
    .accepts(layer_norm_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(instance_normalization, "intel_gpu", run_launch)
    .prepare(instance_norm_prepare)
    .accepts(instance_norm_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(average_pool, "intel_gpu", run_launch)
    .prepare(average_pool_prepare)
    .accepts(average_pool_accepts)
    .dtypes(kClTypes);

}  // namespace frame::backends::intel_gpu
