#pragma once
/// \file
/// How a frame dtype is stored and computed in the generated OpenCL C of the intel_gpu
/// backend (docs/backends/intel-gpu.md, "Kernels"). Compute types follow the cpu backend
/// (`compute_t`): f16 and bf16 compute in float and are rounded to nearest even after every op
/// (per-op rounding), f64 computes in double and needs the device's cl_khr_fp64.

#include <cstddef>
#include <string>
#include <string_view>

#include "frame/core/dtype.h"

namespace frame::backends::intel_gpu {

/// The OpenCL C spelling of one dtype.
struct ClType {
  DTypeCode dtype = DTypeCode::kFloat32;
  std::string_view pointee;  ///< element type behind `__global` pointers ("half" is storage only)
  std::string_view compute;  ///< the type `T` of the formulas: "float" or "double"
  bool fp64 = false;         ///< needs cl_khr_fp64
};

/// Float dtypes the generated kernels handle (f32, f64, f16, bf16).
inline constexpr DTypeSet kClTypes{DTypeCode::kFloat32, DTypeCode::kFloat64, DTypeCode::kFloat16,
                                   DTypeCode::kBFloat16};

/// The spelling of `d`, or nullptr when `d` is not in kClTypes.
const ClType* cl_type(DTypeCode d);

/// `typedef ... T;`, the fp64 pragma where needed, the bf16 conversion helpers and the f16
/// rounding helper.
std::string cl_type_prelude(const ClType& t);

/// Expression reading element `idx` of `ptr` as a `T`.
std::string cl_load(const ClType& t, std::string_view ptr, std::string_view idx);

/// Statement writing the `T` expression `value` to element `idx` of `ptr`, rounded to the
/// storage type (nearest even).
std::string cl_store(const ClType& t, std::string_view ptr, std::string_view idx,
                     std::string_view value);

/// Expression rounding the `T` expression `value` to the storage type and back (nearest
/// even), i.e. the value a kernel writing it and another reading it would see: the per-op
/// rounding of f16/bf16 intermediates inside a fused body. Identity for f32 and f64.
std::string cl_round(const ClType& t, std::string_view value);

/// The OpenCL C type holding one element of `elem_bytes` (1, 2, 4 or 8) bytes: kernels that
/// only move elements use it, so one program per element size serves every dtype.
std::string_view cl_storage_type(size_t elem_bytes);

/// `v` as an OpenCL C literal of type T (hex float, or INFINITY / NAN): exact for any double
/// when `fp64`, else for v rounded to float (what the cpu functor computes with).
std::string cl_literal(double v, bool fp64);

/// Build options: division and sqrt correctly rounded (as on the host); unsuffixed literals
/// single precision when T is float.
std::string_view cl_build_options(const ClType& t);

}  // namespace frame::backends::intel_gpu
