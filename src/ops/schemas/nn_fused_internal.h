#pragma once
/// \file
/// The `fused_post_ops_internal` op (docs/backends/onednn.md#lowering-patterns): a conv, matmul
/// or gemm node (`base_op`) with a chain of post-ops applied to its result, created by backend
/// lowering patterns (never by importers). Shared by the schema, the cpu reference kernel, the
/// onednn kernel and the onednn patterns so every reader decodes the attributes one way.
///
/// Inputs: the base op's inputs at positions 0..2 (conv X, W, B?; matmul A, B; gemm A, B, C?),
/// then optional input 3 `R`, the residual read by the "add" post-op (same dtype and shape as
/// the output). Attributes: the base op's, plus `base_op` (string), `post_ops` (strings, applied
/// in order to the base result) and `post_op_params` (floats, two per post-op: alpha, beta).

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

/// One post-op. The ONNX op each implements is given; the cpu reference applies the scalar
/// functor of include/frame/ops/elementwise.h named alongside.
enum class PostOpKind : uint8_t {
  kAdd,        ///< y + R (ONNX Add with a same-shape operand; AddOp)
  kRelu,       ///< ONNX Relu (ReluOp)
  kLeakyRelu,  ///< ONNX LeakyRelu, alpha = slope (LeakyReluOp)
  kClip,       ///< ONNX Clip with constant bounds, alpha = min, beta = max (ClipOp)
  kSigmoid,    ///< ONNX Sigmoid (SigmoidOp)
  kTanh,       ///< ONNX Tanh (TanhOp)
  kElu,        ///< ONNX Elu, alpha (EluOp)
  kHardSwish,  ///< ONNX HardSwish (HardSwishOp)
  kGelu,       ///< ONNX Gelu approximate="none" (GeluOp, erf form)
  kGeluTanh,   ///< ONNX Gelu approximate="tanh" (GeluOp, tanh form)
};

/// A post-op with its parameters (meaning per PostOpKind).
struct PostOp {
  PostOpKind kind = PostOpKind::kRelu;
  double alpha = 0.0;
  double beta = 0.0;
};

/// Attribute spelling of a post-op kind: "add", "relu", "leaky_relu", "clip", "sigmoid",
/// "tanh", "elu", "hard_swish", "gelu", "gelu_tanh".
std::string_view post_op_name(PostOpKind k);
/// Inverse of post_op_name; nullopt for any other string.
std::optional<PostOpKind> post_op_from_name(std::string_view s);

/// Decoded attributes of a fused_post_ops_internal node.
struct FusedSpec {
  std::string_view base_op;  ///< "conv", "matmul" or "gemm" (borrowed from the attrs)
  std::vector<PostOp> post_ops;
  bool has_residual = false;  ///< input 3 present (then exactly one kAdd post-op)
};

/// Decodes and checks the attributes: base_op one of conv/matmul/gemm, every post-op name
/// known, post_op_params two per post-op, exactly one "add" iff input 3 is present. Errors
/// name the node and the attribute.
Result<FusedSpec> decode_fused(const NodeContext& ctx);

}  // namespace frame::ops::fused
