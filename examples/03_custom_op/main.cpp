// Adding a custom op in two steps (op spec §6; docs/architecture/op-registration.md):
//   1. the schema: FRAME_REGISTER_OP(tanh_custom) with inputs, outputs, traits, shape function;
//   2. the `cpu` reference kernel: FRAME_REGISTER_KERNEL(tanh_custom, "cpu", fn) (ARCH-041).
// Then the op is validated on 4 hand-checked elements and on a 1M-element random tensor
// against std::tanh with the BUILD-011 tolerance, through the same path the runtime uses:
// verify the graph (V1–V4), infer shapes, look up the kernel by (op, backend), run it.
#include <cmath>
#include <cstdio>
#include <random>

#include "common/tolerance.h"
#include "frame/core/dtype.h"
#include "frame/ir/graph.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"

namespace {

using frame::DTypeCode;
using frame::Result;
using frame::Status;
using frame::Tensor;
namespace ir = frame::ir;
namespace ops = frame::ops;

// ---- Step 1: the schema. Elementwise + fusable: output type = input type.
Result<std::vector<ir::TensorType>> tanh_custom_shape(const ops::NodeContext& ctx) {
  return std::vector<ir::TensorType>{ctx.input_types[0]};
}

FRAME_REGISTER_OP(tanh_custom)
    .doc("Y = tanh(X), elementwise. Same semantics as ONNX Tanh (opset 13).")
    .input("X", "input tensor, any shape", frame::kFloatDTypes, "T")
    .output("Y", "tanh of X, same shape and dtype", frame::kFloatDTypes, "T")
    .traits({ops::OpTrait::kElementwise, ops::OpTrait::kFusable})
    .shape_infer(tanh_custom_shape);

// ---- Step 2: the cpu kernel. dtype is expanded once, outside the loop (ARCH-042);
// 16-bit floats compute in float and round once per element.
template <typename T>
void tanh_loop(const T* x, T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    y[i] = frame::from_compute<T>(std::tanh(frame::to_compute(x[i])));
  }
}

Status tanh_custom_cpu(ops::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  return frame::dispatch_dtype<frame::kFloatDTypes>(
      x.dtype(), [&]<typename T>() { tanh_loop<T>(x.data<T>(), y.data<T>(), x.numel()); });
}

FRAME_REGISTER_KERNEL(tanh_custom, "cpu", tanh_custom_cpu).dtypes(frame::kFloatDTypes);

// Runs Y = tanh_custom(X) as a one-node graph.
Result<Tensor> run_tanh_custom(const Tensor& x) {
  ir::Graph g("example");
  ir::ValueId in = g.add_input("X", {x.dtype(), x.shape()});
  FRAME_ASSIGN_OR_RETURN(ir::NodeId n, g.create_node("tanh_custom", "t0", {in}, 1));
  const ops::OpSchema* schema = ops::OpRegistry::global().find("tanh_custom");
  ops::NodeContext ctx = ops::make_node_context(g, g.node(n), schema);
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out_types, schema->infer(ctx));
  g.value(g.node(n).outputs[0]).type = out_types[0];
  g.add_output(g.node(n).outputs[0]);
  FRAME_RETURN_IF_ERROR(g.verify(ops::make_op_query()));

  const ops::KernelDef* k = ops::KernelRegistry::global().find("tanh_custom", "cpu");
  if (k == nullptr) return frame::not_found("no cpu kernel for tanh_custom");
  FRAME_RETURN_IF_ERROR(k->supports(ctx));
  FRAME_ASSIGN_OR_RETURN(Tensor y, Tensor::empty(out_types[0].dtype, out_types[0].shape));
  std::vector<Tensor> inputs{x}, outputs{y};
  ops::KernelContext kctx;
  kctx.node = &ctx;
  kctx.inputs = inputs;
  kctx.outputs = outputs;
  FRAME_RETURN_IF_ERROR(k->fn(kctx));
  return y;
}

int check(const char* what, const Tensor& x, const Tensor& y) {
  Tensor expected = *Tensor::empty(DTypeCode::kFloat32, x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) {
    expected.data<float>()[i] = std::tanh(x.data<float>()[i]);
  }
  auto tol = frame::test::tolerance_for(DTypeCode::kFloat32);
  frame::test::CompareResult r = frame::test::compare_tensors(y, expected, tol);
  std::printf(
      "%s: %lld elements, max abs error %.3g, max rel error %.3g (BUILD-011 f32: rtol "
      "%g atol %g) -> %s\n",
      what, static_cast<long long>(x.numel()), r.max_abs_error, r.max_rel_error, tol.rtol, tol.atol,
      r.ok ? "OK" : "FAIL");
  if (!r.ok) std::printf("  %s\n", r.message.c_str());
  return r.ok ? 0 : 1;
}

}  // namespace

int main() {
  // 4 elements with values checked by hand: tanh(0)=0, tanh(+-1)=+-0.7615941559557649,
  // tanh(20) rounds to 1 in float.
  Tensor small = Tensor::from_vector<float>({4}, {0.0f, 1.0f, -1.0f, 20.0f});
  Result<Tensor> y4 = run_tanh_custom(small);
  if (!y4.is_ok()) {
    std::fprintf(stderr, "error: %s\n", y4.status().to_string().c_str());
    return 1;
  }
  const float hand[4] = {0.0f, 0.7615941559557649f, -0.7615941559557649f, 1.0f};
  for (int i = 0; i < 4; ++i) {
    if (std::fabs(y4->data<float>()[i] - hand[i]) > 1e-6f) {
      std::fprintf(stderr, "element %d: got %g, expected %g\n", i, y4->data<float>()[i], hand[i]);
      return 1;
    }
  }
  int rc = check("4 elements", small, *y4);

  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-6.0f, 6.0f);
  Tensor big = *Tensor::empty(DTypeCode::kFloat32, {1000, 1000});
  for (int64_t i = 0; i < big.numel(); ++i) big.data<float>()[i] = dist(rng);
  Result<Tensor> y = run_tanh_custom(big);
  if (!y.is_ok()) {
    std::fprintf(stderr, "error: %s\n", y.status().to_string().c_str());
    return 1;
  }
  rc |= check("1M random elements", big, *y);

  // A dtype the kernel does not declare is rejected before running.
  Result<Tensor> bad = run_tanh_custom(Tensor::from_vector<int32_t>({2}, {1, 2}));
  std::printf("int32 input rejected: %s\n", bad.is_ok() ? "NO" : bad.status().message().c_str());
  return rc | (bad.is_ok() ? 1 : 0);
}
