#pragma once
/// \file
/// A reference run of a small graph for the op tests (decompositions checked against the
/// kernel of the op they replace).

#include <map>
#include <vector>

#include "common/op_runner.h"
#include "frame/ir/graph.h"

namespace frame::test {

/// Runs `g` node by node with the cpu kernels (run_op). Graph inputs bind to `inputs` in
/// order; absent inputs stay absent; constant values are passed as constant inputs. Returns
/// the graph outputs in order; errors: the first kernel's.
inline Result<std::vector<Tensor>> run_graph(const ir::Graph& g,
                                             const std::vector<Tensor>& inputs) {
  std::map<ir::ValueId, Tensor> env;
  for (size_t i = 0; i < g.inputs().size(); ++i) env[g.inputs()[i]] = inputs[i];
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    OpCall call;
    call.op = n.op;
    call.node_name = n.name;
    call.attrs = n.attrs;
    call.num_outputs = n.outputs.size();
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const ir::ValueId v = n.inputs[i];
      if (v == ir::kNoValue) {
        call.inputs.emplace_back();
        continue;
      }
      const ir::Value& val = g.value(v);
      if (val.constant) {
        call.inputs.push_back(*val.constant);
        call.constant_inputs.push_back(i);
      } else {
        call.inputs.push_back(env.at(v));
      }
    }
    FRAME_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_op(call));
    for (size_t k = 0; k < n.outputs.size(); ++k) env[n.outputs[k]] = outs[k];
  }
  std::vector<Tensor> result;
  for (ir::ValueId v : g.outputs()) {
    const ir::Value& val = g.value(v);
    result.push_back(val.constant ? *val.constant : env.at(v));
  }
  return result;
}

}  // namespace frame::test
