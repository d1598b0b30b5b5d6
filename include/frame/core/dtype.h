#pragma once
/// \file
/// Element types: `DTypeCode`, their C++ types and traits, and `dispatch_dtype`, which maps a
/// runtime dtype to a template instantiation once per kernel call (op spec §4, ARCH-042).

#include <bit>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include "frame/core/status.h"

namespace frame {

/// Element type of a tensor. Values are stable (used in serialized forms).
enum class DTypeCode : uint8_t {
  kFloat32 = 0,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kBool,
  kUInt16,  // appended after kBool so earlier values stay stable
  kUInt32,
  kUInt64,
};
inline constexpr int kNumDTypes = 13;

/// IEEE 754 binary16. Conversions round to nearest even; arithmetic is done in float by
/// callers, which round back after every op (so fp16 chains match numpy's per-op rounding).
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

/// bfloat16 (the upper 16 bits of a float32), round to nearest even; NaN stays NaN.
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(from_float(f)) {}
  explicit operator float() const {
    uint32_t u = static_cast<uint32_t>(bits) << 16;
    return std::bit_cast<float>(u);
  }
  static uint16_t from_float(float f) {
    uint32_t u = std::bit_cast<uint32_t>(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
};

/// C++ storage type of each DTypeCode.
template <DTypeCode C>
struct DTypeToCpp;
template <>
struct DTypeToCpp<DTypeCode::kFloat32> {
  using type = float;
};
template <>
struct DTypeToCpp<DTypeCode::kFloat64> {
  using type = double;
};
template <>
struct DTypeToCpp<DTypeCode::kFloat16> {
  using type = Half;
};
template <>
struct DTypeToCpp<DTypeCode::kBFloat16> {
  using type = BFloat16;
};
template <>
struct DTypeToCpp<DTypeCode::kInt8> {
  using type = int8_t;
};
template <>
struct DTypeToCpp<DTypeCode::kInt16> {
  using type = int16_t;
};
template <>
struct DTypeToCpp<DTypeCode::kInt32> {
  using type = int32_t;
};
template <>
struct DTypeToCpp<DTypeCode::kInt64> {
  using type = int64_t;
};
template <>
struct DTypeToCpp<DTypeCode::kUInt8> {
  using type = uint8_t;
};
template <>
struct DTypeToCpp<DTypeCode::kBool> {
  using type = bool;
};
template <>
struct DTypeToCpp<DTypeCode::kUInt16> {
  using type = uint16_t;
};
template <>
struct DTypeToCpp<DTypeCode::kUInt32> {
  using type = uint32_t;
};
template <>
struct DTypeToCpp<DTypeCode::kUInt64> {
  using type = uint64_t;
};
template <DTypeCode C>
using cpp_type_t = typename DTypeToCpp<C>::type;

/// DTypeCode of a C++ storage type.
template <typename T>
inline constexpr DTypeCode kDTypeOf = DTypeCode::kFloat32;
template <>
inline constexpr DTypeCode kDTypeOf<double> = DTypeCode::kFloat64;
template <>
inline constexpr DTypeCode kDTypeOf<Half> = DTypeCode::kFloat16;
template <>
inline constexpr DTypeCode kDTypeOf<BFloat16> = DTypeCode::kBFloat16;
template <>
inline constexpr DTypeCode kDTypeOf<int8_t> = DTypeCode::kInt8;
template <>
inline constexpr DTypeCode kDTypeOf<int16_t> = DTypeCode::kInt16;
template <>
inline constexpr DTypeCode kDTypeOf<int32_t> = DTypeCode::kInt32;
template <>
inline constexpr DTypeCode kDTypeOf<int64_t> = DTypeCode::kInt64;
template <>
inline constexpr DTypeCode kDTypeOf<uint8_t> = DTypeCode::kUInt8;
template <>
inline constexpr DTypeCode kDTypeOf<bool> = DTypeCode::kBool;
template <>
inline constexpr DTypeCode kDTypeOf<uint16_t> = DTypeCode::kUInt16;
template <>
inline constexpr DTypeCode kDTypeOf<uint32_t> = DTypeCode::kUInt32;
template <>
inline constexpr DTypeCode kDTypeOf<uint64_t> = DTypeCode::kUInt64;

/// Type used for arithmetic on T: float for the 16-bit floats, T otherwise.
template <typename T>
using compute_t =
    std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

/// True for float32/64/16 and bfloat16.
template <typename T>
inline constexpr bool kIsFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

/// Size in bytes of one element.
constexpr size_t dtype_size(DTypeCode d) {
  constexpr size_t kSizes[kNumDTypes] = {4, 8, 2, 2, 1, 2, 4, 8, 1, 1, 2, 4, 8};
  return kSizes[static_cast<int>(d)];
}
/// Short names used by the text IR and JSON: f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64
/// bool.
std::string_view dtype_name(DTypeCode d);
/// Inverse of dtype_name; also accepts long names ("float32", "int64", ...).
Result<DTypeCode> parse_dtype(std::string_view name);
constexpr bool is_floating(DTypeCode d) {
  return d == DTypeCode::kFloat32 || d == DTypeCode::kFloat64 || d == DTypeCode::kFloat16 ||
         d == DTypeCode::kBFloat16;
}
/// True for uint8/16/32/64.
constexpr bool is_unsigned(DTypeCode d) {
  return d == DTypeCode::kUInt8 || d == DTypeCode::kUInt16 || d == DTypeCode::kUInt32 ||
         d == DTypeCode::kUInt64;
}
/// True for the signed and unsigned integer dtypes (not bool).
constexpr bool is_integral(DTypeCode d) {
  return d == DTypeCode::kInt8 || d == DTypeCode::kInt16 || d == DTypeCode::kInt32 ||
         d == DTypeCode::kInt64 || is_unsigned(d);
}

/// A set of dtypes as a bit mask (bit i = DTypeCode i). Constexpr, so it can select which
/// template instances `dispatch_dtype` generates.
struct DTypeSet {
  uint32_t mask = 0;
  constexpr DTypeSet() = default;
  constexpr explicit DTypeSet(uint32_t m) : mask(m) {}
  constexpr DTypeSet(std::initializer_list<DTypeCode> l) {
    for (DTypeCode d : l) mask |= 1u << static_cast<int>(d);
  }
  constexpr bool contains(DTypeCode d) const { return (mask >> static_cast<int>(d)) & 1u; }
  constexpr bool empty() const { return mask == 0; }
  constexpr DTypeSet operator|(DTypeSet o) const { return DTypeSet(mask | o.mask); }
  constexpr DTypeSet operator&(DTypeSet o) const { return DTypeSet(mask & o.mask); }
  constexpr bool operator==(const DTypeSet&) const = default;
};
inline constexpr DTypeSet kFloatDTypes{DTypeCode::kFloat32, DTypeCode::kFloat64,
                                       DTypeCode::kFloat16, DTypeCode::kBFloat16};
inline constexpr DTypeSet kSignedIntDTypes{DTypeCode::kInt8, DTypeCode::kInt16, DTypeCode::kInt32,
                                           DTypeCode::kInt64};
inline constexpr DTypeSet kUnsignedIntDTypes{DTypeCode::kUInt8, DTypeCode::kUInt16,
                                             DTypeCode::kUInt32, DTypeCode::kUInt64};
inline constexpr DTypeSet kIntDTypes = kSignedIntDTypes | kUnsignedIntDTypes;
inline constexpr DTypeSet kNumericDTypes = kFloatDTypes | kIntDTypes;
inline constexpr DTypeSet kSignedNumericDTypes = kFloatDTypes | kSignedIntDTypes;
inline constexpr DTypeSet kBoolDType{DTypeCode::kBool};
inline constexpr DTypeSet kAllDTypes = kNumericDTypes | kBoolDType;
/// "{f32, f64}" — for error messages.
std::string dtype_set_to_string(DTypeSet s);

namespace detail {
template <DTypeSet kSet, int I, typename F>
Status dispatch_dtype_impl(DTypeCode d, F& f) {
  if constexpr (I == kNumDTypes) {
    return make_error(StatusCode::kUnimplemented, "dtype {} is not supported here (supported: {})",
                      dtype_name(d), dtype_set_to_string(kSet));
  } else {
    constexpr DTypeCode kCode = static_cast<DTypeCode>(I);
    if constexpr (kSet.contains(kCode)) {
      if (d == kCode) {
        using T = cpp_type_t<kCode>;
        if constexpr (std::is_same_v<decltype(f.template operator()<T>()), void>) {
          f.template operator()<T>();
          return Status();
        } else {
          return f.template operator()<T>();
        }
      }
    }
    return dispatch_dtype_impl<kSet, I + 1>(d, f);
  }
}
}  // namespace detail

/// Calls `f.template operator()<T>()` with T = the C++ type of `d`. Instantiates `f` only for
/// the dtypes in `kSet` (default: all), so kernels never branch on dtype per element
/// (ARCH-042). `f` returns void or Status. Errors: kUnimplemented when `d` is not in `kSet`.
/// Example: `dispatch_dtype(d, [&]<typename T>() { relu_impl<T>(in, out, n); });`
template <DTypeSet kSet = kAllDTypes, typename F>
Status dispatch_dtype(DTypeCode d, F&& f) {
  return detail::dispatch_dtype_impl<kSet, 0>(d, f);
}

/// `dispatch_dtype` over every dtype for kernels that only move elements (copies, gathers,
/// fills, selects): uint16/32/64 run the int16/32/64 instance, whose storage is the same, so
/// they add no template instances (compile time). Not for kernels whose result depends on
/// the value of T (arithmetic, ordering, printing). Errors: as `dispatch_dtype`.
template <typename F>
Status dispatch_storage(DTypeCode d, F&& f) {
  constexpr DTypeSet kStorage =
      kFloatDTypes | kSignedIntDTypes | DTypeSet{DTypeCode::kUInt8} | kBoolDType;
  if (d == DTypeCode::kUInt16) d = DTypeCode::kInt16;
  if (d == DTypeCode::kUInt32) d = DTypeCode::kInt32;
  if (d == DTypeCode::kUInt64) d = DTypeCode::kInt64;
  return detail::dispatch_dtype_impl<kStorage, 0>(d, f);
}

/// Float value of any storage type (16-bit floats widened).
template <typename T>
inline compute_t<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}
/// Storage value from a compute value (16-bit floats rounded to nearest even).
template <typename T>
inline T from_compute(compute_t<T> v) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return T(v);
  } else {
    return static_cast<T>(v);
  }
}

}  // namespace frame
