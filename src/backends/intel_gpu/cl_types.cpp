// OpenCL C spellings of the float dtypes (cl_types.h).

#include "backends/intel_gpu/cl_types.h"

#include <fmt/format.h>

#include "backends/gpu/ew_formulas.h"

namespace frame::backends::intel_gpu {
namespace {

constexpr ClType kTypes[] = {
    {DTypeCode::kFloat32, "float", "float", false},
    {DTypeCode::kFloat64, "double", "double", true},
    {DTypeCode::kFloat16, "half", "float", false},     // vload_half / vstore_half_rte
    {DTypeCode::kBFloat16, "ushort", "float", false},  // upper 16 bits of a float
};

}  // namespace

const ClType* cl_type(DTypeCode d) {
  for (const ClType& t : kTypes) {
    if (t.dtype == d) return &t;
  }
  return nullptr;
}

std::string cl_type_prelude(const ClType& t) {
  std::string s = t.fp64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
  s += fmt::format("typedef {} T;\n", t.compute);
  if (t.dtype == DTypeCode::kBFloat16) {
    // Same rounding as frame::BFloat16::from_float (NaN keeps a quiet NaN).
    s += R"(inline float frame_bf16_load(ushort b) { return as_float((uint)b << 16); }
inline ushort frame_bf16_store(float f) {
  uint u = as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (ushort)(u >> 16);
}
)";
  }
  if (t.dtype == DTypeCode::kFloat16) {
    // Rounds through a half in private memory with the store's own rounding (no half
    // arithmetic, so no cl_khr_fp16 needed).
    s += R"(inline float frame_f16_round(float x) {
  ushort h;
  vstore_half_rte(x, 0, (__private half*)&h);
  return vload_half(0, (__private const half*)&h);
}
)";
  }
  return s;
}

std::string_view cl_storage_type(size_t elem_bytes) {
  return elem_bytes == 1   ? "uchar"
         : elem_bytes == 2 ? "ushort"
         : elem_bytes == 4 ? "uint"
                           : "ulong";
}

std::string cl_round(const ClType& t, std::string_view value) {
  if (t.dtype == DTypeCode::kFloat16) return fmt::format("frame_f16_round((float)({}))", value);
  if (t.dtype == DTypeCode::kBFloat16) {
    return fmt::format("frame_bf16_load(frame_bf16_store((float)({})))", value);
  }
  return std::string(value);
}

std::string cl_load(const ClType& t, std::string_view ptr, std::string_view idx) {
  if (t.dtype == DTypeCode::kFloat16) return fmt::format("vload_half({}, {})", idx, ptr);
  if (t.dtype == DTypeCode::kBFloat16) return fmt::format("frame_bf16_load({}[{}])", ptr, idx);
  return fmt::format("{}[{}]", ptr, idx);
}

std::string cl_store(const ClType& t, std::string_view ptr, std::string_view idx,
                     std::string_view value) {
  if (t.dtype == DTypeCode::kFloat16) {
    return fmt::format("vstore_half_rte((float)({}), {}, {});", value, idx, ptr);
  }
  if (t.dtype == DTypeCode::kBFloat16) {
    return fmt::format("{}[{}] = frame_bf16_store((float)({}));", ptr, idx, value);
  }
  return fmt::format("{}[{}] = (T)({});", ptr, idx, value);
}

std::string cl_literal(double v, bool fp64) {
  return gpu::c_literal(v, fp64, gpu::Dialect::kOpenCL);
}

std::string_view cl_build_options(const ClType& t) {
  return t.fp64 ? "-cl-fp32-correctly-rounded-divide-sqrt"
                : "-cl-fp32-correctly-rounded-divide-sqrt -cl-single-precision-constant";
}

}  // namespace frame::backends::intel_gpu
