// CUDA C++ generation of the cuda backend's elementwise kernels (codegen.h).

#include "backends/cuda/codegen.h"

#include <fmt/format.h>

#include <cstring>

#include "backends/gpu/ew_formulas.h"
#include "ops/schemas/schema_util.h"

namespace frame::backends::cuda {
namespace {

using gpu::Dialect;
using gpu::EwOp;
using gpu::kVariadic;

constexpr DTypeSet kNarrowTypes{DTypeCode::kFloat16, DTypeCode::kBFloat16};
constexpr DTypeSet kDoubleTypes{DTypeCode::kFloat64};
constexpr DTypeSet kBf16Types{DTypeCode::kBFloat16};

}  // namespace

std::string type_prelude(DTypeCode dtype) {
  // f16 through the PTX conversions (round to nearest even); bf16 with the same rounding as
  // frame::BFloat16::from_float (NaN keeps a quiet NaN).
  std::string s = R"(#define FRAME_FN __device__ __forceinline__
FRAME_FN float frame_h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
FRAME_FN unsigned short frame_f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }
FRAME_FN float frame_b2f(unsigned short b) { return __uint_as_float((unsigned)b << 16); }
FRAME_FN unsigned short frame_f2b(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
)";
  if (kDoubleTypes.contains(dtype)) {
    s += "typedef double T;\ntypedef double S;\n"
         "FRAME_FN T frame_ld(S v) { return v; }\nFRAME_FN S frame_st(T v) { return v; }\n";
  } else if (kBf16Types.contains(dtype)) {
    s += "typedef float T;\ntypedef unsigned short S;\n"
         "FRAME_FN T frame_ld(S v) { return frame_b2f(v); }\n"
         "FRAME_FN S frame_st(T v) { return frame_f2b(v); }\n";
  } else if (kNarrowTypes.contains(dtype)) {
    s += "typedef float T;\ntypedef unsigned short S;\n"
         "FRAME_FN T frame_ld(S v) { return frame_h2f(v); }\n"
         "FRAME_FN S frame_st(T v) { return frame_f2h(v); }\n";
  } else {
    s += "typedef float T;\ntypedef float S;\n"
         "FRAME_FN T frame_ld(S v) { return v; }\nFRAME_FN S frame_st(T v) { return v; }\n";
  }
  s += "FRAME_FN T frame_round(T v) { return frame_ld(frame_st(v)); }\n";
  return s;
}

namespace {

// frame_ld4 / frame_st4: four elements at i (a multiple of 4; buffers are 256-byte aligned).
std::string vector_helpers(DTypeCode dtype, bool bool_out) {
  std::string s;
  if (kDoubleTypes.contains(dtype)) {
    s += R"(FRAME_FN void frame_ld4(const S* __restrict__ p, I i, T* v) {
  const double2 a = *reinterpret_cast<const double2*>(p + i);
  const double2 b = *reinterpret_cast<const double2*>(p + i + 2);
  v[0] = a.x; v[1] = a.y; v[2] = b.x; v[3] = b.y;
}
)";
  } else if (kNarrowTypes.contains(dtype)) {
    s += R"(FRAME_FN void frame_ld4(const S* __restrict__ p, I i, T* v) {
  const uint2 q = *reinterpret_cast<const uint2*>(p + i);
  v[0] = frame_ld((S)(q.x & 0xffffu)); v[1] = frame_ld((S)(q.x >> 16));
  v[2] = frame_ld((S)(q.y & 0xffffu)); v[3] = frame_ld((S)(q.y >> 16));
}
)";
  } else {
    s += R"(FRAME_FN void frame_ld4(const S* __restrict__ p, I i, T* v) {
  const float4 q = *reinterpret_cast<const float4*>(p + i);
  v[0] = q.x; v[1] = q.y; v[2] = q.z; v[3] = q.w;
}
)";
  }
  if (bool_out) {
    s += R"(FRAME_FN void frame_st4(O* __restrict__ p, I i, const T* v) {
  uchar4 q;
  q.x = v[0] != (T)0 ? 1 : 0; q.y = v[1] != (T)0 ? 1 : 0;
  q.z = v[2] != (T)0 ? 1 : 0; q.w = v[3] != (T)0 ? 1 : 0;
  *reinterpret_cast<uchar4*>(p + i) = q;
}
FRAME_FN O frame_out(T v) { return v != (T)0 ? 1 : 0; }
)";
  } else if (kDoubleTypes.contains(dtype)) {
    s += R"(FRAME_FN void frame_st4(O* __restrict__ p, I i, const T* v) {
  double2 a, b;
  a.x = v[0]; a.y = v[1]; b.x = v[2]; b.y = v[3];
  *reinterpret_cast<double2*>(p + i) = a;
  *reinterpret_cast<double2*>(p + i + 2) = b;
}
FRAME_FN O frame_out(T v) { return frame_st(v); }
)";
  } else if (kNarrowTypes.contains(dtype)) {
    s += R"(FRAME_FN void frame_st4(O* __restrict__ p, I i, const T* v) {
  uint2 q;
  q.x = (unsigned)frame_st(v[0]) | ((unsigned)frame_st(v[1]) << 16);
  q.y = (unsigned)frame_st(v[2]) | ((unsigned)frame_st(v[3]) << 16);
  *reinterpret_cast<uint2*>(p + i) = q;
}
FRAME_FN O frame_out(T v) { return frame_st(v); }
)";
  } else {
    s += R"(FRAME_FN void frame_st4(O* __restrict__ p, I i, const T* v) {
  float4 q;
  q.x = v[0]; q.y = v[1]; q.z = v[2]; q.w = v[3];
  *reinterpret_cast<float4*>(p + i) = q;
}
FRAME_FN O frame_out(T v) { return frame_st(v); }
)";
  }
  return s;
}

// Everything before `frame_apply`: types, index type, output type, formula helpers.
std::string head(DTypeCode dtype, const Geometry& g, bool bool_out) {
  std::string s = "// frame cuda elementwise kernel (src/backends/cuda/codegen.cpp)\n";
  s += type_prelude(dtype);
  s += fmt::format("typedef {} I;\ntypedef {} O;\n", g.wide ? "long long" : "int",
                   bool_out ? "unsigned char" : "S");
  s += gpu::ew_prelude(Dialect::kCuda);
  s += vector_helpers(dtype, bool_out);
  s +=
      fmt::format("struct FrameMeta {{\n  int rank;\n  I dims[{0}];\n  I strides[{1}][{0}];\n}};\n",
                  kMaxRank, g.num_inputs);
  return s;
}

// The kernel around `frame_apply(v_in0, ..., p0, p1)`: a grid-stride loop, contiguous with
// four elements per thread when g.rank == 0, else indexed through meta.
std::string kernel(const Geometry& g) {
  const size_t n = g.num_inputs;
  std::string s = "extern \"C\" __global__ void __launch_bounds__(256) frame_kernel(";
  for (size_t k = 0; k < n; ++k) s += fmt::format("const S* __restrict__ in{}, ", k);
  s += "O* __restrict__ out, const I n, const FrameMeta meta, const T p0, const T p1) {\n"
       "  const I step = (I)gridDim.x * (I)blockDim.x;\n"
       "  const I first = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;\n";
  auto call = [&](auto&& arg) {
    std::string c = "frame_apply(";
    for (size_t k = 0; k < n; ++k) c += arg(k) + ", ";
    return c + "p0, p1)";
  };
  auto scalar = [&](size_t k) { return k < 64 && ((g.scalars >> k) & 1) != 0; };
  if (g.rank == 0) {
    s += "  (void)meta;\n";
    for (size_t k = 0; k < n; ++k) {
      if (scalar(k)) s += fmt::format("  const T c{0} = frame_ld(in{0}[0]);\n", k);
    }
    s += "  const I n4 = n / 4;\n  for (I q = first; q < n4; q += step) {\n"
         "    const I i = q * 4;\n";
    for (size_t k = 0; k < n; ++k) {
      if (!scalar(k)) s += fmt::format("    T x{0}[4];\n    frame_ld4(in{0}, i, x{0});\n", k);
    }
    s += "    T y[4];\n#pragma unroll\n    for (int l = 0; l < 4; ++l) y[l] = " +
         call([&](size_t k) {
           return scalar(k) ? fmt::format("c{}", k) : fmt::format("x{}[l]", k);
         }) +
         ";\n    frame_st4(out, i, y);\n  }\n"
         "  for (I i = n4 * 4 + first; i < n; i += step) out[i] = frame_out(" +
         call([&](size_t k) {
           return scalar(k) ? fmt::format("c{}", k) : fmt::format("frame_ld(in{}[i])", k);
         }) +
         ");\n}\n";
    return s;
  }
  s += "  for (I i = first; i < n; i += step) {\n    I rem = i;\n";
  for (size_t k = 0; k < n; ++k) s += fmt::format("    I idx{} = 0;\n", k);
  s += "    for (int d = meta.rank - 1; d >= 0; --d) {\n"
       "      const I q = rem % meta.dims[d];\n      rem /= meta.dims[d];\n";
  for (size_t k = 0; k < n; ++k) {
    s += fmt::format("      idx{0} += q * meta.strides[{0}][d];\n", k);
  }
  s += "    }\n    out[i] = frame_out(" +
       call([](size_t k) { return fmt::format("frame_ld(in{0}[idx{0}])", k); }) + ");\n  }\n}\n";
  return s;
}

std::string apply_params(size_t n) {
  std::string s;
  for (size_t k = 0; k < n; ++k) s += fmt::format("const T v_in{}, ", k);
  return s + "const T p0, const T p1";
}

Status check_common(DTypeCode dtype, const Geometry& g) {
  if (!kCudaFloatTypes.contains(dtype)) {
    return unimplemented("cuda: no generated kernel for dtype {}", dtype_name(dtype));
  }
  if (g.num_inputs == 0 || g.num_inputs > kMaxInputs) {
    return unimplemented("cuda: {} inputs (a generated kernel takes 1 to {})", g.num_inputs,
                         kMaxInputs);
  }
  if (g.rank > kMaxRank) {
    return unimplemented("cuda: broadcasting over rank {} (at most {})", g.rank, kMaxRank);
  }
  return Status();
}

}  // namespace

std::vector<std::vector<int64_t>> broadcast_strides(const Shape& out,
                                                    const std::vector<Shape>& inputs) {
  std::vector<std::vector<int64_t>> strides;
  for (const Shape& in : inputs) {
    std::vector<int64_t> st(out.size(), 0);
    int64_t step = 1;
    for (size_t j = in.size(); j-- > 0;) {
      const size_t d = out.size() - in.size() + j;
      st[d] = in[j] == 1 ? 0 : step;
      step *= in[j];
    }
    strides.push_back(std::move(st));
  }
  return strides;
}

Geometry geometry_of(const Shape& out, const std::vector<Shape>& inputs) {
  Geometry g;
  g.num_inputs = inputs.size();
  g.wide = numel_of(out) >= (int64_t{1} << 31);
  const int64_t n = numel_of(out);
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (n > 1 && numel_of(inputs[k]) == 1 && k < 64) {
      g.scalars |= uint64_t{1} << k;
    } else if (inputs[k] != out) {
      g.rank = out.size();
    }
  }
  return g;
}

std::vector<unsigned char> pack_meta(const Shape& dims,
                                     const std::vector<std::vector<int64_t>>& strides,
                                     size_t num_inputs, bool wide) {
  const size_t isz = wide ? 8 : 4;
  const size_t dims_at = wide ? 8 : 4;  // int rank, padded to I's alignment
  std::vector<unsigned char> bytes(dims_at + isz * kMaxRank * (1 + num_inputs), 0);
  const auto rank = static_cast<int32_t>(dims.size());
  std::memcpy(bytes.data(), &rank, sizeof(rank));
  auto put = [&](size_t slot, int64_t v) {
    unsigned char* at = bytes.data() + dims_at + slot * isz;
    if (wide) {
      std::memcpy(at, &v, 8);
    } else {
      const auto v32 = static_cast<int32_t>(v);
      std::memcpy(at, &v32, 4);
    }
  };
  for (size_t d = 0; d < dims.size() && d < kMaxRank; ++d) put(d, dims[d]);
  for (size_t k = 0; k < strides.size() && k < num_inputs; ++k) {
    for (size_t d = 0; d < strides[k].size() && d < kMaxRank; ++d) {
      put(kMaxRank * (1 + k) + d, strides[k][d]);
    }
  }
  return bytes;
}

Result<std::string> list_op_source(std::string_view op_name, DTypeCode dtype, const Geometry& g) {
  FRAME_RETURN_IF_ERROR(check_common(dtype, g));
  const EwOp* op = gpu::find_ew_op(op_name);
  if (op == nullptr || op->formula == nullptr || op->arity == kVariadic) {
    return unimplemented("cuda: no formula for op '{}'", op_name);
  }
  if (!op->dtypes.contains(dtype)) {
    return unimplemented("cuda: op '{}' has no {} kernel", op_name, dtype_name(dtype));
  }
  if (g.num_inputs != static_cast<size_t>(op->arity)) {
    return unimplemented("cuda: op '{}' takes {} inputs, not {}", op_name, op->arity, g.num_inputs);
  }
  std::string s = head(dtype, g, op->bool_out);
  s += fmt::format("FRAME_FN T frame_apply({}) {{\n", apply_params(g.num_inputs));
  s += op->arity == 1 ? "  const T x = v_in0;\n" : "  const T a = v_in0;\n  const T b = v_in1;\n";
  s += fmt::format("  return (T)({});\n}}\n", op->formula->expr);
  return s + kernel(g);
}

Result<std::string> variadic_source(std::string_view op_name, DTypeCode dtype, const Geometry& g) {
  FRAME_RETURN_IF_ERROR(check_common(dtype, g));
  const EwOp* op = gpu::find_ew_op(op_name);
  if (op == nullptr || op->formula == nullptr || op->arity != kVariadic) {
    return unimplemented("cuda: no formula for variadic op '{}'", op_name);
  }
  if (kNarrowTypes.contains(dtype)) {  // the cpu fold rounds after every step
    return unimplemented("cuda: variadic '{}' over {} rounds after every step on cpu", op_name,
                         dtype_name(dtype));
  }
  std::string s = head(dtype, g, false);
  s += fmt::format("FRAME_FN T frame_step(const T a, const T b) {{ return (T)({}); }}\n",
                   op->formula->expr);
  s += fmt::format("FRAME_FN T frame_apply({}) {{\n  T acc = v_in0;\n", apply_params(g.num_inputs));
  for (size_t k = 1; k < g.num_inputs; ++k)
    s += fmt::format("  acc = frame_step(acc, v_in{});\n", k);
  if (op->mean) s += fmt::format("  acc = acc / (T){};\n", g.num_inputs);
  return s + "  return acc;\n}\n" + kernel(g);
}

Result<std::string> fused_source(const ir::Graph& body, DTypeCode dtype, const Geometry& g) {
  FRAME_RETURN_IF_ERROR(check_common(dtype, g));
  const bool narrow = kNarrowTypes.contains(dtype);
  FRAME_ASSIGN_OR_RETURN(
      gpu::FusedBodyCode fb,
      gpu::fused_body_code(
          body, g.num_inputs, dtype, narrow, kDoubleTypes.contains(dtype), Dialect::kCuda,
          [&](const std::string& v) { return narrow ? fmt::format("frame_round({})", v) : v; }));
  std::string s = head(dtype, g, false) + fb.functions;
  s += fmt::format("FRAME_FN T frame_apply({}) {{\n{}  return {};\n}}\n",
                   apply_params(g.num_inputs), fb.statements, fb.result);
  return s + kernel(g);
}

std::vector<unsigned char> pack_values(const std::vector<int64_t>& values, bool wide) {
  std::vector<unsigned char> bytes(values.size() * (wide ? 8 : 4));
  for (size_t i = 0; i < values.size(); ++i) {
    if (wide) {
      std::memcpy(bytes.data() + 8 * i, &values[i], 8);
    } else {
      const auto v = static_cast<int32_t>(values[i]);
      std::memcpy(bytes.data() + 4 * i, &v, 4);
    }
  }
  return bytes;
}

Result<NodeKernel> elementwise_kernel(const ops::NodeContext& ctx) {
  if (ctx.num_inputs() == 0) return unimplemented("a node without inputs");
  const DTypeCode dtype = ctx.input_types[0].dtype;
  Shape out;
  std::vector<Shape> inputs;
  for (size_t k = 0; k < ctx.num_inputs(); ++k) {
    if (!ctx.has_input(k)) return unimplemented("input {} is absent", k);
    if (ctx.input_types[k].dtype != dtype) return unimplemented("inputs of different dtypes");
    inputs.push_back(ctx.input_types[k].shape);
  }
  FRAME_ASSIGN_OR_RETURN(out, ops::broadcast_present_inputs(ctx));
  NodeKernel p;
  p.geometry = geometry_of(out, inputs);
  bool bool_out = false;
  if (ctx.op == "fused_elementwise_internal") {
    const auto* body = ctx.attr<std::shared_ptr<const ir::Graph>>("body");
    if (body == nullptr || *body == nullptr) return unimplemented("fused node without a body");
    FRAME_ASSIGN_OR_RETURN(p.source, fused_source(**body, dtype, p.geometry));
  } else {
    const EwOp* op = gpu::find_ew_op(ctx.op);
    if (op == nullptr) return unimplemented("no formula for op '{}'", ctx.op);
    bool_out = op->bool_out;
    if (op->arity == kVariadic) {
      FRAME_ASSIGN_OR_RETURN(p.source, variadic_source(ctx.op, dtype, p.geometry));
    } else {
      FRAME_ASSIGN_OR_RETURN(p.source, list_op_source(ctx.op, dtype, p.geometry));
      const std::array<double, 2> params = op->params(ctx, op->formula->string_true);
      p.p0 = params[0];
      p.p1 = params[1];
    }
  }
  for (const Shape& s : inputs)
    p.in_bytes.push_back(static_cast<size_t>(numel_of(s)) * dtype_size(dtype));
  p.work_items = numel_of(out);
  p.out_bytes = static_cast<size_t>(p.work_items) * (bool_out ? 1 : dtype_size(dtype));
  p.meta = pack_meta(out, broadcast_strides(out, inputs), p.geometry.num_inputs, p.geometry.wide);
  p.t_is_double = kDoubleTypes.contains(dtype);
  return p;
}

Result<NodeKernel> node_kernel(const ops::NodeContext& ctx) {
  Result<NodeKernel> other = other_kernel(ctx);
  if (other.is_ok() || other.status().code() != StatusCode::kNotFound) return other;
  return elementwise_kernel(ctx);
}

}  // namespace frame::backends::cuda
