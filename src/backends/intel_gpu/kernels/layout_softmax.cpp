// intel_gpu kernels of transpose (every dtype: a gather by element size) and softmax /
// log_softmax (float dtypes: one work-item per row along the axis).

#include <fmt/format.h>

#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "frame/ops/kernel_registry.h"
#include "ops/schemas/data_movement_shapes.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::intel_gpu {
namespace {

using ops::KernelContext;
using ops::NodeContext;

// ---- transpose ----

// Element copies only: the type is the element's size, so one program per size serves
// every dtype.
std::string transpose_source(size_t elem_bytes) {
  const std::string_view e = cl_storage_type(elem_bytes);
  return fmt::format(
      "__kernel void frame_transpose(__global const {0}* in0, __global {0}* out, const int rank,"
      " __global const int* meta) {{\n{1}  out[i] = in0[idx0];\n}}\n",
      e, index_code(1));
}

Status transpose_accepts(const NodeContext& ctx) { return device_ready(ctx); }

Result<std::shared_ptr<void>> transpose_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx).with_prefix(where(ctx)));
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> perm, ops::dm::transpose_perm(ctx, in.size()));
  std::vector<int64_t> in_strides(in.size(), 1);
  for (size_t d = in.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * in[d];
  LaunchSpec spec;
  spec.in_elem_bytes = dtype_size(ctx.input_types[0].dtype);
  spec.out_elem_bytes = spec.in_elem_bytes;
  spec.source = transpose_source(spec.in_elem_bytes);
  spec.name = "frame_transpose";
  spec.strides.emplace(1, std::vector<int64_t>(in.size()));
  for (size_t d = 0; d < perm.size(); ++d) {
    const auto p = static_cast<size_t>(perm[d]);
    spec.out_shape.push_back(in[p]);
    (*spec.strides)[0][d] = in_strides[p];
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// ---- softmax, log_softmax ----

// Mirrors the cpu kernel: max along the row (NaN propagates), sum of exp(x - max), then
// exp(d) / sum or d - log(sum); computed in T (the cpu uses double).
std::string softmax_source(const ClType& t, bool log) {
  const std::string x = cl_load(t, "in0", "base + j * inner");
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_softmax(__global const {0}* in0, __global {0}* out, const int "
             "rank, __global const int* meta, const int n, const int inner) {{\n"
             "  const int oi = (int)get_global_id(0);\n"
             "  const int base = (oi / inner) * n * inner + oi % inner;\n"
             "  T m = (T)(-INFINITY);\n"
             "  for (int j = 0; j < n; ++j) {{\n"
             "    const T v = {1};\n"
             "    if (v > m || isnan(v)) m = isnan(m) ? m : v;\n"
             "  }}\n"
             "  T s = (T)0;\n"
             "  for (int j = 0; j < n; ++j) s += exp({1} - m);\n"
             "  const T ls = log(s);\n"
             "  for (int j = 0; j < n; ++j) {{\n"
             "    const T d = {1} - m;\n"
             "    {2}\n"
             "  }}\n"
             "}}\n",
             t.pointee, x, cl_store(t, "out", "base + j * inner", log ? "d - ls" : "exp(d) / s"));
}

template <bool kLog>
Result<std::shared_ptr<void>> softmax_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(const ops::SoftmaxView view, ops::softmax_view(ctx, in));
  LaunchSpec spec = float_spec(**t, softmax_source(**t, kLog), "frame_softmax", in);
  spec.work_items = static_cast<size_t>(view.outer * view.inner);
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), 4, static_cast<cl_int>(view.n)));
  FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), 5, static_cast<cl_int>(view.inner)));
  return std::shared_ptr<void>(std::move(l));
}

}  // namespace

FRAME_REGISTER_KERNEL(transpose, "intel_gpu", run_launch)
    .prepare(transpose_prepare)
    .accepts(transpose_accepts)
    .dtypes(kAllDTypes);
FRAME_REGISTER_KERNEL(softmax, "intel_gpu", run_launch)
    .prepare(softmax_prepare<false>)
    .accepts(float_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(log_softmax, "intel_gpu", run_launch)
    .prepare(softmax_prepare<true>)
    .accepts(float_accepts)
    .dtypes(kClTypes);

}  // namespace frame::backends::intel_gpu
