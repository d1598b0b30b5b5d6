// ONNX ModelProto -> ir::Graph. Parsing is bounded (file size, tensor bytes) and every
// malformed input is an error, never a crash. Node conversion goes through the one op table
// (op_table.cpp); each emitted node is shape-inferred at once so converters and later nodes
// see concrete types (ARCH-044), and small all-constant nodes (shape arithmetic) fold away.
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <onnx/onnx-data_pb.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <variant>

#include "frame/onnx/session.h"
#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "frame/passes/shape_determining.h"
#include "onnx_internal.h"

namespace frame::onnx {
namespace detail {
namespace {

// Constant nodes whose outputs stay under this size are computed at import time; the
// constant-folding pass handles the rest with the runtime's own limit.
constexpr size_t kImportFoldBytes = size_t{1} << 20;
// Raised by EagerFoldScope for the import of one eager node (ADR 0008), which must fold.
thread_local size_t t_fold_bytes = kImportFoldBytes;

std::string snake_case(std::string_view camel) {
  std::string out;
  for (size_t i = 0; i < camel.size(); ++i) {
    const char c = camel[i];
    const bool upper = c >= 'A' && c <= 'Z';
    if (upper && i > 0) {
      const bool prev_lower = camel[i - 1] >= 'a' && camel[i - 1] <= 'z';
      const bool next_lower = i + 1 < camel.size() && camel[i + 1] >= 'a' && camel[i + 1] <= 'z';
      const bool prev_upper = camel[i - 1] >= 'A' && camel[i - 1] <= 'Z';
      if (prev_lower || (prev_upper && next_lower)) out += '_';
    }
    out += upper ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

// Folds `n` (every input a constant) with its cpu kernel into `outs`. `k`: the op's cpu kernel
// when the caller has it (re-typing keeps it per step), else looked up. `filled`: a context
// the caller filled for `n` already (fill_node_context), else one is filled here. Errors: no
// cpu kernel, the kernel's supports() or run.
Status run_cpu_kernel(const ir::Graph& g, const ir::Node& n, const ops::OpSchema& schema,
                      const std::vector<ir::TensorType>& types, std::vector<Tensor>& outs,
                      const ops::KernelDef* k = nullptr, const ops::NodeContext* filled = nullptr) {
  if (k == nullptr) k = ops::KernelRegistry::global().find(n.op, "cpu");
  if (k == nullptr) return not_found("no cpu kernel for '{}'", n.op);
  // This thread's context and inputs, refilled per fold (re-typing folds the shape arithmetic
  // per first-seen shape); a nested fold (a kernel that imports) takes its own.
  struct Scratch {
    ops::NodeContext ctx;
    std::vector<Tensor> ins;
    bool busy = false;
  };
  thread_local Scratch t_scratch;
  Scratch nested;
  Scratch& sc = t_scratch.busy ? nested : t_scratch;
  struct Lease {
    Scratch& s;
    ~Lease() {
      s.ins.clear();
      s.busy = false;
    }
  } lease{sc};
  sc.busy = true;
  if (filled == nullptr) ops::fill_node_context(g, n, &schema, sc.ctx);
  const ops::NodeContext& ctx = filled != nullptr ? *filled : sc.ctx;
  FRAME_RETURN_IF_ERROR(k->supports(ctx));
  sc.ins.assign(n.inputs.size(), Tensor());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (n.inputs[i] != ir::kNoValue) sc.ins[i] = *g.value(n.inputs[i]).constant;
  }
  FRAME_ASSIGN_OR_RETURN(outs, k->run_once(ctx, sc.ins, types));
  return Status();
}

}  // namespace

EagerFoldScope::EagerFoldScope(size_t limit) : saved_(t_fold_bytes) {
  t_fold_bytes = std::max(limit, kImportFoldBytes + 1);
}
EagerFoldScope::~EagerFoldScope() { t_fold_bytes = saved_; }

namespace {

thread_local int t_decomposition_depth = 0;

// An eager fold (EagerFoldScope) of a node whose cpu kernel declines it in favour of its
// decomposition (an `if` whose condition is a constant: the If schema inlines the chosen branch,
// ARCH-021): the decomposition's nodes take its place and are folded in turn, so a stage run by
// folding (ADR 0008 decision 6) may hold an If. Returns the node's outputs, constants under
// their own names. Errors: the decomposition's, or a node of it that does not fold.
Result<std::vector<ir::ValueId>> fold_by_decomposition(ir::Graph& g, ir::NodeId id,
                                                       const ops::OpSchema& schema) {
  if (t_decomposition_depth > 16) {
    return invalid_argument("node '{}' ({}): decompositions nested deeper than 16", g.node(id).name,
                            g.node(id).op);
  }
  ++t_decomposition_depth;
  struct Leave {
    ~Leave() { --t_decomposition_depth; }
  } leave;
  const ir::Node n = g.node(id);  // a copy: adding nodes may move the node storage
  FRAME_ASSIGN_OR_RETURN(ir::Graph m, schema.decompose_fn()(ops::make_node_context(g, n, &schema)));
  std::vector<ir::ValueId> vmap(m.num_values(), ir::kNoValue);
  for (size_t k = 0, i = 0; i < n.inputs.size() && k < m.inputs().size(); ++i) {
    if (n.inputs[i] != ir::kNoValue) vmap[static_cast<size_t>(m.inputs()[k++])] = n.inputs[i];
  }
  for (size_t v = 0; v < m.num_values(); ++v) {
    const ir::Value& val = m.value(static_cast<ir::ValueId>(v));
    if (!val.is_constant() || val.is_graph_input || val.producer >= 0) continue;
    vmap[v] =
        g.add_constant(g.unique_value_name(fmt::format("{}/{}", n.name, val.name)), *val.constant);
  }
  std::vector<std::string> names;
  for (ir::ValueId v : n.outputs) names.push_back(g.value(v).name);
  g.remove_node(id);
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, m.topological_order());
  for (ir::NodeId mid : order) {
    const ir::Node& mn = m.node(mid);
    std::vector<ir::ValueId> inputs;
    for (ir::ValueId v : mn.inputs) {
      inputs.push_back(v == ir::kNoValue ? v : vmap[static_cast<size_t>(v)]);
    }
    FRAME_ASSIGN_OR_RETURN(
        ir::NodeId nid,
        g.create_node(mn.op, g.unique_node_name(fmt::format("{}/{}", n.name, mn.name)),
                      std::move(inputs), static_cast<int>(mn.outputs.size()), mn.attrs));
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::ValueId> outs, infer_and_fold(g, nid));
    for (size_t i = 0; i < mn.outputs.size() && i < outs.size(); ++i) {
      vmap[static_cast<size_t>(mn.outputs[i])] = outs[i];
    }
  }
  std::vector<ir::ValueId> outputs;
  for (size_t i = 0; i < names.size() && i < m.outputs().size(); ++i) {
    const ir::ValueId v = vmap[static_cast<size_t>(m.outputs()[i])];
    if (v == ir::kNoValue || !g.value(v).is_constant()) {
      return internal_error("node '{}' ({}): output {} of its decomposition did not fold", n.name,
                            n.op, i);
    }
    outputs.push_back(g.add_constant(names[i], *g.value(v).constant));
  }
  return outputs;
}

}  // namespace

Result<std::vector<ir::ValueId>> infer_and_fold(ir::Graph& g, ir::NodeId id,
                                                const ops::OpSchema* schema) {
  const ir::Node& n = g.node(id);
  if (schema == nullptr) {
    schema = ops::OpRegistry::global().find(n.op);
    if (schema == nullptr) {
      return unimplemented("node '{}': op '{}' is not registered", n.name, n.op);
    }
    FRAME_RETURN_IF_ERROR(schema->check_node(n));
  }
  // A context of this thread's, refilled per node (no allocation once warm); a nested call
  // (a fold whose kernel imports) takes its own.
  thread_local ops::NodeContext t_ctx;
  thread_local bool t_ctx_busy = false;
  ops::NodeContext nested;
  const bool reuse = !t_ctx_busy;
  ops::NodeContext& ctx = reuse ? t_ctx : nested;
  ops::fill_node_context(g, n, schema, ctx);
  t_ctx_busy = true;
  Result<std::vector<ir::TensorType>> inferred = schema->infer(ctx);
  if (reuse) t_ctx_busy = false;
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, std::move(inferred));
  for (size_t i = 0; i < n.outputs.size() && i < types.size(); ++i) {
    g.value(n.outputs[i]).type = types[i];
  }
  std::vector<ir::ValueId> outputs = n.outputs;

  bool foldable = !schema->has_trait(ops::OpTrait::kHasSideEffect);
  for (ir::ValueId v : n.inputs) {
    if (v != ir::kNoValue && !g.value(v).is_constant()) foldable = false;
  }
  size_t bytes = 0;
  for (const ir::TensorType& t : types) {
    Result<size_t> b = checked_nbytes(t.dtype, t.shape);
    if (!b.is_ok() || *b > t_fold_bytes - bytes) {
      // An eager node (EagerFoldScope) must fold: over its limit is an error, not a deferral.
      if (foldable && t_fold_bytes != kImportFoldBytes) {
        return make_error(StatusCode::kOutOfRange,
                          "node '{}' ({}): its outputs need {} bytes, over the limit of {} "
                          "(the smaller of max_tensor_bytes and max_memory_bytes)",
                          n.name, n.op,
                          b.is_ok() ? fmt::format("{}", bytes + *b) : std::string("2^64 or more"),
                          t_fold_bytes);
      }
      foldable = false;
      break;
    }
    bytes += *b;
  }
  if (!foldable) return outputs;
  std::vector<Tensor> values;
  // A kernel that rejects the values (e.g. an out-of-range index) reports it at run time;
  // an eager node (EagerFoldScope) has no later run: report it now.
  if (Status k = run_cpu_kernel(g, n, *schema, types, values); !k.is_ok()) {
    if (t_fold_bytes == kImportFoldBytes) return outputs;
    if (schema->decompose_fn() != nullptr && k.code() == StatusCode::kUnimplemented) {
      return fold_by_decomposition(g, id, *schema);
    }
    return k.with_prefix(fmt::format("node '{}' ({}): ", n.name, n.op));
  }
  std::vector<std::string> names;
  for (ir::ValueId v : outputs) names.push_back(g.value(v).name);
  g.remove_node(id);
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i] = g.add_constant(names[i], std::move(values[i]));
  }
  return outputs;
}

const ir::TensorType* NodeImporter::input_type(size_t i) const {
  const ir::ValueId v = input(i);
  if (v == ir::kNoValue) return nullptr;
  // A computed value's shape, and a shape-derived constant's, change with the input shapes.
  if (!g_.value(v).is_constant() || shape_derived(v)) shape_dependent_ = true;
  const auto& t = g_.value(v).type;
  return t ? &*t : nullptr;
}

const Tensor* NodeImporter::input_constant(size_t i) const {
  const ir::ValueId v = input(i);
  if (v == ir::kNoValue) return nullptr;
  if (shape_derived(v)) shape_dependent_ = true;  // the converter may branch on the value
  const auto& c = g_.value(v).constant;
  return c ? &*c : nullptr;
}

std::optional<ir::AttrValue> NodeImporter::take_attr(std::string_view n) {
  auto it = attrs_.find(std::string(n));
  if (it == attrs_.end()) return std::nullopt;
  ir::AttrValue v = std::move(it->second);
  attrs_.erase(it);
  return v;
}

ir::ValueId NodeImporter::constant(Tensor t, std::string_view suffix) {
  return g_.add_constant(g_.unique_value_name(fmt::format("{}/{}", name_, suffix)), std::move(t));
}

Result<ir::NodeId> NodeImporter::create(std::string_view op, std::string name,
                                        std::vector<ir::ValueId> in, int num_outputs,
                                        ir::AttrMap attrs, std::vector<std::string> outs) {
  Result<ir::NodeId> id = g_.create_node(op, std::move(name), std::move(in), num_outputs,
                                         std::move(attrs), std::move(outs));
  if (!id.is_ok()) return error("{}", id.status().message());
  return id;
}

std::string NodeImporter::fresh_node_name() {
  // ONNX node names are kept when unique; duplicates and empty names get a suffix.
  return g_.find_node(name_) < 0 ? name_ : g_.unique_node_name(name_);
}

Status NodeImporter::emit(std::string_view op, std::vector<ir::ValueId> inputs, ir::AttrMap attrs) {
  // Trailing omitted optional inputs are dropped so arity checks see the real count.
  while (!inputs.empty() && inputs.back() == ir::kNoValue) inputs.pop_back();
  FRAME_ASSIGN_OR_RETURN(ir::NodeId id,
                         create(op, fresh_node_name(), std::move(inputs),
                                static_cast<int>(outputs_.size()), std::move(attrs), outputs_));
  Result<std::vector<ir::ValueId>> r = infer_and_fold(g_, id);
  if (!r.is_ok() && !keep_untyped_) return error("{}", r.status().message());
  return Status();
}

Result<std::vector<ir::ValueId>> NodeImporter::emit_tmp(std::string_view op,
                                                        std::vector<ir::ValueId> inputs,
                                                        ir::AttrMap attrs, int num_outputs) {
  while (!inputs.empty() && inputs.back() == ir::kNoValue) inputs.pop_back();
  const std::string node_name = g_.unique_node_name(fmt::format("{}/{}", name_, op));
  std::vector<std::string> outs;
  for (int i = 0; i < num_outputs; ++i) {
    outs.push_back(g_.unique_value_name(fmt::format("{}:{}", node_name, i)));
  }
  FRAME_ASSIGN_OR_RETURN(ir::NodeId id, create(op, node_name, std::move(inputs), num_outputs,
                                               std::move(attrs), std::move(outs)));
  Result<std::vector<ir::ValueId>> r = infer_and_fold(g_, id);
  if (!r.is_ok() && keep_untyped_) return g_.node(id).outputs;
  if (!r.is_ok()) return error("{}", r.status().message());
  return r;
}

Status NodeImporter::bind_output(size_t i, ir::ValueId v) {
  if (i >= outputs_.size()) return Status();
  const ir::Value& val = g_.value(v);
  if (val.is_constant()) {
    Tensor t = *val.constant;
    g_.add_constant(outputs_[i], std::move(t));
    return Status();
  }
  FRAME_ASSIGN_OR_RETURN(ir::NodeId id,
                         create("identity", fresh_node_name(), {v}, 1, {}, {outputs_[i]}));
  Result<std::vector<ir::ValueId>> r = infer_and_fold(g_, id);
  if (!r.is_ok() && !keep_untyped_) return error("{}", r.status().message());
  return Status();
}

Result<std::shared_ptr<ir::Graph>> NodeImporter::import_body(
    std::string_view attr, const std::vector<ir::TensorType>& formal_types,
    std::vector<ir::ValueId>& captures, const std::vector<std::optional<Tensor>>& formal_values) {
  shape_dependent_ = true;  // a body is imported with its formal inputs' types
  for (const auto& a : proto_.attribute()) {
    if (a.name() != attr) continue;
    if (a.type() != ::onnx::AttributeProto::GRAPH || !a.has_g()) {
      return error("attribute '{}' must be a graph", attr);
    }
    if (bodies_ == nullptr) return error("attribute '{}': bodies cannot be imported here", attr);
    Result<std::shared_ptr<ir::Graph>> b =
        bodies_->import_body(a.g(), formal_types, captures, formal_values);
    if (!b.is_ok()) return b.status().with_prefix(error("body '{}': ", attr).message());
    return b;
  }
  return error("attribute '{}' (graph) is required", attr);
}

void NodeImporter::add_capture_inputs(ir::Graph& body, const std::vector<ir::ValueId>& captures,
                                      size_t from) const {
  for (size_t i = from; i < captures.size(); ++i) {
    const ir::Value& v = g_.value(captures[i]);
    std::string name =
        body.find_value(v.name) == ir::kNoValue ? v.name : body.unique_value_name(v.name);
    body.add_input(std::move(name), v.type.value_or(ir::TensorType{}));
  }
}

std::string canonical_domain(std::string_view domain) {
  return domain == "ai.onnx" ? std::string() : std::string(domain);
}

std::map<std::string, int> opset_versions(const ::onnx::ModelProto& model) {
  std::map<std::string, int> out;
  for (const auto& o : model.opset_import()) {
    out[canonical_domain(o.domain())] =
        static_cast<int>(std::clamp<int64_t>(o.version(), 0, INT_MAX));
  }
  if (model.opset_import_size() == 0) out[""] = 1;
  return out;
}

namespace {

bool is_default_domain(std::string_view d) { return d.empty() || d == "ai.onnx"; }

// Op of the stand-in a structure-only load (LoadOptions::keep_untyped) leaves for a node its
// converter cannot take; no schema, so value paths pass through it (shape_determining.h).
constexpr std::string_view kUnconvertedOp = "onnx_unconverted";

// Converts one ModelProto (or, with a parent, one GRAPH attribute of it); one instance per load
// and per body.
class Importer final : public BodyImporter {
 public:
  Importer(const ::onnx::ModelProto& m, const LoadOptions& o, std::string dir,
           const std::map<std::string, Tensor>* initializers = nullptr, ImportMemo* memo = nullptr)
      : model_(m),
        opts_(o),
        dir_(std::move(dir)),
        initializers_(initializers),
        memo_(memo),
        external_(std::make_shared<ExternalData>(dir_)),
        constant_bytes_(std::make_shared<size_t>(0)) {}

  // A body sees every enclosing scope (ONNX IR "Scoping"): a name it does not define is looked
  // up outward and captured (explicit body input + node input, so the enclosing graph's passes
  // see the dependence); enclosing constants are copied in instead.
  Result<std::shared_ptr<ir::Graph>> import_body(
      const ::onnx::GraphProto& gp, const std::vector<ir::TensorType>& formal_types,
      std::vector<ir::ValueId>& captures,
      const std::vector<std::optional<Tensor>>& formal_values) override {
    // Bounded nesting: a crafted model must not exhaust the stack (the loader never crashes).
    if (depth_ >= opts_.max_nesting_depth) {
      return invalid_argument("body '{}' is nested deeper than {} levels (max_nesting_depth)",
                              gp.name(), opts_.max_nesting_depth);
    }
    Importer child(model_, opts_, dir_);
    child.external_ = external_;
    child.constant_bytes_ = constant_bytes_;
    child.parent_ = this;
    child.depth_ = depth_ + 1;
    child.opsets_ = opsets_;
    child.g_.set_name(gp.name().empty() ? "body" : gp.name());
    if (gp.input_size() != static_cast<int>(formal_types.size())) {
      return invalid_argument("body '{}' declares {} inputs, the node supplies {}", child.g_.name(),
                              gp.input_size(), formal_types.size());
    }
    FRAME_RETURN_IF_ERROR(child.add_initializers(gp));
    for (int i = 0; i < gp.input_size(); ++i) {
      if (child.g_.find_value(gp.input(i).name()) != ir::kNoValue) {
        return invalid_argument("body '{}': input '{}' is also an initializer", child.g_.name(),
                                gp.input(i).name());
      }
      const auto k = static_cast<size_t>(i);
      if (k < formal_values.size() && formal_values[k]) {
        child.g_.add_constant(gp.input(i).name(), *formal_values[k]);
      } else {
        child.g_.add_input(gp.input(i).name(), formal_types[k]);
      }
    }
    for (ir::ValueId v : captures) {
      const ir::Value& val = g_.value(v);
      child.g_.add_input(val.name, val.type.value_or(ir::TensorType{}));
    }
    child.captures_ = captures;
    FRAME_ASSIGN_OR_RETURN(std::vector<int> order, child.order_nodes(gp));
    for (int i : order) FRAME_RETURN_IF_ERROR(child.import_node(gp.node(i)));
    for (const auto& o : gp.output()) {
      const ir::ValueId v = child.lookup(o.name());
      if (v == ir::kNoValue) {
        return invalid_argument("body '{}': output '{}' is not defined in any scope",
                                child.g_.name(), o.name());
      }
      child.g_.add_output(v);
    }
    child.g_.compact();
    captures = child.captures_;
    return std::make_shared<ir::Graph>(std::move(child.g_));
  }

  Result<ir::Graph> run() {
    if (!model_.has_graph()) return invalid_argument("model has no graph");
    const ::onnx::GraphProto& gp = model_.graph();
    g_.set_name(gp.name().empty() ? "main" : gp.name());
    FRAME_RETURN_IF_ERROR(read_opsets());
    // A memoized order means an earlier import of this model passed check_supported too.
    std::shared_ptr<const std::vector<int>> order;
    if (memo_ != nullptr) {
      std::lock_guard lock(memo_->mu);
      order = memo_->order;
    }
    if (order == nullptr) FRAME_RETURN_IF_ERROR(check_supported(gp));
    FRAME_RETURN_IF_ERROR(add_initializers(gp));
    FRAME_RETURN_IF_ERROR(add_inputs(gp));
    if (order == nullptr) {
      FRAME_ASSIGN_OR_RETURN(std::vector<int> computed, order_nodes(gp));
      order = std::make_shared<const std::vector<int>>(std::move(computed));
      if (memo_ != nullptr) {
        std::lock_guard lock(memo_->mu);
        memo_->order = order;
      }
    }
    // The first import of a session's model is kept for re-typing (ADR 0007 stage B). Input
    // values bound by the session (shape-determining inputs, ADR 0006) are shape-derived
    // constants: what reads them is replayed or converted again, like shape arithmetic.
    std::unique_ptr<GenericImport> generic;
    if (memo_ != nullptr && !opts_.keep_untyped) {
      std::lock_guard lock(memo_->mu);
      if (memo_->generic == nullptr) generic = std::make_unique<GenericImport>();
    }
    if (generic) {
      for (const auto& [name, value] : opts_.constant_inputs) {
        const ir::ValueId v = g_.find_value(name);
        if (v == ir::kNoValue) continue;
        generic->bound.emplace_back(name, v);
        shape_derived_.resize(g_.num_values(), 0);
        shape_derived_[static_cast<size_t>(v)] = 1;
      }
    }
    if (memo_ != nullptr) memo_->full.fetch_add(1, std::memory_order_relaxed);
    for (int i : *order) {
      // The partial graph ends at the failing node: name the inputs that reach it (ADR 0006).
      Status s = generic ? import_recorded(gp, i, *generic) : import_node(gp.node(i));
      if (!s.is_ok()) return passes::with_shape_determining_hint(g_, s);
    }
    if (generic) {
      generic->graph = g_;
      for (const auto& [name, dims] : opts_.input_shapes) generic->shape_keys.insert(name);
      for (ir::ValueId v : g_.inputs()) generic->input_ranks.push_back(g_.value(v).type->rank());
      std::lock_guard lock(memo_->mu);
      if (memo_->generic == nullptr) memo_->generic = std::move(generic);
    }
    return finish(gp);
  }

  // ADR 0007 stage B: the graph at this import's input shapes from `t`, a generic import of
  // the same model at other shapes of the same ranks (GenericImport says how). Errors: any
  // (this Importer is then spent): the caller imports in full instead, which reports the
  // model's own error if there is one.
  // Storage retype() copies the template into: assigning over a graph of the same model
  // reuses its nodes, values, strings and maps instead of allocating them again.
  void adopt_storage(ir::Graph&& g) { g_ = std::move(g); }
  // Gives the storage back (after a failed retype_in_place).
  ir::Graph release_storage() { return std::move(g_); }

  // Whether this import's inputs are the ones the generic import `t` was made for (the same
  // shape keys and bound names). Errors: kFailedPrecondition where not.
  Status check_generic_inputs(const GenericImport& t) const {
    bool same_keys = opts_.input_shapes.size() == t.shape_keys.size();
    for (const auto& [name, dims] : opts_.input_shapes)
      same_keys = same_keys && t.shape_keys.count(name) > 0;
    bool same_bound = opts_.constant_inputs.size() == t.bound.size();
    for (const auto& [name, v] : t.bound)
      same_bound = same_bound && opts_.constant_inputs.count(name);
    if (!same_keys || !same_bound || opts_.keep_untyped) {
      return make_error(StatusCode::kFailedPrecondition,
                        "the generic import was made for other inputs");
    }
    return Status();
  }

  // Sets the bound values and the graph inputs' types of this import in g_ (ids of `t`).
  Status bind_inputs(const GenericImport& t) {
    const ::onnx::GraphProto& gp = model_.graph();
    std::unordered_map<std::string_view, const ::onnx::ValueInfoProto*> declared;
    for (const auto& in : gp.input()) declared.emplace(in.name(), &in);
    // This import's bound values replace the template's (same value ids: what reads them is
    // replayed or converted again below).
    for (const auto& [name, v] : t.bound) {
      auto it = declared.find(name);
      if (it == declared.end()) {
        return make_error(StatusCode::kFailedPrecondition, "input '{}' is not declared", name);
      }
      const Tensor& value = opts_.constant_inputs.at(name);
      FRAME_ASSIGN_OR_RETURN(DTypeCode dt,
                             dtype_from_onnx(it->second->type().tensor_type().elem_type()));
      FRAME_RETURN_IF_ERROR(
          check_constant_input(name, dt, it->second->type().tensor_type(), value));
      ir::Value& c = g_.value(v);
      c.type = ir::TensorType{value.dtype(), value.shape()};
      c.constant = value;
      if (!changed_.empty()) changed_[static_cast<size_t>(v)] = 1;
    }
    for (size_t k = 0; k < g_.inputs().size(); ++k) {
      ir::Value& in = g_.value(g_.inputs()[k]);
      auto it = declared.find(in.name);
      if (it == declared.end())
        return make_error(StatusCode::kFailedPrecondition, "input '{}' is not declared", in.name);
      FRAME_ASSIGN_OR_RETURN(Shape shape, input_shape(in.name, it->second->type().tensor_type()));
      if (shape.size() != t.input_ranks[k])
        return make_error(StatusCode::kFailedPrecondition, "another rank");
      FRAME_RETURN_IF_ERROR(checked_nbytes(in.type->dtype, shape).status());
      in.type->shape = std::move(shape);
    }
    return Status();
  }

  Result<ir::Graph> retype(const GenericImport& t) {
    const ::onnx::GraphProto& gp = model_.graph();
    FRAME_RETURN_IF_ERROR(check_generic_inputs(t));
    FRAME_RETURN_IF_ERROR(read_opsets());
    g_ = t.graph;
    FRAME_RETURN_IF_ERROR(bind_inputs(t));
    // Old value id -> its replacement, for the values re-converted or folded at these shapes.
    std::vector<ir::ValueId> remap(t.graph.num_values());
    for (size_t v = 0; v < remap.size(); ++v) remap[v] = static_cast<ir::ValueId>(v);
    std::vector<Tensor> values;
    ops::NodeContext fold_ctx;  // refilled per folded step (fill_node_context)
    for (const GenericImport::Record& r : t.records) {
      if (r.kind == GenericImport::Kind::kReconvert) {
        FRAME_RETURN_IF_ERROR(reconvert(gp.node(r.node), r, remap));
        continue;
      }
      if (r.kind == GenericImport::Kind::kShapeOf) {
        FRAME_RETURN_IF_ERROR(shape_of(r, remap[static_cast<size_t>(r.shape_input)]));
        continue;
      }
      for (const GenericImport::Step& step : r.steps) {
        ir::Node& n = g_.node(step.node);
        for (ir::ValueId& v : n.inputs) {
          if (v != ir::kNoValue) v = remap[static_cast<size_t>(v)];
        }
        if (step.folded) {
          FRAME_RETURN_IF_ERROR(refold(step, fold_ctx, values));
          continue;
        }
        const std::vector<ir::ValueId> before = n.outputs;
        FRAME_ASSIGN_OR_RETURN(std::vector<ir::ValueId> after,
                               infer_and_fold(g_, step.node, step.schema));
        for (size_t k = 0; k < before.size() && k < after.size(); ++k) {
          remap[static_cast<size_t>(before[k])] = after[k];
        }
      }
    }
    return finish(gp);
  }

  // ADR 0007 stage B, in place: `g_` (adopt_storage) holds a graph an earlier re-typing of
  // `t` gave, since changed only by removing nodes and appending nodes and values (the
  // interpreted tier's fusions); it is re-typed at this import's shapes keeping those changes.
  // Only what a live node or a record reads is typed again: a removed node's types only where
  // a Shape or a live node still reads them, appended nodes from their inputs. No copy of the
  // template and no fusion afterwards: a BERT-style encoder's re-typing and fusion took 87 us
  // per run instead of 136 (docs/adr/0007-first-seen-shapes.md). Outputs stay as the graph has them
  // (rewired by the fusions). Errors: kFailedPrecondition where `g_` is not such a graph of `t` or
  // a node folds at these shapes where it did not (the caller re-types in full; `g_` is then
  // spent), and the inference's errors.
  Result<ir::Graph> retype_in_place(const GenericImport& t) {
    FRAME_RETURN_IF_ERROR(check_generic_inputs(t));
    if (t.reconverted > 0 || opts_.compact) {
      return make_error(StatusCode::kFailedPrecondition, "not re-typed in place");
    }
    if (!derived_from(t)) {
      return make_error(StatusCode::kFailedPrecondition, "the graph is not one of this model's");
    }
    // g_ holds every constant at the shapes it was last re-typed for: what changes from here
    // on is marked, and folded steps reading nothing marked are not computed again.
    changed_.assign(g_.num_values(), 0);
    FRAME_RETURN_IF_ERROR(bind_inputs(t));
    template_nodes_ = t.graph.num_node_slots();
    typed_.assign(g_.num_node_slots(), 0);
    std::vector<Tensor> values;
    ops::NodeContext fold_ctx;  // refilled per folded step (fill_node_context)
    for (const GenericImport::Record& r : t.records) {
      if (r.kind == GenericImport::Kind::kShapeOf) {
        FRAME_RETURN_IF_ERROR(type_producer(r.shape_input));
        FRAME_RETURN_IF_ERROR(shape_of(r, r.shape_input));
        continue;
      }
      for (const GenericImport::Step& step : r.steps) {
        if (step.folded) {
          FRAME_RETURN_IF_ERROR(refold(step, fold_ctx, values));
          continue;
        }
        const ir::Node& n = g_.node(step.node);
        if (n.dead) continue;  // removed by a fusion: typed only where read (type_producer)
        for (ir::ValueId v : n.inputs) FRAME_RETURN_IF_ERROR(type_producer(v));
        const std::vector<ir::ValueId> before = n.outputs;
        FRAME_ASSIGN_OR_RETURN(std::vector<ir::ValueId> after,
                               infer_and_fold(g_, step.node, step.schema));
        if (after != before) {
          return make_error(StatusCode::kFailedPrecondition, "node '{}' folds at these shapes",
                            g_.node(step.node).name);
        }
        typed_[static_cast<size_t>(step.node)] = 1;
      }
    }
    for (size_t id = template_nodes_; id < g_.num_node_slots(); ++id) {
      if (!g_.node(static_cast<ir::NodeId>(id)).dead) {
        FRAME_RETURN_IF_ERROR(type_node(static_cast<ir::NodeId>(id)));
      }
    }
    return std::move(g_);
  }

 private:
  // Whether g_ is `t`'s graph re-typed, then changed only by removed and appended nodes: the
  // same inputs, the template's values and nodes under the same ids (a removed node dead, a
  // kept node reading the template's values or appended nodes' outputs), and every value past
  // the template's made by an appended node. A graph re-typed in full where a node folded at
  // its shapes (new constants, remapped reads) or imported in full at other ids is not.
  bool derived_from(const GenericImport& t) const {
    const ir::Graph& tg = t.graph;
    const size_t nodes = tg.num_node_slots(), num_values = tg.num_values();
    if (g_.num_node_slots() < nodes || g_.num_values() < num_values || g_.inputs() != tg.inputs()) {
      return false;
    }
    for (size_t v = 0; v < g_.num_values(); ++v) {
      const ir::Value& b = g_.value(static_cast<ir::ValueId>(v));
      if (v >= num_values) {
        if (b.producer < static_cast<ir::NodeId>(nodes)) return false;
        continue;
      }
      const ir::Value& a = tg.value(static_cast<ir::ValueId>(v));
      if (a.producer != b.producer || a.is_constant() != b.is_constant() ||
          a.is_graph_input != b.is_graph_input) {
        return false;
      }
    }
    for (size_t i = 0; i < nodes; ++i) {
      const ir::Node& a = tg.node(static_cast<ir::NodeId>(i));
      const ir::Node& b = g_.node(static_cast<ir::NodeId>(i));
      if (a.op != b.op || a.outputs != b.outputs || a.inputs.size() != b.inputs.size() ||
          (a.dead && !b.dead)) {
        return false;
      }
      if (b.dead) continue;
      for (size_t k = 0; k < a.inputs.size(); ++k) {
        const ir::ValueId v = b.inputs[k];
        if (v != a.inputs[k] && (v == ir::kNoValue || static_cast<size_t>(v) < num_values)) {
          return false;
        }
      }
    }
    return true;
  }

  // Types, at this import's shapes, the node that produces `v` where retype_in_place's walk
  // does not: an appended node, or a removed one (dead here, live in the template).
  Status type_producer(ir::ValueId v) {
    if (v == ir::kNoValue) return Status();
    const ir::NodeId p = g_.value(v).producer;
    if (p < 0 || typed_[static_cast<size_t>(p)] != 0) return Status();
    if (static_cast<size_t>(p) < template_nodes_ && !g_.node(p).dead) return Status();
    return type_node(p);
  }

  // Infers node `id`'s output types (its producers first, type_producer); no folding. Errors:
  // kFailedPrecondition where it reads a live node the walk has not re-typed yet (a fusion
  // whose node reads past the node it replaced: re-typed in full instead), and inference's.
  Status type_node(ir::NodeId id) {
    if (typed_[static_cast<size_t>(id)] != 0) return Status();
    typed_[static_cast<size_t>(id)] = 1;
    for (ir::ValueId v : g_.node(id).inputs) {
      FRAME_RETURN_IF_ERROR(type_producer(v));
      const ir::NodeId p = v == ir::kNoValue ? -1 : g_.value(v).producer;
      if (p >= 0 && typed_[static_cast<size_t>(p)] == 0) {
        return make_error(StatusCode::kFailedPrecondition,
                          "node '{}' reads '{}' before it is "
                          "re-typed",
                          g_.node(id).name, g_.node(p).name);
      }
    }
    const ir::Node& n = g_.node(id);
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    if (schema == nullptr) return not_found("node '{}': op '{}' is not registered", n.name, n.op);
    ops::fill_node_context(g_, n, schema, infer_ctx_);
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, schema->infer(infer_ctx_));
    for (size_t k = 0; k < n.outputs.size() && k < types.size(); ++k) {
      if (n.outputs[k] != ir::kNoValue) g_.value(n.outputs[k]).type = std::move(types[k]);
    }
    return Status();
  }

  // Computes a folded step of a re-typing again into the constants that hold its results (same
  // ids). Re-typing in place (changed_ set), a step whose inputs all hold what they held at the
  // last re-typing keeps its results (about half of a BERT-style encoder's shape arithmetic:
  // dims that are not the stream's, and what only they feed), and a result equal to the one
  // held keeps that tensor, so what reads it is not marked. Errors: kFailedPrecondition where
  // it no longer folds at these shapes (an input is not constant, or its outputs are over the
  // import's fold limit), and the kernel's.
  Status refold(const GenericImport::Step& step, ops::NodeContext& ctx,
                std::vector<Tensor>& values) {
    const ir::Node& n = g_.node(step.node);
    const ops::OpSchema* schema = step.schema;
    if (schema == nullptr) return internal_error("op '{}' vanished", n.op);
    const bool in_place = !changed_.empty();
    if (in_place && std::none_of(n.inputs.begin(), n.inputs.end(), [&](ir::ValueId v) {
          return v != ir::kNoValue && changed_[static_cast<size_t>(v)] != 0;
        })) {
      return Status();
    }
    for (ir::ValueId v : n.inputs) {
      if (v != ir::kNoValue && !g_.value(v).is_constant()) {
        return make_error(StatusCode::kFailedPrecondition, "node '{}' no longer folds", n.name);
      }
    }
    ops::fill_node_context(g_, n, schema, ctx);
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types, schema->infer(ctx));
    size_t bytes = 0;
    for (const ir::TensorType& type : types) {
      FRAME_ASSIGN_OR_RETURN(size_t b, checked_nbytes(type.dtype, type.shape));
      bytes += b;
    }
    if (bytes > kImportFoldBytes || types.size() != step.results.size()) {
      return make_error(StatusCode::kFailedPrecondition, "node '{}' no longer folds", n.name);
    }
    FRAME_RETURN_IF_ERROR(run_cpu_kernel(g_, n, *schema, types, values, step.cpu, &ctx));
    for (size_t k = 0; k < step.results.size(); ++k) {
      ir::Value& c = g_.value(step.results[k]);
      if (in_place) {
        if (same_constant(c, values[k])) continue;
        changed_[static_cast<size_t>(step.results[k])] = 1;
      }
      c.type = types[k];
      c.constant = std::move(values[k]);
    }
    return Status();
  }

  // Whether `v` is a constant holding exactly `t` (dtype, shape and bytes).
  static bool same_constant(const ir::Value& v, const Tensor& t) {
    if (!v.constant || v.constant->dtype() != t.dtype() || v.constant->shape() != t.shape()) {
      return false;
    }
    const size_t bytes = t.nbytes();
    return bytes == 0 || std::memcmp(v.constant->raw_data(), t.raw_data(), bytes) == 0;
  }

  // Converts `n` again (a kReconvert record `r` of GenericImport) on the re-typed graph: the old
  // values give up their names to the new ones, and `remap` sends the old outputs to the new.
  Status reconvert(const ::onnx::NodeProto& n, const GenericImport::Record& r,
                   std::vector<ir::ValueId>& remap) {
    for (const GenericImport::Step& step : r.steps) g_.remove_node(step.node);
    for (ir::ValueId v : r.created) {
      const ir::Value& val = g_.value(v);
      if (val.is_constant() && g_.find_value(val.name) == v) g_.rename_value(v, "retyped~");
    }
    FRAME_RETURN_IF_ERROR(import_node(n));
    for (size_t k = 0; k < r.outputs.size(); ++k) {
      if (r.outputs[k] == ir::kNoValue) continue;
      const std::string& name = n.output(static_cast<int>(k));
      const ir::ValueId now = g_.find_value(name);
      if (now == ir::kNoValue) return internal_error("output '{}' was not converted again", name);
      remap[static_cast<size_t>(r.outputs[k])] = now;
    }
    return Status();
  }

  // Computes the constants of a kShapeOf record `r` again from the type of `in` (its input in
  // g_) at this import's shapes (what convert_shape and convert_size make), in the values that
  // held them.
  Status shape_of(const GenericImport::Record& r, ir::ValueId in) {
    const ir::Value& v = g_.value(in);
    if (!v.type) return make_error(StatusCode::kFailedPrecondition, "'{}' has no type", v.name);
    const Shape& dims = v.type->shape;
    const Tensor t = r.size ? Tensor::scalar<int64_t>(numel_of(dims)) : [&] {
      std::vector<int64_t> d = shape_slice(dims, r.start, r.end);
      const auto len = static_cast<int64_t>(d.size());
      return Tensor::from_vector<int64_t>({len}, std::move(d));
    }();
    for (ir::ValueId c : r.created) {
      ir::Value& val = g_.value(c);
      if (!val.is_constant()) {
        return make_error(StatusCode::kFailedPrecondition, "'{}' is not a constant", val.name);
      }
      if (!changed_.empty()) {  // in place: an unchanged Shape leaves what reads it unmarked
        if (same_constant(val, t)) continue;
        changed_[static_cast<size_t>(c)] = 1;
      }
      val.type = ir::TensorType{DTypeCode::kInt64, t.shape()};
      val.constant = t;
    }
    return Status();
  }

  bool is_shape_derived(ir::ValueId v) const {
    return v != ir::kNoValue && static_cast<size_t>(v) < shape_derived_.size() &&
           shape_derived_[static_cast<size_t>(v)] != 0;
  }

  // Imports node `i` of the main graph and records what re-typing needs (GenericImport).
  Status import_recorded(const ::onnx::GraphProto& gp, int i, GenericImport& t) {
    const ::onnx::NodeProto& n = gp.node(i);
    const auto first_node = static_cast<ir::NodeId>(g_.num_node_slots());
    const auto first_value = static_cast<ir::ValueId>(g_.num_values());
    GenericImport::Record r;
    r.node = i;
    for (const std::string& in : n.input()) {
      if (!in.empty() && is_shape_derived(g_.find_value(in))) r.kind = GenericImport::Kind::kReplay;
    }
    bool dependent = false;
    FRAME_RETURN_IF_ERROR(import_node(n, &dependent));
    if (dependent) r.kind = GenericImport::Kind::kReconvert;
    const bool clean = r.kind == GenericImport::Kind::kClean;
    for (auto id = first_node; static_cast<size_t>(id) < g_.num_node_slots(); ++id) {
      const ir::Node& node = g_.node(id);
      if (clean && node.dead) continue;  // folded from constants no shape changes
      GenericImport::Step step{
          id,
          node.dead,
          {},
          ops::OpRegistry::global().find(node.op),
          node.dead ? ops::KernelRegistry::global().find(node.op, "cpu") : nullptr};
      if (node.dead) {
        // infer_and_fold put constants of the same names in place of the outputs.
        for (ir::ValueId v : node.outputs) {
          const ir::ValueId c = g_.find_value(g_.value(v).name);
          if (c == ir::kNoValue || !g_.value(c).is_constant()) {
            r.kind = GenericImport::Kind::kReconvert;  // not a plain fold: convert it again
            break;
          }
          step.results.push_back(c);
        }
      }
      r.steps.push_back(std::move(step));
    }
    shape_derived_.resize(g_.num_values(), 0);
    for (auto v = first_value; static_cast<size_t>(v) < g_.num_values(); ++v) {
      r.created.push_back(v);
      if (!clean && g_.value(v).is_constant()) shape_derived_[static_cast<size_t>(v)] = 1;
    }
    for (const std::string& o : n.output()) {
      r.outputs.push_back(o.empty() ? ir::kNoValue : g_.find_value(o));
    }
    // Shape and Size convert to constants of their input's dims and create no node: re-typing
    // recomputes those constants in place instead of converting the node again.
    const bool shape_op = n.op_type() == "Shape" || n.op_type() == "Size";
    const ir::ValueId shape_input = n.input_size() == 1 ? g_.find_value(n.input(0)) : ir::kNoValue;
    if (r.kind == GenericImport::Kind::kReconvert && shape_op && is_default_domain(n.domain()) &&
        r.steps.empty() && shape_input != ir::kNoValue && r.outputs.size() == 1 &&
        r.outputs[0] != ir::kNoValue) {
      r.kind = GenericImport::Kind::kShapeOf;
      r.shape_input = shape_input;
      r.size = n.op_type() == "Size";
      for (const ::onnx::AttributeProto& a : n.attribute()) {
        if (a.name() == "start") r.start = a.i();
        if (a.name() == "end") r.end = a.i();
      }
    }
    t.replayed += r.kind == GenericImport::Kind::kReplay ? 1 : 0;
    t.reconverted += r.kind == GenericImport::Kind::kReconvert ? 1 : 0;
    t.shapes_of += r.kind == GenericImport::Kind::kShapeOf ? 1 : 0;
    t.records.push_back(std::move(r));
    return Status();
  }

  // Graph outputs, compaction and the optional verification: the end of run() and retype().
  Result<ir::Graph> finish(const ::onnx::GraphProto& gp) {
    for (const auto& o : gp.output()) {
      const ir::ValueId v = g_.find_value(o.name());
      if (v == ir::kNoValue) {
        return invalid_argument(
            "graph output '{}' is not produced by any node, initializer or "
            "input",
            o.name());
      }
      g_.add_output(v);
    }
    if (gp.output_size() == 0) return invalid_argument("graph '{}' has no outputs", g_.name());
    if (!opts_.compact) return std::move(g_);
    g_.compact();
    if (opts_.verify && !opts_.keep_untyped) {
      ir::OpQuery q = ops::make_op_query();
      FRAME_RETURN_IF_ERROR(g_.verify(q));
    }
    return std::move(g_);
  }

  // The value named `name` in this scope, else captured from an enclosing one, else kNoValue.
  ir::ValueId lookup(const std::string& name) {
    const ir::ValueId v = g_.find_value(name);
    if (v != ir::kNoValue || parent_ == nullptr) return v;
    const ir::ValueId outer = parent_->lookup(name);
    if (outer == ir::kNoValue) return ir::kNoValue;
    const ir::Value& ov = parent_->g_.value(outer);
    if (ov.constant) return g_.add_constant(name, *ov.constant);
    const ir::ValueId in = g_.add_input(name, ov.type.value_or(ir::TensorType{}));
    captures_.push_back(outer);
    return in;
  }
  // True if `name` is defined in this scope or an enclosing one (no capture).
  bool visible(const std::string& name) const {
    return g_.find_value(name) != ir::kNoValue || (parent_ != nullptr && parent_->visible(name));
  }

  int opset_of(std::string_view domain) const {
    auto it = opsets_.find(canonical_domain(domain));
    return it == opsets_.end() ? 0 : it->second;
  }

  Status read_opsets() {
    opsets_ = opset_versions(model_);
    // Newer opsets may change an op's meaning under the same name: refuse rather than guess.
    if (opset_of("") > max_supported_opset()) {
      return unimplemented(
          "the model imports ai.onnx opset {}; frame's op table covers opsets up "
          "to {}",
          opset_of(""), max_supported_opset());
    }
    return Status();
  }

  // Walks the graph and every body once before any conversion: bodies nested deeper than
  // kMaxBodyDepth and unsupported ops at any depth are reported at load, before any
  // conversion or analysis pass does work on the model.
  Status check_supported(const ::onnx::GraphProto& gp) {
    std::vector<std::string> missing;
    std::set<std::string> seen;
    size_t nodes = 0;
    FRAME_RETURN_IF_ERROR(collect_unsupported(gp, 0, "", "", "", missing, seen, nodes));
    if (missing.empty()) return Status();
    std::string list;
    for (const std::string& m : missing) list += "\n  " + m;
    return unimplemented("{} node(s) use {} op type(s) frame does not support:{}", missing.size(),
                         seen.size(), list);
  }

  // `where`: the bodies enclosing `gp`, outermost first; `outer` and `inner`: the outermost
  // and the innermost one alone.
  Status collect_unsupported(const ::onnx::GraphProto& gp, int depth, const std::string& where,
                             const std::string& outer, const std::string& inner,
                             std::vector<std::string>& missing, std::set<std::string>& seen,
                             size_t& nodes) {
    if (depth > opts_.max_nesting_depth) {
      // The full path would repeat one prefix per level: name the outermost body only.
      const std::string path =
          depth <= 2 ? where : fmt::format("{}... ({} bodies deep) ... {}", outer, depth, inner);
      return invalid_argument("{}body '{}' is nested deeper than {} levels (max_nesting_depth)",
                              path, gp.name(), opts_.max_nesting_depth);
    }
    nodes += static_cast<size_t>(gp.node_size());
    if (nodes > opts_.max_nodes) {
      return invalid_argument("{}graph '{}': the model has more than {} nodes (max_nodes)", where,
                              gp.name(), opts_.max_nodes);
    }
    for (int i = 0; i < gp.node_size(); ++i) {
      const auto& n = gp.node(i);
      const std::string node = n.name().empty() ? fmt::format("#{}", i) : n.name();
      for (const auto& a : n.attribute()) {
        const std::string entry =
            fmt::format("body '{}' of node '{}' ({}): ", a.name(), node, n.op_type());
        const std::string in = where + entry;
        const std::string& next_outer = depth == 0 ? in : outer;
        if (a.has_g()) {
          FRAME_RETURN_IF_ERROR(
              collect_unsupported(a.g(), depth + 1, in, next_outer, entry, missing, seen, nodes));
        }
        for (const auto& g : a.graphs()) {
          FRAME_RETURN_IF_ERROR(
              collect_unsupported(g, depth + 1, in, next_outer, entry, missing, seen, nodes));
        }
      }
      const int opset = opset_of(n.domain());
      if (find_op(canonical_domain(n.domain()), n.op_type(), opset)) continue;
      std::string what =
          fmt::format("{}{}::{} (opset {}{}) at node '{}'", where,
                      is_default_domain(n.domain()) ? "ai.onnx" : n.domain(), n.op_type(), opset,
                      opset == 0 ? ", domain not imported" : "", node);
      missing.push_back(std::move(what));
      seen.insert(n.op_type());
    }
    return Status();
  }

  // Adds the bytes of constant tensor `t` to the model's total and refuses a total over
  // LoadLimits::max_initializer_bytes before the tensor is converted (docs/security.md). Bad
  // dims are left to tensor_from_proto, which names them.
  Status charge_constant(const ::onnx::TensorProto& t, const std::string& what) {
    Result<DTypeCode> dt = dtype_from_onnx(t.data_type());
    if (!dt.is_ok()) return Status();
    Result<size_t> nbytes = checked_nbytes(*dt, Shape(t.dims().begin(), t.dims().end()));
    if (!nbytes.is_ok()) return Status();
    size_t& total = *constant_bytes_;
    if (*nbytes > opts_.max_initializer_bytes - std::min(total, opts_.max_initializer_bytes)) {
      return make_error(StatusCode::kOutOfRange,
                        "{} ({} bytes) brings the model's initializers and constants to {} bytes, "
                        "over the limit of {} (max_initializer_bytes)",
                        what, *nbytes, total + *nbytes, opts_.max_initializer_bytes);
    }
    total += *nbytes;
    return Status();
  }

  Status add_initializers(const ::onnx::GraphProto& gp) {
    if (gp.sparse_initializer_size() > 0) {
      return unimplemented("sparse initializers are not supported ('{}')",
                           gp.sparse_initializer(0).values().name());
    }
    for (const auto& t : gp.initializer()) {
      if (t.name().empty()) return invalid_argument("an initializer has no name");
      if (g_.find_value(t.name()) != ir::kNoValue) {
        return invalid_argument("duplicate initializer '{}'", t.name());
      }
      // An initializer that is also a graph input is that input's default (ONNX IR spec,
      // "Graphs"): a shape or value given for the input overrides it (add_inputs makes it an
      // input or a bound constant).
      if (&gp == &model_.graph() &&
          (opts_.input_shapes.count(t.name()) > 0 || opts_.constant_inputs.count(t.name()) > 0)) {
        continue;
      }
      FRAME_RETURN_IF_ERROR(charge_constant(t, fmt::format("initializer '{}'", t.name())));
      // A session's re-import shares the main graph's tensors converted once at open
      // (ADR 0006); subgraph initializers are converted as usual.
      if (initializers_ != nullptr && &gp == &model_.graph()) {
        auto it = initializers_->find(t.name());
        if (it != initializers_->end()) {
          g_.add_constant(t.name(), it->second);
          continue;
        }
      }
      FRAME_ASSIGN_OR_RETURN(Tensor v, tensor_from_proto(t, *external_, opts_.max_tensor_bytes));
      g_.add_constant(t.name(), std::move(v));
    }
    return Status();
  }

  Status add_inputs(const ::onnx::GraphProto& gp) {
    // Names given for inputs the model lacks are reported first: usually a typo.
    std::set<std::string> names;
    std::string all;
    for (const auto& in : gp.input()) {
      names.insert(in.name());
      if (g_.find_value(in.name()) == ir::kNoValue) all += (all.empty() ? "" : ", ") + in.name();
    }
    std::vector<std::string> given;
    for (const auto& [name, dims] : opts_.input_shapes) given.push_back(name);
    for (const auto& [name, t] : opts_.constant_inputs) given.push_back(name);
    for (const std::string& name : given) {
      if (names.count(name) == 0) {
        return invalid_argument(
            "a shape or value was given for '{}', which is not a graph input "
            "(inputs: {})",
            name, all);
      }
    }
    for (const auto& in : gp.input()) {
      // Inputs that are also initializers are constants (ONNX IR: initializer as default).
      if (g_.find_value(in.name()) != ir::kNoValue) continue;
      if (!in.type().has_tensor_type()) {
        return unimplemented(
            "graph input '{}' is not a tensor (sequence, map and optional "
            "inputs are not supported)",
            in.name());
      }
      const auto& tt = in.type().tensor_type();
      Result<DTypeCode> dt = dtype_from_onnx(tt.elem_type());
      if (!dt.is_ok()) {
        return invalid_argument("graph input '{}': {}", in.name(), dt.status().message());
      }
      if (auto c = opts_.constant_inputs.find(in.name()); c != opts_.constant_inputs.end()) {
        FRAME_RETURN_IF_ERROR(check_constant_input(in.name(), *dt, tt, c->second));
        g_.add_constant(in.name(), c->second);
        continue;
      }
      FRAME_ASSIGN_OR_RETURN(Shape shape, input_shape(in.name(), tt));
      if (Result<size_t> b = checked_nbytes(*dt, shape); !b.is_ok()) {
        return invalid_argument("graph input '{}': shape {}: {}", in.name(), shape_to_string(shape),
                                b.status().message());
      }
      g_.add_input(in.name(), ir::TensorType{*dt, std::move(shape)});
    }
    return Status();
  }

  Status check_constant_input(const std::string& name, DTypeCode dt,
                              const ::onnx::TypeProto_Tensor& tt, const Tensor& t) {
    if (t.dtype() != dt) {
      return invalid_argument("graph input '{}': the bound constant is {}, the model declares {}",
                              name, dtype_name(t.dtype()), dtype_name(dt));
    }
    if (!tt.has_shape()) return Status();
    const auto& dims = tt.shape().dim();
    bool ok = dims.size() == static_cast<int>(t.shape().size());
    for (int i = 0; ok && i < dims.size(); ++i) {
      ok = !dims[i].has_dim_value() || dims[i].dim_value() == t.shape()[i];
    }
    if (!ok) {
      return invalid_argument(
          "graph input '{}': the bound constant has shape {}, which the "
          "model's declared shape does not allow",
          name, shape_to_string(t.shape()));
    }
    return Status();
  }

  Result<Shape> input_shape(const std::string& name, const ::onnx::TypeProto_Tensor& tt) {
    auto given = opts_.input_shapes.find(name);
    if (!tt.has_shape()) {
      if (given != opts_.input_shapes.end()) return given->second;
      return invalid_argument(
          "graph input '{}' has no declared shape; give one with "
          "--shape {}=d0,d1,... (LoadOptions::input_shapes)",
          name, name);
    }
    const auto& dims = tt.shape().dim();
    if (given != opts_.input_shapes.end()) {
      const Shape& s = given->second;
      if (static_cast<int>(s.size()) != dims.size()) {
        return invalid_argument(
            "graph input '{}': given shape {} has rank {}, the model declares "
            "rank {}",
            name, shape_to_string(s), s.size(), dims.size());
      }
      for (int i = 0; i < dims.size(); ++i) {
        if (s[i] < 0) {
          return invalid_argument("graph input '{}': given dim {} is negative ({})", name, i, s[i]);
        }
        if (dims[i].has_dim_value() && dims[i].dim_value() != s[i]) {
          return invalid_argument("graph input '{}': given dim {} is {}, the model fixes it to {}",
                                  name, i, s[i], dims[i].dim_value());
        }
      }
      return s;
    }
    Shape s;
    for (int i = 0; i < dims.size(); ++i) {
      if (!dims[i].has_dim_value() || dims[i].dim_value() < 0) {
        const std::string what = dims[i].has_dim_param()
                                     ? fmt::format("symbolic ('{}')", dims[i].dim_param())
                                     : std::string("unknown");
        return invalid_argument(
            "graph input '{}': dim {} is {}; give a concrete shape with "
            "--shape {}=d0,d1,... (LoadOptions::input_shapes)",
            name, i, what, name);
      }
      s.push_back(dims[i].dim_value());
    }
    return s;
  }

  // Kahn's algorithm over the node list (ONNX requires topological order; we accept any order
  // and report dangling inputs and cycles instead of crashing later).
  Result<std::vector<int>> order_nodes(const ::onnx::GraphProto& gp) {
    std::unordered_map<std::string, int> producer;
    for (int i = 0; i < gp.node_size(); ++i) {
      for (const std::string& o : gp.node(i).output()) {
        if (o.empty()) continue;
        if (g_.find_value(o) != ir::kNoValue || !producer.emplace(o, i).second) {
          return invalid_argument("value '{}' is defined more than once (node '{}' ({}))", o,
                                  gp.node(i).name(), gp.node(i).op_type());
        }
      }
    }
    std::vector<int> indeg(gp.node_size(), 0);
    std::vector<std::vector<int>> users(gp.node_size());
    for (int i = 0; i < gp.node_size(); ++i) {
      const auto& n = gp.node(i);
      for (int k = 0; k < n.input_size(); ++k) {
        const std::string& in = n.input(k);
        if (in.empty()) continue;
        auto it = producer.find(in);
        if (it != producer.end()) {
          ++indeg[i];
          users[it->second].push_back(i);
        } else if (!visible(in)) {
          return invalid_argument(
              "node '{}' ({}): input {} '{}' is not produced by any node, "
              "initializer or graph input",
              n.name(), n.op_type(), k, in);
        }
      }
    }
    std::vector<int> order;
    std::vector<int> ready;
    for (int i = gp.node_size() - 1; i >= 0; --i) {
      if (indeg[i] == 0) ready.push_back(i);
    }
    while (!ready.empty()) {
      const int i = ready.back();
      ready.pop_back();
      order.push_back(i);
      // Reverse push keeps the original order among ready nodes.
      for (auto it = users[i].rbegin(); it != users[i].rend(); ++it) {
        if (--indeg[*it] == 0) ready.push_back(*it);
      }
    }
    if (order.size() != static_cast<size_t>(gp.node_size())) {
      for (int i = 0; i < gp.node_size(); ++i) {
        if (indeg[i] > 0) {
          return invalid_argument("the graph has a cycle through node '{}' ({})", gp.node(i).name(),
                                  gp.node(i).op_type());
        }
      }
    }
    return order;
  }

  Status import_node(const ::onnx::NodeProto& n, bool* shape_dependent = nullptr) {
    const std::string domain = canonical_domain(n.domain());
    const int opset = opset_of(domain);
    const OpRow* row = find_op(domain, n.op_type(), opset);
    if (row == nullptr) return internal_error("op '{}' vanished from the table", n.op_type());
    std::string name = n.name().empty() ? snake_case(n.op_type()) : n.name();
    std::vector<ir::ValueId> inputs;
    for (const std::string& in : n.input()) {
      inputs.push_back(in.empty() ? ir::kNoValue : lookup(in));
    }
    ir::AttrMap attrs;
    for (const auto& a : n.attribute()) {
      // Bodies are imported by the op's converter (NodeImporter::import_body), which knows the
      // types of their formal inputs.
      if (a.type() == ::onnx::AttributeProto::GRAPH) continue;
      if (a.has_t()) {
        Status s = charge_constant(a.t(), fmt::format("attribute '{}'", a.name()));
        if (!s.is_ok()) {
          return s.with_prefix(fmt::format("node '{}' ({}, opset {}): ", name, n.op_type(), opset));
        }
      }
      Result<ir::AttrValue> v = attr_from_proto(a, *external_, opts_);
      if (!v.is_ok()) {
        return Status(v.status().code(), fmt::format("node '{}' ({}, opset {}): {}", name,
                                                     n.op_type(), opset, v.status().message()));
      }
      attrs.emplace(a.name(), std::move(*v));
    }
    NodeImporter ni(g_, n, name, opset, std::move(inputs), std::move(attrs));
    std::vector<std::string> outs(n.output().begin(), n.output().end());
    while (!outs.empty() && outs.back().empty()) outs.pop_back();
    ni.set_output_names(std::move(outs));
    ni.set_keep_untyped(opts_.keep_untyped);
    ni.set_max_tensor_bytes(opts_.max_tensor_bytes);
    ni.set_body_importer(this);
    if (shape_dependent != nullptr) ni.set_shape_derived(&shape_derived_);
    Status s;
    try {
      s = (row->convert != nullptr ? row->convert : &convert_default)(ni, row->frame_op);
      if (shape_dependent != nullptr) *shape_dependent = ni.shape_dependent();
    } catch (const std::bad_variant_access&) {
      // A converter reads an attribute as the kind the ONNX spec gives it; the model stored
      // another kind (AttributeProto.type). Found by the onnx_load fuzzer.
      std::string kinds;
      for (const auto& a : n.attribute()) {
        kinds += fmt::format("{}{}={}", kinds.empty() ? "" : ", ", a.name(),
                             ::onnx::AttributeProto::AttributeType_Name(a.type()));
      }
      s = ni.error("attribute of the wrong kind for {} (got {})", n.op_type(), kinds);
    }
    if (s.is_ok() || !opts_.keep_untyped) return s;
    // Analysis only: a node the converter cannot take without values (an input it needs as
    // a constant, an untyped input) becomes an untyped stand-in reading every input, so the
    // rest of the structure still imports and value paths through it are kept.
    for (const std::string& o : n.output()) {
      if (!o.empty() && g_.find_value(o) != ir::kNoValue) return s;
    }
    std::vector<ir::ValueId> ins;
    for (const std::string& in : n.input()) {
      if (!in.empty()) ins.push_back(lookup(in));
    }
    std::vector<std::string> stand_in(n.output().begin(), n.output().end());
    while (!stand_in.empty() && stand_in.back().empty()) stand_in.pop_back();
    if (stand_in.empty()) return s;
    for (std::string& o : stand_in) {
      if (o.empty()) o = g_.unique_value_name(name + ":unused");
    }
    const int count = static_cast<int>(stand_in.size());
    // Inputs the ONNX op reads only for their types (Shape, Size, ...) stop the value path
    // through the stand-in too, as they do through the converted node.
    ir::AttrMap stand_in_attrs;
    std::vector<int64_t> type_only;
    for (size_t i = 0; i < static_cast<size_t>(n.input_size()); ++i) {
      if (reads_only_type_at_import(n.domain(), n.op_type(), i)) {
        type_only.push_back(static_cast<int64_t>(i));
      }
    }
    if (!type_only.empty()) stand_in_attrs.emplace(passes::kTypeOnlyInputsAttr, type_only);
    Result<ir::NodeId> id =
        g_.create_node(kUnconvertedOp, g_.unique_node_name(name), std::move(ins), count,
                       std::move(stand_in_attrs), std::move(stand_in));
    return id.is_ok() ? Status() : s;
  }

  const ::onnx::ModelProto& model_;
  const LoadOptions& opts_;
  std::string dir_;
  const std::map<std::string, Tensor>* initializers_;
  ImportMemo* memo_ = nullptr;
  std::map<std::string, int> opsets_;
  ir::Graph g_;
  // The load's external data files, shared with the bodies' importers.
  std::shared_ptr<ExternalData> external_;
  // Bytes of the initializers and tensor attributes imported so far, bodies included.
  std::shared_ptr<size_t> constant_bytes_;
  int depth_ = 0;                      // nesting level of a body (0: the model's graph)
  Importer* parent_ = nullptr;         // the enclosing scope of a body
  std::vector<ir::ValueId> captures_;  // a body's captured values, in the parent's graph
  // While a GenericImport is recorded: nonzero for the constants computed from input shapes.
  std::vector<char> shape_derived_;
  // retype_in_place: the template's node count, nodes typed so far, and type_node's context.
  size_t template_nodes_ = 0;
  std::vector<char> typed_;
  // retype_in_place: per value, nonzero where its constant took another value at this import's
  // shapes (a bound input, a Shape's dims, a folded step's result); empty in a full re-typing.
  // A folded step none of whose inputs changed keeps the results g_ holds (refold).
  std::vector<char> changed_;
  ops::NodeContext infer_ctx_;
};

Status parse_message(std::string_view bytes, google::protobuf::MessageLite& msg,
                     std::string_view what) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return make_error(StatusCode::kIo, "{} is {} bytes; protobuf messages are limited to 2 GiB",
                      what, bytes.size());
  }
  google::protobuf::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  if (!msg.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage()) {
    return make_error(StatusCode::kIo, "{} is not a valid ONNX protobuf (truncated or corrupt)",
                      what);
  }
  return Status();
}

// Appended to the size error of a model file: a model over protobuf's 2 GiB must keep its
// tensors outside the ModelProto.
constexpr std::string_view kExternalDataHint =
    " (LoadLimits::max_model_bytes; protobuf limits a model to 2 GiB: save larger models with "
    "their tensors as external data, e.g. onnx.save_model(m, path, save_as_external_data=True))";

}  // namespace

Result<ir::Graph> import_model(const ::onnx::ModelProto& model, const LoadOptions& options,
                               const std::string& model_dir,
                               const std::map<std::string, Tensor>* initializers, ImportMemo* memo,
                               ir::Graph* reuse, bool reuse_derived, bool* in_place) {
  if (in_place != nullptr) *in_place = false;
  std::shared_ptr<const GenericImport> generic;
  if (memo != nullptr) {
    std::lock_guard lock(memo->mu);
    generic = memo->generic;
  }
  if (generic != nullptr && reuse != nullptr && reuse_derived && in_place != nullptr) {
    Importer retyper(model, options, model_dir, initializers, memo);
    retyper.adopt_storage(std::move(*reuse));
    Result<ir::Graph> g = retyper.retype_in_place(*generic);
    if (g.is_ok()) {
      memo->retyped.fetch_add(1, std::memory_order_relaxed);
      memo->in_place.fetch_add(1, std::memory_order_relaxed);
      *in_place = true;
      return g;
    }
    // The storage stays usable for the re-typing below (its contents are overwritten).
    *reuse = retyper.release_storage();
  }
  if (generic != nullptr) {
    Importer retyper(model, options, model_dir, initializers, memo);
    if (reuse != nullptr) retyper.adopt_storage(std::move(*reuse));
    Result<ir::Graph> g = retyper.retype(*generic);
    if (g.is_ok()) {
      memo->retyped.fetch_add(1, std::memory_order_relaxed);
      return g;
    }
  }
  Importer imp(model, options, model_dir, initializers, memo);
  return imp.run();
}

Status read_model(const std::string& path, size_t max_bytes, ::onnx::ModelProto& model) {
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> file,
                         MappedFile::open(path, max_bytes, false, kExternalDataHint));
  Status s = parse_message(file->bytes(), model, "the model");
  return s.is_ok() ? s : s.with_prefix(fmt::format("{}: ", path));
}

Status parse_model(std::string_view bytes, ::onnx::ModelProto& model) {
  return parse_message(bytes, model, "the model");
}

}  // namespace detail

Result<ir::Graph> load_from_bytes(std::string_view bytes, const LoadOptions& options,
                                  const std::string& model_dir) {
  ::onnx::ModelProto model;
  FRAME_RETURN_IF_ERROR(detail::parse_message(bytes, model, "the model"));
  detail::Importer imp(model, options, model_dir);
  return imp.run();
}

Result<ir::Graph> load(const std::string& path, const LoadOptions& options) {
  FRAME_ASSIGN_OR_RETURN(
      std::unique_ptr<detail::MappedFile> file,
      detail::MappedFile::open(path, options.max_model_bytes, false, detail::kExternalDataHint));
  const std::string_view bytes = file->bytes();
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  Result<ir::Graph> g = load_from_bytes(bytes, options, dir);
  if (!g.is_ok()) return g.status().with_prefix(fmt::format("{}: ", path));
  return g;
}

Result<Tensor> read_tensor_proto(const std::string& path, std::string* name_out,
                                 std::optional<DTypeCode> uint16_as) {
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<detail::MappedFile> file,
                         detail::MappedFile::open(path, size_t{2000} << 20));
  const std::string_view bytes = file->bytes();
  ::onnx::TensorProto t;
  FRAME_RETURN_IF_ERROR(detail::parse_message(bytes, t, path));
  if (name_out != nullptr) *name_out = t.name();
  if (t.data_type() == ::onnx::TensorProto::UINT16 && uint16_as && dtype_size(*uint16_as) == 2 &&
      is_floating(*uint16_as)) {
    // Same 16-bit storage; typed uint16 values live in int32_data like bf16/f16 bits do.
    t.set_data_type(detail::onnx_type_from_dtype(*uint16_as));
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  detail::ExternalData external(dir.empty() ? "." : dir);
  return detail::tensor_from_proto(t, external, LoadLimits{}.max_tensor_bytes);
}

namespace {

Result<Tensor> value_tensor(::onnx::TensorProto t, const std::string& path, DTypeCode declared) {
  if (t.data_type() == ::onnx::TensorProto::UINT16 && declared == DTypeCode::kBFloat16) {
    t.set_data_type(detail::onnx_type_from_dtype(declared));
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  detail::ExternalData external(dir.empty() ? "." : dir);
  return detail::tensor_from_proto(t, external, LoadLimits{}.max_tensor_bytes);
}

Result<runtime::Value> sequence_value(const ::onnx::SequenceProto& s, const std::string& path,
                                      DTypeCode declared) {
  if (s.elem_type() != ::onnx::SequenceProto::TENSOR &&
      !(s.elem_type() == ::onnx::SequenceProto::UNDEFINED && s.tensor_values_size() == 0)) {
    return invalid_argument("{}: a sequence of element type {} (only tensors are supported)", path,
                            static_cast<int>(s.elem_type()));
  }
  std::vector<Tensor> elements;
  for (const ::onnx::TensorProto& t : s.tensor_values()) {
    FRAME_ASSIGN_OR_RETURN(Tensor v, value_tensor(t, path, declared));
    elements.push_back(std::move(v));
  }
  const DTypeCode dt = elements.empty() ? declared : elements.front().dtype();
  return runtime::Value::of_sequence(std::move(elements), dt);
}

}  // namespace

Result<runtime::Value> read_value_proto(const std::string& path, const runtime::ValueInfo& declared,
                                        std::string* name_out) {
  FRAME_ASSIGN_OR_RETURN(std::unique_ptr<detail::MappedFile> file,
                         detail::MappedFile::open(path, size_t{2000} << 20));
  const std::string_view bytes = file->bytes();
  if (declared.optional) {
    ::onnx::OptionalProto o;
    FRAME_RETURN_IF_ERROR(detail::parse_message(bytes, o, path));
    if (name_out != nullptr) *name_out = o.name();
    if (o.has_tensor_value()) {
      FRAME_ASSIGN_OR_RETURN(Tensor t, value_tensor(o.tensor_value(), path, declared.dtype));
      return runtime::Value::of(std::move(t));
    }
    if (o.has_sequence_value()) return sequence_value(o.sequence_value(), path, declared.dtype);
    if (o.elem_type() != ::onnx::OptionalProto::UNDEFINED &&
        o.elem_type() != ::onnx::OptionalProto::TENSOR &&
        o.elem_type() != ::onnx::OptionalProto::SEQUENCE) {
      return invalid_argument(
          "{}: an optional of element type {} (only tensors and sequences "
          "are supported)",
          path, static_cast<int>(o.elem_type()));
    }
    return runtime::Value::none();
  }
  if (declared.sequence) {
    ::onnx::SequenceProto s;
    FRAME_RETURN_IF_ERROR(detail::parse_message(bytes, s, path));
    if (name_out != nullptr) *name_out = s.name();
    return sequence_value(s, path, declared.dtype);
  }
  ::onnx::TensorProto t;
  FRAME_RETURN_IF_ERROR(detail::parse_message(bytes, t, path));
  if (name_out != nullptr) *name_out = t.name();
  FRAME_ASSIGN_OR_RETURN(Tensor v, value_tensor(std::move(t), path, declared.dtype));
  return runtime::Value::of(std::move(v));
}

}  // namespace frame::onnx
