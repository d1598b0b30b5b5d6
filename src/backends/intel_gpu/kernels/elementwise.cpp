// intel_gpu kernels of the elementwise lists (FRAME_EW_UNARY_OPS, _BINARY_OPS, _VARIADIC_OPS)
// and of `fused_elementwise_internal`, as OpenCL C generated from the formula table
// (src/backends/gpu/ew_formulas.h). Buffers, copies and launch are launch.h's; broadcasting is
// index arithmetic in the kernel (per output dim, the stride of each input, 0 where it broadcasts),
// and same-size inputs skip it (rank 0).

#include <fmt/format.h>

#include <climits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/gpu/ew_formulas.h"
#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"
#include "backends/intel_gpu/opencl.h"
#include "frame/core/tensor.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::backends::intel_gpu {
namespace {

using gpu::EwOp;
using gpu::find_ew_op;
using gpu::kVariadic;
using ops::KernelContext;
using ops::NodeContext;

std::string ew_prelude() { return gpu::ew_prelude(gpu::Dialect::kOpenCL); }

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
  for (const EwOp& op : gpu::ew_ops()) {
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

// ---- list ops ----

Result<std::shared_ptr<void>> ew_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = runnable_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const EwOp* op = find_ew_op(ctx.op);
  if (op == nullptr || op->formula == nullptr) {
    return ctx.error("intel_gpu: no OpenCL formula for op '{}'", ctx.op);
  }
  FRAME_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(ctx));
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l,
                         make_launch(ctx, float_spec(**t, library_source(**t), kernel_name(*op),
                                                     out_shape, op->bool_out)));
  const std::array<double, 2> p = op->params(ctx, op->formula->string_true);
  const auto at = static_cast<cl_uint>(op->arity) + 3;
  for (cl_uint k = 0; k < 2; ++k) {
    FRAME_RETURN_IF_ERROR(set_t_arg(*l, **t, at + k, p[k]));
  }
  return std::shared_ptr<void>(std::move(l));
}

// ---- comparisons over integers, logical ops over bool ----

// The comparison ops also run over every integer dtype (and equal over bool), the logical ops
// over bool: T is the storage type itself (no float prelude; the formulas only compare), the
// bool result is stored as one byte, as on cpu.
constexpr DTypeSet kIntegerTypes = kIntDTypes;

std::string_view int_spelling(DTypeCode d) {
  switch (d) {
    case DTypeCode::kInt8:
      return "char";
    case DTypeCode::kInt16:
      return "short";
    case DTypeCode::kInt32:
      return "int";
    case DTypeCode::kInt64:
      return "long";
    case DTypeCode::kUInt16:
      return "ushort";
    case DTypeCode::kUInt32:
      return "uint";
    case DTypeCode::kUInt64:
      return "ulong";
    default:
      return "uchar";  // u8, bool
  }
}

// The integer/bool dtypes op `op` runs over on intel_gpu (none for the arithmetic ops).
DTypeSet int_types(const EwOp& op) {
  static constexpr std::string_view kCompare[] = {"equal", "less", "less_equal", "greater",
                                                  "greater_equal"};
  static constexpr std::string_view kLogical[] = {"not", "and", "or", "xor"};
  if (op.formula == nullptr || op.arity == kVariadic) return DTypeSet{};
  for (std::string_view c : kCompare) {
    if (op.op == c) return op.dtypes & (kIntegerTypes | kBoolDType);
  }
  for (std::string_view c : kLogical) {
    if (op.op == c) return op.dtypes & kBoolDType;
  }
  return DTypeSet{};
}

std::string int_source(const EwOp& op, DTypeCode d) {
  const std::string_view t = int_spelling(d);
  std::string s = fmt::format("typedef {} T;\n__kernel void {}(", t, kernel_name(op));
  for (int k = 0; k < op.arity; ++k) s += fmt::format("__global const {}* in{}, ", t, k);
  s += "__global uchar* out, const int rank, __global const int* meta) {\n" +
       index_code(static_cast<size_t>(op.arity));
  s += op.arity == 1 ? "  const T x = in0[idx0];\n"
                     : "  const T a = in0[idx0];\n  const T b = in1[idx1];\n";
  return s + fmt::format("  out[i] = ({}) ? 1 : 0;\n}}\n", op.formula->expr);
}

bool integral_node(const NodeContext& ctx) {
  return ctx.num_inputs() > 0 && (kIntegerTypes | kBoolDType).contains(ctx.input_types[0].dtype);
}

Status int_accepts(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  for (const ir::TensorType& t : ctx.input_types) {
    if (t.dtype != ctx.input_types[0].dtype) return unimplemented("inputs of different dtypes");
  }
  return Status();
}

Result<std::shared_ptr<void>> int_prepare(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(int_accepts(ctx).with_prefix(where(ctx)));
  const EwOp* op = find_ew_op(ctx.op);
  const DTypeCode d = ctx.input_types[0].dtype;
  FRAME_ASSIGN_OR_RETURN(Shape out_shape, broadcast_shapes(ctx));
  LaunchSpec spec;
  spec.source = int_source(*op, d);
  spec.name = kernel_name(*op);
  spec.out_shape = std::move(out_shape);
  spec.in_elem_bytes = dtype_size(d);
  spec.out_elem_bytes = 1;
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

// A list op's accepts / prepare: the integer path for integer and bool nodes, else the float
// one.
Status list_accepts(const NodeContext& ctx) {
  return integral_node(ctx) ? int_accepts(ctx) : float_accepts(ctx);
}

Result<std::shared_ptr<void>> list_prepare(const NodeContext& ctx) {
  return integral_node(ctx) ? int_prepare(ctx) : ew_prepare(ctx);
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
  FRAME_ASSIGN_OR_RETURN(
      std::shared_ptr<Launch> l,
      make_launch(ctx, float_spec(**t, variadic_source(*op, **t, ctx.num_inputs()),
                                  std::string(kVariadicKernelName), out_shape, false)));
  return std::shared_ptr<void>(std::move(l));
}

// ---- clip ----

// y = min(max(x, lo), hi) as the cpu ClipOp (NaN passes through); the bounds are the scalar
// inputs 1 and 2, read on the device (has_min / has_max: 0 when absent, the input then bound
// to the dummy buffer and never read).
std::string clip_source(const ClType& t) {
  return cl_type_prelude(t) +
         fmt::format(
             "__kernel void frame_clip(__global const {0}* in0, __global const {0}* in1, "
             "__global const {0}* in2, __global {0}* out, const int rank, __global const int* "
             "meta, const int has_min, const int has_max) {{\n"
             "  const int i = (int)get_global_id(0);\n"
             "  const T x = {1};\n"
             "  const T y = has_min && x < {2} ? {2} : x;\n"
             "  {3}\n"
             "}}\n",
             t.pointee, cl_load(t, "in0", "i"), cl_load(t, "in1", "0"),
             cl_store(t, "out", "i",
                      fmt::format("has_max && y > {0} ? {0} : y", cl_load(t, "in2", "0"))));
}

// runnable_type over the present inputs (an absent min has no dtype of its own).
Result<const ClType*> clip_type(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(device_ready(ctx));
  const ClType* t = cl_type(ctx.input_types[0].dtype);
  if (t == nullptr) return unimplemented("no OpenCL spelling of the node's dtype");
  if (t->fp64 && !selected_device()->fp64) {
    return unimplemented("the OpenCL device '{}' has no cl_khr_fp64",
                         selected_device()->device_name);
  }
  for (size_t k = 1; k < ctx.num_inputs(); ++k) {
    if (ctx.has_input(k) && ctx.input_types[k].dtype != t->dtype) {
      return unimplemented("inputs of different dtypes");
    }
  }
  return t;
}

Status clip_accepts(const NodeContext& ctx) { return clip_type(ctx).status(); }

Result<std::shared_ptr<void>> clip_prepare(const NodeContext& ctx) {
  Result<const ClType*> t = clip_type(ctx);
  if (!t.is_ok()) return t.status().with_prefix(where(ctx));
  const bool has_min = ctx.has_input(1), has_max = ctx.has_input(2);
  for (size_t k = 1; k < 3; ++k) {
    if (ctx.has_input(k) && numel_of(ctx.input_types[k].shape) != 1) {
      return ctx.error("input {} ({}) must be a scalar", k, k == 1 ? "min" : "max");
    }
  }
  LaunchSpec spec =
      float_spec(**t, clip_source(**t), "frame_clip", ctx.input_types[0].shape, false);
  spec.raw_meta.emplace();
  spec.input_slots = 3;  // absent bounds bind the dummy buffer
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), 6, static_cast<cl_int>(has_min ? 1 : 0)));
  FRAME_RETURN_IF_ERROR(set_arg(l->kernel.get(), 7, static_cast<cl_int>(has_max ? 1 : 0)));
  return std::shared_ptr<void>(std::move(l));
}

// ---- fused_elementwise_internal ----

// Fused groups are generated for these. f16/bf16 bodies compute in float and round every
// intermediate to the storage type (cl_round), as the cpu fused kernel's per-node kernels
// store them: the per-op rounding contract of the cpu backend.
constexpr DTypeSet kFusedTypes = kClTypes;
constexpr DTypeSet kNarrowTypes{DTypeCode::kFloat16, DTypeCode::kBFloat16};
// Fused groups whose inputs all have the output's size read and write these 4 at a time.
constexpr DTypeSet kVec4Types{DTypeCode::kFloat32};

// The body as OpenCL C: one inline function per body node (its formula with its parameters
// as literals), then `frame_body`, straight-line code from the input values to the output
// value. The kernel calls it once per output element; with `vec4` (f32, every input of the
// output's size), each work-item reads 4 elements of every input with vload4 and writes 4
// with vstore4, the last partial 4 element by element (meta[0] = the element count). The
// source text is the body's fingerprint: equal bodies share one built program (make_kernel's
// cache).
Result<std::string> fused_source(const NodeContext& ctx, const ClType& t, const ir::Graph& body,
                                 bool vec4 = false) {
  if (!kFusedTypes.contains(t.dtype)) {
    return unimplemented("fused groups are generated for float dtypes only");
  }
  // f16/bf16: computed in float, rounded per op (a prepare-time choice of generated code).
  FRAME_ASSIGN_OR_RETURN(
      gpu::FusedBodyCode fb,
      gpu::fused_body_code(body, ctx.num_inputs(), t.dtype, kNarrowTypes.contains(t.dtype), t.fp64,
                           gpu::Dialect::kOpenCL,
                           [&](const std::string& v) { return cl_round(t, v); }));
  const size_t n_in = body.inputs().size();
  std::string params, args, tail;
  for (size_t k = 0; k < n_in; ++k) {
    params += fmt::format("{}const T v_in{}", k == 0 ? "" : ", ", k);
    args += fmt::format("{}{}", k == 0 ? "" : ", ",
                        cl_load(t, fmt::format("in{}", k), fmt::format("idx{}", k)));
    tail += fmt::format("{}in{}[j]", k == 0 ? "" : ", ", k);
  }
  std::string s = cl_type_prelude(t) + ew_prelude() + fb.functions;
  s += fmt::format("inline T frame_body({}) {{\n{}  return {};\n}}\n", params, fb.statements,
                   fb.result);
  s += signature(kFusedKernelName, t, n_in, false, false) + " {\n";
  if (!vec4) {
    s += index_code(n_in);
    s += fmt::format("  {}\n}}\n", cl_store(t, "out", "i", fmt::format("frame_body({})", args)));
    return s;
  }
  s += "  const int n = meta[0];\n  const int i = (int)get_global_id(0) * 4;\n"
       "  if (i + 4 <= n) {\n";
  for (size_t k = 0; k < n_in; ++k) {
    s += fmt::format("    const float4 x{0} = vload4(0, in{0} + i);\n", k);  // f32 only
  }
  s += "    float4 y;\n";
  for (const char* lane : {"s0", "s1", "s2", "s3"}) {
    std::string lane_args;
    for (size_t k = 0; k < n_in; ++k) {
      lane_args += fmt::format("{}x{}.{}", k == 0 ? "" : ", ", k, lane);
    }
    s += fmt::format("    y.{} = frame_body({});\n", lane, lane_args);
  }
  s += fmt::format(
      "    vstore4(y, 0, out + i);\n  }} else {{\n"
      "    for (int j = i; j < n; ++j) out[j] = frame_body({});\n  }}\n}}\n",
      tail);
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
  if (body->outputs().size() != 1)
    return ctx.error("fused body has {} outputs, expected 1", body->outputs().size());
  const ir::Value& out = body->value(body->outputs()[0]);
  if (!out.type) return ctx.error("fused body output has no type");
  // 4 elements per work-item where every input is indexed like the output (launch.h's
  // rank 0) and the output is f32.
  const int64_t n = numel_of(out.type->shape);
  bool vec4 = kVec4Types.contains((*t)->dtype) && n >= 4;
  for (const ir::TensorType& in : ctx.input_types) vec4 = vec4 && numel_of(in.shape) == n;
  Result<std::string> source = fused_source(ctx, **t, *body, vec4);
  if (!source.is_ok()) return source.status().with_prefix(where(ctx));
  LaunchSpec spec = float_spec(**t, std::move(source).value(), std::string(kFusedKernelName),
                               out.type->shape, false);
  if (vec4) {
    spec.raw_meta = std::vector<int64_t>{n};
    spec.work_items = static_cast<size_t>((n + 3) / 4);
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Launch> l, make_launch(ctx, spec));
  return std::shared_ptr<void>(std::move(l));
}

[[maybe_unused]] const bool kRegistered = [] {
  for (const EwOp& op : gpu::ew_ops()) {
    const DTypeSet types = op.dtypes & kClTypes;
    const bool variadic = op.arity == kVariadic;
    const DTypeSet kernel_types = (variadic ? types & kVariadicTypes : types) | int_types(op);
    if (kernel_types.mask == 0 || op.formula == nullptr) continue;
    if (op.op == "identity") continue;  // an element copy for every dtype (data_movement.cpp)
    ops::KernelDef def;
    def.op = std::string(op.op);
    def.backend = std::string(kBackendName);
    def.fn = run_launch;
    def.prepare = variadic ? variadic_prepare : list_prepare;
    def.accepts = variadic ? float_accepts : list_accepts;
    def.dtypes = kernel_types;
    def.file = __FILE__;
    def.line = __LINE__;
    ops::KernelRegistry::global().register_kernel(std::move(def));
  }
  return true;
}();

}  // namespace

FRAME_REGISTER_KERNEL(clip, "intel_gpu", run_launch)
    .prepare(clip_prepare)
    .accepts(clip_accepts)
    .dtypes(kClTypes);
FRAME_REGISTER_KERNEL(fused_elementwise_internal, "intel_gpu", run_launch)
    .prepare(fused_prepare)
    .accepts(fused_accepts)
    .dtypes(kFusedTypes);

}  // namespace frame::backends::intel_gpu
