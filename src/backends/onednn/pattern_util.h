#pragma once
/// \file
/// Graph queries shared by the onednn backend's lowering patterns (patterns.cpp,
/// qdq_patterns.cpp; include/frame/ops/lowering_pattern.h).

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"

namespace frame::backends::onednn {

/// The only live node reading `v`, when `v` is not a graph output and is read exactly once;
/// nullopt otherwise.
std::optional<ir::NodeId> sole_user(const ir::Graph& g, ir::ValueId v);

/// The SiLU pair reading `v`: a `sigmoid` node S of `v` read only by a `mul` node M of `v` and
/// S's output (either order), and nothing else reading `v` (nor a graph output); as (S, M), or
/// nullopt. torch exports nn.SiLU this way.
std::optional<std::pair<ir::NodeId, ir::NodeId>> swish_pair(const ir::Graph& g, ir::ValueId v);

/// Replaces the nodes `removed` by one new node `op` named `name` whose output takes over value
/// `out` (its name, type and uses), so graph outputs keep their names. Returns true. Errors:
/// those of Graph::create_node (e.g. a name still taken).
Result<bool> replace_with(ir::Graph& g, const std::vector<ir::NodeId>& removed, ir::ValueId out,
                          std::string_view op, const std::string& name,
                          std::vector<ir::ValueId> inputs, ir::AttrMap attrs);

/// The body of fused_elementwise_internal node `f` read as a chain of steps on outer value
/// `cur`: its nodes in topological order, each reading the chain (the body input `cur` feeds,
/// then the previous node's output), with every input mapped to an outer value (a body input to
/// `f`'s input at that position, the chain to `cur`). nullopt when `cur` feeds no or several body
/// inputs, a node does not read the chain or reads another body value, or the last node's output
/// is not the body's output.
std::optional<std::vector<ir::Node>> body_chain(const ir::Node& f, ir::ValueId cur);

/// The constant tensor of `v`, or nullptr when `v` is absent (kNoValue) or not a constant.
const Tensor* constant_of(const ir::Graph& g, ir::ValueId v);

/// Whether the onednn kernel of `op` would run a node `name` with these inputs and attributes:
/// the op's shape function accepts them and the kernel's supports/accepts checks pass (M10).
/// `overrides` replace inputs (by position) with constants not yet in the graph.
bool onednn_runs(const ir::Graph& g, std::string_view op, std::string_view name,
                 const std::vector<ir::ValueId>& inputs, const ir::AttrMap& attrs,
                 const std::vector<std::pair<size_t, const Tensor*>>& overrides = {});

}  // namespace frame::backends::onednn
