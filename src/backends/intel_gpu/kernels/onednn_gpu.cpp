// conv and matmul through oneDNN's OpenCL GPU engine on Intel GPUs (onednn_gpu.h). Plain
// (row-major) layouts on the caller's cl_mem buffers, so values stay where the node's other
// kernels expect them; oneDNN picks its implementation for those layouts.

#include "backends/intel_gpu/kernels/onednn_gpu.h"

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "backends/intel_gpu/opencl.h"

#if defined(FRAME_INTEL_GPU_HAVE_DNNL) && __has_include(<oneapi/dnnl/dnnl_ocl.hpp>)
#include <oneapi/dnnl/dnnl.hpp>
#include <oneapi/dnnl/dnnl_ocl.hpp>
#if DNNL_GPU_RUNTIME == DNNL_RUNTIME_OCL
#define FRAME_INTEL_GPU_ONEDNN_OCL 1
#endif
#endif

#ifdef FRAME_INTEL_GPU_ONEDNN_OCL
#include <algorithm>
#include <optional>

#include "ops/schemas/nn_geometry.h"
#endif

namespace frame::backends::intel_gpu {

#ifndef FRAME_INTEL_GPU_ONEDNN_OCL

Result<std::shared_ptr<Launch>> onednn_gpu_launch(const ops::NodeContext&) {
  return std::shared_ptr<Launch>();  // this oneDNN has no OpenCL GPU runtime
}

#else

namespace {

using dnnl::memory;
using Dims = memory::dims;

enum class Mode { kOff, kIntelGpu, kForce };

Mode mode() {
  const char* v = std::getenv(kOnednnEnv);
  if (v == nullptr) return Mode::kIntelGpu;
  const std::string_view s(v);
  if (s == "0") return Mode::kOff;
  if (s == "force") return Mode::kForce;
  return Mode::kIntelGpu;
}

// The engine on the selected device, made once per process; a device oneDNN refuses (it
// only takes Intel GPUs) is remembered with its message.
struct EngineSlot {
  std::optional<dnnl::engine> engine;
  std::string error;
};

const EngineSlot& gpu_engine(const Device& d) {
  static const EngineSlot slot = [&d] {
    EngineSlot s;
    try {
      s.engine = dnnl::ocl_interop::make_engine(d.id, d.context);
    } catch (const dnnl::error& e) {
      s.error = e.what();
    }
    return s;
  }();
  return slot;
}

// One stream per queue (oneDNN retains the queue), shared by every node that runs on it.
Result<dnnl::stream> stream_for(const dnnl::engine& engine, cl_command_queue q) {
  static std::mutex mu;
  static std::vector<std::pair<cl_command_queue, dnnl::stream>> streams;
  std::lock_guard lock(mu);
  for (const auto& [queue, s] : streams) {
    if (queue == q) return s;
  }
  try {
    streams.emplace_back(q, dnnl::ocl_interop::make_stream(engine, q));
  } catch (const dnnl::error& e) {
    return internal_error("oneDNN stream on the OpenCL queue: {}", e.what());
  }
  return streams.back().second;
}

Dims dense_strides(const Dims& dims) {
  Dims st(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) st[d - 1] = st[d] * dims[d];
  return st;
}

memory::desc plain(const Dims& dims) {
  return memory::desc(dims, memory::data_type::f32, dense_strides(dims));
}

// The primitive and its memories, made once; `l.mu` (held by enqueue_node's callers) guards
// the per-run rebinding of the buffers and the cached stream.
struct GpuPrimitive {
  dnnl::engine engine;
  dnnl::primitive prim;
  std::vector<memory> in;  // per device input; empty where absent
  memory out;
  std::vector<dnnl_exec_arg_t> args;
  std::vector<cl_mem> bound;  // the cl_mem each memory wraps now (inputs, then output)
  cl_command_queue queue = nullptr;
  dnnl::stream stream;

  Status rebind(size_t i, const memory& m, cl_mem buf) {
    if (bound[i] == buf) return Status();
    const dnnl_status_t st = dnnl_ocl_interop_memory_set_mem_object(m.get(), buf);
    if (st != dnnl_success) return internal_error("oneDNN: binding buffer {}: status {}", i, st);
    bound[i] = buf;
    return Status();
  }

  Status run(cl_command_queue q, std::span<const cl_mem> inputs, cl_mem output) {
    if (q != queue) {
      FRAME_ASSIGN_OR_RETURN(stream, stream_for(engine, q));
      queue = q;
    }
    for (size_t k = 0; k < in.size(); ++k) {
      if (!in[k]) continue;
      if (k >= inputs.size() || inputs[k] == nullptr) {
        return internal_error("oneDNN: input {} has no device buffer", k);
      }
      FRAME_RETURN_IF_ERROR(rebind(k, in[k], inputs[k]));
    }
    FRAME_RETURN_IF_ERROR(rebind(in.size(), out, output));
    // Enqueued on the in-order queue; the caller's read-back or next kernel waits for it.
    const dnnl_status_t st = dnnl_primitive_execute(prim.get(), stream.get(),
                                                    static_cast<int>(args.size()), args.data());
    if (st != dnnl_success) return internal_error("oneDNN GPU execution failed: status {}", st);
    return Status();
  }
};

// Input positions and their oneDNN argument: the primitive's descriptors per device input.
struct Plan {
  std::vector<std::pair<int, memory::desc>> inputs;  // (DNNL_ARG_*, desc); arg 0: absent
  memory::desc dst;
};

// Prepare-time applicability (the primitives are f32 only), not a per-run dtype branch.
bool all_f32(const ops::NodeContext& ctx) {
  constexpr DTypeSet kF32{DTypeCode::kFloat32};
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && !kF32.contains(ctx.input_types[k].dtype)) return false;
  }
  return ctx.num_inputs() > 0;
}

Result<dnnl::primitive> conv_primitive(const ops::NodeContext& ctx, const dnnl::engine& engine,
                                       Plan& plan) {
  const Shape& x = ctx.input_types[0].shape;
  const Shape& w = ctx.input_types[1].shape;
  FRAME_ASSIGN_OR_RETURN(
      ops::nn::WindowGeometry g,
      ops::nn::resolve_window(ctx, std::span(x.data() + 2, 2), std::span(w.data() + 2, 2),
                              ops::nn::WindowKind::kConv));
  const int64_t group = ctx.attr_or<int64_t>("group", 1);
  if (group <= 0 || x[1] % group != 0 || w[0] % group != 0 || w[1] * group != x[1]) {
    return ctx.error("channels {} and weight {} do not match group {}", x[1], w[0], group);
  }
  const Dims src{x[0], x[1], x[2], x[3]};
  const Dims dst{x[0], w[0], g.out[0], g.out[1]};
  // Grouped weights [M, C/G, kh, kw] are [G, M/G, C/G, kh, kw] in the same memory.
  const Dims wd =
      group == 1 ? Dims{w[0], w[1], w[2], w[3]} : Dims{group, w[0] / group, w[1], w[2], w[3]};
  const bool bias = ctx.has_input(2);
  plan.inputs = {{DNNL_ARG_SRC, plain(src)}, {DNNL_ARG_WEIGHTS, plain(wd)}};
  if (bias) plan.inputs.emplace_back(DNNL_ARG_BIAS, plain(Dims{w[0]}));
  plan.dst = plain(dst);
  // oneDNN counts dilation from 0 (ONNX dilation 1 is oneDNN 0).
  const Dims dil{g.dilations[0] - 1, g.dilations[1] - 1};
  const Dims str{g.strides[0], g.strides[1]};
  const Dims pl{g.pad_begin[0], g.pad_begin[1]}, pr{g.pad_end[0], g.pad_end[1]};
  const memory::desc bias_md = bias ? plan.inputs[2].second : memory::desc();
  dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference,
                                    dnnl::algorithm::convolution_direct, plan.inputs[0].second,
                                    plan.inputs[1].second, bias_md, plan.dst, str, dil, pl, pr);
  return dnnl::primitive(
      dnnl::convolution_forward(dnnl::convolution_forward::primitive_desc(d, engine)));
}

Result<dnnl::primitive> matmul_primitive(const ops::NodeContext& ctx, const dnnl::engine& engine,
                                         Plan& plan) {
  Shape a = ctx.input_types[0].shape, b = ctx.input_types[1].shape;
  if (a.empty() || b.empty()) return ctx.error("matmul of a scalar");
  if (a.size() == 1) a.insert(a.begin(), 1);
  if (b.size() == 1) b.push_back(1);
  if (a.back() != b[b.size() - 2]) {
    return ctx.error("inner dims {} and {} differ", a.back(), b[b.size() - 2]);
  }
  // Equal ranks, batch dims of size 1 broadcast (oneDNN's matmul broadcasting).
  const size_t r = std::max(a.size(), b.size());
  a.insert(a.begin(), r - a.size(), 1);
  b.insert(b.begin(), r - b.size(), 1);
  Dims dst(r);
  for (size_t d = 0; d + 2 < r; ++d) {
    if (a[d] != b[d] && a[d] != 1 && b[d] != 1) return ctx.error("batch dims do not broadcast");
    dst[d] = a[d] == 1 ? b[d] : a[d];
  }
  dst[r - 2] = a[r - 2];
  dst[r - 1] = b[r - 1];
  plan.inputs = {{DNNL_ARG_SRC, plain(Dims(a.begin(), a.end()))},
                 {DNNL_ARG_WEIGHTS, plain(Dims(b.begin(), b.end()))}};
  plan.dst = plain(dst);  // the 1-D promotions' unit dims do not change the layout
  dnnl::matmul::desc d(plan.inputs[0].second, plan.inputs[1].second, plan.dst);
  return dnnl::primitive(dnnl::matmul(dnnl::matmul::primitive_desc(d, engine)));
}

}  // namespace

Result<std::shared_ptr<Launch>> onednn_gpu_launch(const ops::NodeContext& ctx) {
  const Mode m = mode();
  const Device* dev = selected_device();
  if (m == Mode::kOff || dev == nullptr) return std::shared_ptr<Launch>();
  if (m == Mode::kIntelGpu && !(dev->is_gpu && dev->is_intel)) return std::shared_ptr<Launch>();
  const bool conv = ctx.op == "conv";
  if ((!conv && ctx.op != "matmul") || !all_f32(ctx) || ctx.num_inputs() < 2) {
    return std::shared_ptr<Launch>();
  }
  if (conv && (ctx.input_types[0].shape.size() != 4 || ctx.input_types[1].shape.size() != 4)) {
    return std::shared_ptr<Launch>();  // 2-D only; other ranks keep our direct kernel
  }
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (numel_of(ctx.input_types[k].shape) == 0) return std::shared_ptr<Launch>();
  }
  const EngineSlot& es = gpu_engine(*dev);
  if (!es.engine) {
    return unimplemented("oneDNN has no GPU engine for the OpenCL device '{} / {}': {}",
                         dev->platform_name, dev->device_name, es.error);
  }
  auto p = std::make_shared<GpuPrimitive>();
  p->engine = *es.engine;
  Plan plan;
  try {
    Result<dnnl::primitive> prim =
        conv ? conv_primitive(ctx, p->engine, plan) : matmul_primitive(ctx, p->engine, plan);
    if (!prim.is_ok()) return prim.status();
    p->prim = std::move(prim).value();
    for (const auto& [arg, md] : plan.inputs) {
      p->in.push_back(memory(md, p->engine, DNNL_MEMORY_NONE));
      p->args.push_back(dnnl_exec_arg_t{arg, p->in.back().get()});
    }
    p->out = memory(plan.dst, p->engine, DNNL_MEMORY_NONE);
    p->args.push_back(dnnl_exec_arg_t{DNNL_ARG_DST, p->out.get()});
  } catch (const dnnl::error& e) {
    return unimplemented("oneDNN has no GPU {} for this node: {}", ctx.op, e.what());
  }
  p->bound.assign(p->in.size() + 1, nullptr);

  auto l = std::make_shared<Launch>();
  l->dev = dev;
  for (const auto& [arg, md] : plan.inputs) l->in_bytes.push_back(md.get_size());
  l->input_slots = l->in_bytes.size();
  l->out_bytes = plan.dst.get_size();
  l->out_elems = l->out_bytes / sizeof(float);
  l->global = {l->out_elems, 1, 1};
  l->custom = [p](cl_command_queue q, std::span<const cl_mem> inputs, cl_mem output) {
    return p->run(q, inputs, output);
  };
  return l;
}

#endif  // FRAME_INTEL_GPU_ONEDNN_OCL

std::shared_ptr<void> onednn_gpu_prepare(const ops::NodeContext& ctx) {
  // A decline (no engine for this device, no primitive for the node) falls back to our own
  // kernel, as on every other device.
  Result<std::shared_ptr<Launch>> l = onednn_gpu_launch(ctx);
  if (!l.is_ok()) return nullptr;
  return std::move(l).value();
}

}  // namespace frame::backends::intel_gpu
