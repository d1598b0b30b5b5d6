// intel_gpu kernels for the ops of a CNN forward pass: conv (1-D/2-D: implicit GEMM on the
// tiled GEMM of tiled_gemm.h; depthwise-like and 3-D: direct, one work-item per output
// element, with 2-D index arithmetic below 3-D), max_pool, global average/max pool,
// batch_normalization (inference), gemm (tiled; vector products one work-item per output element)
// and the copy-through layout ops (reshape, flatten, squeeze, unsqueeze). Kernels for any OpenCL
// device; oneDNN's GPU engine on Intel GPUs is not written yet (docs/backends/intel-gpu.md).
// Accumulation is in the compute type T.

#include <fmt/format.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "backends/intel_gpu/kernels/onednn_gpu.h"
#include "backends/intel_gpu/kernels/tiled_gemm.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::intel_gpu {
namespace {

using ops::NodeContext;
using ops::nn::WindowGeometry;
using ops::nn::WindowKind;

// The window geometry as meta: r, in[r], kernel[r], strides[r], dilations[r], pad_begin[r],
// out[r]; the kernels read it through `g` with this prelude.
void append_window(const WindowGeometry& g, std::vector<int64_t>& meta) {
  meta.push_back(g.rank);
  for (const auto* v : {&g.in, &g.kernel, &g.strides, &g.dilations, &g.pad_begin, &g.out}) {
    meta.insert(meta.end(), v->begin(), v->end());
  }
}
constexpr const char* kWindowCode = R"(  const int r = w[0];
  __global const int* in_d = w + 1;
  __global const int* ker = in_d + r;
  __global const int* str = ker + r;
  __global const int* dil = str + r;
  __global const int* pb = dil + r;
  __global const int* out_d = pb + r;
  int in_plane = 1, taps = 1, out_plane = 1;
  for (int d = 0; d < r; ++d) {
    in_plane *= in_d[d];
    taps *= ker[d];
    out_plane *= out_d[d];
  }
)";

// Decomposes output position `p` (within a plane) and tap `t` into the input offset; false
// in the padding.
constexpr const char* kTapCode = R"(
inline bool frame_tap(__global const int* w, int p, int t, int* off) {
  const int r = w[0];
  __global const int* in_d = w + 1;
  __global const int* ker = in_d + r;
  __global const int* str = ker + r;
  __global const int* dil = str + r;
  __global const int* pb = dil + r;
  __global const int* out_d = pb + r;
  int o = 0;
  bool inside = true;
  int pr = p, tr = t;
  int scale = 1;
  for (int d = r - 1; d >= 0; --d) {
    const int od = pr % out_d[d];
    pr /= out_d[d];
    const int kd = tr % ker[d];
    tr /= ker[d];
    const int c = od * str[d] - pb[d] + kd * dil[d];
    inside = inside && c >= 0 && c < in_d[d];
    o += c * scale;
    scale *= in_d[d];
  }
  *off = o;
  return inside;
}
)";

// ---- conv ----

std::string conv_source(const ClType& t, bool has_bias) {
  std::string s = cl_type_prelude(t) + kTapCode;
  s += fmt::format(
      "__kernel void frame_conv(__global const {0}* in0, __global const {0}* in1, __global const "
      "{0}* in2, __global {0}* out, const int rank, __global const int* m) {{\n"
      "  const int N = m[0], C = m[1], M = m[2], group = m[3];\n"
      "  __global const int* w = m + 4;\n{1}"
      "  const int i = (int)get_global_id(0);\n"
      "  const int p = i % out_plane;\n"
      "  const int oc = (i / out_plane) % M;\n"
      "  const int n = i / out_plane / M;\n"
      "  const int cg = C / group, mg = M / group, gi = oc / mg;\n"
      "  T acc = (T)0;\n"
      "  for (int c = 0; c < cg; ++c) {{\n"
      "    const int xbase = (n * C + gi * cg + c) * in_plane;\n"
      "    const int wbase = (oc * cg + c) * taps;\n"
      "    for (int t = 0; t < taps; ++t) {{\n"
      "      int off;\n"
      "      if (frame_tap(w, p, t, &off)) acc += {2} * {3};\n"
      "    }}\n"
      "  }}\n"
      "  {4}\n"
      "  {5}\n"
      "}}\n",
      t.pointee, kWindowCode, cl_load(t, "in0", "xbase + off"), cl_load(t, "in1", "wbase + t"),
      has_bias ? fmt::format("acc += {};", cl_load(t, "in2", "oc")) : "",
      cl_store(t, "out", "i", "acc"));
  return s;
}

// Implicit GEMM per (image n, group g), batch index z = n * group + g: A = the group's
// weights [mg, K = cg * KH * KW], B = the im2col of its input channels [K, OH * OW] read in
// place (zero in the padding; `pointwise`: a 1x1 stride-1 unpadded kernel reads the input
// plane directly), out[n, g * mg + r, c]. meta: N, C, M, group, H, W, KH, KW, SH, SW, DH,
// DW, PH, PW, OH, OW (1-D convs as 2-D with H = 1).
std::string tiled_conv_source(const ClType& t, bool has_bias, bool pointwise) {
  TiledGemmCode code;
  code.name = "frame_conv_tiled";
  code.inputs = 3;
  code.setup =
      "  const int C = m[1], Mo = m[2], group = m[3], H = m[4], W = m[5], KH = m[6];\n"
      "  const int KW = m[7], SH = m[8], SW = m[9], DH = m[10], DW = m[11], PH = m[12];\n"
      "  const int PW = m[13], OW = m[15];\n"
      "  const int cg = C / group, mg = Mo / group, taps = KH * KW;\n"
      "  const int M = mg, N = m[14] * OW, K = cg * taps;\n"
      "  const int n = z / group, g = z % group;\n"
      "  const int w_off = g * mg * K, x_off = (n * C + g * cg) * H * W;\n"
      "  const int o_off = (n * Mo + g * mg) * N;\n";
  code.load_a = fmt::format("        v = {};", cl_load(t, "in1", "w_off + r * K + k"));
  if (pointwise) {
    code.load_b = fmt::format("        v = {};", cl_load(t, "in0", "x_off + k * N + c"));
  } else {
    code.load_b = fmt::format(
        "        const int ci = k / taps, tap = k - ci * taps;\n"
        "        const int kh = tap / KW, kw = tap - kh * KW;\n"
        "        const int oh = c / OW, ow = c - oh * OW;\n"
        "        const int ih = oh * SH - PH + kh * DH, iw = ow * SW - PW + kw * DW;\n"
        "        if (ih >= 0 && ih < H && iw >= 0 && iw < W) v = {};",
        cl_load(t, "in0", "x_off + (ci * H + ih) * W + iw"));
  }
  code.store =
      fmt::format("        {}\n        {}",
                  has_bias ? fmt::format("const T y = acc_v + {};", cl_load(t, "in2", "g * mg + r"))
                           : "const T y = acc_v;",
                  cl_store(t, "out", "o_off + r * N + c", "y"));
  return tiled_gemm_source(t, code);
}

// One work-item per output element for 1-D and 2-D convs the tiled kernel does not take
// (depthwise-like: one output channel per group), with the 2-D index arithmetic written out
// (no per-tap loop over a generic rank); tiled_conv_source's meta. The sum runs in the
// generic kernel's order (channel, then taps row-major; padding taps skipped).
std::string direct_conv2d_source(const ClType& t, bool has_bias) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_conv2d(__global const {0}* in0, __global const {0}* in1, "
             "__global const {0}* in2, __global {0}* out, const int rank, __global const int* "
             "m) {{\n"
             "  const int C = m[1], Mo = m[2], group = m[3], H = m[4], W = m[5], KH = m[6];\n"
             "  const int KW = m[7], SH = m[8], SW = m[9], DH = m[10], DW = m[11];\n"
             "  const int PH = m[12], PW = m[13], OH = m[14], OW = m[15];\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const int ow = i % OW, oh = (i / OW) % OH, oc = (i / (OW * OH)) % Mo;\n"
             "  const int n = i / (OW * OH * Mo);\n"
             "  const int cg = C / group, mg = Mo / group, gi = oc / mg;\n"
             "  T acc = (T)0;\n"
             "  for (int c = 0; c < cg; ++c) {{\n"
             "    const int xbase = (n * C + gi * cg + c) * H * W;\n"
             "    const int wbase = (oc * cg + c) * KH * KW;\n"
             "    for (int kh = 0; kh < KH; ++kh) {{\n"
             "      const int ih = oh * SH - PH + kh * DH;\n"
             "      if (ih < 0 || ih >= H) continue;\n"
             "      for (int kw = 0; kw < KW; ++kw) {{\n"
             "        const int iw = ow * SW - PW + kw * DW;\n"
             "        if (iw >= 0 && iw < W) acc += {1} * {2};\n"
             "      }}\n"
             "    }}\n"
             "  }}\n"
             "  {3}\n"
             "  {4}\n"
             "}}\n",
             t.pointee, cl_load(t, "in0", "xbase + ih * W + iw"),
             cl_load(t, "in1", "wbase + kh * KW + kw"),
             has_bias ? fmt::format("acc += {};", cl_load(t, "in2", "oc")) : "",
             cl_store(t, "out", "i", "acc"));
}

// The tiled conv's meta (tiled_conv_source) for a 1-D or 2-D geometry.
std::vector<int64_t> tiled_conv_meta(const Shape& x, const Shape& wt, int64_t group,
                                     const WindowGeometry& g) {
  // A 1-D conv is a 2-D one over a plane of height 1.
  const size_t d = g.rank == 2 ? 1 : 0;
  const bool two = g.rank == 2;
  return {x[0],
          x[1],
          wt[0],
          group,
          two ? g.in[0] : 1,
          g.in[d],
          two ? g.kernel[0] : 1,
          g.kernel[d],
          two ? g.strides[0] : 1,
          g.strides[d],
          two ? g.dilations[0] : 1,
          g.dilations[d],
          two ? g.pad_begin[0] : 0,
          g.pad_begin[d],
          two ? g.out[0] : 1,
          g.out[d]};
}

Result<std::shared_ptr<void>> conv_prepare(const NodeContext& ctx) {
  if (auto dnnl = onednn_gpu_prepare(ctx)) return dnnl;  // Intel GPUs: oneDNN (onednn_gpu.h)
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& x = ctx.input_types[0].shape;
  const Shape& wt = ctx.input_types[1].shape;
  FRAME_ASSIGN_OR_RETURN(
      WindowGeometry g,
      ops::nn::resolve_window(ctx, std::span(x.data() + 2, x.size() - 2),
                              std::span(wt.data() + 2, wt.size() - 2), WindowKind::kConv));
  const bool has_bias = ctx.has_input(2);
  Shape out = {x[0], wt[0]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  const int64_t group = ctx.attr_or<int64_t>("group", 1);
  // Tiled implicit GEMM for 1-D and 2-D convs with more than one output channel per group;
  // the direct kernel for depthwise-like convs (a one-row GEMM per group) and 3-D.
  const int64_t mg = group > 0 ? wt[0] / group : 0;
  if ((g.rank == 1 || g.rank == 2) && mg > 1 && group > 0 && x[1] % group == 0 &&
      wt[0] % group == 0) {
    bool pointwise = true;
    for (size_t d = 0; d < g.in.size(); ++d) {
      pointwise = pointwise && g.kernel[d] == 1 && g.strides[d] == 1 && g.pad_begin[d] == 0 &&
                  g.out[d] == g.in[d];
    }
    LaunchSpec spec =
        float_spec(**t, tiled_conv_source(**t, has_bias, pointwise), "frame_conv_tiled", out);
    spec.raw_meta = tiled_conv_meta(x, wt, group, g);
    if (!has_bias) spec.num_inputs = 2;
    spec.input_slots = 3;
    set_tiled_geometry(spec, mg, numel_of(g.out), x[0] * group);
    FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
    if (tiled_fits(*l)) return std::shared_ptr<void>(std::move(l));
  }
  const bool planar = g.rank == 1 || g.rank == 2;
  LaunchSpec spec = planar
                        ? float_spec(**t, direct_conv2d_source(**t, has_bias), "frame_conv2d", out)
                        : float_spec(**t, conv_source(**t, has_bias), "frame_conv", out);
  if (planar) {
    spec.raw_meta = tiled_conv_meta(x, wt, group, g);
  } else {
    spec.raw_meta = std::vector<int64_t>{x[0], x[1], wt[0], group};
    append_window(g, *spec.raw_meta);
  }
  if (!has_bias) spec.num_inputs = 2;
  spec.input_slots = 3;  // the kernel declares in2 (read only with a bias)
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// ---- max_pool ----

std::string max_pool_source(const ClType& t) {
  return cl_type_prelude(t) + kTapCode +
         fmt::format(
             "__kernel void frame_max_pool(__global const {0}* in0, __global {0}* out, const int "
             "rank, __global const int* w) {{\n{1}"
             "  const int i = (int)get_global_id(0);\n"
             "  const int p = i % out_plane, plane = i / out_plane;\n"
             "  T best = (T)(-INFINITY);\n"
             "  bool any = false;\n"
             "  for (int t = 0; t < taps; ++t) {{\n"
             "    int off;\n"
             "    if (!frame_tap(w, p, t, &off)) continue;\n"
             "    const T v = {2};\n"
             "    if (!any || v > best || (isnan(v) && !isnan(best))) best = v;\n"
             "    any = true;\n"
             "  }}\n"
             "  {3}\n"
             "}}\n",
             t.pointee, kWindowCode, cl_load(t, "in0", "plane * in_plane + off"),
             cl_store(t, "out", "i", "best"));
}

Status max_pool_accepts(const NodeContext& ctx) {
  if (ctx.num_outputs > 1) return unimplemented("max_pool with an Indices output");
  return float_accepts(ctx);
}

Result<std::shared_ptr<void>> max_pool_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& x = ctx.input_types[0].shape;
  const auto* ks = ctx.attr<std::vector<int64_t>>("kernel_shape");
  if (ks == nullptr) return ctx.error("missing required attribute 'kernel_shape'");
  FRAME_ASSIGN_OR_RETURN(
      WindowGeometry g,
      ops::nn::resolve_window(ctx, std::span(x.data() + 2, x.size() - 2), *ks, WindowKind::kPool));
  Shape out = {x[0], x[1]};
  out.insert(out.end(), g.out.begin(), g.out.end());
  LaunchSpec spec = float_spec(**t, max_pool_source(**t), "frame_max_pool", out);
  spec.raw_meta.emplace();
  append_window(g, *spec.raw_meta);
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// ---- global_average_pool, global_max_pool ----

template <bool kMax>
std::string global_pool_source(const ClType& t) {
  const std::string v = cl_load(t, "in0", "i * plane + j");
  const std::string step = kMax ? fmt::format(
                                      "const T v = {}; if (v > acc || isnan(v)) acc = "
                                      "isnan(acc) ? acc : v;",
                                      v)
                                : fmt::format("acc += {};", v);
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_global_pool(__global const {0}* in0, __global {0}* out, const "
             "int rank, __global const int* m) {{\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const int plane = m[0];\n"
             "  T acc = {1};\n"
             "  for (int j = 0; j < plane; ++j) {{ {2} }}\n"
             "  {3}\n"
             "  {4}\n"
             "}}\n",
             t.pointee, kMax ? "(T)(-INFINITY)" : "(T)0", step, kMax ? "" : "acc /= (T)plane;",
             cl_store(t, "out", "i", "acc"));
}

template <bool kMax>
Result<std::shared_ptr<void>> global_pool_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& x = ctx.input_types[0].shape;
  if (x.size() < 2) return ctx.error("input rank {} < 2", x.size());
  const int64_t planes = x[0] * x[1];
  Shape out(x.size(), 1);
  out[0] = x[0];
  out[1] = x[1];
  LaunchSpec spec = float_spec(**t, global_pool_source<kMax>(**t), "frame_global_pool", out);
  spec.raw_meta = std::vector<int64_t>{planes == 0 ? 0 : numel_of(x) / planes};
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// ---- gemm ----

std::string gemm_source(const ClType& t, bool has_c) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_gemm(__global const {0}* in0, __global const {0}* in1, "
             "__global const {0}* in2, __global {0}* out, const int rank, __global const int* m, "
             "const T alpha, const T beta) {{\n"
             "  const int M = m[0], N = m[1], K = m[2], ta = m[3], tb = m[4];\n"
             "  const int c_rs = m[5], c_cs = m[6];\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const int r = i / N, c = i % N;\n"
             "  T acc = (T)0;\n"
             "  for (int k = 0; k < K; ++k) {{\n"
             "    acc += {1} * {2};\n"
             "  }}\n"
             "  T v = alpha * acc;\n"
             "  {3}\n"
             "  {4}\n"
             "}}\n",
             t.pointee, cl_load(t, "in0", "ta ? k * M + r : r * K + k"),
             cl_load(t, "in1", "tb ? c * K + k : k * N + c"),
             has_c ? fmt::format("v += beta * {};", cl_load(t, "in2", "r * c_rs + c * c_cs")) : "",
             cl_store(t, "out", "i", "v"));
}

// Tiled (tiled_gemm.h); meta: M, N, K, then A(r, k) = in0[r * a_rs + k * a_ks],
// B(k, c) = in1[k * b_ks + c * b_cs] (the transposes), C's row and column strides.
std::string tiled_gemm_op_source(const ClType& t, bool has_c) {
  TiledGemmCode code;
  code.name = "frame_gemm_tiled";
  code.inputs = 3;
  code.params = ", const T alpha, const T beta";
  code.setup =
      "  const int M = m[0], N = m[1], K = m[2], a_rs = m[3], a_ks = m[4], b_ks = m[5];\n"
      "  const int b_cs = m[6], c_rs = m[7], c_cs = m[8];\n";
  code.load_a = fmt::format("        v = {};", cl_load(t, "in0", "r * a_rs + k * a_ks"));
  code.load_b = fmt::format("        v = {};", cl_load(t, "in1", "k * b_ks + c * b_cs"));
  code.store = fmt::format(
      "        T y = alpha * acc_v;\n        {}\n        {}",
      has_c ? fmt::format("y += beta * {};", cl_load(t, "in2", "r * c_rs + c * c_cs")) : "",
      cl_store(t, "out", "r * N + c", "y"));
  return tiled_gemm_source(t, code);
}

Result<std::shared_ptr<void>> gemm_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& a = ctx.input_types[0].shape;
  const Shape& b = ctx.input_types[1].shape;
  if (a.size() != 2 || b.size() != 2) return ctx.error("gemm inputs must be 2-D");
  const bool ta = ctx.attr_or<int64_t>("transA", 0) != 0;
  const bool tb = ctx.attr_or<int64_t>("transB", 0) != 0;
  const int64_t m = ta ? a[1] : a[0], k = ta ? a[0] : a[1], n = tb ? b[0] : b[1];
  const bool has_c = ctx.has_input(2);
  int64_t c_rs = 0, c_cs = 0;
  if (has_c) {  // C broadcasts to [M, N] (right-aligned)
    const Shape& cs = ctx.input_types[2].shape;
    if (cs.size() == 2) {
      c_rs = cs[0] == 1 ? 0 : cs[1];
      c_cs = cs[1] == 1 ? 0 : 1;
    } else if (cs.size() == 1) {
      c_cs = cs[0] == 1 ? 0 : 1;
    }
  }
  std::shared_ptr<Launch> l;
  // Tiled unless a vector product (one row or column: a tile would idle 31 of 32 rows).
  if (m > 1 && n > 1) {
    LaunchSpec spec =
        float_spec(**t, tiled_gemm_op_source(**t, has_c), "frame_gemm_tiled", Shape{m, n});
    spec.raw_meta =
        std::vector<int64_t>{m, n, k, ta ? 1 : k, ta ? m : 1, tb ? 1 : n, tb ? k : 1, c_rs, c_cs};
    if (!has_c) spec.num_inputs = 2;
    spec.input_slots = 3;
    set_tiled_geometry(spec, m, n, 1);
    FRAME_ASSIGN_OR_RETURN(l, make_launch(ctx, spec));
    if (!tiled_fits(*l)) l.reset();
  }
  if (!l) {
    LaunchSpec spec = float_spec(**t, gemm_source(**t, has_c), "frame_gemm", Shape{m, n});
    spec.raw_meta = std::vector<int64_t>{m, n, k, ta ? 1 : 0, tb ? 1 : 0, c_rs, c_cs};
    if (!has_c) spec.num_inputs = 2;
    spec.input_slots = 3;  // the kernel declares in2 (read only with C)
    FRAME_ASSIGN_OR_RETURN(l, make_launch(ctx, spec));
  }
  const cl_uint next = 6;  // in0, in1, in2, out, rank, meta, then alpha, beta
  const double alpha = ctx.attr_or<double>("alpha", 1.0);
  const double beta = ctx.attr_or<double>("beta", 1.0);
  FRAME_RETURN_IF_ERROR(set_t_arg(*l, **t, next, alpha));
  FRAME_RETURN_IF_ERROR(set_t_arg(*l, **t, next + 1, beta));
  return std::shared_ptr<void>(std::move(l));
}

// ---- batch_normalization (inference) ----

// y = x * a + (bias - mean * a), a = scale / sqrt(var + eps), per channel (the cpu kernel's
// formula, there in double).
std::string batch_norm_source(const ClType& t) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_batch_norm(__global const {0}* in0, __global const {0}* in1, "
             "__global const {0}* in2, __global const {0}* in3, __global const {0}* in4, "
             "__global {0}* out, const int rank, __global const int* m, const T eps) {{\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const int c = (i / m[1]) % m[0];\n"
             "  const T a = {1} / sqrt({2} + eps);\n"
             "  const T v = {3} * a + ({4} - {5} * a);\n"
             "  {6}\n"
             "}}\n",
             t.pointee, cl_load(t, "in1", "c"), cl_load(t, "in4", "c"), cl_load(t, "in0", "i"),
             cl_load(t, "in2", "c"), cl_load(t, "in3", "c"), cl_store(t, "out", "i", "v"));
}

Status batch_norm_accepts(const NodeContext& ctx) {
  if (ctx.attr_or<int64_t>("training_mode", 0) != 0 || ctx.num_outputs > 1) {
    return unimplemented("batch_normalization in training mode");
  }
  return float_accepts(ctx);
}

Result<std::shared_ptr<void>> batch_norm_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& x = ctx.input_types[0].shape;
  if (x.size() < 2) return ctx.error("input rank {} < 2", x.size());
  const int64_t planes = x[0] * x[1];
  LaunchSpec spec = float_spec(**t, batch_norm_source(**t), "frame_batch_norm", x);
  spec.raw_meta = std::vector<int64_t>{x[1], planes == 0 ? 1 : numel_of(x) / planes};
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  const double eps = ctx.attr_or<double>("epsilon", 1e-5);
  FRAME_RETURN_IF_ERROR(set_t_arg(*l, **t, 8, eps));
  return std::shared_ptr<void>(std::move(l));
}

// ---- reshape, flatten, squeeze, unsqueeze: element copies of input 0 ----

std::string copy_source(size_t elem_bytes) {
  const std::string_view e = cl_storage_type(elem_bytes);
  return fmt::format(
      "__kernel void frame_copy(__global const {0}* in0, __global {0}* out, const int rank, "
      "__global const int* meta) {{\n  const int i = (int)get_global_id(0);\n  out[i] = "
      "in0[i];\n}}\n",
      e);
}

Result<std::shared_ptr<void>> copy_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  LaunchSpec spec;
  spec.in_elem_bytes = dtype_size(ctx.input_types[0].dtype);
  spec.out_elem_bytes = spec.in_elem_bytes;
  spec.source = copy_source(spec.in_elem_bytes);
  spec.name = "frame_copy";
  spec.out_shape = ctx.input_types[0].shape;  // same element count, layout unchanged
  spec.num_inputs = 1;
  spec.raw_meta.emplace();
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

Status copy_accepts(const NodeContext& ctx) { return device_ready(ctx); }

}  // namespace

FRAME_REGISTER_KERNEL(conv, "intel_gpu", run_launch)
    .prepare(conv_prepare)
    .accepts(float_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(max_pool, "intel_gpu", run_launch)
    .prepare(max_pool_prepare)
    .accepts(max_pool_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(global_average_pool, "intel_gpu", run_launch)
    .prepare(global_pool_prepare<false>)
    .accepts(float_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(global_max_pool, "intel_gpu", run_launch)
    .prepare(global_pool_prepare<true>)
    .accepts(float_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(gemm, "intel_gpu", run_launch)
    .prepare(gemm_prepare)
    .accepts(float_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(batch_normalization, "intel_gpu", run_launch)
    .prepare(batch_norm_prepare)
    .accepts(batch_norm_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(reshape, "intel_gpu", run_launch)
    .prepare(copy_prepare)
    .accepts(copy_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(flatten, "intel_gpu", run_launch)
    .prepare(copy_prepare)
    .accepts(copy_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(squeeze, "intel_gpu", run_launch)
    .prepare(copy_prepare)
    .accepts(copy_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(unsqueeze, "intel_gpu", run_launch)
    .prepare(copy_prepare)
    .accepts(copy_accepts)
    .dtypes(kAllDTypes);

}  // namespace frame::backends::intel_gpu
