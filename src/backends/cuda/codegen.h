#pragma once
/// \file
/// CUDA C++ of the cuda backend's elementwise kernels (docs/backends/cuda.md, "How kernels are
/// generated and cached"), generated from the formula table both GPU backends share
/// (src/backends/gpu/ew_formulas.h): the list ops (FRAME_EW_UNARY_OPS, _BINARY_OPS,
/// _VARIADIC_OPS, pow) and `fused_elementwise_internal` bodies. Generation is host-only string
/// building: it needs no device and no NVRTC, so the compile tests enumerate every source
/// without a GPU.
///
/// Every kernel is `extern "C" __global__ void frame_kernel(const S* in0, ..., O* out, I n,
/// FrameMeta meta, T p0, T p1)`: S is the storage type of the dtype, T its compute type
/// (float for f32/f16/bf16, double for f64), O the output's storage (one byte for bool
/// results), I the index type (int below 2^31 elements, else long long). The launch is a
/// grid-stride loop. Inputs of the output's shape are read contiguously, four elements per
/// thread with one 16-byte (f32) or 8-byte (f16, bf16) load each; other shapes are indexed by
/// arithmetic on `meta` (the output dims and, per input, its stride for each output dim, 0
/// where it broadcasts: numpy broadcasting). f16 and bf16 compute in float and round to
/// nearest even on store (and after every node of a fused body: the cpu backend's per-op
/// rounding contract).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/ir/graph.h"
#include "frame/ops/op_schema.h"

namespace frame::backends::cuda {

/// Float dtypes the generated kernels handle.
inline constexpr DTypeSet kCudaFloatTypes{DTypeCode::kFloat32, DTypeCode::kFloat64,
                                          DTypeCode::kFloat16, DTypeCode::kBFloat16};

/// Dims a broadcast kernel indexes (FrameMeta's arrays).
inline constexpr size_t kMaxRank = 8;

/// Inputs of one kernel: the parameters stay within CUDA's 4 KiB kernel-parameter limit.
inline constexpr size_t kMaxInputs = 40;

/// The shape of one launch, part of the generated source.
struct Geometry {
  size_t num_inputs = 1;
  /// 0: every input has the output's shape (read contiguously); else the output's rank, and
  /// inputs are indexed through FrameMeta.
  size_t rank = 0;
  bool wide = false;  ///< 64-bit indices (2^31 elements or more)
  /// Bit k: input k is one element broadcast over a larger output (a scalar constant such as
  /// the 1.5 of `x * 1.5`). With rank 0, such inputs are read once per thread and the others
  /// contiguously, so `x * 1.5 + 0.25` keeps the four-per-thread path.
  uint64_t scalars = 0;
};

/// The bytes of the `meta` kernel parameter for `num_inputs` inputs and index width `wide`:
/// int rank, then I dims[kMaxRank], then I strides[num_inputs][kMaxRank] (C layout, as the
/// generated struct). `dims` is the output shape; `strides[k]` input k's stride per output dim.
std::vector<unsigned char> pack_meta(const Shape& dims,
                                     const std::vector<std::vector<int64_t>>& strides,
                                     size_t num_inputs, bool wide);

/// Per input, its element stride for each output dim (0 where it broadcasts), numpy rules.
std::vector<std::vector<int64_t>> broadcast_strides(const Shape& out,
                                                    const std::vector<Shape>& inputs);

/// The geometry of a node whose inputs have `inputs` shapes and output `out`.
Geometry geometry_of(const Shape& out, const std::vector<Shape>& inputs);

/// The source of list op `op` (a unary or binary entry, or pow) over `dtype`. Errors:
/// kUnimplemented when the op has no formula, `dtype` is not in kCudaFloatTypes or not in
/// the entry's dtypes.
Result<std::string> list_op_source(std::string_view op, DTypeCode dtype, const Geometry& g);

/// The source of variadic list op `op` (sum, mean, max, min) folding g.num_inputs inputs
/// left to right over f32 or f64 (the cpu rounds after every step, a no-op only there).
Result<std::string> variadic_source(std::string_view op, DTypeCode dtype, const Geometry& g);

/// The source of a fused_elementwise_internal body over `dtype` (its statements from
/// gpu::fused_body_code). Errors: kUnimplemented naming the body node without a formula, a
/// dtype change, a variadic fold in f16/bf16, more than kMaxInputs inputs.
Result<std::string> fused_source(const ir::Graph& body, DTypeCode dtype, const Geometry& g);

/// One node's generated kernel and everything its launch needs (codegen.h's convention).
struct NodeKernel {
  std::string source;
  /// Input pointer parameters of the kernel (Geometry::num_inputs) and index width.
  Geometry geometry;
  /// Per leading input of the node the kernel reads on the device: its bytes (0 for an absent
  /// input or one only the host reads, e.g. a constant shape); as gpu::NodeIO::in_bytes.
  std::vector<size_t> in_bytes;
  size_t out_bytes = 0;
  int64_t work_items = 0;  ///< the `n` parameter: threads of the grid-stride loop
  std::vector<unsigned char> meta;
  double p0 = 0, p1 = 0;     ///< passed as T
  bool t_is_double = false;  ///< T is double (f64 compute)
  /// Set for a kernel that can find bad data on the device (gather's indices): it takes a last
  /// parameter `int* err` (zero before the run) and, for a bad element at position p, stores
  /// max(*err, 0x7fffffff - p) with atomicMax, so a set flag names the first bad position. The
  /// run then reads that element of input `error_input` (error_elem_bytes wide, signed) back
  /// and this turns position and value into the node's error (the cpu kernel's message).
  std::function<Status(int64_t position, int64_t value)> device_error;
  size_t error_input = 0;
  size_t error_elem_bytes = 0;
  /// Read-only int32 data the kernel reads through a `const int* table` parameter after p1
  /// (resize's taps): uploaded once at prepare, shared by every run slot. Empty: no parameter.
  std::vector<int32_t> table;
};

/// The kernel of `ctx`, as the cuda kernels generate it at prepare; needs no device (the
/// compile tests call it for every op-database case and model node). Covers the elementwise
/// lists, fused_elementwise_internal, the data-movement ops (identity, reshape, flatten,
/// squeeze, unsqueeze, transpose, expand, slice, concat, cast, where, gather, gather_elements,
/// pad, resize) and the row ops
/// (softmax, log_softmax, layer_normalization). Errors: kUnimplemented with the reason a node
/// is declined (no formula, mixed dtypes, a non-constant shape input, ...); kInvalidArgument
/// for malformed nodes (shapes that do not broadcast, bad attributes).
Result<NodeKernel> node_kernel(const ops::NodeContext& ctx);

/// The elementwise part of node_kernel (list ops and fused bodies).
Result<NodeKernel> elementwise_kernel(const ops::NodeContext& ctx);

/// The data-movement and row ops of node_kernel (codegen_ops.cpp); kNotFound for other ops.
Result<NodeKernel> other_kernel(const ops::NodeContext& ctx);

/// `values` as the bytes of a `struct { I v[values.size()]; }` with I 32 or 64 bits wide.
std::vector<unsigned char> pack_values(const std::vector<int64_t>& values, bool wide);

/// The generated typedefs shared by every kernel: FRAME_FN, T (float or double) and the
/// f16/bf16 load and store helpers frame_ld / frame_st of `dtype` over storage S.
std::string type_prelude(DTypeCode dtype);

}  // namespace frame::backends::cuda
