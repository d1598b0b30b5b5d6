#pragma once
// Shared pieces of the test plugins: the f32 dtype set, a shape function passing input 0's
// type through, the f32 X -> Y signature, and an f32 identity cpu kernel.
#include <cstring>

#include "frame/onnx/onnx.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_schema.h"

namespace plugin_test {

constexpr frame::DTypeSet kF32{frame::DTypeCode::kFloat32};

inline frame::Result<std::vector<frame::ir::TensorType>> same_type(
    const frame::ops::NodeContext& ctx) {
  return std::vector<frame::ir::TensorType>{ctx.input_types[0]};
}

/// Declares f32 input X and output Y of one type variable T.
inline void f32_x_to_y(frame::ops::OpSchemaBuilder& b) {
  b.input("X", "input", kF32, "T").output("Y", "output", kF32, "T");
}

/// f32_x_to_y with Y typed like X: the signature most test ops have.
inline void f32_same_type(frame::ops::OpSchemaBuilder& b) {
  f32_x_to_y(b);
  b.shape_infer(same_type);
}

inline frame::Status copy_cpu(frame::ops::KernelContext& ctx) {
  const frame::Tensor& x = ctx.input(0);
  std::memcpy(ctx.output(0).data<float>(), x.data<float>(),
              static_cast<size_t>(x.numel()) * sizeof(float));
  return frame::Status();
}

}  // namespace plugin_test
