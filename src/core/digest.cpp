// digest_hex: the content digest of cache keys and cache-file checks (frame/core/digest.h).

#include "frame/core/digest.h"

#include <fmt/format.h>
#include <xxhash.h>

namespace frame {

std::string digest_hex(const void* data, size_t n) {
  const XXH128_hash_t h = XXH3_128bits(data, n);
  return fmt::format("{:016x}{:016x}", h.high64, h.low64);
}

std::string tensor_digest(const Tensor& t) { return digest_hex(t.raw_data(), t.nbytes()); }

}  // namespace frame
