// Helpers of the onednn primitive kernels (see primitive_util.h).

#include "backends/onednn/kernels/primitive_util.h"

#include <array>
#include <cstdint>
#include <memory>

namespace frame::backends::onednn {

dnnl::memory thread_buffer(BufferSlot slot, const dnnl::memory::desc& desc) {
  struct Buffer {
    std::unique_ptr<std::byte[]> data;
    size_t size = 0;
  };
  thread_local std::array<Buffer, 3> buffers;
  Buffer& buf = buffers[static_cast<size_t>(slot)];
  const size_t need = desc.get_size() + 64;
  if (buf.size < need) {
    buf.data = std::make_unique<std::byte[]>(need);
    buf.size = need;
  }
  auto addr = reinterpret_cast<uintptr_t>(buf.data.get());
  void* aligned = reinterpret_cast<void*>((addr + 63) / 64 * 64);
  return dnnl::memory(desc, engine(), aligned);
}

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

Status execute(const ops::NodeContext& node, const dnnl::primitive& prim,
               std::span<const ExecArg> args) {
  std::array<dnnl_exec_arg_t, 8> c_args{};
  size_t n = 0;
  for (const ExecArg& a : args) {
    if (a.mem == nullptr || n == c_args.size()) continue;
    c_args[n++] = dnnl_exec_arg_t{a.arg, a.mem->get()};
  }
  dnnl::stream& s = thread_stream();
  dnnl_status_t st =
      dnnl_primitive_execute(prim.get(), s.get(), static_cast<int>(n), c_args.data());
  if (st == dnnl_success) st = dnnl_stream_wait(s.get());
  if (st != dnnl_success) {
    return Status(StatusCode::kInternal,
                  fmt::format("node '{}' ({}): oneDNN execution failed with status {}",
                              node.node_name, node.op, static_cast<int>(st)));
  }
  return Status();
}

Status dnnl_failure(const ops::NodeContext& node, std::string_view what, const dnnl::error& e) {
  return Status(StatusCode::kInternal, fmt::format("node '{}' ({}): oneDNN {}: {}", node.node_name,
                                                   node.op, what, e.what()));
}

Status dnnl_declines(std::string_view what, const dnnl::error& e) {
  return unimplemented("oneDNN has no {} for this node: {}", what, e.what());
}

}  // namespace frame::backends::onednn
