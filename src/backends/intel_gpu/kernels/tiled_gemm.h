#pragma once
/// \file
/// The tiled GEMM of the intel_gpu backend on devices without a vendor library
/// (docs/backends/intel-gpu.md, "GEMM and convolution"): C[M, N] = A[M, K] * B[K, N] per batch
/// index, in 32x32 output tiles per work-group of 8x8 work-items (each computes a 4x4 register
/// block), with 32x16 and 16x32 slices of A and B staged in __local memory. Edges (sizes not
/// multiples of the tile) are zero-filled in the tiles and masked at the store. How A and B are
/// read (transposes, batch offsets, im2col of a convolution) and how the result is written
/// (alpha, beta * C, bias) are snippets of the op: gemm, matmul and conv share the kernel body.

#include <array>
#include <cstdint>
#include <string>

#include "backends/intel_gpu/cl_types.h"
#include "backends/intel_gpu/kernels/launch.h"

namespace frame::backends::intel_gpu {

/// The op-specific snippets of one tiled GEMM kernel. Every snippet is OpenCL C over the
/// compute type `T`, the meta buffer `m` and the batch index `z` (get_global_id(2)).
struct TiledGemmCode {
  std::string name;     ///< kernel function name
  size_t inputs = 2;    ///< input pointer parameters in0..in<inputs-1>
  std::string params;   ///< extra kernel parameters after `m`, e.g. ", const T alpha"
  std::string helpers;  ///< functions placed before the kernel
  /// Statements declaring `const int M, N, K` and whatever the loaders and the store use
  /// for batch `z` (offsets); run once per work-item.
  std::string setup;
  /// Statements assigning `T v` = A(r, k), for ints `r` < M and `k` < K.
  std::string load_a;
  /// Statements assigning `T v` = B(k, c), for ints `k` < K and `c` < N.
  std::string load_b;
  /// Statements writing the result `acc_v` (T) of element (r, c), r < M and c < N.
  std::string store;
};

/// Output rows and columns of one work-group's tile.
inline constexpr int64_t kGemmTile = 32;
/// Work-items per work-group along each of the two tile dims (kGemmTile / 4).
inline constexpr int64_t kGemmGroupSide = 8;

/// The kernel source: the op's snippets around the shared tiled body.
std::string tiled_gemm_source(const ClType& t, const TiledGemmCode& code);

/// Sets the 3-D NDRange of `spec`: ceil(n / 32) x ceil(m / 32) work-groups of 8x8, times
/// `batch` along dim 2.
void set_tiled_geometry(LaunchSpec& spec, int64_t m, int64_t n, int64_t batch);

/// Whether the built kernel of `l` can run 8x8 work-groups on its device
/// (CL_KERNEL_WORK_GROUP_SIZE >= 64); when not, the op uses its one-work-item-per-output
/// kernel instead.
bool tiled_fits(const Launch& l);

}  // namespace frame::backends::intel_gpu
