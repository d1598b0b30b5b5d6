#pragma once
/// \file
/// Content digests for cache keys and integrity checks (the in-process compile cache, the
/// compile cache on disk; docs/architecture/execution-model.md).

#include <cstddef>
#include <string>

#include "frame/core/tensor.h"

namespace frame {

/// A 128-bit digest of `n` bytes at `data`, as 32 lowercase hex digits: XXH3-128 (the xxHash
/// library; about 13 GB/s on one core of a 2-core AVX2 EPYC, memory-bound, against 5 GB/s for
/// the multiply-xorshift lanes it replaced). Deterministic across processes and machines. Not
/// cryptographic: it tells contents apart and detects damage; it does not resist deliberate
/// forgery.
std::string digest_hex(const void* data, size_t n);

/// digest_hex of a tensor's bytes (its dtype and shape are not included).
std::string tensor_digest(const Tensor& t);

}  // namespace frame
