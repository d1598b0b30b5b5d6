// Engine, streams and scratchpads of the onednn backend (see dnnl_util.h).

#include "backends/onednn/dnnl_util.h"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <memory>

#include "core/aligned_memory.h"

namespace frame::backends::onednn {

dnnl::engine& engine() {
  static dnnl::engine* e = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *e;
}

dnnl::stream& thread_stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

std::optional<dnnl::memory::data_type> to_dnnl(DTypeCode dtype) {
  using dt = dnnl::memory::data_type;
  switch (dtype) {
    case DTypeCode::kFloat32:
      return dt::f32;
    case DTypeCode::kFloat16:
      return dt::f16;
    case DTypeCode::kBFloat16:
      return dt::bf16;
    case DTypeCode::kInt8:
      return dt::s8;
    case DTypeCode::kUInt8:
      return dt::u8;
    case DTypeCode::kInt32:
      return dt::s32;
    default:
      return std::nullopt;
  }
}

dnnl::memory::desc plain_desc(std::span<const int64_t> shape, dnnl::memory::data_type dt) {
  dnnl::memory::dims dims(shape.begin(), shape.end());
  if (dims.empty()) dims.push_back(1);
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size() - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  return dnnl::memory::desc(dims, dt, strides);
}

dnnl::memory::desc activation_desc(const dnnl::memory::dims& dims, dnnl::memory::data_type dt,
                                   ops::fused::ActivationLayout layout) {
  using ops::fused::ActivationLayout;
  switch (layout) {
    case ActivationLayout::kPlain:
      break;
    case ActivationLayout::kNhwc:
      return dnnl::memory::desc(dims, dt, dnnl::memory::format_tag::nhwc);
    case ActivationLayout::kNChw8c:
      return dnnl::memory::desc(dims, dt, dnnl::memory::format_tag::nChw8c);
    case ActivationLayout::kNChw16c:
      return dnnl::memory::desc(dims, dt, dnnl::memory::format_tag::nChw16c);
  }
  return plain_desc(dims, dt);
}

Status int8_sums_exact() {
  static const bool exact = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    // The VNNI bit of avx512_core_vnni (0x67; also in _bf16 and _amx) and of avx2_vnni (0x407),
    // dnnl_types.h.
    constexpr unsigned kAvx512Vnni = 0x40, kAvx2Vnni = 0x400;
    return (isa & (kAvx512Vnni | kAvx2Vnni)) != 0;
  }();
  if (exact) return Status();
  return unimplemented(
      "int8 on a CPU without VNNI (oneDNN sums u8 x s8 pairs in saturating 16-bit lanes there; "
      "ONNX needs exact int32 sums)");
}

dnnl::primitive_attr default_attr() {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return a;
}

dnnl::memory thread_buffer(BufferSlot slot, const dnnl::memory::desc& desc) {
  thread_local std::array<frame::detail::GrowBuffer, 4> buffers;
  return dnnl::memory(desc, engine(), buffers[static_cast<size_t>(slot)].get(desc.get_size()));
}

Status execute(const ops::NodeContext& node, const dnnl::primitive& prim,
               std::span<const ExecArg> args) {
  std::array<dnnl_exec_arg_t, 16> c_args{};
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
  const StatusCode code =
      e.status == dnnl_unimplemented ? StatusCode::kUnimplemented : StatusCode::kInternal;
  return Status(
      code, fmt::format("node '{}' ({}): oneDNN {}: {}", node.node_name, node.op, what, e.what()));
}

Status dnnl_declines(std::string_view what, const dnnl::error& e) {
  return unimplemented("oneDNN has no {} for this node: {}", what, e.what());
}

}  // namespace frame::backends::onednn
