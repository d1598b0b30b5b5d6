#pragma once
/// \file
/// Names shared by operator-fusion and the runtime's report (private to src/).

#include <string>
#include <string_view>
#include <vector>

#include "frame/ir/graph.h"

namespace frame::passes {

/// Op of the node a fused group becomes (schema: src/ops/schemas/fused.cpp).
inline constexpr std::string_view kFusedElementwiseOp = "fused_elementwise_internal";

/// Op names of every fused group in `g` (body ops in body topological order), in node order.
std::vector<std::vector<std::string>> fused_groups(const ir::Graph& g);

}  // namespace frame::passes
