#pragma once
/// \file
/// Content digests for cache keys and integrity checks (the in-process compile cache, the
/// compile cache on disk; docs/architecture/execution-model.md).

#include <cstddef>
#include <string>

#include "frame/core/tensor.h"

namespace frame {

/// A 128-bit digest of `n` bytes at `data`, as 32 lowercase hex digits: four independent
/// 64-bit multiply-xorshift lanes over 32-byte blocks (a few GB/s), folded together with the
/// length. Deterministic across processes and machines of one byte order. Not cryptographic:
/// it tells contents apart and detects damage; it does not resist deliberate forgery.
std::string digest_hex(const void* data, size_t n);

/// digest_hex of a tensor's bytes (its dtype and shape are not included).
std::string tensor_digest(const Tensor& t);

}  // namespace frame
