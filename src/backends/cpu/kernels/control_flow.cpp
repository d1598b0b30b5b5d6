// cpu kernels of if, loop and scan (ONNX operator spec "If", "Loop", "Scan"): ONNX semantics on
// top of the bodies the runtime compiled into nested plans (ops::SubgraphRunner). The kernels
// only move bytes (slices, stacking, double-buffered carried values); every computation runs
// in the bodies. Buffers are made once per run, never per iteration.

#include "ops/schemas/control_flow.h"

#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

#include "frame/ops/kernel_registry.h"

namespace frame::backends::cpu {
namespace {

using ops::SubgraphRunner;

Result<SubgraphRunner*> runner(ops::KernelContext& kc, size_t i, std::string_view attr) {
  if (i >= kc.subgraphs.size() || kc.subgraphs[i] == nullptr) {
    return unimplemented(
        "node '{}' ({}): body '{}' needs the runtime's nested plan (it cannot run outside a "
        "compiled executable)",
        kc.node->node_name, kc.node->op, attr);
  }
  return kc.subgraphs[i];
}

Tensor view_of(DTypeCode d, Shape shape, const void* data) {
  return Tensor::view(d, std::move(shape), const_cast<void*>(data)).value();
}

// Bytes of one slice along `axis` of `shape` in the layout outer x len x inner.
struct AxisSplit {
  int64_t outer = 1, len = 1;
  size_t inner_bytes = 0;
};
AxisSplit split_at(const Shape& shape, int64_t axis, DTypeCode d) {
  AxisSplit s;
  int64_t inner = 1;
  for (int64_t i = 0; i < static_cast<int64_t>(shape.size()); ++i) {
    if (i < axis) s.outer *= shape[static_cast<size_t>(i)];
    if (i > axis) inner *= shape[static_cast<size_t>(i)];
  }
  s.len = shape[static_cast<size_t>(axis)];
  s.inner_bytes = static_cast<size_t>(inner) * dtype_size(d);
  return s;
}

// dst (the slice, contiguous) <- src[..., k, ...] along the split's axis.
void gather_slice(const AxisSplit& s, const std::byte* src, int64_t k, std::byte* dst) {
  for (int64_t o = 0; o < s.outer; ++o) {
    std::memcpy(dst + static_cast<size_t>(o) * s.inner_bytes,
                src + static_cast<size_t>(o * s.len + k) * s.inner_bytes, s.inner_bytes);
  }
}
// dst[..., k, ...] <- src (the slice, contiguous).
void scatter_slice(const AxisSplit& s, const std::byte* src, int64_t k, std::byte* dst) {
  for (int64_t o = 0; o < s.outer; ++o) {
    std::memcpy(dst + static_cast<size_t>(o * s.len + k) * s.inner_bytes,
                src + static_cast<size_t>(o) * s.inner_bytes, s.inner_bytes);
  }
}

void copy_into(const Tensor& src, Tensor& dst) {
  if (src.raw_data() != dst.raw_data() && dst.nbytes() > 0) {
    std::memcpy(dst.raw_data(), src.raw_data(), dst.nbytes());
  }
}

// ---- if -------------------------------------------------------------------------------------

// A constant condition is left to the If schema's decomposition (ARCH-021): declining makes
// the decomposition pass inline the selected branch on every backend chain.
Status if_accepts(const ops::NodeContext& ctx) {
  if (ctx.constant_input(0) != nullptr) {
    return unimplemented("the condition is a constant: the If decomposition inlines its branch");
  }
  return Status();
}

Status if_cpu(ops::KernelContext& kc) {
  const bool c = kc.input(0).element_as_int64(0) != 0;
  FRAME_ASSIGN_OR_RETURN(SubgraphRunner * r,
                         runner(kc, c ? 0 : 1, c ? "then_branch" : "else_branch"));
  return r->run(kc.inputs.subspan(1), kc.outputs);
}

// ---- loop -----------------------------------------------------------------------------------

struct LoopPlan {
  size_t n_carried = 0, n_captured = 0, n_scan = 0;
};

Result<std::shared_ptr<void>> loop_prepare(const ops::NodeContext& ctx) {
  auto p = std::make_shared<LoopPlan>();
  p->n_captured = static_cast<size_t>(ctx.attr_or<int64_t>(ops::cf::kNumCaptured, 0));
  p->n_carried = ctx.num_inputs() - 2 - p->n_captured;
  p->n_scan = ctx.num_outputs - p->n_carried;
  return std::shared_ptr<void>(p);
}

Status loop_cpu(ops::KernelContext& kc) {
  const auto& p = *static_cast<const LoopPlan*>(kc.state);
  FRAME_ASSIGN_OR_RETURN(SubgraphRunner * body, runner(kc, 0, "body"));
  const int64_t m = kc.input(0).element_as_int64(0);
  bool cond = kc.input(1).element_as_int64(0) != 0;
  const size_t nc = p.n_carried;
  // Body inputs: i, cond, carried (current), captured; outputs: cond, carried (next), slices.
  std::vector<Tensor> in(2 + nc + p.n_captured);
  std::vector<Tensor> out(1 + nc + p.n_scan);
  Tensor iter = Tensor::scalar<int64_t>(0);
  Tensor cond_in = Tensor::scalar<bool>(cond);
  Tensor cond_out = Tensor::scalar<bool>(cond);
  in[0] = iter;
  in[1] = cond_in;
  out[0] = cond_out;
  // Carried values alternate between the node's outputs and one spare set, so a body never
  // writes a buffer it reads; the first iteration reads the node's inputs.
  std::vector<Tensor> spare(nc);
  for (size_t k = 0; k < nc; ++k) {
    FRAME_ASSIGN_OR_RETURN(spare[k], Tensor::empty(kc.output(k).dtype(), kc.output(k).shape()));
    in[2 + k] = kc.input(2 + k);
  }
  for (size_t k = 0; k < p.n_captured; ++k) in[2 + nc + k] = kc.input(2 + nc + k);
  // Scan-output slices go through one buffer each (made once per run) and are copied to
  // their place in the stacked output, so an iteration allocates nothing.
  std::vector<size_t> slice_bytes(p.n_scan);
  for (size_t j = 0; j < p.n_scan; ++j) {
    const Tensor& o = kc.output(nc + j);
    slice_bytes[j] = o.shape()[0] == 0 ? 0 : o.nbytes() / static_cast<size_t>(o.shape()[0]);
    FRAME_ASSIGN_OR_RETURN(out[1 + nc + j],
                           Tensor::empty(o.dtype(), Shape(o.shape().begin() + 1, o.shape().end())));
  }
  const int64_t trips = p.n_scan > 0 ? kc.output(nc).shape()[0] : -1;
  int64_t i = 0;
  for (; i < m && cond; ++i) {
    *iter.data<int64_t>() = i;
    *cond_in.data<bool>() = cond;
    for (size_t k = 0; k < nc; ++k) out[1 + k] = (i % 2 == 0) ? kc.output(k) : spare[k];
    if (p.n_scan > 0 && i >= trips) {
      return internal_error("node '{}' (loop): iteration {} exceeds the {} scan slices",
                            kc.node->node_name, i, trips);
    }
    Status s = body->run(in, out);
    if (!s.is_ok())
      return s.with_prefix(fmt::format("node '{}' (loop) iteration {}: ", kc.node->node_name, i));
    for (size_t j = 0; j < p.n_scan; ++j) {
      if (slice_bytes[j] == 0) continue;
      std::memcpy(static_cast<std::byte*>(kc.output(nc + j).raw_data()) +
                      static_cast<size_t>(i) * slice_bytes[j],
                  out[1 + nc + j].raw_data(), slice_bytes[j]);
    }
    cond = *cond_out.data<bool>();
    for (size_t k = 0; k < nc; ++k) in[2 + k] = out[1 + k];
  }
  if (p.n_scan > 0 && i != trips) {
    return invalid_argument(
        "node '{}' (loop): ran {} iterations, but its scan outputs were sized for {} (ARCH-044)",
        kc.node->node_name, i, trips);
  }
  // The final carried values are in the outputs after an odd number of iterations.
  for (size_t k = 0; k < nc; ++k) copy_into(in[2 + k], kc.output(k));
  return Status();
}

// ---- scan -----------------------------------------------------------------------------------

struct ScanPlan {
  size_t n_state = 0, n_scan_in = 0, n_captured = 0, n_scan_out = 0;
  bool batched = false;
  std::vector<int64_t> in_axes, in_rev, out_axes, out_rev;
};

Result<std::shared_ptr<void>> scan_prepare(const ops::NodeContext& ctx) {
  auto p = std::make_shared<ScanPlan>();
  p->n_scan_in = static_cast<size_t>(ctx.attr_or<int64_t>("num_scan_inputs", 1));
  p->n_captured = static_cast<size_t>(ctx.attr_or<int64_t>(ops::cf::kNumCaptured, 0));
  p->n_state = ctx.num_inputs() - p->n_scan_in - p->n_captured;
  p->n_scan_out = ctx.num_outputs - p->n_state;
  p->batched = ctx.attr_or<int64_t>("batched", 0) != 0;
  auto ints = [&](const char* name, size_t n) {
    std::vector<int64_t> v = ctx.attr_or<std::vector<int64_t>>(name, {});
    v.resize(n, 0);
    return v;
  };
  p->in_axes = ints("scan_input_axes", p->n_scan_in);
  p->in_rev = ints("scan_input_directions", p->n_scan_in);
  p->out_axes = ints("scan_output_axes", p->n_scan_out);
  p->out_rev = ints("scan_output_directions", p->n_scan_out);
  for (size_t i = 0; i < p->n_scan_in; ++i) {
    const int64_t r = ctx.input_types[p->n_state + i].rank() - (p->batched ? 1 : 0);
    if (p->batched) p->in_axes[i] = 0;
    if (p->in_axes[i] < 0) p->in_axes[i] += r;
  }
  for (size_t j = 0; j < p->n_scan_out; ++j) {
    if (p->batched) p->out_axes[j] = 0;
  }
  return std::shared_ptr<void>(p);
}

// One (unbatched) scan over `ins` -> `outs` (node layout without a batch axis).
Status scan_once(const ScanPlan& p, SubgraphRunner& body, const ops::NodeContext& node,
                 std::span<const Tensor> ins, std::span<Tensor> outs) {
  const size_t ns = p.n_state;
  const int64_t steps = ins[ns].shape()[static_cast<size_t>(p.in_axes[0])];
  std::vector<Tensor> in(ns + p.n_scan_in + p.n_captured);
  std::vector<Tensor> out(ns + p.n_scan_out);
  std::vector<Tensor> spare(ns);
  for (size_t k = 0; k < ns; ++k) {
    FRAME_ASSIGN_OR_RETURN(spare[k], Tensor::empty(outs[k].dtype(), outs[k].shape()));
    in[k] = ins[k];
  }
  for (size_t k = 0; k < p.n_captured; ++k) {
    in[ns + p.n_scan_in + k] = ins[ns + p.n_scan_in + k];
  }
  // Each scan input and output has one slice buffer made here, once per run; slices are
  // gathered into and scattered out of them with memcpy (one run of bytes per outer index),
  // so an iteration allocates nothing.
  const auto body_in = body.input_types();
  const auto body_out = body.output_types();
  std::vector<AxisSplit> in_split(p.n_scan_in), out_split(p.n_scan_out);
  for (size_t i = 0; i < p.n_scan_in; ++i) {
    const Tensor& x = ins[ns + i];
    in_split[i] = split_at(x.shape(), p.in_axes[i], x.dtype());
    FRAME_ASSIGN_OR_RETURN(in[ns + i], Tensor::empty(x.dtype(), body_in[ns + i].shape));
  }
  std::vector<Tensor> out_buf(p.n_scan_out);
  for (size_t j = 0; j < p.n_scan_out; ++j) {
    const Tensor& y = outs[ns + j];
    const int64_t axis = p.out_axes[j] < 0 ? p.out_axes[j] + y.rank() : p.out_axes[j];
    out_split[j] = split_at(y.shape(), axis, y.dtype());
    FRAME_ASSIGN_OR_RETURN(out_buf[j], Tensor::empty(y.dtype(), body_out[ns + j].shape));
    out[ns + j] = out_buf[j];
  }
  for (int64_t t = 0; t < steps; ++t) {
    for (size_t i = 0; i < p.n_scan_in; ++i) {
      const int64_t k = p.in_rev[i] != 0 ? steps - 1 - t : t;
      gather_slice(in_split[i], static_cast<const std::byte*>(ins[ns + i].raw_data()), k,
                   static_cast<std::byte*>(in[ns + i].raw_data()));
    }
    for (size_t k = 0; k < ns; ++k) out[k] = (t % 2 == 0) ? outs[k] : spare[k];
    Status s = body.run(in, out);
    if (!s.is_ok()) {
      return s.with_prefix(fmt::format("node '{}' (scan) iteration {}: ", node.node_name, t));
    }
    for (size_t j = 0; j < p.n_scan_out; ++j) {
      const int64_t k = p.out_rev[j] != 0 ? steps - 1 - t : t;
      scatter_slice(out_split[j], static_cast<const std::byte*>(out_buf[j].raw_data()), k,
                    static_cast<std::byte*>(outs[ns + j].raw_data()));
    }
    for (size_t k = 0; k < ns; ++k) in[k] = out[k];
  }
  for (size_t k = 0; k < ns; ++k) copy_into(in[k], outs[k]);
  return Status();
}

Status scan_cpu(ops::KernelContext& kc) {
  const auto& p = *static_cast<const ScanPlan*>(kc.state);
  FRAME_ASSIGN_OR_RETURN(SubgraphRunner * body, runner(kc, 0, "body"));
  if (!p.batched) return scan_once(p, *body, *kc.node, kc.inputs, kc.outputs);
  // Opset 8: every batch row is an independent scan over contiguous views (axis 0 is batch).
  const int64_t batch = kc.input(0).shape()[0];
  const size_t n_in = p.n_state + p.n_scan_in;
  std::vector<Tensor> ins(kc.inputs.size()), outs(kc.outputs.size());
  for (size_t k = n_in; k < kc.inputs.size(); ++k) ins[k] = kc.input(k);
  auto row = [](const Tensor& t, int64_t b) {
    const Shape s(t.shape().begin() + 1, t.shape().end());
    const size_t bytes = t.nbytes() / static_cast<size_t>(t.shape()[0]);
    return view_of(t.dtype(), s,
                   static_cast<const std::byte*>(t.raw_data()) + static_cast<size_t>(b) * bytes);
  };
  for (int64_t b = 0; b < batch; ++b) {
    for (size_t k = 0; k < n_in; ++k) ins[k] = row(kc.input(k), b);
    for (size_t k = 0; k < kc.outputs.size(); ++k) outs[k] = row(kc.output(k), b);
    FRAME_RETURN_IF_ERROR(scan_once(p, *body, *kc.node, ins, outs));
  }
  return Status();
}

}  // namespace

FRAME_REGISTER_KERNEL(if, "cpu", if_cpu)
    .dtypes(kBoolDType)
    .accepts(if_accepts)
    .subgraphs({"then_branch", "else_branch"});
FRAME_REGISTER_KERNEL(loop, "cpu", loop_cpu).prepare(loop_prepare).subgraphs({"body"});
FRAME_REGISTER_KERNEL(scan, "cpu", scan_cpu).prepare(scan_prepare).subgraphs({"body"});

}  // namespace frame::backends::cpu
