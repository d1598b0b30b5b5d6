#pragma once
/// \file
/// The `fused_post_ops_internal` op (docs/backends/onednn.md#lowering-patterns): a conv, matmul
/// or gemm node (`base_op`) with a chain of post-ops applied to its result, created by backend
/// lowering patterns (never by importers). Shared by the schema, the cpu reference kernel, the
/// onednn kernel and the onednn patterns so every reader decodes the attributes one way.
///
/// Inputs: the base op's inputs at positions 0..2 (conv X, W, B?; matmul A, B; gemm A, B, C?),
/// then optional input 3 `R`, the residual read by the "add" post-op: of the output's dtype and
/// shape, or for a matmul or gemm a row broadcast along the output's rows (a bias: [N], or
/// [1, ..., 1, N] of at most the output's rank, N its last dim; see broadcasts_along_rows).
/// Attributes: the base op's, plus `base_op` (string), `post_ops` (strings, applied in order to the
/// base result) and `post_op_params` (floats, two per post-op: alpha, beta). A conv node may also
/// carry `src_layout`, `dst_layout` and `residual_layout` (ints, see ActivationLayout): the memory
/// order of X, Y and R. The logical shape and the values are unchanged; only the order of the
/// elements in memory differs.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/ops/op_schema.h"

namespace frame::ops::fused {

/// Op name of the fused node.
inline constexpr std::string_view kFusedPostOpsOp = "fused_post_ops_internal";
/// Input position of the residual operand R.
inline constexpr size_t kResidualInput = 3;

/// Memory order of a rank-4 activation tensor [N, C, H, W] of a fused conv (attribute values of
/// `src_layout`, `dst_layout`, `residual_layout`).
enum class ActivationLayout : int64_t {
  kPlain = 0,     ///< NCHW, row-major (every other op's order)
  kNhwc = 1,      ///< channels last: [N][H][W][C], any C
  kNChw8c = 8,    ///< oneDNN nChw8c: [N][C/8][H][W][8] (what oneDNN's AVX2 convs pick); C
                  ///< must be a multiple of 8, so the byte size equals the plain size
  kNChw16c = 16,  ///< oneDNN nChw16c: [N][C/16][H][W][16]; C must be a multiple of 16, so
                  ///< the byte size equals the plain size
};

/// Channels per block of a blocked layout (8 for kNChw8c, 16 for kNChw16c); 1 for plain and
/// nhwc, which take any C.
inline int64_t channel_block(ActivationLayout layout) {
  return layout == ActivationLayout::kNChw8c || layout == ActivationLayout::kNChw16c
             ? static_cast<int64_t>(layout)
             : 1;
}

/// Attribute names of the layouts of X (input 0), Y (output 0) and R (input 3).
inline constexpr std::string_view kSrcLayoutAttr = "src_layout";
inline constexpr std::string_view kDstLayoutAttr = "dst_layout";
inline constexpr std::string_view kResidualLayoutAttr = "residual_layout";

/// Offset in elements of logical element (n, c, s) of a [N, C, H, W] tensor with hw = H * W
/// and spatial index s = h * W + w, stored in `layout` (C a multiple of channel_block(layout)).
inline int64_t layout_offset(ActivationLayout layout, int64_t c_total, int64_t hw, int64_t n,
                             int64_t c, int64_t s) {
  switch (layout) {
    case ActivationLayout::kPlain:
      return (n * c_total + c) * hw + s;
    case ActivationLayout::kNhwc:
      return (n * hw + s) * c_total + c;
    case ActivationLayout::kNChw8c:
    case ActivationLayout::kNChw16c:
      break;
  }
  const int64_t b = channel_block(layout);
  return ((n * (c_total / b) + c / b) * hw + s) * b + c % b;
}

/// One post-op. The ONNX op each implements is given; the cpu reference applies the scalar
/// functor of include/frame/ops/elementwise.h named alongside.
enum class PostOpKind : uint8_t {
  kAdd,          ///< y + R (ONNX Add with a same-shape operand; AddOp)
  kRelu,         ///< ONNX Relu (ReluOp)
  kLeakyRelu,    ///< ONNX LeakyRelu, alpha = slope (LeakyReluOp)
  kClip,         ///< ONNX Clip with constant bounds, alpha = min, beta = max (ClipOp)
  kSigmoid,      ///< ONNX Sigmoid (SigmoidOp)
  kTanh,         ///< ONNX Tanh (TanhOp)
  kElu,          ///< ONNX Elu, alpha (EluOp)
  kHardSwish,    ///< ONNX HardSwish (HardSwishOp)
  kGelu,         ///< ONNX Gelu approximate="none" (GeluOp, erf form)
  kGeluTanh,     ///< ONNX Gelu approximate="tanh" (GeluOp, tanh form)
  kHardSigmoid,  ///< ONNX HardSigmoid, alpha = slope, beta = offset (HardSigmoidOp)
  kSwish,        ///< x * sigmoid(x): ONNX Mul(x, Sigmoid(x)), SiLU (SigmoidOp, MulOp)
};

/// A post-op with its parameters (meaning per PostOpKind).
struct PostOp {
  PostOpKind kind = PostOpKind::kRelu;
  double alpha = 0.0;
  double beta = 0.0;
};

/// Attribute spelling of a post-op kind: "add", "relu", "leaky_relu", "clip", "sigmoid",
/// "tanh", "elu", "hard_swish", "gelu", "gelu_tanh", "hard_sigmoid", "swish".
std::string_view post_op_name(PostOpKind k);
/// Inverse of post_op_name; nullopt for any other string.
std::optional<PostOpKind> post_op_from_name(std::string_view s);

/// Decoded attributes of a fused_post_ops_internal node.
struct FusedSpec {
  std::string_view base_op;  ///< "conv", "matmul" or "gemm" (borrowed from the attrs)
  std::vector<PostOp> post_ops;
  bool has_residual = false;  ///< input 3 present (then exactly one kAdd post-op)
  ActivationLayout src_layout = ActivationLayout::kPlain;       ///< of X (input 0)
  ActivationLayout dst_layout = ActivationLayout::kPlain;       ///< of Y (output 0)
  ActivationLayout residual_layout = ActivationLayout::kPlain;  ///< of R (input 3)
};

/// True when `r` is a row a matmul's output `y` adds to every row: rank 1 to rank(y), every dim
/// 1 but the last, which equals y's last (PyTorch's Linear bias after a 3-D MatMul).
inline bool broadcasts_along_rows(const Shape& r, const Shape& y) {
  if (r.empty() || y.empty() || r.size() > y.size() || r.back() != y.back()) return false;
  for (size_t i = 0; i + 1 < r.size(); ++i) {
    if (r[i] != 1) return false;
  }
  return true;
}

/// Decodes and checks the attributes: base_op one of conv/matmul/gemm, every post-op name
/// known, post_op_params two per post-op, exactly one "add" iff input 3 is present; a layout
/// attribute 0 or 16, and 16 only on a conv whose tensor is rank 4 with a channel count that
/// is a multiple of 16 (X: dim 1 of input 0; Y and R: dim 0 of W), R's only when R is
/// present. Errors name the node and the attribute.
Result<FusedSpec> decode_fused(const NodeContext& ctx);

}  // namespace frame::ops::fused
