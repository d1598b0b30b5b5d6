// The reduction table and geometry both GPU backends generate from (reductions.h).

#include "backends/gpu/reductions.h"

#include <limits>

#include "ops/schemas/nn_geometry.h"

namespace frame::backends::gpu {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The cpu kernels' init / fold / finish; max and min propagate NaN (once acc is NaN it stays).
constexpr Reduction kReductions[] = {
    {"reduce_sum", 0.0, "acc += v;", "acc", "a + b"},
    {"reduce_mean", 0.0, "acc += v;", "acc / (T)n", "a + b"},
    {"reduce_prod", 1.0, "acc *= v;", "acc", "a * b"},
    {"reduce_max", -kInf, "if (v > acc || isnan(v)) acc = isnan(acc) ? acc : v;", "acc",
     "frame_max(a, b)"},
    {"reduce_min", kInf, "if (v < acc || isnan(v)) acc = isnan(acc) ? acc : v;", "acc",
     "frame_min(a, b)"},
    {"reduce_l1", 0.0, "acc += v < (T)0 ? -v : v;", "acc", "a + b"},
    {"reduce_sum_square", 0.0, "acc += v * v;", "acc", "a + b"},
    {"reduce_l2", 0.0, "acc += v * v;", "sqrt(acc)", "a + b"},
    {"reduce_log_sum", 0.0, "acc += v;", "log(acc)", "a + b"},
};

}  // namespace

std::span<const Reduction> reductions() { return kReductions; }

const Reduction* find_reduction(std::string_view op) {
  for (const Reduction& r : kReductions) {
    if (r.op == op) return &r;
  }
  return nullptr;
}

Result<ReduceGeometry> reduce_geometry(const ops::NodeContext& ctx) {
  if (ctx.has_input(1) && ctx.constant_input(1) == nullptr) {
    return unimplemented("reduction axes that are not a constant");
  }
  const Shape& in = ctx.input_types[0].shape;
  FRAME_ASSIGN_OR_RETURN(
      std::vector<bool> reduced,
      ops::nn::resolve_reduce_axes(ctx, static_cast<int64_t>(in.size()),
                                   ctx.has_input(1) ? ctx.constant_input(1) : nullptr));
  ReduceGeometry g;
  std::vector<int64_t> strides(in.size());
  int64_t stride = 1;
  for (size_t d = in.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= in[d];
  }
  for (size_t d = 0; d < in.size(); ++d) {
    if (reduced[d]) {
      g.reduced_dims.push_back(in[d]);
      g.reduced_strides.push_back(strides[d]);
      g.reduced *= in[d];
    } else {
      g.kept_dims.push_back(in[d]);
      g.kept_strides.push_back(strides[d]);
      g.outputs *= in[d];
    }
  }
  return g;
}

}  // namespace frame::backends::gpu
