#pragma once
// Small rules both transports of `frame serve` share (REST in json_codec.cpp and
// http_frontend.cpp, gRPC in grpc_frontend.cpp).
#include <chrono>
#include <cstdint>
#include <string_view>

#include "frame/core/tensor.h"

namespace frame::serve::detail {

/// Compares a presented bearer token with the expected one in time independent of where they
/// differ. False for an empty expected token.
inline bool same_secret(std::string_view presented, std::string_view expected) {
  unsigned char diff = presented.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < presented.size(); ++i) {
    const char e = expected.empty() ? '\0' : expected[i % expected.size()];
    diff |= static_cast<unsigned char>(presented[i] ^ e);
  }
  return diff == 0 && !expected.empty();
}

/// True when an `Authorization` header (gRPC: `authorization` metadata) value is
/// "Bearer <token>" with the expected token; the scheme is case-insensitive (RFC 7235).
inline bool bearer_matches(std::string_view value, std::string_view token) {
  constexpr std::string_view kScheme = "bearer ";
  if (value.size() < kScheme.size()) return false;
  for (size_t i = 0; i < kScheme.size(); ++i) {
    const char c = value[i] >= 'A' && value[i] <= 'Z' ? static_cast<char>(value[i] + 32) : value[i];
    if (c != kScheme[i]) return false;
  }
  return same_secret(value.substr(kScheme.size()), token);
}

/// The deadline of a request's `timeout` parameter of `us` (>= 0) microseconds from now; a
/// timeout too long for the clock means no limit (one tick before time_point::max(), which
/// itself means "the model's default").
inline std::chrono::steady_clock::time_point deadline_after_us(int64_t us) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point now = Clock::now();
  const auto room = std::chrono::duration_cast<std::chrono::microseconds>(Clock::time_point::max() -
                                                                          now - Clock::duration(1));
  if (std::chrono::microseconds(us) >= room) return Clock::time_point::max() - Clock::duration(1);
  return now + std::chrono::microseconds(us);
}

/// Raw BOOL bytes from a client: any nonzero byte is true (stored unchanged, a byte other than
/// 0 or 1 would be a bool that is neither).
inline void normalize_bools(Tensor& t) {
  if (t.dtype() != DTypeCode::kBool) return;
  auto* p = static_cast<unsigned char*>(t.raw_data());
  for (size_t k = 0; k < t.nbytes(); ++k) p[k] = p[k] != 0 ? 1 : 0;
}

}  // namespace frame::serve::detail
