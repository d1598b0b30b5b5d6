// A frame plugin: one op, its cpu kernel, and the ONNX mapping that lets models use it.
// Loaded with `frame run MODEL --plugin libmyops.so` or runtime::load_plugin(path); a fault
// here (duplicate or illegal name, missing shape function) is reported with this library's
// path and registers nothing (docs/architecture/op-registration.md "Plugins").
#include <cmath>

#include "frame/onnx/onnx.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_schema.h"

namespace {

using frame::Result;
using frame::Status;
using frame::Tensor;

// Step 1: the schema. y = x * sigmoid(x) ("swish", "SiLU"), elementwise, same type as x.
Result<std::vector<frame::ir::TensorType>> same_type(const frame::ops::NodeContext& ctx) {
  return std::vector<frame::ir::TensorType>{ctx.input_types[0]};
}

FRAME_REGISTER_OP(myops_swish)
    .doc("Y = X * sigmoid(X), elementwise (SiLU).")
    .input("X", "input, any shape", frame::kFloatDTypes, "T")
    .output("Y", "output, shape and dtype of X", frame::kFloatDTypes, "T")
    .traits({frame::ops::OpTrait::kElementwise})
    .shape_infer(same_type);

// Step 2: the cpu kernel. The dtype is expanded once, outside the loop (ARCH-042).
Status myops_swish_cpu(frame::ops::KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  return frame::dispatch_dtype<frame::kFloatDTypes>(x.dtype(), [&]<typename T>() {
    const T* in = x.data<T>();
    T* out = y.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i) {
      const auto v = frame::to_compute(in[i]);
      out[i] = frame::from_compute<T>(v / (1 + std::exp(-v)));
    }
  });
}
FRAME_REGISTER_KERNEL(myops_swish, "cpu", myops_swish_cpu).dtypes(frame::kFloatDTypes);

}  // namespace

// Step 3: ONNX nodes com.example::Swish become myops_swish.
FRAME_REGISTER_ONNX_OP("com.example", "Swish", myops_swish);
