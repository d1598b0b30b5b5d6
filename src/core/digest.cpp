// digest_hex: the content digest of cache keys and cache-file checks (frame/core/digest.h).

#include "frame/core/digest.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

namespace frame {

std::string digest_hex(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h[4] = {0x9e3779b97f4a7c15ull ^ n, 0xc2b2ae3d27d4eb4full, 0x165667b19e3779f9ull,
                   0x27d4eb2f165667c5ull ^ (n * 31)};
  constexpr uint64_t kMul[4] = {0xff51afd7ed558ccdull, 0xc4ceb9fe1a85ec53ull, 0x9fb21c651e98df25ull,
                                0xd6e8feb86659fd93ull};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      h[k] = (h[k] ^ w) * kMul[k];
      h[k] ^= h[k] >> 29;
    }
  }
  for (; i < n; ++i) {
    h[i & 3] = (h[i & 3] ^ p[i]) * 0x100000001b3ull;
  }
  // Fold the lanes into two words, each depending on all four.
  uint64_t a = h[0], b = h[1];
  for (int k = 0; k < 4; ++k) {
    a = (a ^ h[k]) * 0xff51afd7ed558ccdull;
    a ^= a >> 33;
    b = (b + h[3 - k]) * 0xc4ceb9fe1a85ec53ull;
    b ^= b >> 31;
  }
  return fmt::format("{:016x}{:016x}", a, b);
}

std::string tensor_digest(const Tensor& t) { return digest_hex(t.raw_data(), t.nbytes()); }

}  // namespace frame
