// Loss schemas: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (ONNX opset 12/13; the
// two opsets differ only in allowed dtypes). softmax_cross_entropy_loss decomposes into
// log_softmax (axis 1) + negative_log_likelihood_loss (ARCH-021, the ONNX function body).

#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;

constexpr DTypeSet kLossIndexDTypes{DTypeCode::kInt32, DTypeCode::kInt64};

// Checks input [N, C, d1..dk], target [N, d1..dk], optional weight [C] at positions 0, 1, 2
// and the reduction attribute; returns the loss type ([N, d1..dk] for "none", else scalar).
Result<TensorType> infer_loss_output(const NodeContext& ctx) {
  const TensorType& x = ctx.input_types[0];
  const TensorType& t = ctx.input_types[1];
  if (x.rank() < 2) {
    return ctx.error("input 0 expects rank >= 2 ([N, C, d1, ...]), got {}",
                     shape_to_string(x.shape));
  }
  Shape expect(x.shape.begin(), x.shape.end());
  expect.erase(expect.begin() + 1);
  if (t.shape != expect) {
    return ctx.error("input 1 (target) expects shape {} (input shape without dim 1), got {}",
                     shape_to_string(expect), shape_to_string(t.shape));
  }
  if (ctx.has_input(2)) {
    const Shape& w = ctx.input_types[2].shape;
    if (w.size() != 1 || w[0] != x.shape[1]) {
      return ctx.error("input 2 (weight) expects shape [{}] (one value per class), got {}",
                       x.shape[1], shape_to_string(w));
    }
  }
  const std::string reduction = ctx.attr_or<std::string>("reduction", "mean");
  if (reduction == "none") return TensorType{x.dtype, expect};
  if (reduction == "sum" || reduction == "mean") return TensorType{x.dtype, {}};
  return ctx.error("attribute 'reduction' must be 'none', 'sum' or 'mean', got '{}'", reduction);
}

Result<std::vector<TensorType>> infer_nll(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(TensorType loss, infer_loss_output(ctx));
  return std::vector<TensorType>{loss};
}

Result<std::vector<TensorType>> infer_sce(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(TensorType loss, infer_loss_output(ctx));
  std::vector<TensorType> out{loss};
  if (ctx.num_outputs > 1) out.push_back(ctx.input_types[0]);
  return out;
}

// loss = NLL(log_softmax(scores, axis=1), labels, weights); log_prob = the log_softmax.
Result<ir::Graph> decompose_sce(const NodeContext& ctx) {
  MicroGraph m(ctx);
  ir::ValueId lp = m.add("log_softmax", {m.input(0)}, {{"axis", int64_t{1}}});
  ir::AttrMap attrs{{"reduction", ctx.attr_or<std::string>("reduction", "mean")}};
  if (const int64_t* ii = ctx.attr<int64_t>("ignore_index")) attrs["ignore_index"] = *ii;
  std::vector<ir::ValueId> in{lp, m.input(1)};
  if (ctx.has_input(2)) in.push_back(m.input(2));
  ir::ValueId loss = m.add("negative_log_likelihood_loss", std::move(in), std::move(attrs));
  std::vector<ir::ValueId> outs{loss, lp};
  outs.resize(ctx.num_outputs);
  return m.finish(outs);
}

}  // namespace

FRAME_REGISTER_OP(negative_log_likelihood_loss)
    .doc(
        "Negative log likelihood loss (ONNX NegativeLogLikelihoodLoss opset 12/13). input: "
        "[N, C] or [N, C, d1, ..., dk] log-probabilities; target: [N] or [N, d1, ..., dk] "
        "class indices in [0, C) (int32/int64); weight: optional [C]. loss[n, d] = "
        "-input[n, target[n, d], d] * weight[target[n, d]] (weight 1 when absent), and 0 with "
        "weight 0 where target == ignore_index (which may be negative or >= C). A target "
        "outside [0, C) that is not ignore_index is an error (kInvalidArgument). reduction "
        "'none' gives [N, d1..dk]; 'sum' the scalar sum; 'mean' (default) the sum divided by "
        "the sum of the gathered weights (the number of elements when there is neither "
        "weight nor ignore_index).")
    .input("input", "[N, C, d1, ...] log-probabilities", kFloatDTypes, "T")
    .input("target", "[N, d1, ...] class indices", kLossIndexDTypes, "Tind")
    .optional_input("weight", "[C] per-class weights", kFloatDTypes, "T")
    .output("loss", "[N, d1, ...] for reduction 'none', else a scalar", kFloatDTypes, "T")
    .attr("reduction", AttrType::kString, "'none', 'sum' or 'mean'", std::string("mean"))
    .optional_attr("ignore_index", AttrType::kInt, "target value that contributes nothing")
    .shape_infer(infer_nll);

FRAME_REGISTER_OP(softmax_cross_entropy_loss)
    .doc(
        "Softmax cross-entropy loss (ONNX SoftmaxCrossEntropyLoss opset 12/13): log_prob = "
        "log_softmax(scores) along axis 1, then negative_log_likelihood_loss(log_prob, labels, "
        "weights) with the same reduction and ignore_index. scores: [N, C, d1, ...]; labels: "
        "[N, d1, ...] (int32/int64); weights: optional [C]. Optional second output log_prob "
        "has the shape of scores.")
    .input("scores", "[N, C, d1, ...] unnormalised scores", kFloatDTypes, "T")
    .input("labels", "[N, d1, ...] class indices", kLossIndexDTypes, "Tind")
    .optional_input("weights", "[C] per-class weights", kFloatDTypes, "T")
    .output("output", "[N, d1, ...] for reduction 'none', else a scalar", kFloatDTypes, "T")
    .optional_output("log_prob", "log_softmax(scores) along axis 1", kFloatDTypes, "T")
    .attr("reduction", AttrType::kString, "'none', 'sum' or 'mean'", std::string("mean"))
    .optional_attr("ignore_index", AttrType::kInt, "label value that contributes nothing")
    .shape_infer(infer_sce)
    .decomposition(decompose_sce);

}  // namespace frame::ops
