#pragma once
/// \file
/// Graph queries shared by the onednn backend's lowering patterns (patterns.cpp,
/// qdq_patterns.cpp; include/frame/ops/lowering_pattern.h).

#include <functional>
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

/// The value of a one-element f32/f64 constant, or nullopt (not a constant, more elements).
using ScalarOf = std::function<std::optional<double>(ir::ValueId)>;

/// One-element constant values of `g` itself (ScalarOf over constant_of).
ScalarOf graph_scalars(const ir::Graph& g);

/// A GELU found by match_gelu: the nodes it spans, the value it computes, and its form.
struct GeluMatch {
  std::vector<ir::NodeId> nodes;  ///< every node of the subgraph (each reads only x, another
                                  ///< node's output or a one-element constant)
  ir::ValueId out = ir::kNoValue;
  bool tanh = false;  ///< the tanh approximation (ONNX Gelu approximate="tanh"), else erf
};

/// The GELU that `x` feeds, however an exporter spelled it as elementwise nodes: torch's
/// erf form 0.5 * x * (1 + erf(x / sqrt 2)) (div or mul by the reciprocal, the halving in any
/// position) and its tanh form 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) (the
/// cube as pow or as products). The subgraph is grown from x's readers over mul, add, sub,
/// div, pow, erf and tanh nodes whose other operands are one-element constants (`scalar`),
/// until it has one value read outside it; it is taken when x and every inner value are read
/// only inside it, no inner value is a graph output, and evaluated in double at 100 points (0,
/// +-20 and 97 spread over [-8, 8] off any lattice) it agrees with the GELU of its form to 1e-5
/// relative (so a wrong constant, or another function of these ops, is not taken; one equal to
/// GELU at all 100 points would be, and no exporter writes one). Nodes of at most 16. nullopt
/// otherwise.
std::optional<GeluMatch> match_gelu(const ir::Graph& g, ir::ValueId x, const ScalarOf& scalar);

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
