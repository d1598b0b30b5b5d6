// onnx::open_session: parses a model once, converts its initializers once and hands the
// runtime a ModelSource whose specialize() re-imports the parsed model for one run's shapes
// and shape-determining values (ADR 0006 decisions 3 and 4).

#include "frame/onnx/session.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "frame/core/digest.h"
#include "frame/ops/backend_availability.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/shape_determining.h"
#include "frame/runtime/backend.h"
#include "onnx_internal.h"
#include "staged.h"

namespace frame::onnx {
namespace {

// What every specialization of one session reads: the parsed model with its initializer
// payloads dropped (they live in `initializers`, converted once) and the load options.
struct ParsedModel {
  ::onnx::ModelProto model;
  std::map<std::string, Tensor> initializers;
  std::string dir;
  LoadOptions load;
  /// Locations of every external data file the model names (initializers and tensor
  /// attributes, subgraphs included), as written in the model; the compile cache on disk keys
  /// by their identities (a file edited in place is another model).
  std::set<std::string> external_locations;
  /// The subset whose bytes the initializer conversion does not read (tensor attributes,
  /// nested graphs' initializers): the fingerprint digests those files' bytes itself.
  std::set<std::string> attribute_external_locations;
  /// Shape-independent results of the first specialization's import, re-used by the others.
  std::shared_ptr<detail::ImportMemo> memo = std::make_shared<detail::ImportMemo>();
};

// Adds the external data locations of `t` to `out`.
void add_external_location(const ::onnx::TensorProto& t, std::set<std::string>& out) {
  if (t.data_location() != ::onnx::TensorProto::EXTERNAL) return;
  for (const auto& kv : t.external_data()) {
    if (kv.key() == "location") out.insert(kv.value());
  }
}

// Every external data location `g` names: initializers, tensor attributes, nested graphs.
// `attrs` gets the locations named by tensor attributes and nested graphs' initializers (data
// the initializer conversion does not read); `all` gets those and the top graph's
// initializers'.
void collect_external_locations(const ::onnx::GraphProto& g, std::set<std::string>& all,
                                std::set<std::string>& attrs, int depth = 0) {
  if (depth > 64) return;  // the importer refuses deeper nesting anyway
  for (const ::onnx::TensorProto& t : g.initializer()) {
    add_external_location(t, depth == 0 ? all : attrs);
  }
  for (const ::onnx::NodeProto& n : g.node()) {
    for (const ::onnx::AttributeProto& a : n.attribute()) {
      if (a.has_t()) add_external_location(a.t(), attrs);
      for (const ::onnx::TensorProto& t : a.tensors()) add_external_location(t, attrs);
      if (a.has_g()) collect_external_locations(a.g(), all, attrs, depth + 1);
      for (const ::onnx::GraphProto& sub : a.graphs()) {
        collect_external_locations(sub, all, attrs, depth + 1);
      }
    }
  }
  if (depth == 0) all.insert(attrs.begin(), attrs.end());
}

// "dev ino size mtime ctime" of the file at `path`, or "missing": what changes when the file
// is edited, replaced or removed (the status-change time cannot be set back by a user).
std::string file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "missing";
  return fmt::format("dev {} ino {} size {} mtime {}.{:09d} ctime {}.{:09d}",
                     static_cast<unsigned long long>(st.st_dev),
                     static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
                     static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
                     static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec);
}

// The identities of the model's external data files, one "external LOCATION IDENTITY" line
// each, in location order.
std::string external_identities(const std::string& dir, const std::set<std::string>& locations) {
  std::string out;
  for (const std::string& loc : locations) {
    out += fmt::format("external {} {}\n", loc,
                       file_identity((std::filesystem::path(dir) / loc).string()));
  }
  return out;
}

runtime::ValueInfo value_info(const ::onnx::ValueInfoProto& v, DTypeCode dtype) {
  runtime::ValueInfo vi;
  vi.name = v.name();
  vi.dtype = dtype;
  const ::onnx::TypeProto_Tensor* inner =
      detail::inner_tensor_type(v.type(), vi.sequence, vi.optional);
  const ::onnx::TypeProto_Tensor& tt =
      inner != nullptr ? *inner : ::onnx::TypeProto_Tensor::default_instance();
  vi.has_shape = tt.has_shape();
  for (const auto& d : tt.shape().dim()) {
    runtime::Dim dim;
    if (d.has_dim_value() && d.dim_value() >= 0) {
      dim.value = d.dim_value();
    } else if (d.has_dim_param()) {
      dim.param = d.dim_param();
    }
    vi.dims.push_back(std::move(dim));
  }
  return vi;
}

// Whether ONNX input `i` of node `n` must be a constant when the node is converted: a
// position a converter reads as a value at import (needs_constant_at_import), or one the
// frame op it becomes marks shape-determining (Resize sizes, Reshape shape, ...; ONNX and
// frame input positions agree for these ops).
bool constant_position(const ::onnx::NodeProto& n, const std::map<std::string, int>& opsets,
                       size_t i) {
  auto op = opsets.find(n.domain() == "ai.onnx" ? "" : n.domain());
  const int opset = op == opsets.end() ? 0 : op->second;
  if (detail::needs_constant_at_import(n.domain(), n.op_type(), opset, i)) return true;
  if (n.op_type() == "Loop" || n.op_type() == "If" || n.op_type() == "Scan") return false;
  const detail::OpRow* row = detail::find_op(n.domain(), n.op_type(), opset);
  if (row == nullptr || row->frame_op.empty()) return false;
  const ops::OpSchema* schema = ops::OpRegistry::global().find(row->frame_op);
  return schema != nullptr && i < schema->inputs().size() && schema->is_shape_determining(i);
}

// The outer names a body reads (directly or through nested bodies) whose values reach a
// constant_position inside it: a Loop body that Resizes to a size computed from a captured
// box (torchvision's keypoint and mask heads) needs that box's value to import the unrolled
// iterations, so whatever feeds it is shape-determining for the session.
std::set<std::string> body_constant_reads(const ::onnx::GraphProto& body,
                                          const std::map<std::string, int>& opsets, int depth) {
  std::set<std::string> out;
  if (depth > 64) return out;
  std::set<std::string> defined;
  for (const auto& v : body.input()) defined.insert(v.name());
  for (const auto& t : body.initializer()) defined.insert(t.name());
  for (const auto& n : body.node()) defined.insert(n.output().begin(), n.output().end());
  std::map<std::string, std::set<std::string>> reach;  // value -> outer names it depends on
  auto from = [&](const std::string& name) -> std::set<std::string> {
    if (auto it = reach.find(name); it != reach.end()) return it->second;
    if (!name.empty() && defined.count(name) == 0) return {name};
    return {};
  };
  for (const ::onnx::NodeProto& n : body.node()) {
    std::set<std::string> carried;
    for (int i = 0; i < n.input_size(); ++i) {
      const std::set<std::string> r = from(n.input(i));
      if (r.empty()) continue;
      if (constant_position(n, opsets, static_cast<size_t>(i))) out.insert(r.begin(), r.end());
      if (!detail::reads_only_type_at_import(n.domain(), n.op_type(), static_cast<size_t>(i))) {
        carried.insert(r.begin(), r.end());
      }
    }
    detail::for_each_body(n, [&](const std::string&, const ::onnx::GraphProto& g) {
      for (const std::string& x : body_constant_reads(g, opsets, depth + 1)) {
        const std::set<std::string> r = from(x);
        out.insert(r.begin(), r.end());
      }
    });
    for (const std::string& o : n.output()) reach[o] = carried;
  }
  return out;
}

// Graph inputs whose values reach a position a converter needs as a constant at import
// (needs_constant_at_import), or, inside a control-flow body, any constant_position, each with
// the ONNX nodes and inputs it reaches: walking the ONNX nodes forward, every node carries its
// inputs' value dependence to its outputs except through inputs it reads only for their types
// (reads_only_type_at_import: Shape, Size, the *Like generators).
std::map<std::string, std::vector<passes::ShapeDeterminingUse>> import_shape_determining(
    const ::onnx::ModelProto& model, const std::vector<runtime::ValueInfo>& inputs) {
  const ::onnx::GraphProto& gp = model.graph();
  std::map<std::string, int> opsets;
  for (const auto& o : model.opset_import()) {
    opsets[o.domain() == "ai.onnx" ? "" : o.domain()] = static_cast<int>(o.version());
  }
  if (model.opset_import_size() == 0) opsets[""] = 1;
  std::map<std::string, std::set<std::string>> reach;
  for (const runtime::ValueInfo& vi : inputs) reach[vi.name] = {vi.name};
  std::map<std::string, std::vector<passes::ShapeDeterminingUse>> out;
  auto add_use = [&](const std::set<std::string>& ins, const ::onnx::NodeProto& n, size_t i,
                     const std::string& what) {
    for (const std::string& in : ins) {
      std::vector<passes::ShapeDeterminingUse>& uses = out[in];
      // Not an IR node: node -1, named by the ONNX node and its op_type.
      const passes::ShapeDeterminingUse u{-1, n.name(), n.op_type(), i, what};
      if (std::none_of(uses.begin(), uses.end(), [&](const auto& x) {
            return x.node_name == u.node_name && x.input == u.input && x.input_name == u.input_name;
          })) {
        uses.push_back(u);
      }
    }
  };
  // Per node with bodies: the names its bodies need as values (computed once).
  std::map<const ::onnx::NodeProto*, std::set<std::string>> body_reads;
  for (const ::onnx::NodeProto& n : gp.node()) {
    std::set<std::string> r;
    detail::for_each_body(n, [&](const std::string&, const ::onnx::GraphProto& g) {
      const std::set<std::string> x = body_constant_reads(g, opsets, 1);
      r.insert(x.begin(), x.end());
    });
    if (!r.empty()) body_reads[&n] = std::move(r);
  }
  // Staged models (ADR 0008): nodes at or after an eager node run in later stages, which
  // bind what they need from their own inputs; only the first stage's uses count here.
  std::set<std::string> later;
  const std::vector<bool> eager = detail::eager_nodes(gp);
  for (int i = 0; i < gp.node_size(); ++i) {
    const ::onnx::NodeProto& n = gp.node(i);
    bool after = eager[static_cast<size_t>(i)];
    for (const std::string& in : n.input()) after = after || later.count(in) > 0;
    if (auto b = body_reads.find(&n); b != body_reads.end()) {
      for (const std::string& x : b->second) after = after || later.count(x) > 0;
    }
    if (after) later.insert(n.output().begin(), n.output().end());
  }
  // ONNX lists nodes in topological order; repeat until stable for models that do not.
  for (bool changed = true; changed;) {
    changed = false;
    for (int k = 0; k < gp.node_size(); ++k) {
      const ::onnx::NodeProto& n = gp.node(k);
      if (eager[static_cast<size_t>(k)] || (!n.output().empty() && later.count(n.output(0)) > 0)) {
        continue;
      }
      std::set<std::string> from;
      for (int i = 0; i < n.input_size(); ++i) {
        auto it = reach.find(n.input(i));
        if (it == reach.end()) continue;
        auto op = opsets.find(n.domain() == "ai.onnx" ? "" : n.domain());
        if (detail::needs_constant_at_import(n.domain(), n.op_type(),
                                             op == opsets.end() ? 0 : op->second,
                                             static_cast<size_t>(i))) {
          add_use(it->second, n, static_cast<size_t>(i), "");
        }
        if (!detail::reads_only_type_at_import(n.domain(), n.op_type(), static_cast<size_t>(i))) {
          from.insert(it->second.begin(), it->second.end());
        }
      }
      if (auto b = body_reads.find(&n); b != body_reads.end()) {
        for (const std::string& name : b->second) {
          auto it = reach.find(name);
          if (it == reach.end()) continue;
          // The captured value `name` decides a shape inside a body of this node.
          add_use(it->second, n, 0, "body reads '" + name + "'");
          from.insert(it->second.begin(), it->second.end());
        }
        // Such a Loop is unrolled at import (one static body per iteration), which needs its
        // trip count and condition as constants too.
        if (n.op_type() == "Loop") {
          for (int i = 0; i < 2 && i < n.input_size(); ++i) {
            auto it = reach.find(n.input(i));
            if (it != reach.end()) add_use(it->second, n, static_cast<size_t>(i), "");
          }
        }
      }
      if (from.empty()) continue;
      for (const std::string& o : n.output()) {
        std::set<std::string>& r = reach[o];
        const size_t before = r.size();
        r.insert(from.begin(), from.end());
        changed = changed || r.size() != before;
      }
    }
  }
  return out;
}

// IR nodes of `g` whose outputs depend on a value an eager node computes (ADR 0008): the
// outputs of non_zero, unique and non_max_suppression nodes and of control-flow nodes whose
// bodies hold one, and everything computed from them. A staged model's later stages bind such
// values themselves, so a graph input reaching a shape position only through them is not
// bound per run.
bool holds_eager_op(const ir::Graph& g, int depth = 0) {
  if (depth > 64) return false;
  for (size_t i = 0; i < g.num_nodes(); ++i) {
    const ir::Node& n = g.node(static_cast<ir::NodeId>(i));
    if (n.dead) continue;
    if (n.op == "non_zero" || n.op == "unique" || n.op == "non_max_suppression") return true;
    for (const auto& [k, a] : n.attrs) {
      if (const auto* b = std::get_if<std::shared_ptr<const ir::Graph>>(&a)) {
        if (*b && holds_eager_op(**b, depth + 1)) return true;
      }
    }
  }
  return false;
}

std::set<ir::NodeId> downstream_of_eager(const ir::Graph& g,
                                         const std::set<std::string>& eager_names) {
  std::set<ir::ValueId> tainted;
  std::set<ir::NodeId> nodes;
  for (size_t i = 0; i < g.num_nodes(); ++i) {  // node ids are in topological order
    const ir::Node& n = g.node(static_cast<ir::NodeId>(i));
    if (n.dead) continue;
    bool hit = std::any_of(n.inputs.begin(), n.inputs.end(),
                           [&](ir::ValueId v) { return tainted.count(v) > 0; });
    if (hit) nodes.insert(static_cast<ir::NodeId>(i));
    // A node holding an eager op computes a data-dependent value itself.
    // By op, or by name: a structure-only import may leave an eager ONNX node (an If holding
    // NMS) as an untyped stand-in.
    bool eager = n.op == "non_zero" || n.op == "unique" || n.op == "non_max_suppression" ||
                 eager_names.count(n.name) > 0;
    for (const auto& [k, a] : n.attrs) {
      if (const auto* b = std::get_if<std::shared_ptr<const ir::Graph>>(&a)) {
        eager = eager || (*b && holds_eager_op(**b));
      }
    }
    if (hit || eager) tainted.insert(n.outputs.begin(), n.outputs.end());
  }
  return nodes;
}

// The model as open() and classify_inputs() see it: initializers converted once (the kept
// proto holds only their names, types and dims), the declared inputs, and the structure-only
// import at placeholder shapes with the inputs it classifies as shape-determining.
struct Opened {
  runtime::ModelSource src;
  ir::Graph structure;
  std::vector<passes::ShapeDeterminingInput> sdi;
};

// Converts every initializer once; the kept proto holds only its name, type and dims.
Status convert_initializers(ParsedModel& pm, const std::string& name) {
  ::onnx::GraphProto& gp = *pm.model.mutable_graph();
  collect_external_locations(gp, pm.external_locations, pm.attribute_external_locations);
  detail::ExternalData external(pm.dir);
  size_t total = 0;
  for (::onnx::TensorProto& t : *gp.mutable_initializer()) {
    if (t.name().empty() || pm.initializers.count(t.name()) > 0) continue;
    // The sum is checked before the tensor is converted; bad dims or types are left to
    // tensor_from_proto, which names them.
    Result<DTypeCode> dt = detail::dtype_from_onnx(t.data_type());
    Result<size_t> nbytes = dt.is_ok()
                                ? checked_nbytes(*dt, Shape(t.dims().begin(), t.dims().end()))
                                : Result<size_t>(size_t{0});
    if (nbytes.is_ok() && *nbytes > pm.load.max_initializer_bytes - total) {
      return make_error(StatusCode::kOutOfRange,
                        "{}: initializer '{}' ({} bytes) brings the model's initializers to {} "
                        "bytes, over the limit of {} (max_initializer_bytes)",
                        name, t.name(), *nbytes, total + *nbytes, pm.load.max_initializer_bytes);
    }
    if (nbytes.is_ok()) total += *nbytes;
    Result<Tensor> v = detail::tensor_from_proto(t, external, pm.load.max_tensor_bytes);
    if (!v.is_ok()) {
      return v.status().with_prefix(fmt::format("{}: initializer '{}': ", name, t.name()));
    }
    pm.initializers.emplace(t.name(), std::move(*v));
    ::onnx::TensorProto slim;
    slim.set_name(t.name());
    slim.set_data_type(t.data_type());
    slim.mutable_dims()->CopyFrom(t.dims());
    t = std::move(slim);
  }

  return Status();
}

Result<Opened> open_model(ParsedModel& pm, const std::string& name) {
  if (!pm.load.input_shapes.empty() || !pm.load.constant_inputs.empty() || pm.load.keep_untyped) {
    return invalid_argument(
        "{}: a session takes shapes and values from each run; LoadOptions::input_shapes, "
        "constant_inputs and keep_untyped must be empty",
        name);
  }
  if (!pm.model.has_graph()) return invalid_argument("{}: model has no graph", name);
  FRAME_RETURN_IF_ERROR(convert_initializers(pm, name));
  const ::onnx::GraphProto& gp = pm.model.graph();

  Opened o;
  runtime::ModelSource& src = o.src;
  src.name = name;
  LoadOptions probe = pm.load;
  probe.keep_untyped = true;
  bool placeholders = false;  // some input dim is symbolic: the probe's types are not the runs'
  const bool staged = detail::is_staged_model(gp);
  for (const auto& in : gp.input()) {
    if (pm.initializers.count(in.name()) > 0) continue;  // an initializer: a constant
    bool sequence = false;
    bool optional = false;
    const ::onnx::TypeProto_Tensor* tt = detail::inner_tensor_type(in.type(), sequence, optional);
    if (tt == nullptr) {
      return unimplemented(
          "{}: graph input '{}' is neither a tensor nor a sequence or optional of tensors (map "
          "inputs are not supported)",
          name, in.name());
    }
    Result<DTypeCode> dt = detail::dtype_from_onnx(tt->elem_type());
    if (!dt.is_ok()) {
      return invalid_argument("{}: graph input '{}': {}", name, in.name(), dt.status().message());
    }
    runtime::ValueInfo vi = value_info(in, *dt);
    if (vi.sequence || vi.optional) {
      // Sequences and optionals are values of a staged model only (ADR 0008); nothing to probe.
      src.inputs.push_back(std::move(vi));
      continue;
    }
    // The structure-only import needs some shape: symbolic dims become 1 (the value path the
    // classification follows does not depend on sizes; narrowing by types is off then).
    Shape placeholder;
    for (const runtime::Dim& d : vi.dims) {
      placeholder.push_back(d.is_concrete() ? d.value : 1);
      placeholders = placeholders || !d.is_concrete();
    }
    probe.input_shapes.emplace(in.name(), std::move(placeholder));
    src.inputs.push_back(std::move(vi));
  }
  Result<ir::Graph> structure = detail::import_model(pm.model, probe, pm.dir, &pm.initializers);
  if (!structure.is_ok() && staged) {
    // A staged model with sequence or optional values has no whole-graph import (those are
    // values of the runner, not of the IR); each stage classifies its own inputs when opened.
    return o;
  }
  if (!structure.is_ok()) return structure.status().with_prefix(name + ": ");
  o.structure = std::move(*structure);
  std::map<std::string, std::vector<passes::ShapeDeterminingUse>> at_import =
      import_shape_determining(pm.model, src.inputs);
  // With placeholder dims, an If whose branches agree at size 1 may differ at the sizes the
  // runs bring (x[:1] vs x): every marked position counts (ADR 0006, decision 5 notes).
  passes::ShapeDeterminingOptions sdo;
  sdo.narrow = !placeholders;
  std::vector<passes::ShapeDeterminingInput> walked =
      passes::shape_determining_inputs(o.structure, sdo);
  // A staged model (ADR 0008): positions after an eager node are bound by their own stage.
  std::set<ir::NodeId> staged_later;
  if (staged) staged_later = downstream_of_eager(o.structure, detail::eager_node_names(gp));
  // Marks each of `values` that reaches a shape position of `g` (walked) or of a converter
  // (at_import).
  const auto classify = [&](const std::vector<runtime::ValueInfo>& values, const ir::Graph& g,
                            const std::vector<passes::ShapeDeterminingInput>& walked,
                            const auto& at_import) {
    for (const runtime::ValueInfo& vi : values) {
      passes::ShapeDeterminingInput in{g.find_value(vi.name), vi.name, {}};
      for (const passes::ShapeDeterminingInput& w : walked) {
        if (w.name != vi.name) continue;
        for (const passes::ShapeDeterminingUse& u : w.uses) {
          if (staged_later.count(u.node) == 0) in.uses.push_back(u);
        }
      }
      if (auto it = at_import.find(vi.name); it != at_import.end()) {
        in.uses.insert(in.uses.end(), it->second.begin(), it->second.end());
      }
      if (in.uses.empty()) continue;
      src.shape_determining.push_back(vi.name);
      o.sdi.push_back(std::move(in));
    }
  };
  classify(src.inputs, o.structure, walked, at_import);
  if (staged) return o;
  // Overridable initializers (an initializer named among the graph inputs: its default, ONNX
  // IR spec "Graphs"): a run may feed them. A second structure-only import with all of them as
  // inputs classifies them like inputs, so one that decides a shape is bound by value when fed.
  for (const auto& in : gp.input()) {
    auto init = pm.initializers.find(in.name());
    if (init == pm.initializers.end() || !in.type().has_tensor_type()) continue;
    // A declared type the stored value does not have (another element type, rank or fixed
    // dim) leaves the initializer a constant: no feed could both match the declaration and
    // fit the graph built around the initializer.
    Result<DTypeCode> declared = detail::dtype_from_onnx(in.type().tensor_type().elem_type());
    runtime::ValueInfo vi = value_info(in, init->second.dtype());
    bool fits = declared.is_ok() && *declared == init->second.dtype();
    if (fits && vi.has_shape) {
      fits = vi.dims.size() == init->second.shape().size();
      for (size_t d = 0; fits && d < vi.dims.size(); ++d) {
        fits = !vi.dims[d].is_concrete() || vi.dims[d].value == init->second.shape()[d];
      }
    }
    if (!fits) continue;
    probe.input_shapes[in.name()] = init->second.shape();
    src.overridable.push_back(std::move(vi));
  }
  if (src.overridable.empty()) return o;
  Result<ir::Graph> with_overrides =
      detail::import_model(pm.model, probe, pm.dir, &pm.initializers);
  // Not classified when that import fails (it only stands values in for nodes it cannot
  // convert, so it should not): a fed initializer at a shape position then fails its
  // specialization's import, naming the node.
  if (!with_overrides.is_ok()) return o;
  classify(src.overridable, *with_overrides, passes::shape_determining_inputs(*with_overrides, sdo),
           import_shape_determining(pm.model, src.overridable));
  return o;
}

// The model source of a parsed model: declared inputs and outputs, classification, shared
// initializers, fingerprint (with a cache directory), and specialize() re-importing it.
Result<runtime::ModelSource> build_source(std::shared_ptr<ParsedModel> pm, const std::string& name,
                                          const runtime::SessionOptions& options) {
  FRAME_ASSIGN_OR_RETURN(Opened opened, open_model(*pm, name));
  runtime::ModelSource src = std::move(opened.src);
  const ir::Graph* structure = &opened.structure;
  const ::onnx::GraphProto& gp = pm->model.graph();
  for (const auto& out : gp.output()) {
    bool sequence = false;
    bool optional = false;
    const ::onnx::TypeProto_Tensor* tt = detail::inner_tensor_type(out.type(), sequence, optional);
    Result<DTypeCode> dt = detail::dtype_from_onnx(tt != nullptr ? tt->elem_type() : 0);
    const ir::ValueId v = structure->find_value(out.name());
    DTypeCode d = dt.is_ok() ? *dt : DTypeCode::kFloat32;
    if (!dt.is_ok() && v != ir::kNoValue && structure->value(v).type) {
      d = structure->value(v).type->dtype;  // the value info leaves the type out
    }
    src.outputs.push_back(value_info(out, d));
  }
  for (const auto& [n, t] : pm->initializers) src.shared_constants.push_back(t);
  if (detail::is_staged_model(gp)) {
    // Data-dependent shapes: stages and eager nodes (ADR 0008); each stage's session keys the
    // compile cache on disk by its own sub-model.
    detail::StagedModelParts parts;
    parts.model = std::shared_ptr<const ::onnx::ModelProto>(pm, &pm->model);
    parts.initializers = pm->initializers;
    parts.dir = pm->dir;
    parts.load = pm->load;
    parts.options = options;
    parts.inputs = src.inputs;
    parts.name = name;
    FRAME_ASSIGN_OR_RETURN(src.staged, detail::make_staged_runner(std::move(parts)));
    return src;
  }
  if (!options.cache_dir.empty()) {
    // The compile cache on disk keys entries by the model's content: the parsed model (its
    // initializers reduced to names, types and dims) and every initializer's bytes, external
    // data included, plus the load options that change an import.
    std::string content = pm->model.SerializeAsString();
    for (const auto& [n, t] : pm->initializers) {
      content += fmt::format("\ninitializer {} {}{} {}", n, dtype_name(t.dtype()),
                             shape_to_string(t.shape()), tensor_digest(t));
    }
    content += fmt::format("\nverify {}\n", pm->load.verify);
    // External data the initializer conversion did not read is not among the tensors digested
    // above: digest those files' bytes (by content, so a copied or touched model keeps its
    // entries).
    for (const std::string& loc : pm->attribute_external_locations) {
      std::ifstream f(std::filesystem::path(pm->dir) / loc, std::ios::binary);
      const std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      content += fmt::format("external {} {}\n", loc,
                             f ? digest_hex(data.data(), data.size()) : std::string("unreadable"));
    }
    src.fingerprint = "onnx " + digest_hex(content.data(), content.size());
  }
  src.specialize = [pm](const runtime::Specialization& spec) -> Result<ir::Graph> {
    LoadOptions lo = pm->load;
    lo.input_shapes = spec.input_shapes;
    lo.constant_inputs = spec.constant_inputs;
    lo.verify = false;  // compile() verifies the graph it is given (V1-V4) first
    lo.compact = spec.compact;
    return detail::import_model(pm->model, lo, pm->dir, &pm->initializers, pm->memo.get(),
                                spec.reuse, spec.reuse_derived, spec.in_place);
  };
  return src;
}

// ---- warm open: a model opened before with the same cache directory is not parsed ----------
// open_session writes a record (runtime::write_cache_record) with what opening the model found;
// a later open of the same file reads it and makes a source whose specialize() parses the
// model only when the compile cache on disk misses a key. The record's key is the file's
// identity (canonical path, device, inode, size, modification and status-change times; the
// status-change time cannot be set back by a user, so an edited file is a new key), the load
// options and the frame build (checked by the record itself).

// `recent`: set when the file changed in the last two seconds. File times are kept at the
// kernel's clock tick (a few ms), so a file rewritten twice within one tick keeps its times:
// no record is written for such a file until it has been left alone (as ccache's direct mode
// does).
std::optional<std::string> model_record_key(const std::string& path, const LoadOptions& load,
                                            bool* recent) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return std::nullopt;
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  const auto ns = [](const timespec& t) { return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec; };
  *recent = ns(now) - std::max(ns(st.st_mtim), ns(st.st_ctim)) < 2'000'000'000;
  std::error_code ec;
  const std::filesystem::path canonical = std::filesystem::canonical(path, ec);
  if (ec) return std::nullopt;
  // External data resolves next to the path as given (a symbolic link to a model elsewhere
  // reads the data beside the link), so that directory is part of the key too.
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) parent = ".";
  const std::filesystem::path data_dir = std::filesystem::canonical(parent, ec);
  if (ec) return std::nullopt;
  return fmt::format(
      "onnx-model\npath {}\ndata {}\ndev {} ino {} size {} mtime {}.{:09d} ctime {}.{:09d}\nverify "
      "{} "
      "limits {} {} {} {} {} {}\n",
      canonical.string(), data_dir.string(), static_cast<unsigned long long>(st.st_dev),
      static_cast<unsigned long long>(st.st_ino), static_cast<long long>(st.st_size),
      static_cast<long long>(st.st_mtim.tv_sec), st.st_mtim.tv_nsec,
      static_cast<long long>(st.st_ctim.tv_sec), st.st_ctim.tv_nsec, load.verify,
      load.max_model_bytes, load.max_tensor_bytes, load.max_initializer_bytes,
      load.max_nesting_depth, load.max_nodes, load.max_attribute_elements);
}

nlohmann::json value_infos_json(const std::vector<runtime::ValueInfo>& vis) {
  nlohmann::json out = nlohmann::json::array();
  for (const runtime::ValueInfo& vi : vis) {
    nlohmann::json dims = nlohmann::json::array();
    for (const runtime::Dim& d : vi.dims) dims.push_back({d.value, d.param});
    out.push_back({{"name", vi.name},
                   {"dtype", std::string(dtype_name(vi.dtype))},
                   {"has_shape", vi.has_shape},
                   {"dims", dims}});
  }
  return out;
}

std::string source_record(const runtime::ModelSource& src, const std::string& external) {
  return nlohmann::json{{"fingerprint", src.fingerprint},
                        {"external", external},
                        {"inputs", value_infos_json(src.inputs)},
                        {"overridable", value_infos_json(src.overridable)},
                        {"outputs", value_infos_json(src.outputs)},
                        {"shape_determining", src.shape_determining}}
      .dump();
}

// Declared values from a record; nullopt when a field is missing or of the wrong type.
std::optional<std::vector<runtime::ValueInfo>> value_infos_from(const nlohmann::json& j) {
  if (!j.is_array()) return std::nullopt;
  std::vector<runtime::ValueInfo> out;
  for (const nlohmann::json& v : j) {
    if (!v.is_object() || !v.contains("name") || !v["name"].is_string() || !v.contains("dtype") ||
        !v["dtype"].is_string() || !v.contains("has_shape") || !v["has_shape"].is_boolean() ||
        !v.contains("dims") || !v["dims"].is_array()) {
      return std::nullopt;
    }
    Result<DTypeCode> dt = parse_dtype(v["dtype"].get<std::string>());
    if (!dt.is_ok()) return std::nullopt;
    runtime::ValueInfo vi;
    vi.name = v["name"].get<std::string>();
    vi.dtype = *dt;
    vi.has_shape = v["has_shape"].get<bool>();
    for (const nlohmann::json& d : v["dims"]) {
      if (!d.is_array() || d.size() != 2 || !d[0].is_number_integer() || !d[1].is_string()) {
        return std::nullopt;
      }
      vi.dims.push_back(runtime::Dim{d[0].get<int64_t>(), d[1].get<std::string>()});
    }
    out.push_back(std::move(vi));
  }
  return out;
}

// The model, parsed and its initializers converted on the first specialize (a miss of the
// compile cache on disk), once for all threads.
struct LazyModel {
  std::string path;
  LoadOptions load;
  std::once_flag once;
  Status status;
  std::shared_ptr<ParsedModel> pm;
};

std::optional<runtime::ModelSource> source_from_record(const std::string& record,
                                                       const std::string& path,
                                                       const LoadOptions& load) {
  const nlohmann::json j = nlohmann::json::parse(record, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("fingerprint") || !j["fingerprint"].is_string() ||
      !j.contains("shape_determining") || !j["shape_determining"].is_array() ||
      !j.contains("external") || !j["external"].is_string()) {
    return std::nullopt;
  }
  // The external data files must be the ones the record was written with: re-read their
  // locations from the record's lines and compare each file's identity now.
  {
    std::string dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
    const std::string& external = j["external"].get_ref<const std::string&>();
    std::set<std::string> locations;
    for (size_t at = 0; at < external.size();) {
      const size_t nl = external.find('\n', at);
      const std::string line = external.substr(at, nl == std::string::npos ? nl : nl - at);
      at = nl == std::string::npos ? external.size() : nl + 1;
      // "external LOCATION IDENTITY": the identity starts at " dev " or is " missing".
      if (line.rfind("external ", 0) != 0) return std::nullopt;
      size_t end = line.rfind(" dev ");
      if (end == std::string::npos) end = line.rfind(" missing");
      if (end == std::string::npos || end < 9) return std::nullopt;
      locations.insert(line.substr(9, end - 9));
    }
    if (external_identities(dir, locations) != external) return std::nullopt;
  }
  std::optional<std::vector<runtime::ValueInfo>> inputs =
      value_infos_from(j.value("inputs", nlohmann::json()));
  std::optional<std::vector<runtime::ValueInfo>> outputs =
      value_infos_from(j.value("outputs", nlohmann::json()));
  std::optional<std::vector<runtime::ValueInfo>> overridable =
      value_infos_from(j.value("overridable", nlohmann::json()));
  if (!inputs || !outputs || !overridable) return std::nullopt;
  runtime::ModelSource src;
  src.name = path;
  src.inputs = std::move(*inputs);
  src.overridable = std::move(*overridable);
  src.outputs = std::move(*outputs);
  src.fingerprint = j["fingerprint"].get<std::string>();
  for (const nlohmann::json& n : j["shape_determining"]) {
    if (!n.is_string()) return std::nullopt;
    src.shape_determining.push_back(n.get<std::string>());
  }
  auto lazy = std::make_shared<LazyModel>();
  lazy->path = path;
  lazy->load = load;
  src.specialize = [lazy](const runtime::Specialization& spec) -> Result<ir::Graph> {
    std::call_once(lazy->once, [&] {
      auto pm = std::make_shared<ParsedModel>();
      pm->load = lazy->load;
      pm->dir = std::filesystem::path(lazy->path).parent_path().string();
      if (pm->dir.empty()) pm->dir = ".";
      lazy->status = detail::read_model(lazy->path, lazy->load.max_model_bytes, pm->model);
      if (lazy->status.is_ok()) lazy->status = convert_initializers(*pm, lazy->path);
      if (lazy->status.is_ok()) lazy->pm = std::move(pm);
    });
    if (!lazy->status.is_ok()) return lazy->status;
    LoadOptions lo = lazy->pm->load;
    lo.input_shapes = spec.input_shapes;
    lo.constant_inputs = spec.constant_inputs;
    lo.verify = false;  // compile() verifies the graph it is given (V1-V4) first
    lo.compact = spec.compact;
    return detail::import_model(lazy->pm->model, lo, lazy->pm->dir, &lazy->pm->initializers,
                                lazy->pm->memo.get(), spec.reuse, spec.reuse_derived,
                                spec.in_place);
  };
  src.late_shared_constants = [lazy]() {
    std::vector<Tensor> out;
    if (lazy->pm) {
      for (const auto& [n, t] : lazy->pm->initializers) out.push_back(t);
    }
    return out;
  };
  return src;
}

// The warm-ups of a session's backends (ops::register_warm_up), started for the ops of the
// parsed model's main graph before it is imported (oneDNN generates its gemm kernels on another
// core meanwhile instead of in the first run) and waited for when this goes out of scope, so
// no warm-up thread outlives the call that opens the model. A bad backend list is
// Session::create's to report.
class WarmUps {
 public:
  WarmUps(const ::onnx::ModelProto& model, const runtime::SessionOptions& options,
          const LoadOptions& load) {
    Result<std::vector<std::string>> chain = runtime::resolve_backends(options.compile.backends);
    if (!chain.is_ok()) return;
    const std::map<std::string, int> opsets = detail::opset_versions(model);
    std::set<std::pair<std::string, std::string>> types;
    for (const auto& n : model.graph().node()) {
      types.emplace(detail::canonical_domain(n.domain()), n.op_type());
    }
    std::set<std::string> ops;
    for (const auto& [domain, type] : types) {
      const auto it = opsets.find(domain);
      if (it == opsets.end()) continue;
      if (const detail::OpRow* row = detail::find_op(domain, type, it->second); row != nullptr) {
        ops.emplace(row->frame_op);
      }
    }
    // Shapes vary where a graph input has a dim without a value that the load options do not
    // fix: first-seen shapes then run the interpreted tier's kernels.
    bool shapes_vary = false;
    for (const auto& in : model.graph().input()) {
      if (load.input_shapes.count(in.name()) != 0) continue;
      for (const auto& d : in.type().tensor_type().shape().dim()) {
        shapes_vary = shapes_vary || !d.has_dim_value();
      }
    }
    const std::vector<std::string> list(ops.begin(), ops.end());
    for (const std::string& b : *chain) {
      if (ops::start_warm_up(b, list, shapes_vary)) started_.push_back(b);
    }
  }
  ~WarmUps() {
    for (const std::string& b : started_) ops::wait_warm_up(b);
  }
  WarmUps(const WarmUps&) = delete;
  WarmUps& operator=(const WarmUps&) = delete;

 private:
  std::vector<std::string> started_;  // the backends whose warm-up runs: waited for
};

}  // namespace

Result<runtime::Session> open_session(const std::string& path,
                                      const runtime::SessionOptions& options,
                                      const LoadOptions& load) {
  // With a cache directory, a model opened there before is not parsed now (see above).
  std::optional<std::string> record_key;
  bool recent = false;
  if (!options.cache_dir.empty() && load.input_shapes.empty() && load.constant_inputs.empty() &&
      !load.keep_untyped) {
    record_key = model_record_key(path, load, &recent);
    if (record_key) {
      if (std::optional<std::string> rec =
              runtime::read_cache_record(options.cache_dir, *record_key)) {
        if (std::optional<runtime::ModelSource> src = source_from_record(*rec, path, load)) {
          return runtime::Session::create(std::move(*src), options);
        }
      }
    }
  }
  auto pm = std::make_shared<ParsedModel>();
  pm->load = load;
  FRAME_RETURN_IF_ERROR(detail::read_model(path, load.max_model_bytes, pm->model));
  const WarmUps warm_ups(pm->model, options, load);
  pm->dir = std::filesystem::path(path).parent_path().string();
  if (pm->dir.empty()) pm->dir = ".";
  std::shared_ptr<ParsedModel> kept = pm;
  FRAME_ASSIGN_OR_RETURN(runtime::ModelSource src, build_source(std::move(pm), path, options));
  if (record_key && !recent && !src.staged) {
    const std::string external = external_identities(kept->dir, kept->external_locations);
    (void)runtime::write_cache_record(options.cache_dir, *record_key, source_record(src, external));
  }
  return runtime::Session::create(std::move(src), options);
}

Result<runtime::Session> open_session_from_bytes(std::string_view bytes,
                                                 const runtime::SessionOptions& options,
                                                 const LoadOptions& load,
                                                 const std::string& model_dir) {
  auto pm = std::make_shared<ParsedModel>();
  pm->load = load;
  pm->dir = model_dir;
  FRAME_RETURN_IF_ERROR(detail::parse_model(bytes, pm->model));
  const WarmUps warm_ups(pm->model, options, load);
  FRAME_ASSIGN_OR_RETURN(runtime::ModelSource src, build_source(std::move(pm), "model", options));
  return runtime::Session::create(std::move(src), options);
}

namespace detail {

Result<runtime::Session> open_stage_session(::onnx::ModelProto model,
                                            std::map<std::string, Tensor> initializers,
                                            const std::string& dir, const LoadOptions& load,
                                            const runtime::SessionOptions& options,
                                            const std::string& name) {
  auto pm = std::make_shared<ParsedModel>();
  pm->model = std::move(model);
  pm->initializers = std::move(initializers);
  pm->dir = dir;
  pm->load = load;
  FRAME_ASSIGN_OR_RETURN(runtime::ModelSource src, build_source(std::move(pm), name, options));
  return runtime::Session::create(std::move(src), options);
}

}  // namespace detail

Result<std::vector<passes::ShapeDeterminingInput>> classify_inputs(const std::string& path,
                                                                   const LoadOptions& load) {
  ParsedModel pm;
  pm.load = load;
  FRAME_RETURN_IF_ERROR(detail::read_model(path, load.max_model_bytes, pm.model));
  pm.dir = std::filesystem::path(path).parent_path().string();
  if (pm.dir.empty()) pm.dir = ".";
  FRAME_ASSIGN_OR_RETURN(Opened opened, open_model(pm, path));
  return std::move(opened.sdi);
}

}  // namespace frame::onnx
