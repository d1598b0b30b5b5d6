// onnx::model_op_counts: node counts by op type of an ONNX file's main graph, so tools can
// say what import changed (e.g. `frame inspect`: Identity nodes of initializers become
// constants and leave no node); onnx::model_metadata: a model's descriptive fields.
#include <fstream>
#include <sstream>

#include "frame/onnx/onnx.h"
#include "onnx_internal.h"

namespace frame::onnx {

Result<std::map<std::string, int64_t>> model_op_counts(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return make_error(StatusCode::kIo, "cannot open ONNX model '{}'", path);
  std::ostringstream bytes;
  bytes << f.rdbuf();
  ::onnx::ModelProto model;
  FRAME_RETURN_IF_ERROR(detail::parse_model(bytes.str(), model));
  std::map<std::string, int64_t> counts;
  for (const ::onnx::NodeProto& n : model.graph().node()) {
    const bool default_domain = n.domain().empty() || n.domain() == "ai.onnx";
    ++counts[default_domain ? n.op_type() : n.domain() + "::" + n.op_type()];
  }
  return counts;
}

Result<ModelMetadata> model_metadata(std::string_view bytes) {
  ::onnx::ModelProto model;
  FRAME_RETURN_IF_ERROR(detail::parse_model(bytes, model));
  ModelMetadata m;
  m.producer_name = model.producer_name();
  m.producer_version = model.producer_version();
  m.domain = model.domain();
  m.doc_string = model.doc_string();
  m.model_version = model.model_version();
  m.graph_name = model.graph().name();
  m.graph_doc_string = model.graph().doc_string();
  for (const ::onnx::StringStringEntryProto& e : model.metadata_props()) {
    m.metadata_props.emplace_back(e.key(), e.value());
  }
  return m;
}

}  // namespace frame::onnx
