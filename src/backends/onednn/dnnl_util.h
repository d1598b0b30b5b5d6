#pragma once
/// \file
/// Shared plumbing of the `onednn` backend's primitive kernels (docs/backends/onednn.md):
/// one CPU engine per process, one stream per calling thread, frame dtype -> oneDNN data type,
/// plain (row-major) memory descriptors, and a per-thread user scratchpad so concurrent
/// Executable::run calls never share oneDNN scratch memory (Executable::run is re-entrant).

#include <cstddef>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <span>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/tensor.h"

namespace frame::backends::onednn {

/// The process-wide CPU engine (created on first use; thread-safe).
dnnl::engine& engine();
/// A stream on engine() owned by the calling thread (so concurrent runs never share one).
dnnl::stream& thread_stream();

/// oneDNN data type of a frame dtype: f32, f16, bf16, s8, u8, s32; nullopt for the rest
/// (kernels declare those dtypes unsupported so the fallback chain takes them).
std::optional<dnnl::memory::data_type> to_dnnl(DTypeCode dtype);

/// Row-major (plain, dense) descriptor of `shape` with `dt`; a rank-0 shape becomes {1}.
dnnl::memory::desc plain_desc(std::span<const int64_t> shape, dnnl::memory::data_type dt);

/// Primitive attributes every frame primitive uses: user-managed scratchpad (see
/// scratchpad()), so the primitive itself holds no mutable memory.
dnnl::primitive_attr default_attr();

/// Scratch memory of at least `desc.get_size()` bytes owned by the calling thread, reused
/// across runs (grows, never shrinks): no allocation per run in the steady state.
dnnl::memory scratchpad(const dnnl::memory::desc& desc);

/// Wraps tensor memory for a primitive argument without copying.
inline dnnl::memory wrap(const dnnl::memory::desc& desc, const Tensor& t) {
  return dnnl::memory(desc, engine(), const_cast<void*>(t.raw_data()));
}

}  // namespace frame::backends::onednn
