// Compile-time evaluation of a node with its cpu kernel (see eval.h).

#include "passes/eval.h"

#include <algorithm>
#include <limits>

#include "frame/ops/op_registry.h"
#include "frame/ops/subgraph.h"

namespace frame::passes {

namespace {

bool is_type_only(const ops::KernelDef& k, size_t i) {
  return std::find(k.type_only_inputs.begin(), k.type_only_inputs.end(), static_cast<int>(i)) !=
         k.type_only_inputs.end();
}

// Storage behind placeholder inputs: type-only inputs are never read, so any valid address
// serves and nothing the size of the real tensor is allocated.
alignas(kTensorAlignment) unsigned char g_placeholder[kTensorAlignment];

}  // namespace

const ops::KernelDef* evaluable_kernel(const ir::Graph& g, const ir::Node& n,
                                       const KnownInputs& known) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  if (schema == nullptr || ops::node_has_side_effect(n)) return nullptr;
  const ops::KernelDef* kernel = ops::KernelRegistry::global().find(n.op, "cpu");
  if (kernel == nullptr) return nullptr;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const ir::ValueId v = n.inputs[i];
    if (v == ir::kNoValue || (i < known.size() && known[i] != nullptr)) continue;
    if (!is_type_only(*kernel, i) || !g.value(v).type) return nullptr;
  }
  for (ir::ValueId v : n.outputs) {
    if (v == ir::kNoValue) return nullptr;
  }
  return kernel;
}

ops::NodeContext context_with_inputs(const ir::Graph& g, const ir::Node& n,
                                     const ops::OpSchema* schema, const KnownInputs& known) {
  ops::NodeContext ctx = ops::make_node_context(g, n, schema);
  for (size_t i = 0; i < ctx.input_constants.size(); ++i) {
    ctx.input_constants[i] = i < known.size() ? known[i] : nullptr;
  }
  return ctx;
}

Result<std::vector<ir::TensorType>> infer_with_inputs(const ir::Graph& g, const ir::Node& n,
                                                      const KnownInputs& known) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  if (schema == nullptr) {
    return not_found("node '{}' ({}): op '{}' is not registered", n.name, n.op, n.op);
  }
  return schema->infer(context_with_inputs(g, n, schema, known));
}

size_t total_bytes(std::span<const ir::TensorType> types) {
  size_t sum = 0;
  for (const ir::TensorType& t : types) {
    Result<size_t> b = checked_nbytes(t.dtype, t.shape);
    if (!b.is_ok() || *b > std::numeric_limits<size_t>::max() - sum) {
      return std::numeric_limits<size_t>::max();
    }
    sum += *b;
  }
  return sum;
}

Result<std::vector<Tensor>> evaluate_node(const ir::Graph& g, const ir::Node& n,
                                          const ops::KernelDef& kernel, const KnownInputs& known,
                                          const std::vector<ir::TensorType>& out_types) {
  const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
  const ops::NodeContext ctx = context_with_inputs(g, n, schema, known);
  FRAME_RETURN_IF_ERROR(kernel.supports(ctx));

  std::vector<Tensor> inputs(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] == ir::kNoValue) continue;
    if (i < known.size() && known[i] != nullptr) {
      inputs[i] = *known[i];
    } else {
      const ir::TensorType& t = ctx.input_types[i];
      FRAME_ASSIGN_OR_RETURN(inputs[i], Tensor::view(t.dtype, t.shape, g_placeholder));
    }
  }
  return kernel.run_once(ctx, inputs, out_types);
}

}  // namespace frame::passes
