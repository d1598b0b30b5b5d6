#include "frame/core/dtype.h"

#include <array>

namespace frame {

namespace {
constexpr std::array<std::string_view, kNumDTypes> kShortNames = {
    "f32", "f64", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "bool", "u16", "u32", "u64"};
constexpr std::array<std::string_view, kNumDTypes> kLongNames = {
    "float32", "float64", "float16", "bfloat16", "int8",   "int16", "int32",
    "int64",   "uint8",   "bool",    "uint16",   "uint32", "uint64"};
}  // namespace

std::string_view dtype_name(DTypeCode d) {
  auto i = static_cast<size_t>(d);
  return i < kShortNames.size() ? kShortNames[i] : std::string_view("invalid");
}

Result<DTypeCode> parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == kShortNames[i] || name == kLongNames[i]) return static_cast<DTypeCode>(i);
  }
  if (name == "float") return DTypeCode::kFloat32;
  if (name == "double") return DTypeCode::kFloat64;
  return invalid_argument(
      "unknown dtype '{}' (expected one of f32 f64 f16 bf16 i8 i16 i32 i64 "
      "u8 u16 u32 u64 bool)",
      name);
}

std::string dtype_set_to_string(DTypeSet s) {
  std::string out = "{";
  for (int i = 0; i < kNumDTypes; ++i) {
    if (s.contains(static_cast<DTypeCode>(i))) {
      if (out.size() > 1) out += ", ";
      out += kShortNames[i];
    }
  }
  return out + "}";
}

// IEEE binary16 conversions with round-to-nearest-even (handles subnormals, inf, NaN).
uint16_t Half::from_float(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t mag = x & 0x7fffffffu;
  if (mag > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((mag >> 13) & 0x3ffu));
  if (mag >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (mag < 0x38800000u) {                                               // subnormal half or zero
    if (mag < 0x33000000u) return static_cast<uint16_t>(sign);           // < half of min subnormal
    uint32_t e = mag >> 23;
    uint32_t m = (mag & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - e;  // 113 (=127-14) + 13 - e ... aligns to 2^-24 units
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  uint32_t r = ((mag - 0x38000000u) >> 13);
  uint32_t rem = mag & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

float Half::to_float(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  uint32_t out;
  if (exp == 0) {
    if (man == 0) {
      out = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        man <<= 1;
      } while ((man & 0x400u) == 0);
      out = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((man & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    out = sign | 0x7f800000u | (man << 13);
  } else {
    out = sign | ((exp + 112) << 23) | (man << 13);
  }
  return std::bit_cast<float>(out);
}

}  // namespace frame
