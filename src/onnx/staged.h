#pragma once
// Private to src/onnx: models whose shapes depend on computed data run as static stages and
// eager nodes (docs/adr/0008-data-dependent-shapes.md).

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/onnx/onnx.h"
#include "frame/runtime/session.h"

namespace frame::onnx::detail {

/// Calls `f(attribute name, body)` for every graph-valued attribute of `n` (If branches, Loop
/// and Scan bodies; GRAPHS lists included).
template <typename F>
void for_each_body(const ::onnx::NodeProto& n, F&& f) {
  for (const ::onnx::AttributeProto& a : n.attribute()) {
    if (a.has_g()) f(a.name(), a.g());
    for (const ::onnx::GraphProto& g : a.graphs()) f(a.name(), g);
  }
}

/// Whether ONNX node `n` runs eagerly between stages: an op whose output shape depends on its
/// input values (NonZero, NonMaxSuppression, Unique, Compress), or a control-flow node whose
/// bodies hold one, at any depth.
bool is_eager_node(const ::onnx::NodeProto& n);

/// Whether graph `g` holds an eager node (is_eager_node) at its top level.
bool has_eager_nodes(const ::onnx::GraphProto& g);

/// What the stages of one model share.
struct StagedModelParts {
  /// The parsed model: initializers reduced to names, types and dims (their tensors are in
  /// `initializers`).
  std::shared_ptr<const ::onnx::ModelProto> model;
  std::map<std::string, Tensor> initializers;
  std::string dir;  ///< resolves external data
  LoadOptions load;
  runtime::SessionOptions options;
  std::vector<runtime::ValueInfo> inputs;  ///< the model's declared inputs
  std::string name;                        ///< for messages
};

/// The runner of a model with eager nodes: the top-level graph split into stages (each run by a
/// runtime::Session of its own, opened at its first run) and eager nodes. Errors:
/// kUnimplemented for a Loop or Scan whose body holds an eager node, naming it;
/// kInvalidArgument for a graph that is not a DAG or names a value nothing produces.
Result<std::shared_ptr<runtime::StagedRunner>> make_staged_runner(StagedModelParts parts);

/// Opens one stage (a sub-model whose initializer protos name tensors of `initializers`) as a
/// session; implemented in session.cpp next to open_session.
Result<runtime::Session> open_stage_session(::onnx::ModelProto model,
                                            std::map<std::string, Tensor> initializers,
                                            const std::string& dir, const LoadOptions& load,
                                            const runtime::SessionOptions& options,
                                            const std::string& name);

}  // namespace frame::onnx::detail
