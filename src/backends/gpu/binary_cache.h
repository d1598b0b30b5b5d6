#pragma once
/// \file
/// Compiled GPU kernels kept on disk across processes (docs/backends/gpu-codegen.md, "Kernel
/// caches"): `intel_gpu` stores OpenCL program binaries under $FRAME_OPENCL_CACHE_DIR,
/// `cuda` NVRTC's cubins under $FRAME_CUDA_CACHE_DIR, both in this one file format. A file
/// holds its whole key (source, options, device or architecture, compiler identity) and is
/// used only when the stored key equals the caller's, so a name collision never loads the
/// wrong binary; its length and FNV-1a hash catch a truncated or damaged file, which is then
/// rebuilt from source and rewritten.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace frame::backends::gpu {

/// FNV-1a of `s` (64 bits): names cache files and checks their contents.
uint64_t fnv1a(std::string_view s);

/// The binary stored under `key` in directory `dir` (file `<fnv1a(key)><ext>`), or nullopt
/// when `dir` is empty, there is no such file, it holds another key, or it is truncated or
/// damaged.
std::optional<std::string> read_cached_binary(const std::string& dir, const std::string& key,
                                              std::string_view ext);

/// Stores `binary` under `key` in `dir` (created if missing), written under a private name
/// (`salt` and the process id) and renamed, so a concurrent reader never sees half a file.
/// Best effort: a cache that cannot be written only costs a rebuild in the next process.
void write_cached_binary(const std::string& dir, const std::string& key, std::string_view ext,
                         std::string_view binary, std::string_view salt);

}  // namespace frame::backends::gpu
