// shape-inference: sets the type of every node output from its schema's shape function, in
// topological order (docs/architecture/compiler-passes.md "shape-inference").
//
// Shape functions need some inputs as constants (reshape's shape, slice's starts: ARCH-044).
// In ONNX models those are often computed from other shapes (shape -> gather -> concat ->
// reshape), so this pass also propagates the values of small evaluable nodes and shows them to
// later shape functions as constants. The graph itself is not changed beyond types;
// constant-folding then replaces those nodes by constants.

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>

#include "frame/ops/op_registry.h"
#include "passes/eval.h"
#include "passes/pass_factories.h"

namespace frame::passes {

namespace {

// Values up to this size are propagated; shape tensors are a few dozen bytes.
constexpr size_t kPropagateBytes = 4096;

class ShapeInferencePass final : public Pass {
 public:
  std::string_view name() const override { return "shape-inference"; }

  Status run(ir::Graph& g, PassContext& ctx) override {
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    std::unordered_map<ir::ValueId, Tensor> propagated;
    const size_t propagate_limit = std::min(kPropagateBytes, ctx.fold_size_limit);
    for (ir::NodeId id : order) {
      const ir::Node& n = g.node(id);
      const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
      if (schema == nullptr) {
        return not_found("node '{}' ({}): op '{}' is not registered", n.name, n.op, n.op);
      }
      KnownInputs known(n.inputs.size(), nullptr);
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const ir::ValueId v = n.inputs[i];
        if (v == ir::kNoValue) continue;
        const ir::Value& val = g.value(v);
        if (!val.type) {
          return invalid_argument("node '{}' ({}): input {} ('{}') has no type", n.name, n.op, i,
                                  val.name);
        }
        if (val.constant) {
          known[i] = &*val.constant;
        } else if (auto it = propagated.find(v); it != propagated.end()) {
          known[i] = &it->second;
        }
      }
      // The schema's messages already name node, op, input and dims.
      FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types,
                             schema->infer(context_with_inputs(g, n, schema, known)));
      for (size_t i = 0; i < n.outputs.size(); ++i) g.value(n.outputs[i]).type = types[i];
      FRAME_RETURN_IF_ERROR(check_tensor_limit(g, n, types, ctx.max_tensor_bytes));
      propagate(g, n, known, types, propagate_limit, propagated);
    }
    return Status();
  }

 private:
  // The resource limit on one tensor, checked as soon as a type is known: later passes and
  // kernel prepare steps may allocate by output size (docs/security.md).
  static Status check_tensor_limit(const ir::Graph& g, const ir::Node& n,
                                   const std::vector<ir::TensorType>& types, size_t limit) {
    for (size_t i = 0; i < n.outputs.size() && i < types.size(); ++i) {
      const size_t bytes = total_bytes(std::span<const ir::TensorType>(&types[i], 1));
      if (bytes <= limit) continue;
      const std::string asked =
          bytes == SIZE_MAX ? std::string("more than 2^64") : fmt::format("{}", bytes);
      return make_error(StatusCode::kOutOfRange,
                        "node '{}' ({}): output {} '{}' is {}: {} bytes, over the limit of {} "
                        "bytes per tensor (max_tensor_bytes); refusing to compile it",
                        n.name, n.op, i, g.value(n.outputs[i]).name, types[i].to_string(), asked,
                        limit);
    }
    return Status();
  }

  // Best effort: a node that cannot be evaluated here simply propagates nothing;
  // constant-folding reports kernel errors on constant inputs.
  static void propagate(const ir::Graph& g, const ir::Node& n, const KnownInputs& known,
                        const std::vector<ir::TensorType>& types, size_t limit,
                        std::unordered_map<ir::ValueId, Tensor>& propagated) {
    if (total_bytes(types) > limit) return;
    const ops::KernelDef* kernel = evaluable_kernel(g, n, known);
    if (kernel == nullptr) return;
    Result<std::vector<Tensor>> values = evaluate_node(g, n, *kernel, known, types);
    if (!values.is_ok()) return;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      propagated[n.outputs[i]] = std::move((*values)[i]);
    }
  }
};

}  // namespace

std::unique_ptr<Pass> make_shape_inference_pass() { return std::make_unique<ShapeInferencePass>(); }

}  // namespace frame::passes
