#pragma once
/// \file
/// The `laid_out_internal` op (docs/backends/onednn.md, "Activations kept laid out through
/// pools and concat"): a pooling or concat node (`base_op`) whose rank-4 activations are stored
/// channels-last (`layout` = 1, nhwc) instead of plain NCHW, created by the onednn lowering
/// pattern keep_nhwc_through so the layout oneDNN's convolutions pick flows through the pools
/// and concats between them (never by importers). The logical shapes and the values are the
/// base op's; only the order of the elements in memory differs. Shared by the schema, the cpu
/// reference kernel, the onednn kernel and the pattern so every reader decodes it one way.
///
/// Inputs: the base op's (pools: X; concat: the parts, joined along the channel axis 1).
/// Attributes: `base_op`, `layout`, and the base op's own attributes. Every input and the
/// output are rank 4 [N, C, H, W] and stored in `layout`.

#include <array>
#include <string_view>

#include "frame/core/status.h"
#include "frame/ops/op_schema.h"
#include "ops/schemas/nn_fused_internal.h"

namespace frame::ops::laid_out {

/// Op name of the node.
inline constexpr std::string_view kLaidOutOp = "laid_out_internal";

/// The ops a laid_out_internal node may wrap.
inline constexpr std::array<std::string_view, 5> kBaseOps = {
    "max_pool", "average_pool", "global_average_pool", "global_max_pool", "concat"};

/// Whether `op` is one of kBaseOps.
inline bool is_base_op(std::string_view op) {
  for (std::string_view b : kBaseOps) {
    if (b == op) return true;
  }
  return false;
}

/// Decoded attributes of a laid_out_internal node.
struct LaidOutSpec {
  std::string_view base_op;  ///< one of kBaseOps (borrowed from the attrs)
  fused::ActivationLayout layout = fused::ActivationLayout::kNhwc;
};

/// Decodes and checks the node: base_op one of kBaseOps, layout 1 (nhwc), every input and the
/// output rank 4, concat's axis the channel axis (1 or -3), one output. Errors name the node and
/// what is wrong (attribute, input index, rank or axis found).
Result<LaidOutSpec> decode_laid_out(const NodeContext& ctx);

}  // namespace frame::ops::laid_out
