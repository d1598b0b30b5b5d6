#pragma once
/// \file
/// Test helpers for operator-fusion, memory-planning and the runtime: a plain cpu reference
/// run (each node's cpu kernel called directly on freshly allocated tensors, no passes, no
/// arena), random elementwise DAGs with broadcasting, and shape inference of hand-built graphs.

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "frame/ir/graph.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"

namespace frame::test {

/// Adds a one-output node `op` named `name` (its output named `name` too) reading `ins`;
/// returns the output. A failed create_node is a test failure.
inline ir::ValueId add_node(ir::Graph& g, std::string_view op, std::string name,
                            std::vector<ir::ValueId> ins) {
  auto id = g.create_node(op, name, std::move(ins), 1, {}, {name});
  EXPECT_TRUE(id.is_ok()) << id.status().to_string();
  return g.node(*id).outputs[0];
}

/// Sets every node output's type from its schema (the graph's inputs must be typed).
inline Status infer_types(ir::Graph& g) {
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  for (ir::NodeId id : order) {
    ir::Node& n = g.node(id);
    const ops::OpSchema* s = ops::OpRegistry::global().find(n.op);
    if (s == nullptr) return not_found("op {}", n.op);
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types,
                           s->infer(ops::make_node_context(g, n, s)));
    for (size_t k = 0; k < n.outputs.size(); ++k) g.value(n.outputs[k]).type = types[k];
  }
  return Status();
}

/// Runs `g` node by node with the cpu kernels; returns graph outputs by value name.
inline Result<std::map<std::string, Tensor>> reference_run(
    const ir::Graph& g, const std::map<std::string, Tensor>& inputs) {
  std::vector<Tensor> vals(g.num_values());
  for (ir::ValueId v : g.inputs()) vals[static_cast<size_t>(v)] = inputs.at(g.value(v).name);
  for (size_t i = 0; i < g.num_values(); ++i) {
    if (g.value(static_cast<ir::ValueId>(i)).constant) {
      vals[i] = *g.value(static_cast<ir::ValueId>(i)).constant;
    }
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
  for (ir::NodeId id : order) {
    const ir::Node& n = g.node(id);
    const ops::OpSchema* s = ops::OpRegistry::global().find(n.op);
    const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, "cpu");
    if (s == nullptr || k == nullptr) return not_found("op {}", n.op);
    ops::NodeContext ctx = ops::make_node_context(g, n, s);
    std::vector<Tensor> ins;
    for (ir::ValueId v : n.inputs)
      ins.push_back(v == ir::kNoValue ? Tensor() : vals[static_cast<size_t>(v)]);
    std::vector<Tensor> outs;
    for (ir::ValueId v : n.outputs) {
      FRAME_ASSIGN_OR_RETURN(Tensor t,
                             Tensor::zeros(g.value(v).type->dtype, g.value(v).type->shape));
      outs.push_back(t);
    }
    std::shared_ptr<void> state;
    if (k->prepare) {
      FRAME_ASSIGN_OR_RETURN(state, k->prepare(ctx));
    }
    ops::KernelContext kc;
    kc.node = &ctx;
    kc.inputs = ins;
    kc.outputs = outs;
    kc.state = state.get();
    FRAME_RETURN_IF_ERROR(k->fn(kc));
    for (size_t j = 0; j < outs.size(); ++j) vals[static_cast<size_t>(n.outputs[j])] = outs[j];
  }
  std::map<std::string, Tensor> out;
  for (ir::ValueId v : g.outputs()) out[g.value(v).name] = vals[static_cast<size_t>(v)];
  return out;
}

/// Registered ops usable in random f32 elementwise DAGs: kElementwise + kFusable, no side
/// effect, 1 or 2 required inputs and no required attrs, f32 in -> f32 out, a cpu kernel.
inline std::vector<const ops::OpSchema*> fusable_f32_ops(size_t arity) {
  std::vector<const ops::OpSchema*> out;
  for (const ops::OpSchema* s : ops::OpRegistry::global().list()) {
    if (!s->has_trait(ops::OpTrait::kElementwise) || !s->has_trait(ops::OpTrait::kFusable) ||
        s->has_trait(ops::OpTrait::kHasSideEffect) || s->has_variadic_inputs() ||
        s->min_input_count() != static_cast<int>(arity) ||
        s->max_input_count() != static_cast<int>(arity) || s->outputs().size() != 1) {
      continue;
    }
    bool ok = s->outputs()[0].dtypes.contains(DTypeCode::kFloat32);
    for (const auto& a : s->attrs()) ok = ok && !a.required;
    for (const auto& in : s->inputs()) ok = ok && in.dtypes.contains(DTypeCode::kFloat32);
    const ops::KernelDef* k = ops::KernelRegistry::global().find(s->name(), "cpu");
    ok = ok && k != nullptr && k->dtypes.contains(DTypeCode::kFloat32);
    if (ok) out.push_back(s);
  }
  return out;
}

/// A random f32 DAG of elementwise ops over inputs whose shapes broadcast to `full`.
/// `full` larger than 1024 elements makes the fused kernel run several blocks.
/// Some intermediate values are graph outputs too. Returns the graph and its inputs.
struct RandomDag {
  ir::Graph graph;
  std::map<std::string, Tensor> inputs;
};

inline Shape random_broadcast_shape(const Shape& full, std::mt19937& rng) {
  Shape s = full;
  std::uniform_int_distribution<int> coin(0, 3);
  for (int64_t& d : s) {
    if (coin(rng) == 0) d = 1;
  }
  const size_t drop = std::uniform_int_distribution<size_t>(0, s.size())(rng) / 2;
  s.erase(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(drop));
  return s;
}

inline RandomDag random_elementwise_dag(uint32_t seed, int num_nodes, Shape full = {2, 3, 5}) {
  std::mt19937 rng(seed);
  RandomDag d;
  ir::Graph& g = d.graph;
  const auto unary = fusable_f32_ops(1);
  const auto binary = fusable_f32_ops(2);
  std::vector<ir::ValueId> pool;
  const int num_inputs = 3;
  std::uniform_real_distribution<float> val(0.25F, 1.5F);
  for (int i = 0; i < num_inputs; ++i) {
    Shape s = i == 0 ? full : random_broadcast_shape(full, rng);
    std::string name = "x" + std::to_string(i);
    pool.push_back(g.add_input(name, ir::TensorType{DTypeCode::kFloat32, s}));
    std::vector<float> v(static_cast<size_t>(numel_of(s)));
    for (float& f : v) f = val(rng);
    d.inputs[name] = Tensor::from_vector<float>(s, v);
  }
  for (int i = 0; i < num_nodes; ++i) {
    // Recent values are more likely operands, giving chains as well as diamonds.
    auto pick = [&]() {
      const size_t n = pool.size();
      const size_t back = std::min<size_t>(n - 1, std::geometric_distribution<size_t>(0.4)(rng));
      return pool[n - 1 - back];
    };
    const bool bin = std::uniform_int_distribution<int>(0, 1)(rng) == 1 || unary.empty();
    const auto& ops = bin ? binary : unary;
    const ops::OpSchema* s = ops[std::uniform_int_distribution<size_t>(0, ops.size() - 1)(rng)];
    std::vector<ir::ValueId> ins{pick()};
    if (bin) ins.push_back(pick());
    auto id =
        g.create_node(s->name(), "n" + std::to_string(i), ins, 1, {}, {"v" + std::to_string(i)});
    EXPECT_TRUE(id.is_ok()) << id.status().to_string();
    // Some ops broadcast one way only (prelu's slope): drop the node if its operands do not fit.
    auto types = s->infer(ops::make_node_context(g, g.node(*id), s));
    if (!types.is_ok()) {
      g.remove_node(*id);
      continue;
    }
    g.value(g.node(*id).outputs[0]).type = (*types)[0];
    pool.push_back(g.node(*id).outputs[0]);
  }
  g.add_output(pool.back());
  std::uniform_int_distribution<size_t> any(num_inputs, pool.size() - 2);
  for (int k = 0; k < 2 && pool.size() > static_cast<size_t>(num_inputs) + 1; ++k) {
    const ir::ValueId v = pool[any(rng)];
    if (!g.is_output(v)) g.add_output(v);
  }
  g.compact();  // drop the values of removed nodes
  return d;
}

}  // namespace frame::test
