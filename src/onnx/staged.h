#pragma once
// Private to src/onnx: models whose shapes depend on computed data run as static stages and
// eager nodes (docs/adr/0008-data-dependent-shapes.md).

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <set>
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

/// The tensor type inside ONNX type `t`: itself, or the element of a sequence or optional
/// (setting `sequence`, `optional`; an optional of a sequence sets both). Null for a map or
/// another type frame has no value for.
const ::onnx::TypeProto_Tensor* inner_tensor_type(const ::onnx::TypeProto& t, bool& sequence,
                                                  bool& optional);

/// For each top-level node of `g`, whether it runs eagerly between stages: an op whose output
/// shape depends on its input values (NonZero, NonMaxSuppression, Unique, Compress), a
/// sequence or optional op (SequenceConstruct, ..., OptionalGetElement), a node reading a
/// sequence or optional value (Identity, If, Loop), or an If, Loop or SequenceMap whose bodies
/// hold one, at any depth.
std::vector<bool> eager_nodes(const ::onnx::GraphProto& g);

/// The names of the top-level eager nodes of `g` (eager_nodes).
std::set<std::string> eager_node_names(const ::onnx::GraphProto& g);

/// Whether `g` runs as a staged model: it holds an eager node, or a graph input or output is
/// a sequence or optional.
bool is_staged_model(const ::onnx::GraphProto& g);

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
/// kUnimplemented for a Scan whose body holds an eager node, naming it;
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
