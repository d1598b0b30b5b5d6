// Normalisation and activation-like NN schemas: BatchNormalization (15), InstanceNormalization
// (22), LayerNormalization (17), Softmax/LogSoftmax (13, plus the legacy_flatten form of
// opset < 13), LRN (13), Dropout (22). Decompositions for the composites layer_normalization,
// instance_normalization and log_softmax.

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;

Status expect_channel_vector(const NodeContext& ctx, size_t i, std::string_view name, int64_t c) {
  const Shape& s = ctx.input_types[i].shape;
  if (s.size() != 1 || s[0] != c) {
    return ctx.error("input {} ({}) expects shape [{}] (one value per channel), got {}", i, name, c,
                     shape_to_string(s));
  }
  return Status();
}

Result<std::vector<TensorType>> infer_batch_norm(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() < 2)
    return ctx.error("input 0 (X) expects rank >= 2 (N, C, ...), got rank {}", x.rank());
  const int64_t c = x.shape[1];
  static constexpr const char* kNames[] = {"X", "scale", "B", "input_mean", "input_var"};
  for (size_t i = 1; i < 5; ++i) FRAME_RETURN_IF_ERROR(expect_channel_vector(ctx, i, kNames[i], c));
  const bool training = ctx.attr_or<int64_t>("training_mode", 0) != 0;
  if (!training && ctx.num_outputs > 1) {
    return ctx.error("outputs running_mean/running_var exist only with training_mode=1");
  }
  std::vector<TensorType> out{x};
  for (size_t i = 1; i < ctx.num_outputs; ++i) {
    out.push_back(TensorType{ctx.input_types[3].dtype, {c}});
  }
  return out;
}

FRAME_REGISTER_OP(batch_normalization)
    .doc(
        "Per-channel normalisation (ONNX BatchNormalization opset 15). X: [N, C, D...]; "
        "scale, B, input_mean, input_var: [C]. Inference (training_mode=0): Y = (X - mean) / "
        "sqrt(var + epsilon) * scale + B, one output. training_mode=1 normalises with the "
        "batch statistics (population variance) and may output running_mean = input_mean * "
        "momentum + mean * (1 - momentum) and running_var likewise.")
    .input("X", "input [N, C, D1, ...]", kFloatDTypes, "T")
    .input("scale", "[C]", kFloatDTypes, "T1")
    .input("B", "[C]", kFloatDTypes, "T1")
    .input("input_mean", "[C]", kFloatDTypes, "T2")
    .input("input_var", "[C]", kFloatDTypes, "T2")
    .output("Y", "normalised X", kFloatDTypes, "T")
    .optional_output("running_mean", "[C], training mode only", kFloatDTypes, "T2")
    .optional_output("running_var", "[C], training mode only", kFloatDTypes, "T2")
    .attr("epsilon", AttrType::kFloat, "added to the variance", 1e-5)
    .attr("momentum", AttrType::kFloat, "running statistics factor (training mode)", 0.9)
    .attr("training_mode", AttrType::kInt, "1 = use batch statistics", int64_t{0})
    .shape_infer(infer_batch_norm);

Result<std::vector<TensorType>> infer_instance_norm(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() < 3) {
    return ctx.error("input 0 (input) expects rank >= 3 (N, C, D...), got rank {}", x.rank());
  }
  FRAME_RETURN_IF_ERROR(expect_channel_vector(ctx, 1, "scale", x.shape[1]));
  FRAME_RETURN_IF_ERROR(expect_channel_vector(ctx, 2, "B", x.shape[1]));
  return std::vector<TensorType>{x};
}

// Axes [from, rank) as an attribute value.
std::vector<int64_t> tail_axes(int64_t from, int64_t rank) {
  std::vector<int64_t> a(static_cast<size_t>(rank - from));
  std::iota(a.begin(), a.end(), from);
  return a;
}

ir::AttrMap mean_attrs(std::vector<int64_t> axes) {
  return {{"axes", std::move(axes)}, {"keepdims", int64_t{1}}};
}

// Normalises x over `axes` (keepdims): returns {x - mean, 1 / sqrt(var + eps), mean}.
std::array<ir::ValueId, 3> normalize_graph(MicroGraph& m, const NodeContext& ctx, ir::ValueId x,
                                           std::vector<int64_t> axes) {
  const DTypeCode dt = ctx.input_types[0].dtype;
  ir::ValueId mean = m.add("reduce_mean", {x}, mean_attrs(axes));
  ir::ValueId d = m.add("sub", {x, mean});
  ir::ValueId var = m.add("reduce_mean", {m.add("mul", {d, d})}, mean_attrs(axes));
  ir::ValueId eps = m.scalar(dt, ctx.attr_or<double>("epsilon", 1e-5));
  ir::ValueId inv = m.add("div", {m.scalar(dt, 1.0), m.add("sqrt", {m.add("add", {var, eps})})});
  return {d, inv, mean};
}

// y = (x - mean) * invstd * scale + B over the spatial dims; scale and B ([C]) are applied
// with C moved last (transpose), so no shape constant is needed.
Result<ir::Graph> decompose_instance_norm(const NodeContext& ctx) {
  MicroGraph m(ctx);
  const int64_t r = ctx.input_types[0].rank();
  auto [d, inv, mean] = normalize_graph(m, ctx, m.input(0), tail_axes(2, r));
  (void)mean;
  std::vector<int64_t> to_last{0}, back{0, r - 1};
  for (int64_t i = 2; i < r; ++i) to_last.push_back(i);
  to_last.push_back(1);
  for (int64_t i = 1; i < r - 1; ++i) back.push_back(i);
  ir::ValueId n = m.add("transpose", {m.add("mul", {d, inv})}, {{"perm", to_last}});
  ir::ValueId y = m.add("add", {m.add("mul", {n, m.input(1)}), m.input(2)});
  return m.finish({m.add("transpose", {y}, {{"perm", back}})});
}

FRAME_REGISTER_OP(instance_normalization)
    .doc(
        "Per-(N, C) normalisation over the spatial dims (ONNX InstanceNormalization opset "
        "22): y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c]; population variance.")
    .input("input", "[N, C, D1, ...], rank >= 3", kFloatDTypes, "T")
    .input("scale", "[C]", kFloatDTypes, "T")
    .input("B", "[C]", kFloatDTypes, "T")
    .output("output", "normalised input", kFloatDTypes, "T")
    .attr("epsilon", AttrType::kFloat, "added to the variance", 1e-5)
    .shape_infer(infer_instance_norm)
    .decomposition(decompose_instance_norm);

Result<DTypeCode> stash_dtype(const NodeContext& ctx) {
  const int64_t st = ctx.attr_or<int64_t>("stash_type", 1);
  if (st == 1) return DTypeCode::kFloat32;
  if (st == 16) return DTypeCode::kBFloat16;
  return ctx.error("attribute 'stash_type' must be 1 (float) or 16 (bfloat16), got {}", st);
}

Result<std::vector<TensorType>> infer_layer_norm(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1),
                                                      x.rank(), "attribute 'axis'"));
  const std::span<const int64_t> norm(x.shape.data() + axis, x.shape.size() - axis);
  for (size_t i = 1; i < 3; ++i) {
    if (!ctx.has_input(i)) continue;
    // Scale/B broadcast to the normalised shape; they may carry leading 1s up to X's rank
    // ([1, 1, H] for X [N, S, H], as torch exports it), which every kernel reads by their
    // trailing dims. A dim before `axis` other than 1 would scale each slice differently.
    std::span<const int64_t> p = ctx.input_types[i].shape;
    const bool leading_ones = p.size() <= x.shape.size() &&
                              std::all_of(p.begin(), p.end() - std::min(p.size(), norm.size()),
                                          [](int64_t d) { return d == 1; });
    if (p.size() > norm.size()) p = p.subspan(p.size() - norm.size());
    if (!leading_ones || !unidirectional_broadcastable(p, norm)) {
      return ctx.error(
          "input {} ({}) {} does not broadcast to the normalised shape {} (X {}, axis {}; "
          "dims before the normalised ones must be 1)",
          i, i == 1 ? "Scale" : "B", shape_to_string(ctx.input_types[i].shape),
          shape_to_string(norm), shape_to_string(x.shape), axis);
    }
  }
  FRAME_ASSIGN_OR_RETURN(DTypeCode u, stash_dtype(ctx));
  Shape stat(x.shape.begin(), x.shape.begin() + axis);
  stat.resize(x.shape.size(), 1);
  std::vector<TensorType> out{x};
  for (size_t i = 1; i < ctx.num_outputs; ++i) out.push_back(TensorType{u, stat});
  return out;
}

Result<ir::Graph> decompose_layer_norm(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(DTypeCode u, stash_dtype(ctx));
  if (ctx.num_outputs > 1 && u != ctx.input_types[0].dtype) {
    return Status(
        StatusCode::kUnimplemented,
        fmt::format("node '{}' ({}): decomposition needs X dtype {} to equal the "
                    "stash_type dtype {} when Mean/InvStdDev are used",
                    ctx.node_name, ctx.op, dtype_name(ctx.input_types[0].dtype), dtype_name(u)));
  }
  MicroGraph m(ctx);
  const int64_t r = ctx.input_types[0].rank();
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1), r, "attribute 'axis'"));
  auto [d, inv, mean] = normalize_graph(m, ctx, m.input(0), tail_axes(axis, r));
  ir::ValueId y = m.add("mul", {m.add("mul", {d, inv}), m.input(1)});
  if (ctx.has_input(2)) y = m.add("add", {y, m.input(2)});
  std::vector<ir::ValueId> outs{y, mean, inv};
  outs.resize(ctx.num_outputs);
  return m.finish(outs);
}

FRAME_REGISTER_OP(layer_normalization)
    .doc(
        "Normalisation over dims [axis, rank) (ONNX LayerNormalization opset 17): Y = (X - "
        "mean) * InvStdDev * Scale + B with InvStdDev = 1 / sqrt(var + epsilon) (population "
        "variance). Scale/B broadcast to X.shape[axis:] (leading 1s up to X's rank allowed: [1, 1, "
        "H] "
        "for X [N, S, H]). Optional outputs Mean and InvStdDev "
        "have shape X.shape[:axis] + [1]*(rank-axis) and the stash_type dtype (1 = f32, "
        "16 = bf16); statistics are computed in float.")
    .input("X", "input", kFloatDTypes, "T")
    .input("Scale", "scale, broadcastable to X.shape[axis:]", kFloatDTypes, "T")
    .optional_input("B", "bias, broadcastable to X.shape[axis:]", kFloatDTypes, "T")
    .output("Y", "normalised X", kFloatDTypes, "T")
    .optional_output("Mean", "mean per normalised slice",
                     DTypeSet{DTypeCode::kFloat32, DTypeCode::kBFloat16})
    .optional_output("InvStdDev", "1 / stddev per normalised slice",
                     DTypeSet{DTypeCode::kFloat32, DTypeCode::kBFloat16})
    .attr("axis", AttrType::kInt, "first normalised dim, in [-r, r-1]", int64_t{-1})
    .attr("epsilon", AttrType::kFloat, "added to the variance", 1e-5)
    .attr("stash_type", AttrType::kInt, "dtype of Mean/InvStdDev: 1 = f32, 16 = bf16", int64_t{1})
    .shape_infer(infer_layer_norm)
    .decomposition(decompose_layer_norm);

// Axes a softmax normalises over: {axis}, or [axis, rank) with legacy_flatten=1.
Result<std::vector<int64_t>> softmax_axes(const NodeContext& ctx) {
  const int64_t r = ctx.input_types[0].rank();
  FRAME_ASSIGN_OR_RETURN(
      int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1), r, "attribute 'axis'"));
  if (ctx.attr_or<int64_t>("legacy_flatten", 0) != 0) return tail_axes(axis, r);
  return std::vector<int64_t>{axis};
}

Result<std::vector<TensorType>> infer_softmax(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(softmax_axes(ctx).status());
  return same_as_input(ctx, 0);
}

// log_softmax(x) = (x - max) - log(sum(exp(x - max))) over the softmax axes.
Result<ir::Graph> decompose_log_softmax(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> axes, softmax_axes(ctx));
  MicroGraph m(ctx);
  ir::ValueId x = m.input(0);
  ir::ValueId s = m.add("sub", {x, m.add("reduce_max", {x}, mean_attrs(axes))});
  ir::ValueId lse = m.add("log", {m.add("reduce_sum", {m.add("exp", {s})}, mean_attrs(axes))});
  return m.finish({m.add("sub", {s, lse})});
}

#define FRAME_SOFTMAX_ATTRS                                                                  \
  input("input", "input, rank >= 1", kFloatDTypes, "T")                                      \
      .output("output", "same shape as input", kFloatDTypes, "T")                            \
      .attr("axis", AttrType::kInt, "normalised axis, in [-r, r-1]", int64_t{-1})            \
      .attr("legacy_flatten", AttrType::kInt,                                                \
            "1 = opset < 13 semantics: normalise over the flattened dims [axis, rank) (the " \
            "ONNX importer sets it, with the old default axis=1, for opset < 13 models)",    \
            int64_t{0})                                                                      \
      .shape_infer(infer_softmax)

FRAME_REGISTER_OP(softmax)
    .doc(
        "exp(x - max) / sum(exp(x - max)) along `axis` (ONNX Softmax opset 13). With "
        "legacy_flatten=1 the input is viewed as 2-D [prod(d[:axis]), prod(d[axis:])] and "
        "normalised over the second dim (ONNX Softmax opset 1-12). Computed in float (double "
        "for f64).")
    .FRAME_SOFTMAX_ATTRS;

FRAME_REGISTER_OP(log_softmax)
    .doc(
        "x - max - log(sum(exp(x - max))) along `axis` (ONNX LogSoftmax opset 13); "
        "legacy_flatten=1 as for softmax (opset 1-12).")
    .FRAME_SOFTMAX_ATTRS.decomposition(decompose_log_softmax);

Result<std::vector<TensorType>> infer_lrn(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  if (x.rank() < 2)
    return ctx.error("input 0 (X) expects rank >= 2 (N, C, ...), got rank {}", x.rank());
  const int64_t* size = ctx.attr<int64_t>("size");
  if (size == nullptr || *size < 1) return ctx.error("attribute 'size' must be >= 1");
  return std::vector<TensorType>{x};
}

FRAME_REGISTER_OP(lrn)
    .doc(
        "Local response normalisation across channels (ONNX LRN opset 13): y = x / (bias + "
        "alpha / size * sum of x^2 over channels [c - floor((size-1)/2), c + "
        "ceil((size-1)/2)])^beta. X: [N, C, D...].")
    .input("X", "input [N, C, D1, ...]", kFloatDTypes, "T")
    .output("Y", "normalised X", kFloatDTypes, "T")
    .attr("alpha", AttrType::kFloat, "scale", 1e-4)
    .attr("beta", AttrType::kFloat, "exponent", 0.75)
    .attr("bias", AttrType::kFloat, "offset", 1.0)
    .required_attr("size", AttrType::kInt, "number of channels summed")
    .shape_infer(infer_lrn);

Result<std::vector<TensorType>> infer_dropout(const NodeContext& ctx) {
  for (size_t i = 1; i < 3; ++i) {
    if (ctx.has_input(i) && numel_of(ctx.input_types[i].shape) != 1) {
      return ctx.error("input {} ({}) must be a scalar, got shape {}", i,
                       i == 1 ? "ratio" : "training_mode",
                       shape_to_string(ctx.input_types[i].shape));
    }
  }
  if (const Tensor* r = ctx.constant_input(1); r != nullptr) {
    const double ratio = r->element_as_double(0);
    if (!(ratio >= 0.0 && ratio < 1.0)) {
      return ctx.error("input 1 (ratio) must be in [0, 1), got {}", ratio);
    }
  }
  std::vector<TensorType> out{ctx.input_types[0]};
  if (ctx.num_outputs > 1) out.push_back(TensorType{DTypeCode::kBool, ctx.input_types[0].shape});
  return out;
}

// Inference-mode Dropout (training_mode absent or a constant false), or one with a constant
// ratio of 0 (every element kept, scaled by 1), is the identity: output = data itself (its
// readers read data; where the output is a graph output the node stays) and, when the
// node has the mask output, an all-true mask (an expand that DCE removes when nothing reads it).
// torchvision's Swin-T exports 24 Dropouts with ratio 0, training_mode true and the mask output:
// each copied its [64, 3, 49, 49] input and wrote a mask every run. Otherwise (training mode
// with a nonzero or run-time ratio, or a run-time training_mode) it declines.
Result<ir::Graph> decompose_dropout(const NodeContext& ctx) {
  const Tensor* ratio = ctx.has_input(1) ? ctx.constant_input(1) : nullptr;
  const bool keeps_all = ratio != nullptr && ratio->element_as_double(0) == 0.0;
  if (ctx.has_input(2) && !keeps_all) {
    const Tensor* t = ctx.constant_input(2);
    if (t == nullptr || t->element_as_double(0) != 0.0) {
      return unimplemented("dropout in training mode (or with a run-time training_mode)");
    }
  }
  MicroGraph m(ctx);
  std::vector<ir::ValueId> outs{m.input(0)};
  if (ctx.num_outputs > 1) {
    const Shape& s = ctx.input_types[0].shape;
    FRAME_ASSIGN_OR_RETURN(Tensor shape,
                           Tensor::empty(DTypeCode::kInt64, {static_cast<int64_t>(s.size())}));
    std::copy(s.begin(), s.end(), shape.data<int64_t>());
    outs.push_back(
        m.add("expand", {m.scalar(DTypeCode::kBool, 1.0), m.constant(std::move(shape))}));
  }
  return m.finish(std::move(outs));
}

FRAME_REGISTER_OP(dropout)
    .doc(
        "Dropout (ONNX Dropout opset 22). Inference (training_mode absent or false): output = "
        "data and mask all true. Training mode: each element is kept with probability "
        "1 - ratio (default 0.5) and scaled by 1 / (1 - ratio); mask marks kept elements. The "
        "random draws are new on every run (seeded from `seed` when given, so the same mask "
        "repeats); the op is not marked side-effecting, so a pass may merge two identical "
        "training-mode dropouts.")
    .input("data", "input", kFloatDTypes, "T")
    .optional_input("ratio", "scalar drop probability in [0, 1)", kFloatDTypes, "T1")
    .optional_input("training_mode", "scalar bool", kBoolDType, "T2")
    .output("output", "dropped-out data", kFloatDTypes, "T")
    .optional_output("mask", "bool keep mask", kBoolDType, "T2")
    .optional_attr("seed", AttrType::kInt, "random seed (default: fresh per run)")
    .shape_infer(infer_dropout)
    .decomposition(decompose_dropout);

}  // namespace
}  // namespace frame::ops
