#pragma once
/// \file
/// cuBLASLt for the cuda backend's matmul and gemm (docs/backends/cuda.md, "Matmul and gemm"),
/// opened with dlopen at first use like the driver and NVRTC (libcublasLt.so.13). A node's
/// plan (operation descriptor, matrix layouts, the algorithm the heuristic picks for its
/// shapes) is made once at prepare; a run only enqueues cublasLtMatmul on the group's stream.
///
/// Row-major frame tensors map onto cuBLASLt's column-major convention by computing the
/// transpose: Y^T [N, M] = B^T [N, K] x A^T [K, M], where a row-major [R, C] buffer read as
/// column-major is the [C, R] transpose, so no data moves.

#include <cuda.h>

#include <memory>
#include <span>
#include <string>

#include "backends/cuda/driver.h"
#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::cuda {

/// Environment variable: "1" lets f32 matmuls and gemms use TF32 tensor cores
/// (CUBLAS_COMPUTE_32F_FAST_TF32; 10-bit mantissa products, BUILD-011's `tf32` class). Unset
/// or anything else: full f32 (the default, as the cpu backend computes).
inline constexpr const char* kTf32Env = "FRAME_CUDA_TF32";

/// "" when cuBLASLt could be opened, else why.
const std::string& cublaslt_unavailable_reason();

/// What a matmul or gemm node reads and writes, decided from shapes and attributes alone (no
/// device): accepts() and the compile-free tests use it.
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;     ///< cuBLASLt batch count (1 when A's batch folds into M)
  int64_t stride_a = 0;  ///< elements between batches of A (0: broadcast)
  int64_t stride_b = 0;  ///< of B
  bool trans_a = false, trans_b = false;
  double alpha = 1.0, beta = 0.0;
  /// gemm's C: 0 none, 1 a bias vector of N broadcast over rows (cuBLASLt's bias epilogue),
  /// 2 a full [M, N] matrix scaled by beta.
  int c_kind = 0;
  DTypeCode dtype = DTypeCode::kFloat32;
};

/// The GemmShape of a matmul (ONNX MatMul: numpy broadcasting of the batch dims, 1-D operands
/// promoted) or gemm (ONNX Gemm: transA, transB, alpha, beta, C) node. Errors: kUnimplemented
/// for what cuBLASLt is not asked to do here (batch dims that broadcast partially, a gemm C
/// other than [N], [1, N] or [M, N], a bias with beta != 1, dtypes other than f32, f64, f16,
/// bf16, inputs of different dtypes).
Result<GemmShape> gemm_shape(const ops::NodeContext& ctx);

/// A node's cuBLASLt plan: made at prepare (needs the device), run on any stream.
class GemmPlan {
 public:
  /// Creates the descriptors and asks the heuristic for an algorithm that needs at most
  /// `max_workspace` bytes. Errors: kUnimplemented when cuBLASLt is unavailable or has no
  /// algorithm for the shapes; kInternal naming the failing cuBLASLt call.
  static Result<std::shared_ptr<GemmPlan>> make(const CudaDevice& dev, const GemmShape& s,
                                                size_t max_workspace);
  ~GemmPlan();
  GemmPlan(const GemmPlan&) = delete;
  GemmPlan& operator=(const GemmPlan&) = delete;

  /// Enqueues Y = alpha * op(A) op(B) (+ bias | + beta * C) on `stream`. `c` is 0 without C.
  Status run(CUstream stream, CUdeviceptr a, CUdeviceptr b, CUdeviceptr c, CUdeviceptr y,
             CUdeviceptr workspace, size_t workspace_bytes) const;

  /// Workspace the chosen algorithm needs, in bytes.
  size_t workspace_bytes() const { return workspace_; }

 private:
  GemmPlan() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  size_t workspace_ = 0;
};

}  // namespace frame::backends::cuda
