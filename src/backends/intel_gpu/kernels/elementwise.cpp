// intel_gpu kernels of the elementwise lists (FRAME_EW_UNARY_OPS, FRAME_EW_BINARY_OPS) and of
// `fused_elementwise_internal`, as OpenCL C generated from the formula table (ew_formulas.h).
//
// Memory (docs/backends/intel-gpu.md, "Host and device memory"): every node owns device
// buffers for its inputs and output, made once at prepare from the inferred shapes; a run
// copies the inputs to the device, launches one work-item per output element and reads the
// output back, under the node's mutex (concurrent runs of one executable share the buffers).
// Broadcasting is index arithmetic in the kernel: per output dim, the stride of each input
// (0 where it broadcasts), from a small `meta` buffer; same-size inputs skip it (rank 0).

#include <fmt/format.h>

#include <climits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/ew_formulas.h"
#include "backends/intel_gpu/opencl.h"
#include "frame/core/tensor.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::intel_gpu {
namespace {

using ops::KernelContext;
using ops::NodeContext;

// The index arithmetic shared by every generated kernel: `idx<k>` is the element of input k
// read for output element i.
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

// Kernel signature: inputs..., output, rank, meta[, p0, p1].
std::string signature(std::string_view name, const ClType& t, size_t num_inputs, bool bool_out,
                      bool with_params) {
  std::string s = fmt::format("__kernel void {}(", name);
  for (size_t k = 0; k < num_inputs; ++k) {
    s += fmt::format("__global const {}* in{}, ", t.pointee, k);
  }
  s += fmt::format("__global {}* out, const int rank, __global const int* meta",
                   bool_out ? "uchar" : t.pointee);
  if (with_params) s += ", const T p0, const T p1";
  return s + ")";
}

// Writes `value` (an expression in T) to out[i]: bool as 0/1, floats rounded to storage.
std::string store_out(const ClType& t, bool bool_out, const std::string& value) {
  if (bool_out) return fmt::format("out[i] = (uchar)(({}) ? 1 : 0);", value);
  return cl_store(t, "out", "i", value);
}

std::string kernel_name(const EwOp& op) { return fmt::format("frame_op_{}", op.op); }
constexpr std::string_view kFusedKernelName = "frame_fused";

// Every list op with a formula for dtype `t`, as one program: its parameters are kernel
// arguments, so one build per dtype per process serves every node of every op (and PoCL
// compiles each kernel to machine code lazily, at its first launch).
std::string library_source(const ClType& t) {
  std::string s = cl_type_prelude(t) + ew_prelude();
  for (const EwOp& op : ew_ops()) {
    if (op.formula == nullptr || op.arity == kVariadic || !op.dtypes.contains(t.dtype)) continue;
    s += signature(kernel_name(op), t, static_cast<size_t>(op.arity), op.bool_out, true);
    s += " {\n" + index_code(static_cast<size_t>(op.arity));
    if (op.arity == 1) {
      s += fmt::format("  const T x = {};\n", cl_load(t, "in0", "idx0"));
    } else {
      s += fmt::format("  const T a = {};\n  const T b = {};\n", cl_load(t, "in0", "idx0"),
                       cl_load(t, "in1", "idx1"));
    }
    s += fmt::format("  {}\n}}\n", store_out(t, op.bool_out, std::string(op.formula->expr)));
  }
  return s;
}

// numpy broadcast of the input shapes.
Result<Shape> broadcast_shapes(const NodeContext& ctx) {
  Shape out;
  for (const ir::TensorType& t : ctx.input_types) {
    const Shape& s = t.shape;
    if (s.size() > out.size()) out.insert(out.begin(), s.size() - out.size(), 1);
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[out.size() - s.size() + i];
      if (o == 1) {
        o = s[i];
      } else if (s[i] != 1 && s[i] != o) {
        return ctx.error("shapes do not broadcast");
      }
    }
  }
  return out;
}

// Device buffers, kernel and launch geometry of one node.
struct Launch {
  const Device* dev = nullptr;
  ClKernel kernel;
  std::vector<ClMem> inputs;
  std::vector<size_t> in_bytes;
  ClMem output;
  size_t out_bytes = 0;
  ClMem meta;
  size_t global = 0;  // output elements
  std::mutex mu;      // guards the buffers' contents during a run
};

// Prefix of prepare-time errors: the lowering prefixes accepts() reasons with the backend.
std::string where(const NodeContext& ctx) {
  return fmt::format("node '{}' ({}): intel_gpu: ", ctx.node_name, ctx.op);
}

// The dtype spelling of the node (input 0's dtype), or why the node cannot run on intel_gpu
// beyond the kernel's dtype set: no device, no fp64 on the device, 32-bit index overflow.
Result<const ClType*> runnable_type(const NodeContext& ctx) {
  const Device* dev = selected_device();
  if (dev == nullptr) return unimplemented("{}", unavailable_reason());
  const ClType* t = ctx.num_inputs() == 0 ? nullptr : cl_type(ctx.input_types[0].dtype);
  if (t == nullptr) return unimplemented("no OpenCL spelling of the node's dtype");
  if (t->fp64 && !dev->fp64) {
    return unimplemented("the OpenCL device '{}' has no cl_khr_fp64", dev->device_name);
  }
  for (const ir::TensorType& in : ctx.input_types) {
    if (numel_of(in.shape) > INT_MAX) {
      return unimplemented("inputs of more than 2^31 - 1 elements (32-bit indices)");
    }
    if (in.dtype != t->dtype) {
      return unimplemented("inputs of different dtypes");
    }
  }
  return t;
}

// Buffers, meta, kernel and its first arguments (inputs, output, rank, meta) for `out_shape`.
Result<std::shared_ptr<Launch>> make_launch(const NodeContext& ctx, const ClType& t,
                                            const std::string& source, std::string_view name,
                                            const Shape& out_shape, size_t out_elem_bytes) {
  const Device* dev = selected_device();
  if (dev == nullptr) return ctx.error("intel_gpu: {}", unavailable_reason());
  auto l = std::make_shared<Launch>();
  l->dev = dev;
  Result<ClKernel> kernel = make_kernel(*dev, source, cl_build_options(t), name);
  if (!kernel.is_ok()) return kernel.status().with_prefix(where(ctx));
  l->kernel = std::move(kernel).value();
  const int64_t n = numel_of(out_shape);
  if (n > INT_MAX) return ctx.error("intel_gpu: output of {} elements exceeds 2^31 - 1", n);
  l->global = static_cast<size_t>(n);
  l->out_bytes = l->global * out_elem_bytes;
  const size_t r = out_shape.size();
  std::vector<cl_int> meta(r * (ctx.num_inputs() + 1), 0);
  bool same_size = true;
  for (size_t d = 0; d < r; ++d) meta[d] = static_cast<cl_int>(out_shape[d]);
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    const Shape& s = ctx.input_types[k].shape;
    same_size = same_size && numel_of(s) == n;
    int64_t stride = 1;
    for (size_t j = s.size(); j-- > 0;) {
      const size_t d = r - s.size() + j;
      meta[(k + 1) * r + d] = s[j] == 1 ? 0 : static_cast<cl_int>(stride);
      stride *= s[j];
    }
    l->in_bytes.push_back(static_cast<size_t>(numel_of(s)) * dtype_size(t.dtype));
    FRAME_ASSIGN_OR_RETURN(ClMem m, make_buffer(*dev, l->in_bytes.back(), CL_MEM_READ_ONLY,
                                                fmt::format("input {}", k)));
    l->inputs.push_back(std::move(m));
  }
  FRAME_ASSIGN_OR_RETURN(l->output, make_buffer(*dev, l->out_bytes, CL_MEM_WRITE_ONLY, "output"));
  FRAME_ASSIGN_OR_RETURN(l->meta, make_buffer(*dev, meta.size() * sizeof(cl_int), CL_MEM_READ_ONLY,
                                              "broadcast strides"));
  if (!meta.empty()) {
    const cl_int e =
        clEnqueueWriteBuffer(dev->queue, l->meta.get(), CL_TRUE, 0, meta.size() * sizeof(cl_int),
                             meta.data(), 0, nullptr, nullptr);
    if (e != CL_SUCCESS) return ctx.error("intel_gpu: writing strides: {}", cl_error_name(e));
  }
  const cl_int rank = same_size ? 0 : static_cast<cl_int>(r);
  cl_uint a = 0;
  for (const ClMem& m : l->inputs) FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), a++, m.get()));
  FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), a++, l->output.get()));
  FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), a++, rank));
  FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), a++, l->meta.get()));
  return l;
}

Status run_launch(KernelContext& ctx) {
  auto* l = static_cast<Launch*>(ctx.state);
  Tensor& out = ctx.output(0);
  if (static_cast<size_t>(out.numel()) != l->global) {
    return ctx.node->error("intel_gpu: output has {} elements, prepared for {}", out.numel(),
                           l->global);
  }
  if (l->global == 0) return Status();
  const cl_command_queue q = l->dev->queue;
  std::lock_guard lock(l->mu);
  for (size_t k = 0; k < l->inputs.size(); ++k) {
    const Tensor& in = ctx.input(k);
    if (in.nbytes() != l->in_bytes[k]) {
      return ctx.node->error("intel_gpu: input {} has {} bytes, prepared for {}", k, in.nbytes(),
                             l->in_bytes[k]);
    }
    const cl_int e = clEnqueueWriteBuffer(q, l->inputs[k].get(), CL_FALSE, 0, l->in_bytes[k],
                                          in.raw_data(), 0, nullptr, nullptr);
    if (e != CL_SUCCESS) {
      return ctx.node->error("intel_gpu: copying input {} to the device: {}", k, cl_error_name(e));
    }
  }
  cl_int e = clEnqueueNDRangeKernel(q, l->kernel.get(), 1, nullptr, &l->global, nullptr, 0, nullptr,
                                    nullptr);
  if (e != CL_SUCCESS) return ctx.node->error("intel_gpu: kernel launch: {}", cl_error_name(e));
  // Blocking: the in-order queue has finished the copies and the kernel when it returns.
  e = clEnqueueReadBuffer(q, l->output.get(), CL_TRUE, 0, l->out_bytes, out.raw_data(), 0, nullptr,
                          nullptr);
  if (e != CL_SUCCESS) {
    return ctx.node->error("intel_gpu: copying the output to the host: {}", cl_error_name(e));
  }
  return Status();
}

// ---- list ops ----

Status ew_accepts(const NodeContext& ctx) { return runnable_type(ctx).status(); }

Result<std::shared_ptr<void>> ew_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const EwOp* op = find_ew_op(ctx.op);
  if (op == nullptr || op->formula == nullptr) {
    return ctx.error("intel_gpu: no OpenCL formula for op '{}'", ctx.op);
  }
  FRAME_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(ctx));
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l,
                         make_launch(ctx, **t, library_source(**t), kernel_name(*op), out_shape,
                                     op->bool_out ? 1 : dtype_size((*t)->dtype)));
  const std::array<double, 2> p = op->params(ctx, op->formula->string_true);
  const auto at = static_cast<cl_uint>(op->arity) + 3;
  for (cl_uint k = 0; k < 2; ++k) {
    FRAME_RETURN_IF_ERROR((*t)->fp64 ? set_arg(l->kernel.get(), at + k, p[k])
                                     : set_arg(l->kernel.get(), at + k, static_cast<float>(p[k])));
  }
  return std::shared_ptr<void>(std::move(l));
}

// ---- variadic list ops (sum, mean, max, min) ----

// The fold rounds to the storage type after every step on the cpu; generated for the dtypes
// whose compute type is the storage type, where that rounding is a no-op.
constexpr DTypeSet kVariadicTypes{DTypeCode::kFloat32, DTypeCode::kFloat64};
constexpr std::string_view kVariadicKernelName = "frame_variadic";

// One kernel per (op, dtype, input count): the binary step folds the inputs left to right.
std::string variadic_source(const EwOp& op, const ClType& t, size_t n) {
  std::string s = cl_type_prelude(t) + ew_prelude();
  s += fmt::format("inline T frame_fold_step(const T a, const T b) {{ return {}; }}\n",
                   op.formula->expr);
  s += signature(kVariadicKernelName, t, n, false, false) + " {\n" + index_code(n);
  s += fmt::format("  T acc = {};\n", cl_load(t, "in0", "idx0"));
  for (size_t k = 1; k < n; ++k) {
    s += fmt::format("  acc = frame_fold_step(acc, {});\n",
                     cl_load(t, fmt::format("in{}", k), fmt::format("idx{}", k)));
  }
  if (op.mean) s += fmt::format("  acc = acc / (T){};\n", n);
  s += fmt::format("  {}\n}}\n", cl_store(t, "out", "i", "acc"));
  return s;
}

Result<std::shared_ptr<void>> variadic_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const EwOp* op = find_ew_op(ctx.op);
  if (op == nullptr || op->formula == nullptr || op->arity != kVariadic) {
    return ctx.error("intel_gpu: no OpenCL formula for op '{}'", ctx.op);
  }
  FRAME_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(ctx));
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l,
                         make_launch(ctx, **t, variadic_source(*op, **t, ctx.num_inputs()),
                                     kVariadicKernelName, out_shape, dtype_size((*t)->dtype)));
  return std::shared_ptr<void>(std::move(l));
}

// ---- fused_elementwise_internal ----

// Fused groups are generated for these; f16/bf16 bodies would need the per-op rounding of
// every intermediate (not generated yet: such groups run on the cpu fused kernel).
constexpr DTypeSet kFusedTypes{DTypeCode::kFloat32, DTypeCode::kFloat64};

// The body as OpenCL C: one inline function per body node (its formula with its parameters
// as literals), then straight-line code over the output element. The source text is the
// body's fingerprint: equal bodies share one built program (make_kernel's cache).
Result<std::string> fused_source(const NodeContext& ctx, const ClType& t, const ir::Graph& body) {
  if (body.outputs().size() != 1 || body.inputs().size() != ctx.num_inputs()) {
    return unimplemented("fused body has {} inputs and {} outputs (node has {})",
                         body.inputs().size(), body.outputs().size(), ctx.num_inputs());
  }
  if (!kFusedTypes.contains(t.dtype)) {
    return unimplemented("fused groups are generated for f32 and f64 only");
  }
  std::string fns;
  std::string code;
  std::vector<std::string> var(body.num_values());
  for (size_t k = 0; k < body.inputs().size(); ++k) {
    var[static_cast<size_t>(body.inputs()[k])] = fmt::format("v_in{}", k);
    code += fmt::format("  const T v_in{} = {};\n", k,
                        cl_load(t, fmt::format("in{}", k), fmt::format("idx{}", k)));
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, body.topological_order());
  int fn_index = 0;
  for (ir::NodeId id : order) {
    const ir::Node& n = body.node(id);
    const EwOp* op = find_ew_op(n.op);
    const bool arity_ok =
        op != nullptr &&
        (op->arity == kVariadic ? !n.inputs.empty()
                                : n.inputs.size() == static_cast<size_t>(op->arity));
    if (op == nullptr || op->formula == nullptr || op->bool_out || !arity_ok ||
        n.outputs.size() != 1) {
      return unimplemented("fused body node '{}' ({}) has no OpenCL formula", n.name, n.op);
    }
    for (ir::ValueId v : n.inputs) {
      if (v == ir::kNoValue || var[static_cast<size_t>(v)].empty()) {
        return unimplemented("fused body node '{}' reads a value from outside the body", n.name);
      }
    }
    const ir::Value& out = body.value(n.outputs[0]);
    if (!out.type || out.type->dtype != t.dtype) {
      return unimplemented("fused body node '{}' changes the dtype", n.name);
    }
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    const NodeContext nctx = ops::make_node_context(body, n, schema);
    const std::array<double, 2> p = op->params(nctx, op->formula->string_true);
    const std::string args = op->arity == 1 ? "const T x" : "const T a, const T b";
    fns += fmt::format(
        "inline T f{}({}) {{\n  const T p0 = {};\n  const T p1 = {};\n  return (T)({});\n}}\n",
        fn_index, args, cl_literal(p[0], t.fp64), cl_literal(p[1], t.fp64), op->formula->expr);
    const std::string result = fmt::format("v{}", fn_index);
    std::string call;
    if (op->arity == kVariadic) {  // left fold of the binary step, as the cpu kernel does
      call = var[static_cast<size_t>(n.inputs[0])];
      for (size_t k = 1; k < n.inputs.size(); ++k) {
        call = fmt::format("f{}({}, {})", fn_index, call, var[static_cast<size_t>(n.inputs[k])]);
      }
      if (op->mean) call = fmt::format("({}) / (T){}", call, n.inputs.size());
    } else {
      call = fmt::format("f{}({}", fn_index, var[static_cast<size_t>(n.inputs[0])]);
      if (op->arity == 2) call += ", " + var[static_cast<size_t>(n.inputs[1])];
      call += ")";
    }
    code += fmt::format("  const T {} = {};\n", result, call);
    var[static_cast<size_t>(n.outputs[0])] = result;
    ++fn_index;
  }
  const std::string& result = var[static_cast<size_t>(body.outputs()[0])];
  if (result.empty()) return unimplemented("fused body output is not computed");
  std::string s = cl_type_prelude(t) + ew_prelude() + fns;
  s += signature(kFusedKernelName, t, body.inputs().size(), false, false) + " {\n" +
       index_code(body.inputs().size());
  s += code + fmt::format("  {}\n}}\n", cl_store(t, "out", "i", result));
  return s;
}

const ir::Graph* body_of(const NodeContext& ctx) {
  const auto* body = ctx.attr<std::shared_ptr<const ir::Graph>>("body");
  return body == nullptr ? nullptr : body->get();
}

Status fused_accepts(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(const ClType* t, runnable_type(ctx));
  const ir::Graph* body = body_of(ctx);
  if (body == nullptr) return unimplemented("fused node without a body");
  return fused_source(ctx, *t, *body).status();
}

Result<std::shared_ptr<void>> fused_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const ir::Graph* body = body_of(ctx);
  if (body == nullptr) return ctx.error("attribute 'body' is missing");
  Result<std::string> source = fused_source(ctx, **t, *body);
  if (!source.is_ok()) return source.status().with_prefix(where(ctx));
  const ir::Value& out = body->value(body->outputs()[0]);
  if (!out.type) return ctx.error("fused body output has no type");
  FRAME_ASSIGN_OR_RETURN(
      std::shared_ptr<Launch> l,
      make_launch(ctx, **t, *source, kFusedKernelName, out.type->shape, dtype_size((*t)->dtype)));
  return std::shared_ptr<void>(std::move(l));
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const EwOp& op : ew_ops()) {
    const DTypeSet types = op.dtypes & kClTypes;
    const bool variadic = op.arity == kVariadic;
    const DTypeSet kernel_types = variadic ? types & kVariadicTypes : types;
    if (kernel_types.mask == 0 || op.formula == nullptr) continue;
    ops::KernelDef def;
    def.op = std::string(op.op);
    def.backend = std::string(kBackendName);
    def.fn = run_launch;
    def.prepare = variadic ? variadic_prepare : ew_prepare;
    def.accepts = ew_accepts;
    def.dtypes = kernel_types;
    def.file = __FILE__;
    def.line = __LINE__;
    ops::KernelRegistry::global().register_kernel(std::move(def));
  }
  return true;
}();

}  // namespace

FRAME_REGISTER_KERNEL(fused_elementwise_internal, "intel_gpu", run_launch)
    .prepare(fused_prepare)
    .accepts(fused_accepts)
    .dtypes(kFusedTypes);

}  // namespace frame::backends::intel_gpu
