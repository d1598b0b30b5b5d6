// Linear-algebra schemas: MatMul (opset 13), Gemm (13), Einsum (12).

#include <algorithm>
#include <string>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/einsum_plan.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using ir::TensorType;

constexpr DTypeSet kMatDTypes = kFloatDTypes | DTypeSet{DTypeCode::kInt32, DTypeCode::kInt64,
                                                        DTypeCode::kUInt32, DTypeCode::kUInt64};

Result<std::vector<TensorType>> infer_matmul(const NodeContext& ctx) {
  const Shape& a = ctx.input_types[0].shape;
  const Shape& b = ctx.input_types[1].shape;
  if (a.empty()) return ctx.error("input 0 (A) must have rank >= 1, got a scalar");
  if (b.empty()) return ctx.error("input 1 (B) must have rank >= 1, got a scalar");
  // numpy: a 1-D A is a row [1, K], a 1-D B a column [K, 1]; the added dim is dropped.
  const int64_t ka = a.back();
  const int64_t kb = b.size() == 1 ? b[0] : b[b.size() - 2];
  if (ka != kb) {
    return ctx.error("inner dims differ: input 0 (A) {} has K={}, input 1 (B) {} has K={}",
                     shape_to_string(a), ka, shape_to_string(b), kb);
  }
  const std::span<const int64_t> ab(a.data(), a.size() > 2 ? a.size() - 2 : 0);
  const std::span<const int64_t> bb(b.data(), b.size() > 2 ? b.size() - 2 : 0);
  Result<Shape> batch = broadcast_shapes(ab, bb);
  if (!batch.is_ok()) {
    return ctx.error("batch dims of input 0 (A) {} and input 1 (B) {} do not broadcast",
                     shape_to_string(a), shape_to_string(b));
  }
  Shape out = *batch;
  if (a.size() >= 2) out.push_back(a[a.size() - 2]);
  if (b.size() >= 2) out.push_back(b.back());
  return one_output(ctx.input_types[0].dtype, out);
}

FRAME_REGISTER_OP(matmul)
    .doc(
        "Matrix product with numpy.matmul semantics (ONNX MatMul opset 13): 1-D operands are "
        "promoted (A to a row, B to a column) and the added dim removed; leading batch dims "
        "broadcast. Shapes: [..., M, K] x [..., K, N] -> [..., M, N]. Integer products "
        "accumulate in int64 and wrap on conversion; 16-bit floats accumulate in float.")
    .input("A", "left operand, rank >= 1", kMatDTypes, "T")
    .input("B", "right operand, rank >= 1", kMatDTypes, "T")
    .output("Y", "product", kMatDTypes, "T")
    .shape_infer(infer_matmul);

Result<std::vector<TensorType>> infer_gemm(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(expect_rank(ctx, 0, 2, "A"));
  FRAME_RETURN_IF_ERROR(expect_rank(ctx, 1, 2, "B"));
  const Shape& a = ctx.input_types[0].shape;
  const Shape& b = ctx.input_types[1].shape;
  const bool ta = ctx.attr_or<int64_t>("transA", 0) != 0;
  const bool tb = ctx.attr_or<int64_t>("transB", 0) != 0;
  const int64_t m = ta ? a[1] : a[0], ka = ta ? a[0] : a[1];
  const int64_t kb = tb ? b[1] : b[0], n = tb ? b[0] : b[1];
  if (ka != kb) {
    return ctx.error(
        "inner dims differ: op(A) is [{}, {}] and op(B) is [{}, {}] (transA={}, "
        "transB={})",
        m, ka, kb, n, ta ? 1 : 0, tb ? 1 : 0);
  }
  const Shape out{m, n};
  if (ctx.has_input(2) && !unidirectional_broadcastable(ctx.input_types[2].shape, out)) {
    return ctx.error("input 2 (C) {} does not broadcast to the output {}",
                     shape_to_string(ctx.input_types[2].shape), shape_to_string(out));
  }
  return one_output(ctx.input_types[0].dtype, out);
}

FRAME_REGISTER_OP(gemm)
    .doc(
        "Y = alpha * op(A) * op(B) + beta * C (ONNX Gemm opset 13); op() transposes when "
        "transA/transB is 1. A: [M, K] (or [K, M]), B: [K, N] (or [N, K]), optional C "
        "unidirectionally broadcastable to [M, N]. Integer results are computed in double "
        "after the int64 product and truncated.")
    .input("A", "2-D left operand", kMatDTypes, "T")
    .input("B", "2-D right operand", kMatDTypes, "T")
    .optional_input("C", "bias broadcastable to [M, N]", kMatDTypes, "T")
    .output("Y", "[M, N] result", kMatDTypes, "T")
    .attr("alpha", AttrType::kFloat, "scale of the product", 1.0)
    .attr("beta", AttrType::kFloat, "scale of C", 1.0)
    .attr("transA", AttrType::kInt, "transpose A when 1", int64_t{0})
    .attr("transB", AttrType::kInt, "transpose B when 1", int64_t{0})
    .shape_infer(infer_gemm);

Result<std::vector<TensorType>> infer_einsum(const NodeContext& ctx) {
  const std::string* eq = ctx.attr<std::string>("equation");
  if (eq == nullptr) return ctx.error("missing required attribute 'equation'");
  std::vector<Shape> shapes;
  for (const TensorType& t : ctx.input_types) shapes.push_back(t.shape);
  FRAME_ASSIGN_OR_RETURN(EinsumPlan p, plan_einsum(ctx, *eq, shapes));
  return one_output(ctx.input_types[0].dtype, p.out_shape);
}

// Two-operand einsum as batched matrix multiplication (how ONNX Runtime runs Einsum): each
// label is a batch label (in both operands and the output), a contracted one (in both, not in
// the output) or kept from one operand. A is transposed to [batch, a-kept, contracted] and
// reshaped to [B, M, K], B to [B, K, N]; one matmul, then a reshape and transpose give the
// output order. Declined (the node keeps its kernel): other operand counts, a label repeated
// within an operand (a diagonal), a label summed within one operand only, a broadcast (a label
// of extent 1 in one operand only, or a size mismatch), integer dtypes.
Result<ir::Graph> decompose_einsum(const NodeContext& ctx) {
  const auto decline = [&](std::string_view why) {
    return Status(StatusCode::kUnimplemented,
                  fmt::format("node '{}' (einsum): not lowered to matmul: {}", ctx.node_name, why));
  };
  if (ctx.num_inputs() != 2) return decline("not two operands");
  const DTypeCode dt = ctx.input_types[0].dtype;
  if (!is_floating(dt) || dt == DTypeCode::kFloat64) return decline("not a 16/32-bit float");
  const std::string* eq = ctx.attr<std::string>("equation");
  if (eq == nullptr) return ctx.error("missing required attribute 'equation'");
  const Shape shapes[2] = {ctx.input_types[0].shape, ctx.input_types[1].shape};
  FRAME_ASSIGN_OR_RETURN(EinsumPlan p, plan_einsum(ctx, *eq, shapes));
  const std::vector<int>& la = p.input_labels[0];
  const std::vector<int>& lb = p.input_labels[1];
  auto pos = [](const std::vector<int>& v, int l) {
    auto it = std::find(v.begin(), v.end(), l);
    return it == v.end() ? int64_t{-1} : static_cast<int64_t>(it - v.begin());
  };
  for (const auto* labels : {&la, &lb}) {
    for (size_t i = 0; i < labels->size(); ++i) {
      if (pos(*labels, (*labels)[i]) != static_cast<int64_t>(i)) return decline("a diagonal");
    }
  }
  std::vector<int> batch, contract, keep_a, keep_b;
  for (size_t i = 0; i < la.size(); ++i) {
    const int l = la[i];
    const bool in_b = pos(lb, l) >= 0, in_out = pos(p.out_labels, l) >= 0;
    if (in_b && shapes[0][i] != shapes[1][static_cast<size_t>(pos(lb, l))]) {
      return decline("a broadcast label");
    }
    if (in_b) {
      (in_out ? batch : contract).push_back(l);
    } else if (in_out) {
      keep_a.push_back(l);
    } else {
      return decline("a label summed within operand 0 only");
    }
  }
  for (int l : lb) {
    if (pos(la, l) >= 0) continue;
    if (pos(p.out_labels, l) < 0) return decline("a label summed within operand 1 only");
    keep_b.push_back(l);
  }
  auto size_of = [&](const std::vector<int>& labels) {
    int64_t n = 1;
    for (int l : labels) n *= p.label_size[static_cast<size_t>(l)];
    return n;
  };
  auto i64 = [](const std::vector<int64_t>& v) {
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v);
  };
  MicroGraph m(ctx);
  // Operand `x` with labels `have`, transposed to `order` and reshaped to `dims`.
  auto arrange = [&](ir::ValueId x, const std::vector<int>& have, const std::vector<int>& order,
                     const std::vector<int64_t>& dims) {
    std::vector<int64_t> perm;
    for (int l : order) perm.push_back(pos(have, l));
    bool identity = true;
    for (size_t i = 0; i < perm.size(); ++i)
      identity = identity && perm[i] == static_cast<int64_t>(i);
    if (!identity) x = m.add("transpose", {x}, {{"perm", perm}});
    return m.add("reshape", {x, m.constant(i64(dims))});
  };
  std::vector<int> order_a = batch, order_b = batch;
  order_a.insert(order_a.end(), keep_a.begin(), keep_a.end());
  order_a.insert(order_a.end(), contract.begin(), contract.end());
  order_b.insert(order_b.end(), contract.begin(), contract.end());
  order_b.insert(order_b.end(), keep_b.begin(), keep_b.end());
  const int64_t nb = size_of(batch), mm = size_of(keep_a), kk = size_of(contract),
                nn = size_of(keep_b);
  ir::ValueId y = m.add("matmul", {arrange(m.input(0), la, order_a, {nb, mm, kk}),
                                   arrange(m.input(1), lb, order_b, {nb, kk, nn})});
  // [B, M, N] -> the batch, a-kept and b-kept dims -> the output order.
  std::vector<int> produced = batch;
  produced.insert(produced.end(), keep_a.begin(), keep_a.end());
  produced.insert(produced.end(), keep_b.begin(), keep_b.end());
  std::vector<int64_t> dims;
  for (int l : produced) dims.push_back(p.label_size[static_cast<size_t>(l)]);
  y = m.add("reshape", {y, m.constant(i64(dims))});
  std::vector<int64_t> perm;
  for (int l : p.out_labels) perm.push_back(pos(produced, l));
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i)
    identity = identity && perm[i] == static_cast<int64_t>(i);
  if (!identity) y = m.add("transpose", {y}, {{"perm", perm}});
  return m.finish({y});
}

FRAME_REGISTER_OP(einsum)
    .doc(
        "Einstein summation (ONNX Einsum opset 12) over 1+ inputs: explicit ('ij,jk->ik') "
        "and implicit ('ij,jk') forms, repeated subscripts within a term (diagonals, "
        "'ii->i', 'ii'), and '...' broadcasting. Accumulates in double (floats) or int64. "
        "Two float operands without diagonals, one-sided sums or broadcasts decompose to "
        "transpose/reshape and one batched matmul (ARCH-021) where a backend lacks einsum.")
    .variadic_input("Inputs", "operands, one per equation term", 1, kNumericDTypes, "T")
    .output("Output", "result", kNumericDTypes, "T")
    .required_attr("equation", AttrType::kString, "einsum equation")
    .shape_infer(infer_einsum)
    .decomposition(decompose_einsum);

}  // namespace
}  // namespace frame::ops
