#pragma once
/// \file
/// The `attention_internal` op: scaled dot-product attention as one node, created by the onednn
/// backend's lowering pattern from the MatMul -> scale -> (+ bias) -> (Where mask) -> Softmax ->
/// MatMul chains torch exports (docs/backends/onednn.md#attention), never by importers. Shared by
/// the schema, the cpu reference kernel, the onednn kernel and the pattern so every reader decodes
/// the node one way.
///
/// Inputs (f32, one rank r >= 2, equal leading "batch" dims):
///   0 Q  [..., Sq, D]   the first MatMul's left operand;
///   1 KT [..., D, Sk]   its right operand (K transposed, as the MatMul reads it);
///   2 V  [..., Sk, Dv]  the second MatMul's right operand;
///   3 bias (optional, f32) and 4 mask (optional, bool): each broadcasts (numpy rules, rank
///     at most r) to the scores' shape [..., Sq, Sk] without changing it.
/// Output: O [..., Sq, Dv].
/// Attributes: `scale` (float, default 1), `mask_fill` (float) and `mask_fill_when` (int, 0 or 1).
/// Transposes taken in (optional ints, each a permutation of the rank that keeps the last axis
/// last, so rows stay contiguous): with `q_perm` input 0 is the tensor whose ONNX Transpose by
/// q_perm is Q, with `v_perm` likewise for V, and with `o_perm` the node's output is O
/// transposed by o_perm. `k_perm` (input 1 transposed by k_perm is KT) may instead put the
/// input's last axis at KT's D axis (K's rows, as [S, B*H, D] -> [B*H, D, S] gives). The
/// pattern takes in the head split and merge of torch's nn.MultiheadAttention
/// ([S, B*H, D] <-> [B*H, S, D]) this way, which the kernels read and write through strides
/// instead of copies.
/// Semantics, per batch index (ONNX MatMul, Add, Where and Softmax opset 13 over the last axis):
///   S = scale * (Q x KT);  S = S + bias;  S = where(mask == mask_fill_when, mask_fill, S);
///   O = softmax(S) x V.
/// A fully masked row (every S = -inf) gives NaN, as the unfused Softmax does.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ops/op_schema.h"

namespace frame::ops::attention {

/// Op name of the fused node.
inline constexpr std::string_view kAttentionOp = "attention_internal";
/// Input positions.
inline constexpr size_t kQ = 0, kKT = 1, kV = 2, kBias = 3, kMask = 4;

/// Where a broadcast operand (bias or mask) of the scores is read: for batch index b (row-major
/// over the leading dims) the element offset of its [b, 0, 0], and the strides of a row and a
/// column (0 where the operand's dim is 1).
struct BroadcastIndex {
  std::vector<int64_t> batch_offset;
  int64_t row_stride = 0;
  int64_t col_stride = 0;
};

/// A decoded, checked attention node.
struct AttentionSpec {
  Shape scores;  ///< [..., Sq, Sk]
  Shape out;     ///< the node's output: [..., Sq, Dv], transposed by o_perm if given
  /// Element strides of Q, V and O's dims (rank of the scores) in the tensors the node reads
  /// and writes: contiguous unless q_perm, v_perm or o_perm say otherwise. The last is 1.
  std::vector<int64_t> q_strides, v_strides, o_strides;
  /// Element strides of KT's dims in input 1: contiguous, or as k_perm says (then the last or
  /// the second-to-last is 1).
  std::vector<int64_t> kt_strides;
  int64_t batch = 1;  ///< product of the leading dims
  int64_t sq = 0, sk = 0, d = 0, dv = 0;
  float scale = 1.0F;
  bool has_bias = false, has_mask = false;
  float mask_fill = 0.0F;
  bool fill_when = true;  ///< mask value at which S takes mask_fill
};

/// Decodes node `ctx` and checks its input types. Errors: kInvalidArgument naming the input and
/// the expected vs actual shape or dtype (e.g. "input 1 (KT) has shape [2,8,5], expected
/// [2,*,5]..."), or a mask_fill_when other than 0 or 1.
Result<AttentionSpec> decode_attention(const NodeContext& ctx);

/// The BroadcastIndex of an operand of shape `operand` broadcast to `scores` (checked by
/// decode_attention: rank at most the scores' rank, every dim 1 or equal).
BroadcastIndex broadcast_index(std::span<const int64_t> operand, std::span<const int64_t> scores);

/// Whether `perm` is a permutation of [0, rank) of the form the *_perm attributes take: the last
/// axis kept last, or (`kt`, for k_perm) moved to the second to last place. rank >= 2.
bool is_rows_perm(std::span<const int64_t> perm, size_t rank, bool kt);

/// The BroadcastIndex of an operand whose dims (as many as the scores', leading dims equal to
/// the scores') lie `strides` elements apart: Q, V or O with AttentionSpec's q_strides,
/// v_strides or o_strides.
BroadcastIndex strided_index(std::span<const int64_t> strides, std::span<const int64_t> scores);

}  // namespace frame::ops::attention
