// Prepare and run of one intel_gpu node (launch.h).

#include "backends/intel_gpu/kernels/launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <string_view>
#include <vector>

#include "frame/ops/op_schema.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::intel_gpu {

std::string index_code(size_t num_inputs) {
  std::string s = "  const int i = (int)get_global_id(0);\n";
  for (size_t k = 0; k < num_inputs; ++k) s += fmt::format("  int idx{} = i;\n", k);
  s += "  if (rank > 0) {\n    int rem = i;\n";
  for (size_t k = 0; k < num_inputs; ++k) s += fmt::format("    idx{} = 0;\n", k);
  s += "    for (int d = rank - 1; d >= 0; --d) {\n"
       "      const int q = rem % meta[d];\n      rem /= meta[d];\n";
  for (size_t k = 0; k < num_inputs; ++k) {
    s += fmt::format("      idx{} += q * meta[{} * rank + d];\n", k, k + 1);
  }
  s += "    }\n  }\n";
  return s;
}

Result<Shape> broadcast_shapes(const ops::NodeContext& ctx) {
  return ops::broadcast_present_inputs(ctx);
}

std::string where(const ops::NodeContext& ctx) {
  return fmt::format("node '{}' ({}): intel_gpu: ", ctx.node_name, ctx.op);
}

Status device_ready(const ops::NodeContext& ctx) {
  const Device* dev = selected_device();
  if (dev == nullptr) return unimplemented("{}", unavailable_reason());
  auto check = [&](const ir::TensorType& t, std::string_view what, size_t k) -> Status {
    const int64_t n = numel_of(t.shape);
    if (n > INT_MAX) {
      return unimplemented("{} {} has {} elements, more than 2^31 - 1 (32-bit indices)", what, k,
                           n);
    }
    const size_t bytes = n > 0 ? static_cast<size_t>(n) * dtype_size(t.dtype) : 0;
    if (bytes > dev->max_alloc) {
      return unimplemented(
          "{} {} has {} bytes, more than the device's largest buffer "
          "(CL_DEVICE_MAX_MEM_ALLOC_SIZE {})",
          what, k, bytes, dev->max_alloc);
    }
    return Status();
  };
  for (size_t k = 0; k < ctx.input_types.size(); ++k) {
    if (ctx.has_input(k)) FRAME_RETURN_IF_ERROR(check(ctx.input_types[k], "input", k));
  }
  // Outputs too: expand, tile, pad or concat make large outputs from small inputs. A shape
  // function that fails here fails again, with its message, at prepare.
  if (ctx.schema != nullptr) {
    Result<std::vector<ir::TensorType>> outs = ctx.schema->infer(ctx);
    if (outs.is_ok()) {
      for (size_t k = 0; k < outs->size(); ++k) {
        FRAME_RETURN_IF_ERROR(check((*outs)[k], "output", k));
      }
    }
  }
  return Status();
}

Result<const ClType*> runnable_type(const ops::NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  const Device* dev = selected_device();
  const ClType* t = ctx.num_inputs() == 0 ? nullptr : cl_type(ctx.input_types[0].dtype);
  if (t == nullptr) return unimplemented("no OpenCL spelling of the node's dtype");
  if (t->fp64 && !dev->fp64) {
    return unimplemented("the OpenCL device '{}' has no cl_khr_fp64", dev->device_name);
  }
  for (const ir::TensorType& in : ctx.input_types) {
    if (in.dtype != t->dtype) return unimplemented("inputs of different dtypes");
  }
  return t;
}

LaunchSpec float_spec(const ClType& t, std::string source, std::string name, Shape out_shape,
                      bool bool_out) {
  LaunchSpec spec;
  spec.source = std::move(source);
  spec.options = cl_build_options(t);
  spec.name = std::move(name);
  spec.out_shape = std::move(out_shape);
  spec.in_elem_bytes = dtype_size(t.dtype);
  spec.out_elem_bytes = bool_out ? 1 : spec.in_elem_bytes;
  return spec;
}

Status float_accepts(const ops::NodeContext& ctx) { return runnable_type(ctx).status(); }

Status set_t_arg(const Launch& l, const ClType& t, cl_uint index, double v) {
  return t.fp64 ? set_arg(l.kernel.get(), index, v)
                : set_arg(l.kernel.get(), index, static_cast<float>(v));
}

Result<std::shared_ptr<Launch>> make_launch(const ops::NodeContext& ctx, const LaunchSpec& spec) {
  const Device* dev = selected_device();
  if (dev == nullptr) return ctx.error("intel_gpu: {}", unavailable_reason());
  auto l = std::make_shared<Launch>();
  l->dev = dev;
  Result<ClKernel> kernel = make_kernel(*dev, spec.source, spec.options, spec.name);
  if (!kernel.is_ok()) return kernel.status().with_prefix(where(ctx));
  l->kernel = std::move(kernel).value();
  const int64_t n = numel_of(spec.out_shape);
  if (n > INT_MAX) return ctx.error("intel_gpu: output of {} elements exceeds 2^31 - 1", n);
  l->out_elems = static_cast<size_t>(n);
  if (spec.global.has_value()) {
    l->work_dim = spec.work_dim;
    l->global = *spec.global;
    if (spec.local.has_value()) l->local = *spec.local;
  } else {
    l->global = {spec.work_items.value_or(l->out_elems), 1, 1};
  }
  l->out_bytes = l->out_elems * spec.out_elem_bytes;
  const size_t r = spec.out_shape.size();
  const size_t num_inputs = spec.num_inputs.value_or(ctx.num_inputs());
  std::vector<cl_int> meta(r * (num_inputs + 1), 0);
  bool same_size = !spec.strides.has_value();
  for (size_t d = 0; d < r; ++d) meta[d] = static_cast<cl_int>(spec.out_shape[d]);
  for (size_t k = 0; k < num_inputs; ++k) {
    const Shape& s = ctx.input_types[k].shape;
    if (!ctx.has_input(k)) {
      l->in_bytes.push_back(0);
      continue;
    }
    if (spec.raw_meta.has_value()) {
      same_size = false;
    } else if (spec.strides.has_value()) {
      const std::vector<int64_t>& st = (*spec.strides)[k];
      for (size_t d = 0; d < r; ++d) meta[(k + 1) * r + d] = static_cast<cl_int>(st[d]);
    } else {
      same_size = same_size && numel_of(s) == n;
      int64_t stride = 1;
      for (size_t j = s.size(); j-- > 0;) {
        const size_t d = r - s.size() + j;
        meta[(k + 1) * r + d] = s[j] == 1 ? 0 : static_cast<cl_int>(stride);
        stride *= s[j];
      }
    }
    l->in_bytes.push_back(static_cast<size_t>(numel_of(s)) * spec.in_elem_bytes);
  }
  if (spec.raw_meta.has_value()) {
    meta.assign(spec.raw_meta->begin(), spec.raw_meta->end());
    for (int64_t v : *spec.raw_meta) {
      if (v > INT_MAX || v < INT_MIN) return ctx.error("intel_gpu: a size exceeds 32 bits");
    }
  }
  FRAME_ASSIGN_OR_RETURN(l->dummy, make_buffer(*dev, 0, CL_MEM_READ_WRITE, "absent input"));
  FRAME_ASSIGN_OR_RETURN(
      l->meta, make_buffer(*dev, meta.size() * sizeof(cl_int), CL_MEM_READ_ONLY, "index strides"));
  if (!meta.empty()) {
    const cl_int e =
        clEnqueueWriteBuffer(dev->queue, l->meta.get(), CL_TRUE, 0, meta.size() * sizeof(cl_int),
                             meta.data(), 0, nullptr, nullptr);
    if (e != CL_SUCCESS) return ctx.error("intel_gpu: writing strides: {}", cl_error_name(e));
  }
  const cl_int rank = spec.raw_meta.has_value() ? static_cast<cl_int>(meta.size())
                      : same_size               ? 0
                                                : static_cast<cl_int>(r);
  l->input_slots = std::max(spec.input_slots.value_or(l->in_bytes.size()), l->in_bytes.size());
  // Pointer arguments are bound per run (bind_buffers); the layout arguments once here.
  const auto a = static_cast<cl_uint>(l->input_slots + 1);
  Status st = set_arg(l->kernel.get(), a, rank);
  if (st.is_ok()) st = set_arg(l->kernel.get(), a + 1, l->meta.get());
  if (!st.is_ok()) return st.with_prefix(where(ctx));
  return l;
}

Status bind_buffers(Launch& l, std::span<const cl_mem> inputs, cl_mem output) {
  cl_uint a = 0;
  for (size_t k = 0; k < l.input_slots; ++k) {
    cl_mem m = inputs.empty() ? output : inputs[std::min(k, inputs.size() - 1)];
    if (m == nullptr) m = l.dummy.get();
    FRAME_RETURN_IF_ERROR(set_arg(l.kernel.get(), a++, m));
  }
  return set_arg(l.kernel.get(), a, output);
}

Status enqueue_kernel(const Launch& l, cl_command_queue q) {
  if (l.work_items() == 0 || l.out_elems == 0) return Status();
  const bool local = l.local[0] != 0;
  const cl_int e = clEnqueueNDRangeKernel(q, l.kernel.get(), l.work_dim, nullptr, l.global.data(),
                                          local ? l.local.data() : nullptr, 0, nullptr, nullptr);
  if (e != CL_SUCCESS) return internal_error("kernel launch: {}", cl_error_name(e));
  return Status();
}

Status enqueue_node(Launch& l, cl_command_queue q, std::span<const cl_mem> inputs, cl_mem output) {
  if (l.custom) return l.custom(q, inputs, output);
  FRAME_RETURN_IF_ERROR(bind_buffers(l, inputs, output));
  return enqueue_kernel(l, q);
}

Result<ClMem> make_error_buffer(const Device& d) {
  std::array<int32_t, kErrorInts> zero{};
  cl_int e = CL_SUCCESS;
  cl_mem m = clCreateBuffer(d.context, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(zero),
                            zero.data(), &e);
  if (e != CL_SUCCESS) return internal_error("intel_gpu: error flag buffer: {}", cl_error_name(e));
  return ClMem(m);
}

cl_int clear_error_buffer(cl_command_queue q, cl_mem buffer) {
  // Static: a non-blocking write reads its source when the queue gets to it.
  static const std::array<int32_t, kErrorInts> kZero{};
  return clEnqueueWriteBuffer(q, buffer, CL_FALSE, 0, sizeof(kZero), kZero.data(), 0, nullptr,
                              nullptr);
}

Status take_device_error(const Launch& l, const std::array<int32_t, 4>& host) {
  if (host[0] == 0 || !l.device_error) return Status();
  return l.device_error(host);
}

Status run_launch(ops::KernelContext& ctx) {
  auto* l = static_cast<Launch*>(ctx.state);
  Tensor& out = ctx.output(0);
  if (static_cast<size_t>(out.numel()) != l->out_elems) {
    return ctx.node->error("intel_gpu: output has {} elements, prepared for {}", out.numel(),
                           l->out_elems);
  }
  if (l->work_items() == 0 || l->out_elems == 0) return Status();
  const cl_command_queue q = l->dev->queue;
  std::lock_guard lock(l->mu);
  if (!l->own_output.get()) {
    for (size_t k = 0; k < l->in_bytes.size(); ++k) {
      ClMem m;
      if (l->in_bytes[k] > 0) {
        FRAME_ASSIGN_OR_RETURN(
            m, make_buffer(*l->dev, l->in_bytes[k], CL_MEM_READ_ONLY, fmt::format("input {}", k)));
      }
      l->own_inputs.push_back(std::move(m));
    }
    FRAME_ASSIGN_OR_RETURN(l->own_output,
                           make_buffer(*l->dev, l->out_bytes, CL_MEM_READ_WRITE, "output"));
    if (l->device_error) {
      FRAME_ASSIGN_OR_RETURN(l->own_error, make_error_buffer(*l->dev));
    }
  }
  l->error_buffer = l->own_error.get();
  if (l->error_buffer != nullptr) {
    const cl_int e = clear_error_buffer(q, l->error_buffer);
    if (e != CL_SUCCESS)
      return ctx.node->error("intel_gpu: clearing the error flag: {}", cl_error_name(e));
  }
  std::vector<cl_mem> ins(l->in_bytes.size(), nullptr);
  for (size_t k = 0; k < l->in_bytes.size(); ++k) {
    const Tensor& in = ctx.input(k);
    if ((in.defined() ? in.nbytes() : 0) != l->in_bytes[k]) {
      return ctx.node->error("intel_gpu: input {} has {} bytes, prepared for {}", k, in.nbytes(),
                             l->in_bytes[k]);
    }
    if (l->in_bytes[k] == 0) continue;
    ins[k] = l->own_inputs[k].get();
    const cl_int e = clEnqueueWriteBuffer(q, ins[k], CL_FALSE, 0, l->in_bytes[k], in.raw_data(), 0,
                                          nullptr, nullptr);
    if (e != CL_SUCCESS) {
      return ctx.node->error("intel_gpu: copying input {} to the device: {}", k, cl_error_name(e));
    }
  }
  Status st = enqueue_node(*l, q, ins, l->own_output.get());
  if (!st.is_ok()) return st.with_prefix(where(*ctx.node));
  // Blocking: the in-order queue has finished the copies and the kernel when it returns.
  const cl_int e = clEnqueueReadBuffer(q, l->own_output.get(), CL_TRUE, 0, l->out_bytes,
                                       out.raw_data(), 0, nullptr, nullptr);
  if (e != CL_SUCCESS) {
    return ctx.node->error("intel_gpu: copying the output to the host: {}", cl_error_name(e));
  }
  if (!l->device_error) return Status();
  std::array<int32_t, kErrorInts> err{};
  const cl_int r = clEnqueueReadBuffer(q, l->own_error.get(), CL_TRUE, 0, sizeof(err), err.data(),
                                       0, nullptr, nullptr);
  if (r != CL_SUCCESS) {
    return ctx.node->error("intel_gpu: reading the error flag: {}", cl_error_name(r));
  }
  return take_device_error(*l, err);
}

}  // namespace frame::backends::intel_gpu
