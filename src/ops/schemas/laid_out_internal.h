#pragma once
/// \file
/// The `laid_out_internal` op (docs/backends/onednn.md, "Activations kept nhwc through pools,
/// concats and elementwise ops"): a pool, channel concat, inference batch normalization,
/// attribute-free elementwise or 2-d conv_transpose node (`base_op`) whose rank-4 activations
/// are stored channels-last (`layout` = 1, nhwc) or channel-blocked (8, nChw8c; 16, nChw16c:
/// [N][C/b][H][W][b], C a multiple of b) instead of plain NCHW, created by the onednn
/// lowering pattern keep_nhwc_through so the layout oneDNN's convolutions pick flows through
/// the nodes between them (never by importers). The logical shapes and the values are the base
/// op's; only the order of the elements in memory differs. Shared by the schema, the cpu reference
/// kernel, the onednn kernel and the pattern so every reader decodes it one way.
///
/// Inputs: the base op's. The activations (activation_input() below) and the output are stored
/// in `layout`; other inputs are the batch normalization's [C] parameters, one-element operands
/// of an elementwise op, or a conv_transpose's W and B (plain, as ONNX lays them out).
/// Attributes: `base_op`, `layout`, and the base op's own attributes.

#include <cstdint>
#include <optional>
#include <string_view>

#include "frame/core/status.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::ops::laid_out {

/// Op name of the node.
inline constexpr std::string_view kLaidOutOp = "laid_out_internal";

/// What a laid_out_internal node wraps.
enum class BaseKind : uint8_t {
  kPool,           ///< max_pool, average_pool, global_max_pool, global_average_pool: X
  kConcat,         ///< concat along the channel axis: the parts
  kBatchNorm,      ///< batch_normalization, inference form: X, then [C] scale, B, mean, var
  kElementwise,    ///< an op with the elementwise trait and no attributes (add, mul, relu, ...):
                   ///< rank-4 or one-element inputs, broadcast
  kConvTranspose,  ///< conv_transpose with 2 spatial dims: X nhwc, W [C, M/group, kH, kW] and
                   ///< B [M] plain (a U-Net's up-sampling between convs)
};

/// The kind of `op` as a base op, or nullopt when a laid_out_internal node cannot wrap it.
std::optional<BaseKind> base_kind(std::string_view op);

/// Decoded attributes of a laid_out_internal node.
struct LaidOutSpec {
  std::string_view base_op;  ///< borrowed from the attrs
  BaseKind kind = BaseKind::kPool;
  fused::ActivationLayout layout = fused::ActivationLayout::kNhwc;
};

/// Decodes and checks the node: base_op one base_kind accepts, layout 1 (nhwc), 8 (nChw8c) or
/// 16 (nChw16c), one output, and the inputs of its kind (pools: one rank-4 X; concat: rank-4
/// parts and axis 1 or -3; batch normalization: rank-4 X and training_mode 0; elementwise:
/// every input rank 4 or of one element, at least one rank 4; conv_transpose: rank-4 X and W,
/// B optional). A blocked layout also needs every activation's C (and the output's) a
/// multiple of the block and elementwise activations of one shape. Errors name the node and
/// what is wrong (attribute, input index, rank, axis or channel count found).
Result<LaidOutSpec> decode_laid_out(const NodeContext& ctx);

/// Whether input `i` of a node of kind `kind`, of shape `shape`, is an activation stored in the
/// node's layout: every part of a concat, every rank-4 operand of an elementwise op, X (input 0)
/// of the other kinds. The one rule the schema, the kernels and the onednn pattern share.
bool activation_input(BaseKind kind, size_t i, const Shape& shape);

}  // namespace frame::ops::laid_out
