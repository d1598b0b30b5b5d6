// intel_gpu kernels of matmul (numpy batch broadcasting and 1-D promotion; the tiled GEMM of
// tiled_gemm.h, one work-item per output element for vector products), the reductions
// (reduce_sum, _mean, _prod, _max, _min, _l1, _l2, _sum_square, _log_sum; constant axes) and
// slice (constant starts/ends/axes/steps): one work-item per output element, accumulating in
// the compute type T (the cpu kernels accumulate in double; the cross-backend tolerance covers
// the difference).

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backends/gpu/reductions.h"
#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "backends/intel_gpu/kernels/onednn_gpu.h"
#include "backends/intel_gpu/kernels/tiled_gemm.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/data_movement_shapes.h"
#include "ops/schemas/nn_geometry.h"

namespace frame::backends::intel_gpu {
namespace {

using ops::NodeContext;

// ---- matmul ----

// meta: M, N, K, nb, batch dims[nb], a batch strides[nb], b batch strides[nb] (elements).
std::string matmul_source(const ClType& t) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_matmul(__global const {0}* in0, __global const {0}* in1, "
             "__global {0}* out, const int rank, __global const int* m) {{\n"
             "  const int M = m[0], N = m[1], K = m[2], nb = m[3];\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const int c = i % N, r = (i / N) % M;\n"
             "  int bi = i / N / M, a_off = 0, b_off = 0;\n"
             "  for (int d = nb - 1; d >= 0; --d) {{\n"
             "    const int q = bi % m[4 + d];\n"
             "    bi /= m[4 + d];\n"
             "    a_off += q * m[4 + nb + d];\n"
             "    b_off += q * m[4 + 2 * nb + d];\n"
             "  }}\n"
             "  T acc = (T)0;\n"
             "  for (int k = 0; k < K; ++k) acc += {1} * {2};\n"
             "  {3}\n"
             "}}\n",
             t.pointee, cl_load(t, "in0", "a_off + r * K + k"),
             cl_load(t, "in1", "b_off + k * N + c"), cl_store(t, "out", "i", "acc"));
}

// The same meta, batch index z = get_global_id(2) (tiled_gemm.h).
std::string tiled_matmul_source(const ClType& t) {
  TiledGemmCode code;
  code.name = "frame_matmul_tiled";
  code.setup =
      "  const int M = m[0], N = m[1], K = m[2], nb = m[3];\n"
      "  int bi = z, a_off = 0, b_off = 0;\n"
      "  for (int d = nb - 1; d >= 0; --d) {\n"
      "    const int q = bi % m[4 + d];\n"
      "    bi /= m[4 + d];\n"
      "    a_off += q * m[4 + nb + d];\n"
      "    b_off += q * m[4 + 2 * nb + d];\n"
      "  }\n"
      "  const int o_off = z * M * N;\n";
  code.load_a = fmt::format("        v = {};", cl_load(t, "in0", "a_off + r * K + k"));
  code.load_b = fmt::format("        v = {};", cl_load(t, "in1", "b_off + k * N + c"));
  code.store = "        " + cl_store(t, "out", "o_off + r * N + c", "acc_v");
  return tiled_gemm_source(t, code);
}

Result<std::shared_ptr<void>> matmul_prepare(const NodeContext& ctx) {
  if (auto dnnl = onednn_gpu_prepare(ctx)) return dnnl;  // Intel GPUs: oneDNN (onednn_gpu.h)
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  Shape a = ctx.input_types[0].shape, b = ctx.input_types[1].shape;
  if (a.empty() || b.empty()) return ctx.error("matmul of a scalar");
  const bool a1 = a.size() == 1, b1 = b.size() == 1;
  if (a1) a.insert(a.begin(), 1);
  if (b1) b.push_back(1);
  const int64_t m = a[a.size() - 2], k = a.back(), n = b.back();
  if (b[b.size() - 2] != k) return ctx.error("inner dims {} and {} differ", k, b[b.size() - 2]);
  const Shape ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  const size_t nb = std::max(ab.size(), bb.size());
  Shape batch(nb, 1);
  std::vector<int64_t> as(nb, 0), bs(nb, 0);
  // Right-aligned broadcast of the batch dims; strides in elements of whole matrices.
  int64_t sa = m * k, sb = k * n;
  for (size_t j = 0; j < nb; ++j) {
    const size_t d = nb - 1 - j;
    const int64_t da = j < ab.size() ? ab[ab.size() - 1 - j] : 1;
    const int64_t db = j < bb.size() ? bb[bb.size() - 1 - j] : 1;
    if (da != db && da != 1 && db != 1) return ctx.error("batch dims do not broadcast");
    batch[d] = da == 1 ? db : da;
    as[d] = da == 1 ? 0 : sa;
    bs[d] = db == 1 ? 0 : sb;
    sa *= da;
    sb *= db;
  }
  Shape out = batch;
  if (!a1) out.push_back(m);
  if (!b1) out.push_back(n);
  std::vector<int64_t> meta{m, n, k, static_cast<int64_t>(nb)};
  for (const auto* v : {&batch, &as, &bs}) meta.insert(meta.end(), v->begin(), v->end());
  // Tiled unless a vector product (one row or column: a tile would idle 31 of 32 rows).
  if (m > 1 && n > 1) {
    LaunchSpec spec = float_spec(**t, tiled_matmul_source(**t), "frame_matmul_tiled", out);
    spec.raw_meta = meta;
    set_tiled_geometry(spec, m, n, numel_of(batch));
    FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
    if (tiled_fits(*l)) return std::shared_ptr<void>(std::move(l));
  }
  LaunchSpec spec = float_spec(**t, matmul_source(**t), "frame_matmul", out);
  spec.raw_meta = std::move(meta);
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// ---- reductions ----

using gpu::find_reduction;
using gpu::Reduction;

// meta: nk, kept dims[nk], kept strides[nk], nr, reduced dims[nr], reduced strides[nr], n.
std::string reduce_source(const ClType& t, const Reduction& r) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_reduce(__global const {0}* in0, __global {0}* out, const int "
             "rank, __global const int* m) {{\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const int nk = m[0];\n"
             "  __global const int* kd = m + 1;\n"
             "  __global const int* ks = kd + nk;\n"
             "  const int nr = ks[nk];\n"
             "  __global const int* rd = ks + nk + 1;\n"
             "  __global const int* rs = rd + nr;\n"
             "  const int n = rs[nr];\n"
             "  int base = 0, o = i;\n"
             "  for (int d = nk - 1; d >= 0; --d) {{\n"
             "    base += (o % kd[d]) * ks[d];\n"
             "    o /= kd[d];\n"
             "  }}\n"
             "  T acc = {1};\n"
             "  for (int j = 0; j < n; ++j) {{\n"
             "    int off = base, rem = j;\n"
             "    for (int d = nr - 1; d >= 0; --d) {{\n"
             "      off += (rem % rd[d]) * rs[d];\n"
             "      rem /= rd[d];\n"
             "    }}\n"
             "    const T v = {2};\n"
             "    {3}\n"
             "  }}\n"
             "  {4}\n"
             "}}\n",
             t.pointee, cl_literal(r.init, t.fp64), cl_load(t, "in0", "off"), r.fold,
             cl_store(t, "out", "i", std::string(r.finish)));
}

// Axes come from the `axes` attribute or a constant input 1 (a computed one stays on cpu).
Status reduce_accepts(const NodeContext& ctx) {
  if (ctx.has_input(1) && ctx.constant_input(1) == nullptr) {
    return unimplemented("reduction axes that are not a constant");
  }
  return float_accepts(ctx);
}

Result<std::shared_ptr<void>> reduce_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Reduction* r = find_reduction(ctx.op);
  if (r == nullptr) return ctx.error("intel_gpu: no OpenCL reduction for op '{}'", ctx.op);
  FRAME_ASSIGN_OR_RETURN(gpu::ReduceGeometry geo, gpu::reduce_geometry(ctx));
  const std::vector<int64_t>&kd = geo.kept_dims, &ks = geo.kept_strides, &rd = geo.reduced_dims,
        &rs = geo.reduced_strides;
  const int64_t n = geo.reduced, out_numel = geo.outputs;
  LaunchSpec spec = float_spec(**t, reduce_source(**t, *r), "frame_reduce", Shape{out_numel});
  spec.num_inputs = 1;
  spec.raw_meta = std::vector<int64_t>{static_cast<int64_t>(kd.size())};
  spec.raw_meta->insert(spec.raw_meta->end(), kd.begin(), kd.end());
  spec.raw_meta->insert(spec.raw_meta->end(), ks.begin(), ks.end());
  spec.raw_meta->push_back(static_cast<int64_t>(rd.size()));
  spec.raw_meta->insert(spec.raw_meta->end(), rd.begin(), rd.end());
  spec.raw_meta->insert(spec.raw_meta->end(), rs.begin(), rs.end());
  spec.raw_meta->push_back(n);
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// ---- slice ----

// meta: r, out dims[r], input strides * steps[r], start offset.
std::string slice_source(size_t elem_bytes) {
  const std::string_view e = cl_storage_type(elem_bytes);
  return fmt::format(
      "__kernel void frame_slice(__global const {0}* in0, __global {0}* out, const int rank, "
      "__global const int* m) {{\n"
      "  const int i = (int)get_global_id(0);\n"
      "  const int r = m[0];\n"
      "  int off = m[1 + 2 * r], rem = i;\n"
      "  for (int d = r - 1; d >= 0; --d) {{\n"
      "    off += (rem % m[1 + d]) * m[1 + r + d];\n"
      "    rem /= m[1 + d];\n"
      "  }}\n"
      "  out[i] = in0[off];\n"
      "}}\n",
      e);
}

// starts/ends/axes/steps must be constants (the shape function already requires it).
Status slice_accepts(const NodeContext& ctx) {
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.constant_input(k) == nullptr) {
      return unimplemented("slice input {} is not a constant", k);
    }
  }
  return device_ready(ctx);
}

Result<std::shared_ptr<void>> slice_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(ops::dm::SliceParams p, ops::dm::slice_params(ctx, in));
  const auto r = static_cast<int64_t>(in.size());
  std::vector<int64_t> meta{r};
  meta.insert(meta.end(), p.out_shape.begin(), p.out_shape.end());
  int64_t stride = 1, offset = 0;
  std::vector<int64_t> st(in.size());
  for (size_t d = in.size(); d-- > 0;) {
    // Along a dim of one output element the step is never taken (it may be huge: INT64_MAX).
    st[d] = p.out_shape[d] > 1 ? stride * p.step[d] : 0;
    offset += p.start[d] * stride;
    stride *= in[d];
  }
  meta.insert(meta.end(), st.begin(), st.end());
  meta.push_back(offset);
  LaunchSpec spec;
  spec.in_elem_bytes = dtype_size(ctx.input_types[0].dtype);
  spec.out_elem_bytes = spec.in_elem_bytes;
  spec.source = slice_source(spec.in_elem_bytes);
  spec.name = "frame_slice";
  spec.out_shape = p.out_shape;
  spec.num_inputs = 1;
  spec.raw_meta = std::move(meta);
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const Reduction& r : gpu::reductions()) {
    ops::KernelDef def;
    def.op = std::string(r.op);
    def.backend = std::string(kBackendName);
    def.fn = run_launch;
    def.prepare = reduce_prepare;
    def.accepts = reduce_accepts;
    def.dtypes = kClTypes;
    def.file = __FILE__;
    def.line = __LINE__;
    ops::KernelRegistry::global().register_kernel(std::move(def));
  }
  return true;
}();

}  // namespace

FRAME_REGISTER_KERNEL(matmul, "intel_gpu", run_launch)
    .prepare(matmul_prepare)
    .accepts(float_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(slice, "intel_gpu", run_launch)
    .prepare(slice_prepare)
    .accepts(slice_accepts)
    .dtypes(kAllDTypes);

}  // namespace frame::backends::intel_gpu
