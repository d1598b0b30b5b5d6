// Helpers of the onednn primitive kernels (see primitive_util.h).

#include "backends/onednn/kernels/primitive_util.h"

#include <array>

namespace frame::backends::onednn {

int append_post_ops(dnnl::post_ops& ops, std::span<const ops::fused::PostOp> post,
                    const dnnl::memory::desc* residual) {
  using dnnl::algorithm;
  using ops::fused::PostOpKind;
  int add_index = -1;
  for (const ops::fused::PostOp& p : post) {
    const auto a = static_cast<float>(p.alpha), b = static_cast<float>(p.beta);
    switch (p.kind) {
      case PostOpKind::kAdd:
        add_index = ops.len();
        if (residual != nullptr) {
          ops.append_binary(algorithm::binary_add, *residual);
        } else {
          ops.append_sum(1.f);
        }
        break;
      case PostOpKind::kRelu:
        ops.append_eltwise(1.f, algorithm::eltwise_relu, 0.f, 0.f);
        break;
      case PostOpKind::kLeakyRelu:
        ops.append_eltwise(1.f, algorithm::eltwise_relu, a, 0.f);
        break;
      case PostOpKind::kClip:
        ops.append_eltwise(1.f, algorithm::eltwise_clip, a, b);
        break;
      case PostOpKind::kSigmoid:
        ops.append_eltwise(1.f, algorithm::eltwise_logistic, 0.f, 0.f);
        break;
      case PostOpKind::kTanh:
        ops.append_eltwise(1.f, algorithm::eltwise_tanh, 0.f, 0.f);
        break;
      case PostOpKind::kElu:
        ops.append_eltwise(1.f, algorithm::eltwise_elu, a, 0.f);
        break;
      case PostOpKind::kHardSwish:
        // x * clip(x / 6 + 0.5, 0, 1); releases that read alpha/beta take the ONNX ones.
        ops.append_eltwise(1.f, algorithm::eltwise_hardswish, 1.f / 6.f, 0.5f);
        break;
      case PostOpKind::kGelu:
        ops.append_eltwise(1.f, algorithm::eltwise_gelu_erf, 0.f, 0.f);
        break;
      case PostOpKind::kGeluTanh:
        ops.append_eltwise(1.f, algorithm::eltwise_gelu_tanh, 0.f, 0.f);
        break;
    }
  }
  return add_index;
}

}  // namespace frame::backends::onednn
