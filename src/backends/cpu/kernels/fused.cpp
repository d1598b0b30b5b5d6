// cpu kernel of `fused_elementwise_internal`: evaluates the fused body block by block, so an
// intermediate of the group only ever exists as a block of kBlock elements (in thread-local
// scratch), never at full size. Each body node runs its own cpu kernel on block-sized views;
// inputs that broadcast are gathered into the block through precomputed strides.
//
// Aliasing: the output may share memory with a same-shape input (memory planning, in place).
// A block reads its input positions before the last body node writes the same positions.

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cpu/kernels/kernel_util.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/ops/parallel.h"

namespace frame::backends::cpu {
namespace {

using ops::KernelContext;
using ops::NodeContext;

constexpr int64_t kBlock = 1024;
constexpr size_t kMaxElemBytes = 8;

// One body node, ready to run: its cpu kernel, context (borrowing the body) and state.
struct BodyStep {
  const ops::KernelDef* kernel = nullptr;
  NodeContext ctx;
  std::shared_ptr<void> state;
  std::vector<ir::ValueId> inputs;
  ir::ValueId output = ir::kNoValue;
};

struct FusedState {
  std::shared_ptr<const ir::Graph> body;  // keeps the contexts' borrowed attrs alive
  std::vector<BodyStep> steps;
  std::vector<DTypeCode> dtype;  // per body value
  ir::ValueId output = ir::kNoValue;
};

Result<std::shared_ptr<void>> fused_prepare(const NodeContext& ctx) {
  const auto* body = ctx.attr<std::shared_ptr<const ir::Graph>>("body");
  if (body == nullptr || *body == nullptr) return ctx.error("attribute 'body' is missing");
  auto st = std::make_shared<FusedState>();
  st->body = *body;
  const ir::Graph& g = *st->body;
  if (g.outputs().size() != 1 || g.inputs().size() != ctx.num_inputs()) {
    return ctx.error("body has {} inputs and {} outputs, expected {} and 1", g.inputs().size(),
                     g.outputs().size(), ctx.num_inputs());
  }
  st->output = g.outputs()[0];
  st->dtype.resize(g.num_values(), DTypeCode::kFloat32);
  for (size_t v = 0; v < g.num_values(); ++v) {
    if (g.value(static_cast<ir::ValueId>(v)).type) {
      st->dtype[v] = g.value(static_cast<ir::ValueId>(v)).type->dtype;
    }
  }
  const ir::TensorType* out_type = g.value(st->output).type ? &*g.value(st->output).type : nullptr;
  if (out_type == nullptr) return ctx.error("body output has no type");
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    // Block evaluation is only sound when every body value has the output's element layout.
    if (schema == nullptr || !schema->has_trait(ops::OpTrait::kElementwise) ||
        n.outputs.size() != 1 || !g.value(n.outputs[0]).type ||
        numel_of(g.value(n.outputs[0]).type->shape) != numel_of(out_type->shape)) {
      return ctx.error("body node '{}' ({}) is not an elementwise node of the output's shape",
                       n.name, n.op);
    }
    BodyStep s;
    s.kernel = ops::KernelRegistry::global().find(n.op, "cpu");
    if (s.kernel == nullptr) return ctx.error("body op '{}' has no cpu kernel", n.op);
    s.ctx = ops::make_node_context(g, n, schema);
    FRAME_RETURN_IF_ERROR(s.kernel->supports(s.ctx));
    if (s.kernel->prepare != nullptr) {
      FRAME_ASSIGN_OR_RETURN(s.state, s.kernel->prepare(s.ctx));
    }
    s.inputs = n.inputs;
    s.output = n.outputs[0];
    st->steps.push_back(std::move(s));
  }
  return std::shared_ptr<void>(st);
}

// How one fused input is read for a block of output positions.
struct InputMap {
  const std::byte* data = nullptr;
  size_t elem = 1;
  bool contiguous = false;       // same element count as the output: a view, no copy
  std::vector<int64_t> strides;  // per output dim (0 = broadcast), for gathers
};

// Copies elements [b, b + n) of the broadcast input into dst, walking output indices with an
// odometer (one division per block).
template <typename E>
void gather(const InputMap& in, std::span<const int64_t> out_shape, int64_t b, int64_t n,
            std::byte* dst_bytes) {
  const E* src = reinterpret_cast<const E*>(in.data);
  E* dst = reinterpret_cast<E*>(dst_bytes);
  const size_t r = out_shape.size();
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  int64_t rem = b;
  for (size_t d = r; d-- > 0;) {
    idx[d] = rem % out_shape[d];
    rem /= out_shape[d];
    off += idx[d] * in.strides[d];
  }
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = src[off];
    for (size_t d = r; d-- > 0;) {
      ++idx[d];
      off += in.strides[d];
      if (idx[d] < out_shape[d]) break;
      off -= in.strides[d] * out_shape[d];
      idx[d] = 0;
    }
  }
}

void gather_any(const InputMap& in, std::span<const int64_t> out_shape, int64_t b, int64_t n,
                std::byte* dst) {
  switch (in.elem) {  // by element size: a byte copy, no dtype-specific arithmetic
    case 1:
      return gather<uint8_t>(in, out_shape, b, n, dst);
    case 2:
      return gather<uint16_t>(in, out_shape, b, n, dst);
    case 4:
      return gather<uint32_t>(in, out_shape, b, n, dst);
    default:
      return gather<uint64_t>(in, out_shape, b, n, dst);
  }
}

// Per-thread buffers reused across calls, so the steady state allocates nothing large.
struct Scratch {
  std::vector<std::byte> bytes;
  std::vector<Tensor> values;
  std::vector<Tensor> ins;
};

Status run_block(const FusedState& st, const std::vector<InputMap>& maps,
                 std::span<const int64_t> out_shape, Tensor& out, int64_t b, int64_t n,
                 Scratch& sc) {
  const ir::Graph& g = *st.body;
  const size_t nv = g.num_values();
  const size_t slot = static_cast<size_t>(kBlock) * kMaxElemBytes;
  if (sc.bytes.size() < nv * slot + kTensorAlignment) sc.bytes.resize(nv * slot + kTensorAlignment);
  std::byte* base = sc.bytes.data();
  base +=
      (kTensorAlignment - reinterpret_cast<uintptr_t>(base) % kTensorAlignment) % kTensorAlignment;
  sc.values.resize(nv);
  const Shape block_shape{n};
  for (size_t i = 0; i < maps.size(); ++i) {
    const ir::ValueId v = g.inputs()[i];
    const InputMap& m = maps[i];
    std::byte* p;
    if (m.contiguous) {
      p = const_cast<std::byte*>(m.data) + static_cast<size_t>(b) * m.elem;
    } else {
      p = base + static_cast<size_t>(v) * slot;
      gather_any(m, out_shape, b, n, p);
    }
    sc.values[static_cast<size_t>(v)] =
        *Tensor::view(st.dtype[static_cast<size_t>(v)], block_shape, p);
  }
  for (const BodyStep& s : st.steps) {
    sc.ins.resize(s.inputs.size());
    for (size_t k = 0; k < s.inputs.size(); ++k) {
      sc.ins[k] =
          s.inputs[k] == ir::kNoValue ? Tensor() : sc.values[static_cast<size_t>(s.inputs[k])];
    }
    const auto ov = static_cast<size_t>(s.output);
    std::byte* p = s.output == st.output ? static_cast<std::byte*>(out.raw_data()) +
                                               static_cast<size_t>(b) * dtype_size(out.dtype())
                                         : base + ov * slot;
    Tensor result = *Tensor::view(st.dtype[ov], block_shape, p);
    KernelContext kc;
    kc.node = &s.ctx;
    kc.inputs = std::span<const Tensor>(sc.ins.data(), sc.ins.size());
    kc.outputs = std::span<Tensor>(&result, 1);
    kc.state = s.state.get();
    kc.num_threads = 1;
    FRAME_RETURN_IF_ERROR(s.kernel->fn(kc));
    sc.values[ov] = result;
  }
  return Status();
}

Status fused_kernel(KernelContext& ctx) {
  const auto* st = static_cast<const FusedState*>(ctx.state);
  if (st == nullptr) return ctx.node->error("kernel state missing (prepare was not run)");
  Tensor& out = ctx.output(0);
  const Shape& out_shape = out.shape();
  const int64_t total = out.numel();
  std::vector<InputMap> maps(ctx.inputs.size());
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    const Tensor& in = ctx.input(i);
    InputMap& m = maps[i];
    m.data = static_cast<const std::byte*>(in.raw_data());
    m.elem = dtype_size(in.dtype());
    m.contiguous = in.numel() == total;
    if (!m.contiguous) m.strides = broadcast_strides(in.shape(), out_shape);
  }
  const int64_t blocks = (total + kBlock - 1) / kBlock;
  const int nt =
      threads_for_cost(total, 4.0 * (maps.size() + 1), 4.0 * st->steps.size(), ctx.num_threads);
  Status first_error;
  std::mutex mu;
  ops::parallel_for(blocks, nt, [&](int64_t blk) {
    thread_local Scratch scratch;
    const int64_t b = blk * kBlock;
    Status s = run_block(*st, maps, out_shape, out, b, std::min(kBlock, total - b), scratch);
    if (!s.is_ok()) {
      std::lock_guard lock(mu);
      if (first_error.is_ok()) first_error = s;
    }
  });
  return first_error;
}

}  // namespace

FRAME_REGISTER_KERNEL(fused_elementwise_internal, "cpu", fused_kernel)
    .dtypes(kAllDTypes)
    .prepare(fused_prepare);

}  // namespace frame::backends::cpu
