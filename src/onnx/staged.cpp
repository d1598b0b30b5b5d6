// Models whose shapes depend on computed data (docs/adr/0008-data-dependent-shapes.md): the
// graph is split at its eager nodes (NonZero, NonMaxSuppression, Unique, Compress, and If
// nodes whose branches hold one) into static stages. A run executes a stage through a
// runtime::Session of its own (specialized on the shapes at its boundary, cached as any
// session's keys are), then the eager nodes whose inputs are now known (imported with every
// input bound, so they fold to constants and no compiled graph ever has a data-dependent
// shape: ARCH-044), then the next stage.

#include "staged.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "onnx_internal.h"
#include "sequence_ops.h"

namespace frame::onnx::detail {
namespace {

constexpr int kMaxDepth = 64;  // the importer refuses deeper nesting before this matters

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

// Ops whose output shape depends on input values (ONNX operator spec: NonZero, Unique,
// Compress, NonMaxSuppression).
bool data_dependent_op(const ::onnx::NodeProto& n) {
  if (!default_domain(n.domain())) return false;
  const std::string& t = n.op_type();
  return t == "NonZero" || t == "NonMaxSuppression" || t == "Unique" || t == "Compress";
}

bool is_op(const ::onnx::NodeProto& n, std::string_view op) {
  return default_domain(n.domain()) && n.op_type() == op;
}

// Ops whose cost grows with a product of sizes (a reduction dim times the output): folded,
// they would run on the cpu reference kernels, so a stage holding one is always compiled.
bool heavy_node(const ::onnx::NodeProto& n, int depth = 0) {
  static const char* const kHeavy[] = {"Conv",      "ConvTranspose", "ConvInteger",   "QLinearConv",
                                       "MatMul",    "MatMulInteger", "QLinearMatMul", "Gemm",
                                       "Einsum",    "LSTM",          "GRU",           "RNN",
                                       "Attention", "RoiAlign"};
  for (const char* op : kHeavy) {
    if (is_op(n, op)) return true;
  }
  bool inner = false;
  if (depth < kMaxDepth) {
    for_each_body(n, [&](const std::string&, const ::onnx::GraphProto& b) {
      for (const ::onnx::NodeProto& x : b.node()) inner = inner || heavy_node(x, depth + 1);
    });
  }
  return inner;
}

// Names `g` reads from enclosing scopes (not its inputs, initializers or node outputs),
// nested bodies included.
void free_names(const ::onnx::GraphProto& g, std::set<std::string>& out, int depth = 0) {
  if (depth > kMaxDepth) return;
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node()) defined.insert(n.output().begin(), n.output().end());
  for (const auto& n : g.node()) {
    for (const std::string& in : n.input()) {
      if (!in.empty() && defined.count(in) == 0) out.insert(in);
    }
    for_each_body(n, [&](const std::string&, const ::onnx::GraphProto& b) {
      std::set<std::string> inner;
      free_names(b, inner, depth + 1);
      for (const std::string& x : inner) {
        if (defined.count(x) == 0) out.insert(x);
      }
    });
  }
}

// Every value node `n` reads: its inputs, then what its bodies read from outside them.
std::vector<std::string> node_reads(const ::onnx::NodeProto& n) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& in : n.input()) {
    if (!in.empty() && seen.insert(in).second) out.push_back(in);
  }
  for_each_body(n, [&](const std::string&, const ::onnx::GraphProto& b) {
    std::set<std::string> inner;
    free_names(b, inner);
    for (const std::string& x : inner) {
      if (seen.insert(x).second) out.push_back(x);
    }
  });
  return out;
}

// The values of a graph (and of the scopes around it) that are sequences or optionals;
// a name not listed is a tensor.
using Kinds = std::map<std::string, ValueKind>;

ValueKind kind_in(const Kinds& k, const std::string& name) {
  auto it = k.find(name);
  return it == k.end() ? ValueKind::kTensor : it->second;
}

const char* kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::kTensor:
      return "a tensor";
    case ValueKind::kSequence:
      return "a sequence";
    case ValueKind::kOptionalTensor:
      return "an optional tensor";
    case ValueKind::kOptionalSequence:
      return "an optional sequence";
  }
  return "?";
}

// Which nodes of a graph run eagerly (eager_nodes() says why), and the kinds of its values.
struct Analysis {
  std::vector<bool> eager;  // per node, in the graph's order
  Kinds kinds;              // this graph's values that are not tensors, outer ones included
  bool any_eager() const { return std::find(eager.begin(), eager.end(), true) != eager.end(); }
};

const ::onnx::GraphProto* body_attr(const ::onnx::NodeProto& n, std::string_view name) {
  for (const ::onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name && a.has_g()) return &a.g();
  }
  return nullptr;
}

// The kinds a Loop body's inputs take from the Loop's carried inputs (body inputs 2.. are the
// Loop's inputs 2..), on top of the enclosing scope's.
Kinds loop_body_kinds(const ::onnx::NodeProto& n, const ::onnx::GraphProto& body,
                      const Kinds& outer) {
  Kinds k = outer;
  for (int i = 2; i < n.input_size() && i < body.input_size(); ++i) {
    const ValueKind v = kind_in(outer, n.input(i));
    if (v != ValueKind::kTensor) k[body.input(i).name()] = v;
  }
  return k;
}

Analysis analyze(const ::onnx::GraphProto& g, Kinds outer, int depth) {
  Analysis a;
  a.kinds = std::move(outer);
  a.eager.assign(static_cast<size_t>(g.node_size()), false);
  if (depth > kMaxDepth) return a;
  for (const ::onnx::ValueInfoProto& in : g.input()) {
    const ValueKind k = kind_of_type(in.type());
    if (k != ValueKind::kTensor) a.kinds.emplace(in.name(), k);
  }
  // ONNX lists nodes in topological order (IR spec): one pass, each body analyzed once per
  // call (nested bodies stay linear in their depth).
  for (int i = 0; i < g.node_size(); ++i) {
    const ::onnx::NodeProto& n = g.node(i);
    std::vector<ValueKind> in_kinds;
    bool reads_non_tensor = false;
    for (const std::string& in : n.input()) {
      in_kinds.push_back(in.empty() ? ValueKind::kTensor : kind_in(a.kinds, in));
      reads_non_tensor = reads_non_tensor || in_kinds.back() != ValueKind::kTensor;
    }
    bool body_eager = false;
    std::map<std::string, Analysis> bodies;  // by attribute name
    for_each_body(n, [&](const std::string& attr, const ::onnx::GraphProto& b) {
      std::set<std::string> outer_reads;
      free_names(b, outer_reads);
      for (const std::string& x : outer_reads) {
        reads_non_tensor = reads_non_tensor || kind_in(a.kinds, x) != ValueKind::kTensor;
      }
      const Kinds bk = is_op(n, "Loop") ? loop_body_kinds(n, b, a.kinds) : a.kinds;
      Analysis ba = analyze(b, bk, depth + 1);
      body_eager = body_eager || ba.any_eager();
      bodies.emplace(attr, std::move(ba));
    });
    const bool value_op = is_value_op(n) && !is_op(n, "Identity");
    a.eager[static_cast<size_t>(i)] = data_dependent_op(n) || value_op || is_op(n, "SequenceMap") ||
                                      reads_non_tensor || body_eager;
    // The kinds of its outputs: a body output's kind as the body's analysis found it, else as
    // its declared type says.
    auto body_output_kind = [&](const char* attr, int k) {
      const ::onnx::GraphProto* b = body_attr(n, attr);
      auto it = bodies.find(attr);
      if (b == nullptr || it == bodies.end() || k >= b->output_size()) return ValueKind::kTensor;
      const ValueKind found = kind_in(it->second.kinds, b->output(k).name());
      return found != ValueKind::kTensor ? found : kind_of_type(b->output(k).type());
    };
    for (int k = 0; k < n.output_size(); ++k) {
      const std::string& o = n.output(k);
      if (o.empty()) continue;
      ValueKind kind = ValueKind::kTensor;
      if (is_value_op(n)) {
        kind = value_op_output_kind(n, in_kinds);
      } else if (is_op(n, "SequenceMap")) {
        kind = ValueKind::kSequence;
      } else if (is_op(n, "If")) {
        kind = body_output_kind("then_branch", k);
        if (kind == ValueKind::kTensor) kind = body_output_kind("else_branch", k);
      } else if (is_op(n, "Loop")) {
        if (k + 2 < n.input_size()) kind = in_kinds[static_cast<size_t>(k + 2)];
        if (kind == ValueKind::kTensor) kind = body_output_kind("body", k + 1);
      }
      if (kind != ValueKind::kTensor) a.kinds[o] = kind;
    }
  }
  return a;
}

::onnx::ValueInfoProto typed_value(const std::string& name, DTypeCode dtype,
                                   const std::vector<std::pair<int64_t, std::string>>& dims) {
  ::onnx::ValueInfoProto v;
  v.set_name(name);
  auto* tt = v.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx_type_from_dtype(dtype));
  auto* shape = tt->mutable_shape();
  for (const auto& [value, param] : dims) {
    auto* d = shape->add_dim();
    if (param.empty()) {
      d->set_dim_value(value);
    } else {
      d->set_dim_param(param);
    }
  }
  return v;
}

// What every step of one model reads.
struct Shared {
  std::shared_ptr<const ::onnx::ModelProto> model;  // ir_version, opset imports
  std::string dir;
  LoadOptions load;
  runtime::SessionOptions options;
  std::string name;
  std::map<std::string, runtime::ValueInfo> declared;  // the model's inputs
  // Most bytes one folded node may produce (eager nodes, folded stages): the session's limits.
  size_t fold_limit = SIZE_MAX;
};

// An empty model with the original's IR version and opset imports.
::onnx::ModelProto empty_model(const Shared& sh, const std::string& graph_name) {
  ::onnx::ModelProto m;
  m.set_ir_version(sh.model->ir_version());
  *m.mutable_opset_import() = sh.model->opset_import();
  m.mutable_graph()->set_name(graph_name);
  return m;
}

// Runs ONNX node `n` with every input known: the node is imported on its own with its inputs
// bound, so the importer's folding computes its outputs with the cpu kernels (the same kernels
// a compiled graph would run).
Result<std::vector<Tensor>> evaluate_node(const ::onnx::NodeProto& n,
                                          const std::vector<std::string>& names,
                                          const std::vector<Tensor>& values, const Shared& sh) {
  ::onnx::ModelProto m = empty_model(sh, "eager");
  ::onnx::GraphProto& g = *m.mutable_graph();
  *g.add_node() = n;
  LoadOptions lo = sh.load;
  lo.verify = false;
  lo.keep_untyped = false;
  lo.input_shapes.clear();
  lo.constant_inputs.clear();
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<std::pair<int64_t, std::string>> dims;
    for (int64_t d : values[i].shape()) dims.emplace_back(d, "");
    *g.add_input() = typed_value(names[i], values[i].dtype(), dims);
    lo.constant_inputs.emplace(names[i], values[i]);
  }
  for (const std::string& o : n.output()) {
    if (!o.empty()) g.add_output()->set_name(o);
  }
  Result<ir::Graph> ig = [&] {
    EagerFoldScope fold(sh.fold_limit);
    return import_model(m, lo, sh.dir);
  }();
  if (!ig.is_ok()) return ig.status();
  std::vector<Tensor> out;
  for (const std::string& o : n.output()) {
    if (o.empty()) continue;
    const ir::ValueId v = ig->find_value(o);
    if (v == ir::kNoValue || !ig->value(v).constant) {
      return internal_error("output '{}' was not computed", o);
    }
    out.push_back(*ig->value(v).constant);
  }
  return out;
}

struct Graph;

struct Step {
  // kStage: compiled (or folded) nodes; kEager: a data-dependent op, folded with its inputs
  // bound; kValue: a sequence or optional op (sequence_ops.h); kIf, kLoop, kSequenceMap:
  // control flow whose bodies run as staged graphs of their own.
  enum class Kind { kStage, kEager, kValue, kIf, kLoop, kSequenceMap };
  Kind kind = Kind::kStage;
  std::string label;
  std::vector<std::string> inputs;   // values read, not constants
  std::vector<std::string> outputs;  // values later steps or the graph's outputs read
  // kStage: the nodes, and a session per input signature (dtypes and ranks).
  std::vector<const ::onnx::NodeProto*> nodes;
  bool after_eager = false;  // a stage that runs after an eager node (levels >= 1) or in a body
  bool top_level = false;    // a stage of the model's graph (its inputs' declared dims apply)
  bool heavy = false;        // holds a heavy op (heavy_node): compiled, never folded
  mutable std::mutex mu;
  mutable std::map<std::string, runtime::Session> sessions;
  // The other kinds: the node; kIf: then and else branches; kLoop, kSequenceMap: the body.
  const ::onnx::NodeProto* node = nullptr;
  std::vector<std::unique_ptr<Graph>> bodies;
};

// One graph (the model's, or a body) as steps. Each graph is a scope: its initializers
// and Constant values are its own (a branch may reuse a name another branch or graph uses).
struct Graph {
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<std::string> inputs;  // a body's formal inputs (Loop, SequenceMap)
  std::vector<std::string> outputs;
  std::vector<DTypeCode> output_dtypes;             // declared element types (empty scan outputs)
  std::vector<std::optional<Shape>> output_shapes;  // declared shapes, when every dim is fixed
  std::vector<ValueKind> output_kinds;      // declared kinds (the model's outputs are checked)
  std::vector<std::string> entry;           // outer values a body reads (computed ones)
  std::map<std::string, Tensor> constants;  // this scope's initializers and Constant values
  const Graph* parent = nullptr;
};

// The constant `name` as seen from `g`: its own scope first, then the enclosing ones.
const Tensor* find_constant(const Graph& g, const std::string& name) {
  for (const Graph* s = &g; s != nullptr; s = s->parent) {
    if (auto it = s->constants.find(name); it != s->constants.end()) return &it->second;
  }
  return nullptr;
}

std::string describe_node(const ::onnx::NodeProto& n) {
  if (n.name().empty() && n.output_size() > 0) {
    return fmt::format("{} (output '{}')", n.op_type(), n.output(0));
  }
  return fmt::format("{} '{}'", n.op_type(), n.name());
}

// Splits `gp` into steps. `entry`: the values known when the graph starts (the model's inputs,
// or the outer values a branch reads); `parent`: the enclosing graph of a branch.
Result<std::unique_ptr<Graph>> build_graph(const ::onnx::GraphProto& gp, Shared& sh,
                                           const std::set<std::string>& entry, int depth,
                                           const Graph* parent,
                                           std::map<std::string, Tensor> constants,
                                           const Kinds& outer_kinds) {
  if (depth > kMaxDepth) return invalid_argument("graphs nested deeper than {}", kMaxDepth);
  auto graph = std::make_unique<Graph>();
  graph->parent = parent;
  graph->constants = std::move(constants);
  const Analysis analysis = analyze(gp, outer_kinds, depth);
  for (const auto& o : gp.output()) {
    graph->outputs.push_back(o.name());
    bool sequence = false;
    bool optional = false;
    Result<DTypeCode> dt = Status();
    if (const ::onnx::TypeProto_Tensor* tt = inner_tensor_type(o.type(), sequence, optional)) {
      dt = dtype_from_onnx(tt->elem_type());
    }
    graph->output_dtypes.push_back(dt.is_ok() ? *dt : DTypeCode::kFloat32);
    graph->output_kinds.push_back(kind_of_type(o.type()));
    std::optional<Shape> shape;
    if (o.type().has_tensor_type() && o.type().tensor_type().has_shape()) {
      shape.emplace();
      for (const auto& d : o.type().tensor_type().shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) {
          shape.reset();
          break;
        }
        shape->push_back(d.dim_value());
      }
    }
    graph->output_shapes.push_back(std::move(shape));
  }
  if (depth > 0) {
    for (const auto& in : gp.input()) graph->inputs.push_back(in.name());
  }
  if (depth > 0) {
    ExternalData external(sh.dir);
    for (const ::onnx::TensorProto& t : gp.initializer()) {
      FRAME_ASSIGN_OR_RETURN(Tensor v, tensor_from_proto(t, external, sh.load.max_tensor_bytes));
      graph->constants[t.name()] = std::move(v);
    }
  }
  auto is_constant = [&](const std::string& name) {
    return find_constant(*graph, name) != nullptr;
  };
  // Constant nodes become constants of every step that reads them.
  std::vector<int> nodes;
  for (int i = 0; i < gp.node_size(); ++i) {
    const ::onnx::NodeProto& n = gp.node(i);
    if (default_domain(n.domain()) && n.op_type() == "Constant" && n.input_size() == 0) {
      Result<std::vector<Tensor>> v = evaluate_node(n, {}, {}, sh);
      if (!v.is_ok()) return v.status().with_prefix(fmt::format("node '{}': ", n.name()));
      for (int k = 0; k < n.output_size() && k < static_cast<int>(v->size()); ++k) {
        graph->constants[n.output(k)] = (*v)[static_cast<size_t>(k)];
      }
      continue;
    }
    nodes.push_back(i);
  }
  // Topological order (Kahn), original order among ready nodes.
  std::map<std::string, int> producer;
  for (int i : nodes) {
    for (const std::string& o : gp.node(i).output()) {
      if (!o.empty()) producer[o] = i;
    }
  }
  std::map<int, std::vector<std::string>> reads;
  std::map<int, int> pending;
  std::map<int, std::vector<int>> users;
  for (int i : nodes) {
    reads[i] = node_reads(gp.node(i));
    int deps = 0;
    for (const std::string& r : reads[i]) {
      auto it = producer.find(r);
      if (it != producer.end() && it->second != i) {
        ++deps;
        users[it->second].push_back(i);
      }
    }
    pending[i] = deps;
  }
  std::set<int> ready;
  for (int i : nodes) {
    if (pending[i] == 0) ready.insert(i);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    const int i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (int u : users[i]) {
      if (--pending[u] == 0) ready.insert(u);
    }
  }
  if (order.size() != nodes.size()) {
    return invalid_argument("graph '{}' has a cycle", gp.name());
  }

  // Levels: a value computed in stage L, or by an eager node run after stage L-1, is available
  // from stage L on. A node runs in the first stage where all it reads is available; an eager
  // node runs right after the stage that completes its inputs.
  std::map<std::string, int> avail;
  for (const std::string& e : entry) {
    avail[e] = 0;
    if (!is_constant(e)) graph->entry.push_back(e);
  }
  for (const auto& in : gp.input()) {
    if (!is_constant(in.name())) avail[in.name()] = 0;
  }
  std::map<int, std::vector<int>> stage_at, eager_at;
  int max_level = 0;
  const std::vector<bool>& eager_node = analysis.eager;
  for (int i : order) {
    const ::onnx::NodeProto& n = gp.node(i);
    int level = 0;
    for (const std::string& r : reads[i]) {
      if (is_constant(r)) continue;
      auto it = avail.find(r);
      if (it == avail.end()) {
        return invalid_argument(
            "node '{}' ({}) reads '{}', which no node, input or initializer "
            "produces",
            n.name(), n.op_type(), r);
      }
      level = std::max(level, it->second);
    }
    const bool eager = eager_node[static_cast<size_t>(i)];
    if (eager && !data_dependent_op(n) && !is_value_op(n) && !is_op(n, "If") && !is_op(n, "Loop") &&
        !is_op(n, "SequenceMap")) {
      if (is_op(n, "Scan")) {
        return unimplemented(
            "node '{}' (Scan): a Scan body holding an op whose output shape depends on values "
            "(NonZero, NonMaxSuppression, Unique, Compress) or a sequence or optional value "
            "is not supported; If, Loop and SequenceMap bodies are "
            "(docs/adr/0008-data-dependent-shapes.md)",
            n.name());
      }
      return invalid_argument("node '{}' ({}) reads a sequence or optional value; it takes tensors",
                              n.name(), n.op_type());
    }
    (eager ? eager_at : stage_at)[level].push_back(i);
    for (const std::string& o : n.output()) {
      if (!o.empty()) avail[o] = eager ? level + 1 : level;
    }
    max_level = std::max(max_level, eager ? level + 1 : level);
  }

  int stage_number = 0;
  for (int level = 0; level <= max_level; ++level) {
    if (auto it = stage_at.find(level); it != stage_at.end()) {
      auto s = std::make_unique<Step>();
      s->kind = Step::Kind::kStage;
      std::set<std::string> produced, read;
      for (int i : it->second) {
        s->nodes.push_back(&gp.node(i));
        for (const std::string& o : gp.node(i).output()) produced.insert(o);
        read.insert(reads[i].begin(), reads[i].end());
      }
      for (const std::string& r : read) {
        if (produced.count(r) == 0 && !is_constant(r)) s->inputs.push_back(r);
      }
      s->outputs.assign(produced.begin(), produced.end());  // narrowed below
      s->label = fmt::format("stage {}: {} nodes", ++stage_number, s->nodes.size());
      s->after_eager = level > 0 || depth > 0;
      s->top_level = depth == 0;
      s->heavy = std::any_of(s->nodes.begin(), s->nodes.end(),
                             [](const ::onnx::NodeProto* n) { return heavy_node(*n); });
      graph->steps.push_back(std::move(s));
    }
    if (auto it = eager_at.find(level); it != eager_at.end()) {
      for (int i : it->second) {
        const ::onnx::NodeProto& n = gp.node(i);
        auto s = std::make_unique<Step>();
        s->node = &n;
        s->kind = data_dependent_op(n) ? Step::Kind::kEager
                  : is_value_op(n)     ? Step::Kind::kValue
                  : is_op(n, "If")     ? Step::Kind::kIf
                  : is_op(n, "Loop")   ? Step::Kind::kLoop
                                       : Step::Kind::kSequenceMap;
        s->label = "eager " + describe_node(n);
        for (const std::string& r : reads[i]) {
          if (!is_constant(r)) s->inputs.push_back(r);
        }
        for (const std::string& o : n.output()) {
          if (!o.empty()) s->outputs.push_back(o);
        }
        // Bodies: If's two branches, or the body of Loop and SequenceMap.
        std::vector<const char*> names;
        if (s->kind == Step::Kind::kIf) names = {"then_branch", "else_branch"};
        if (s->kind == Step::Kind::kLoop || s->kind == Step::Kind::kSequenceMap) names = {"body"};
        for (const char* name : names) {
          const ::onnx::GraphProto* body = body_attr(n, name);
          if (body == nullptr) {
            return invalid_argument("node '{}' ({}): attribute '{}' (a graph) is required",
                                    n.name(), n.op_type(), name);
          }
          std::set<std::string> outer;
          free_names(*body, outer);
          const Kinds bk = s->kind == Step::Kind::kLoop ? loop_body_kinds(n, *body, analysis.kinds)
                                                        : analysis.kinds;
          FRAME_ASSIGN_OR_RETURN(std::unique_ptr<Graph> b,
                                 build_graph(*body, sh, outer, depth + 1, graph.get(), {}, bk));
          s->bodies.push_back(std::move(b));
        }
        graph->steps.push_back(std::move(s));
      }
    }
  }
  // A stage passes on only what later steps or the graph's outputs read.
  std::set<std::string> later(graph->outputs.begin(), graph->outputs.end());
  for (auto it = graph->steps.rbegin(); it != graph->steps.rend(); ++it) {
    Step& s = **it;
    if (s.kind == Step::Kind::kStage) {
      std::vector<std::string> kept;
      for (const std::string& o : s.outputs) {
        if (later.count(o) > 0) kept.push_back(o);
      }
      s.outputs = std::move(kept);
    }
    later.insert(s.inputs.begin(), s.inputs.end());
  }
  // A stage whose results nothing reads is dropped (its nodes are dead code).
  std::erase_if(graph->steps, [](const std::unique_ptr<Step>& s) {
    return s->kind == Step::Kind::kStage && s->outputs.empty();
  });
  return graph;
}

// The values of one run of one graph. `fresh`: the names whose tensors a compiled stage
// allocated for this run; any other value may share storage with a constant of the model
// (an initializer passed through, a branch's Constant), so outputs not fresh are copied.
struct Values {
  std::unordered_map<std::string, runtime::Value> map;
  std::unordered_set<std::string> fresh;
  void set(const std::string& name, runtime::Value v, bool is_fresh) {
    map[name] = std::move(v);
    if (is_fresh) {
      fresh.insert(name);
    } else {
      fresh.erase(name);
    }
  }
  void set(const std::string& name, Tensor t, bool is_fresh) {
    set(name, runtime::Value::of(std::move(t)), is_fresh);
  }
};

Result<runtime::Value> any_value_of(const Values& vt, const Graph& g, const std::string& name) {
  if (auto it = vt.map.find(name); it != vt.map.end()) return it->second;
  if (const Tensor* c = find_constant(g, name)) return runtime::Value::of(*c);
  return internal_error("value '{}' is not known at this step", name);
}

Result<Tensor> value_of(const Values& vt, const Graph& g, const std::string& name) {
  FRAME_ASSIGN_OR_RETURN(runtime::Value v, any_value_of(vt, g, name));
  if (!v.is_tensor()) {
    return invalid_argument("value '{}' is {} where a tensor is expected", name, v.to_string());
  }
  return std::move(v.tensor);
}

// The sub-model of a stage: its nodes, the constants they read as initializers (their tensors
// in `initializers`), its boundary values as graph inputs and what later steps read as
// outputs. `concrete`: input dims are those of `in` (an eager fold); otherwise symbolic
// except the model's own declared dims (a stage session, specialized per run).
::onnx::ModelProto stage_model(const Step& s, const Graph& scope, const Shared& sh,
                               const runtime::TensorMap& in, bool concrete,
                               std::map<std::string, Tensor>& initializers) {
  ::onnx::ModelProto m = empty_model(sh, s.label);
  ::onnx::GraphProto& g = *m.mutable_graph();
  std::set<std::string> consts;
  for (const ::onnx::NodeProto* n : s.nodes) {
    *g.add_node() = *n;
    for (const std::string& r : node_reads(*n)) {
      if (find_constant(scope, r) != nullptr) consts.insert(r);
    }
  }
  for (const std::string& c : consts) {
    const Tensor& t = *find_constant(scope, c);
    ::onnx::TensorProto* p = g.add_initializer();
    p->set_name(c);
    p->set_data_type(onnx_type_from_dtype(t.dtype()));
    for (int64_t d : t.shape()) p->add_dims(d);
    initializers.emplace(c, t);
  }
  for (size_t k = 0; k < s.inputs.size(); ++k) {
    const std::string& name = s.inputs[k];
    const Tensor& t = in.at(name);
    std::vector<std::pair<int64_t, std::string>> dims;
    auto d = s.top_level ? sh.declared.find(name) : sh.declared.end();
    if (d != sh.declared.end() && (d->second.sequence || d->second.optional)) {
      d = sh.declared.end();
    }
    if (concrete) {
      for (int64_t x : t.shape()) dims.emplace_back(x, "");
    } else if (d != sh.declared.end() && d->second.has_shape) {
      for (const runtime::Dim& x : d->second.dims) {
        dims.emplace_back(x.value, x.is_concrete() ? "" : fmt::format("in{}_{}", k, dims.size()));
      }
    } else {
      // A value computed by an earlier step: its sizes change from run to run.
      for (int64_t j = 0; j < t.rank(); ++j) dims.emplace_back(-1, fmt::format("in{}_{}", k, j));
    }
    *g.add_input() = typed_value(name, t.dtype(), dims);
  }
  for (const std::string& o : s.outputs) g.add_output()->set_name(o);
  return m;
}

// The session of a stage for the dtypes and ranks of `in`, opened at its first use.
Result<runtime::Session> stage_session(const Step& s, const Graph& scope, const Shared& sh,
                                       const runtime::TensorMap& in) {
  std::string signature;
  for (const std::string& name : s.inputs) {
    const Tensor& t = in.at(name);
    signature += fmt::format("{}{};", dtype_name(t.dtype()), t.rank());
  }
  std::lock_guard lock(s.mu);
  if (auto it = s.sessions.find(signature); it != s.sessions.end()) return it->second;
  std::map<std::string, Tensor> initializers;
  ::onnx::ModelProto m = stage_model(s, scope, sh, in, false, initializers);
  FRAME_ASSIGN_OR_RETURN(runtime::Session session,
                         open_stage_session(std::move(m), std::move(initializers), sh.dir, sh.load,
                                            sh.options, fmt::format("{} ({})", sh.name, s.label)));
  s.sessions.emplace(signature, session);
  return session;
}

// A stage after an eager node whose boundary values are this small is computed by folding
// (imported with its inputs bound: the cpu kernels run node by node) instead of compiled:
// its key changes with nearly every image (a count), so a compile would rarely be reused.
constexpr size_t kFoldStageBytes = size_t{256} << 10;
constexpr size_t kFoldStageNodes = 400;

bool fold_stage(const Step& s, const runtime::TensorMap& in) {
  if (!s.after_eager || s.heavy || s.nodes.size() > kFoldStageNodes) return false;
  size_t bytes = 0;
  for (const auto& [name, t] : in) bytes += t.nbytes();
  return bytes <= kFoldStageBytes;
}

Result<runtime::TensorMap> run_folded(const Step& s, const Graph& scope, const Shared& sh,
                                      const runtime::TensorMap& in) {
  std::map<std::string, Tensor> initializers;
  ::onnx::ModelProto m = stage_model(s, scope, sh, in, true, initializers);
  LoadOptions lo = sh.load;
  lo.verify = false;
  lo.keep_untyped = false;
  lo.input_shapes.clear();
  lo.constant_inputs = in;
  Result<ir::Graph> ig = [&] {
    EagerFoldScope fold(sh.fold_limit);
    return import_model(m, lo, sh.dir, &initializers);
  }();
  if (!ig.is_ok()) return ig.status();
  runtime::TensorMap out;
  for (const std::string& o : s.outputs) {
    const ir::ValueId v = ig->find_value(o);
    if (v == ir::kNoValue || !ig->value(v).constant) {
      return internal_error("output '{}' was not computed by folding", o);
    }
    out.emplace(o, *ig->value(v).constant);
  }
  return out;
}

Status run_graph(const Graph& g, const Shared& sh, Values& vt, const runtime::RunOptions& ro);

// A body's value table: the outer values it reads, as graph `g` holds them in `vt`.
Result<Values> enter_body(const Graph& body, const Values& vt, const Graph& g) {
  Values inner;
  for (const std::string& e : body.entry) {
    FRAME_ASSIGN_OR_RETURN(runtime::Value v, any_value_of(vt, g, e));
    inner.set(e, std::move(v), vt.fresh.count(e) > 0);
  }
  return inner;
}

// A scalar input of a control-flow node (Loop's M and cond): its one value.
Result<int64_t> scalar_input(const Values& vt, const Graph& g, const std::string& name,
                             const char* what) {
  FRAME_ASSIGN_OR_RETURN(Tensor t, value_of(vt, g, name));
  if (t.numel() != 1) {
    return invalid_argument("input '{}' ({}) must hold one value, got shape {}", name, what,
                            shape_to_string(t.shape()));
  }
  return t.element_as_int64(0);
}

// ONNX Loop (operator spec, Loop-13/16/19): runs the body while the trip count M (when given)
// is not reached and cond (when given) holds; carried values pass from each iteration to the
// next, scan outputs are stacked along a new axis 0.
Status run_loop(const Step& s, const Graph& g, const Shared& sh, Values& vt,
                const runtime::RunOptions& ro) {
  const ::onnx::NodeProto& n = *s.node;
  const Graph& body = *s.bodies.front();
  const size_t carried_count = n.input_size() > 2 ? static_cast<size_t>(n.input_size() - 2) : 0;
  if (body.inputs.size() != 2 + carried_count || body.outputs.size() < 1 + carried_count) {
    return invalid_argument(
        "the body has {} inputs and {} outputs; {} carried values need {} inputs and at least "
        "{} outputs",
        body.inputs.size(), body.outputs.size(), carried_count, 2 + carried_count,
        1 + carried_count);
  }
  const size_t scans = body.outputs.size() - 1 - carried_count;
  std::optional<int64_t> trips;
  if (n.input_size() > 0 && !n.input(0).empty()) {
    FRAME_ASSIGN_OR_RETURN(int64_t m, scalar_input(vt, g, n.input(0), "M"));
    trips = m;
  }
  bool cond = true;
  if (n.input_size() > 1 && !n.input(1).empty()) {
    FRAME_ASSIGN_OR_RETURN(int64_t c, scalar_input(vt, g, n.input(1), "cond"));
    cond = c != 0;
  }
  std::vector<runtime::Value> carried;
  for (size_t k = 0; k < carried_count; ++k) {
    const std::string& in = n.input(static_cast<int>(k + 2));
    if (in.empty()) {
      carried.push_back(runtime::Value::none());
      continue;
    }
    FRAME_ASSIGN_OR_RETURN(runtime::Value v, any_value_of(vt, g, in));
    carried.push_back(std::move(v));
  }
  std::vector<std::vector<Tensor>> scanned(scans);
  FRAME_ASSIGN_OR_RETURN(Values inner, enter_body(body, vt, g));
  for (int64_t i = 0; cond && (!trips || i < *trips); ++i) {
    inner.set(body.inputs[0], Tensor::scalar<int64_t>(i), false);
    inner.set(body.inputs[1], Tensor::scalar<bool>(cond), false);
    for (size_t k = 0; k < carried_count; ++k) inner.set(body.inputs[2 + k], carried[k], false);
    Status st = run_graph(body, sh, inner, ro);
    if (!st.is_ok()) return st.with_prefix(fmt::format("iteration {}: ", i));
    FRAME_ASSIGN_OR_RETURN(Tensor c, value_of(inner, body, body.outputs[0]));
    if (c.numel() != 1) {
      return invalid_argument(
          "iteration {}: the body's cond output has shape {}, expected one "
          "value",
          i, shape_to_string(c.shape()));
    }
    cond = c.element_as_double(0) != 0.0;
    for (size_t k = 0; k < carried_count; ++k) {
      FRAME_ASSIGN_OR_RETURN(carried[k], any_value_of(inner, body, body.outputs[1 + k]));
    }
    for (size_t j = 0; j < scans; ++j) {
      FRAME_ASSIGN_OR_RETURN(Tensor t, value_of(inner, body, body.outputs[1 + carried_count + j]));
      scanned[j].push_back(std::move(t));
    }
  }
  for (int k = 0; k < n.output_size(); ++k) {
    const std::string& o = n.output(k);
    if (o.empty()) continue;
    const size_t ku = static_cast<size_t>(k);
    if (ku < carried_count) {
      vt.set(o, carried[ku], false);
      continue;
    }
    const size_t j = ku - carried_count;
    if (j >= scans) return invalid_argument("output {} has no body output to come from", k);
    const size_t b = 1 + carried_count + j;
    FRAME_ASSIGN_OR_RETURN(Tensor stacked,
                           stack_tensors(scanned[j], body.output_dtypes[b], body.output_shapes[b],
                                         fmt::format("scan output {} ('{}')", j, o)));
    vt.set(o, std::move(stacked), true);
  }
  return Status();
}

// ONNX SequenceMap (operator spec, SequenceMap-17): the body runs once per element of input 0;
// other sequence inputs give their element at the same position, tensor inputs are passed
// whole; each body output is collected into an output sequence.
Status run_sequence_map(const Step& s, const Graph& g, const Shared& sh, Values& vt,
                        const runtime::RunOptions& ro) {
  const ::onnx::NodeProto& n = *s.node;
  const Graph& body = *s.bodies.front();
  if (body.inputs.size() != static_cast<size_t>(n.input_size()) ||
      body.outputs.size() != static_cast<size_t>(n.output_size())) {
    return invalid_argument("the body has {} inputs and {} outputs; the node has {} and {}",
                            body.inputs.size(), body.outputs.size(), n.input_size(),
                            n.output_size());
  }
  std::vector<runtime::Value> args;
  for (int k = 0; k < n.input_size(); ++k) {
    FRAME_ASSIGN_OR_RETURN(runtime::Value v, any_value_of(vt, g, n.input(k)));
    args.push_back(std::move(v));
  }
  if (args.empty() || !args[0].is_sequence()) {
    return invalid_argument("input 0 must be a sequence, got {}",
                            args.empty() ? "nothing" : args[0].to_string());
  }
  const size_t count = args[0].sequence.size();
  for (size_t k = 1; k < args.size(); ++k) {
    if (args[k].is_none()) return invalid_argument("input {} is an empty optional", k);
    if (args[k].is_sequence() && args[k].sequence.size() != count) {
      return invalid_argument("input {} has {} elements, input 0 has {}", k,
                              args[k].sequence.size(), count);
    }
  }
  std::vector<std::vector<Tensor>> collected(body.outputs.size());
  FRAME_ASSIGN_OR_RETURN(Values inner, enter_body(body, vt, g));
  for (size_t i = 0; i < count; ++i) {
    for (size_t k = 0; k < args.size(); ++k) {
      inner.set(body.inputs[k], args[k].is_sequence() ? args[k].sequence[i] : args[k].tensor,
                false);
    }
    Status st = run_graph(body, sh, inner, ro);
    if (!st.is_ok()) return st.with_prefix(fmt::format("element {}: ", i));
    for (size_t j = 0; j < body.outputs.size(); ++j) {
      FRAME_ASSIGN_OR_RETURN(Tensor t, value_of(inner, body, body.outputs[j]));
      collected[j].push_back(std::move(t));
    }
  }
  for (size_t j = 0; j < body.outputs.size(); ++j) {
    const std::string& o = n.output(static_cast<int>(j));
    if (o.empty()) continue;
    const DTypeCode dt = collected[j].empty() ? body.output_dtypes[j] : collected[j][0].dtype();
    vt.set(o, runtime::Value::of_sequence(std::move(collected[j]), dt), false);
  }
  return Status();
}

std::string type_string(const Tensor& t) {
  return fmt::format("{}{}", dtype_name(t.dtype()), shape_to_string(t.shape()));
}

// Adds a step run outside a compiled stage to the run's profile (when profiling): an eager
// node (`node`) or a folded stage (`node` null), on the cpu kernels or the runner itself.
void profile_step(const runtime::RunOptions& ro, const Step& s, const char* path,
                  std::chrono::steady_clock::time_point start,
                  const std::vector<Tensor>& inputs = {}) {
  if (ro.profile == nullptr) return;
  const int64_t ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start)
          .count();
  runtime::NodeProfile step;
  step.node = s.node != nullptr ? s.node->name() : s.label;
  step.op = s.node != nullptr ? s.node->op_type() : "stage";
  step.backend = "cpu";
  step.path = path;
  for (const Tensor& t : inputs) step.input_types.push_back(type_string(t));
  ro.profile->add_step(step, start, ns);
}

// Runs step `s` of graph `g` (the scope its constants come from).
Status run_step(const Step& s, const Graph& g, const Shared& sh, Values& vt,
                const runtime::RunOptions& ro) {
  if (ro.terminate != nullptr && ro.terminate->load(std::memory_order_relaxed)) {
    return runtime::run_terminated(s.label);
  }
  const auto start = std::chrono::steady_clock::now();
  switch (s.kind) {
    case Step::Kind::kStage: {
      runtime::TensorMap in;
      for (const std::string& name : s.inputs) {
        FRAME_ASSIGN_OR_RETURN(Tensor t, value_of(vt, g, name));
        in.emplace(name, std::move(t));
      }
      if (fold_stage(s, in)) {
        // Small tails (after NMS): computed node by node; falls back to a compile when a
        // node cannot fold (a side effect, a kernel without a cpu form).
        Result<runtime::TensorMap> folded = run_folded(s, g, sh, in);
        if (folded.is_ok()) {
          for (const std::string& name : s.outputs) vt.set(name, folded->at(name), false);
          profile_step(ro, s, "folded", start);
          return Status();
        }
        // Over the session's memory limits: the compile path refuses it with its own error.
      }
      FRAME_ASSIGN_OR_RETURN(runtime::Session session, stage_session(s, g, sh, in));
      // The stage's own nodes join the run's profile; its run is not counted as one.
      std::optional<runtime::Profile> stage_profile;
      runtime::RunOptions stage_ro = ro;
      if (ro.profile != nullptr) stage_ro.profile = &stage_profile.emplace();
      FRAME_ASSIGN_OR_RETURN(runtime::TensorMap out, session.run(in, stage_ro));
      if (stage_profile) ro.profile->merge_steps(*stage_profile);
      for (const std::string& name : s.outputs) vt.set(name, out.at(name), true);
      return Status();
    }
    case Step::Kind::kEager: {
      std::vector<std::string> names;
      std::vector<Tensor> values;
      for (const std::string& name : node_reads(*s.node)) {
        FRAME_ASSIGN_OR_RETURN(Tensor t, value_of(vt, g, name));
        names.push_back(name);
        values.push_back(std::move(t));
      }
      FRAME_ASSIGN_OR_RETURN(std::vector<Tensor> out, evaluate_node(*s.node, names, values, sh));
      for (size_t i = 0; i < s.outputs.size() && i < out.size(); ++i) {
        vt.set(s.outputs[i], out[i], false);
      }
      profile_step(ro, s, "eager", start, values);
      return Status();
    }
    case Step::Kind::kValue: {
      std::vector<std::optional<runtime::Value>> in;
      for (const std::string& name : s.node->input()) {
        if (name.empty()) {
          in.emplace_back();
          continue;
        }
        FRAME_ASSIGN_OR_RETURN(runtime::Value v, any_value_of(vt, g, name));
        in.emplace_back(std::move(v));
      }
      FRAME_ASSIGN_OR_RETURN(std::vector<runtime::Value> out, run_value_op(*s.node, in));
      for (int k = 0; k < s.node->output_size() && static_cast<size_t>(k) < out.size(); ++k) {
        const std::string& o = s.node->output(k);
        // Identity passes a run's own tensor on: still fresh when its input was.
        const bool fresh = is_op(*s.node, "Identity") && vt.fresh.count(s.node->input(0)) > 0;
        if (!o.empty()) vt.set(o, std::move(out[static_cast<size_t>(k)]), fresh);
      }
      profile_step(ro, s, "eager", start);
      return Status();
    }
    case Step::Kind::kIf: {
      FRAME_ASSIGN_OR_RETURN(Tensor cond, value_of(vt, g, s.node->input(0)));
      if (cond.numel() != 1) {
        return invalid_argument("input 0 (cond) must hold one value, got shape {}",
                                shape_to_string(cond.shape()));
      }
      const Graph& branch = *s.bodies[cond.element_as_double(0) != 0.0 ? 0 : 1];
      if (branch.outputs.size() != static_cast<size_t>(s.node->output_size())) {
        return invalid_argument("the branch yields {} values for {} outputs", branch.outputs.size(),
                                s.node->output_size());
      }
      // The branch is a scope of its own: it sees the outer values it reads, and its names
      // never overwrite the enclosing graph's.
      FRAME_ASSIGN_OR_RETURN(Values inner, enter_body(branch, vt, g));
      FRAME_RETURN_IF_ERROR(run_graph(branch, sh, inner, ro));
      for (size_t i = 0; i < branch.outputs.size(); ++i) {
        const std::string& o = s.node->output(static_cast<int>(i));
        if (o.empty()) continue;
        FRAME_ASSIGN_OR_RETURN(runtime::Value v, any_value_of(inner, branch, branch.outputs[i]));
        vt.set(o, std::move(v), inner.fresh.count(branch.outputs[i]) > 0);
      }
      return Status();
    }
    case Step::Kind::kLoop:
      return run_loop(s, g, sh, vt, ro);
    case Step::Kind::kSequenceMap:
      return run_sequence_map(s, g, sh, vt, ro);
  }
  return Status();
}

Status run_graph(const Graph& g, const Shared& sh, Values& vt, const runtime::RunOptions& ro) {
  for (const auto& s : g.steps) {
    Status st = run_step(*s, g, sh, vt, ro);
    if (!st.is_ok()) return st.with_prefix(fmt::format("{}: ", s->label));
  }
  return Status();
}

void add_stats(const Graph& g, runtime::CacheStats& total) {
  for (const auto& s : g.steps) {
    for (const auto& b : s->bodies) add_stats(*b, total);
    std::lock_guard lock(s->mu);
    for (const auto& [sig, session] : s->sessions) {
      const runtime::CacheStats c = session.cache_stats();
      total.entries += c.entries;
      total.bytes += c.bytes;
      total.hits += c.hits;
      total.misses += c.misses;
      total.evictions += c.evictions;
      total.disk_hits += c.disk_hits;
      total.disk_misses += c.disk_misses;
      total.disk_writes += c.disk_writes;
      total.disk_rejected += c.disk_rejected;
      total.tier_ups += c.tier_ups;
      total.interpreted += c.interpreted;
      total.background_compiles += c.background_compiles;
      total.background_tier_ups += c.background_tier_ups;
      total.background_probes += c.background_probes;
      total.retyped_in_place += c.retyped_in_place;
    }
  }
}

void describe(const Graph& g, const std::string& indent, std::vector<std::string>& out) {
  for (const auto& s : g.steps) {
    std::string line = indent + s->label;
    if (s->kind == Step::Kind::kStage) {
      // Boundary sizes and what the stage holds now: folded (small tails) or compiled entries.
      size_t entries = 0;
      {
        std::lock_guard lock(s->mu);
        for (const auto& [sig, session] : s->sessions) entries += session.cache_stats().entries;
      }
      line += fmt::format(" ({} boundary inputs, {} outputs; {}{} specialization{} cached)",
                          s->inputs.size(), s->outputs.size(),
                          s->after_eager ? "folded when small, " : "", entries,
                          entries == 1 ? "" : "s");
    } else {
      line += fmt::format(" ({} inputs, {} outputs)", s->inputs.size(), s->outputs.size());
    }
    out.push_back(std::move(line));
    for (size_t b = 0; b < s->bodies.size(); ++b) {
      out.push_back(indent + (s->kind != Step::Kind::kIf ? "  body:"
                              : b == 0                   ? "  then:"
                                                         : "  else:"));
      describe(*s->bodies[b], indent + "    ", out);
    }
  }
}

const ::onnx::TypeProto_Tensor* inner_type(const ::onnx::TypeProto& t, bool& sequence,
                                           bool& optional, int depth) {
  if (depth > 2) return nullptr;
  if (t.has_tensor_type()) return &t.tensor_type();
  if (t.has_sequence_type() && !sequence && t.sequence_type().has_elem_type()) {
    sequence = true;
    return inner_type(t.sequence_type().elem_type(), sequence, optional, depth + 1);
  }
  if (t.has_optional_type() && !optional && !sequence && t.optional_type().has_elem_type()) {
    optional = true;
    return inner_type(t.optional_type().elem_type(), sequence, optional, depth + 1);
  }
  return nullptr;
}

}  // namespace

const ::onnx::TypeProto_Tensor* inner_tensor_type(const ::onnx::TypeProto& t, bool& sequence,
                                                  bool& optional) {
  return inner_type(t, sequence, optional, 0);
}

std::vector<bool> eager_nodes(const ::onnx::GraphProto& g) { return analyze(g, {}, 0).eager; }

std::set<std::string> eager_node_names(const ::onnx::GraphProto& g) {
  const std::vector<bool> eager = eager_nodes(g);
  std::set<std::string> out;
  for (int i = 0; i < g.node_size(); ++i) {
    if (eager[static_cast<size_t>(i)]) out.insert(g.node(i).name());
  }
  return out;
}

bool is_staged_model(const ::onnx::GraphProto& g) {
  for (const auto* list : {&g.input(), &g.output()}) {
    for (const ::onnx::ValueInfoProto& v : *list) {
      if (kind_of_type(v.type()) != ValueKind::kTensor) return true;
    }
  }
  return analyze(g, {}, 0).any_eager();
}

Result<std::shared_ptr<runtime::StagedRunner>> make_staged_runner(StagedModelParts parts) {
  auto sh = std::make_shared<Shared>();
  sh->model = parts.model;
  sh->dir = std::move(parts.dir);
  sh->load = std::move(parts.load);
  sh->options = std::move(parts.options);
  sh->name = std::move(parts.name);
  // An eager node or folded stage computes its values outside any compiled graph: the same
  // limits a compile applies to one value and to a run hold for each of its nodes.
  sh->fold_limit = std::min({sh->load.max_tensor_bytes, sh->options.compile.max_tensor_bytes,
                             sh->options.compile.max_memory_bytes});
  std::set<std::string> entry;
  for (runtime::ValueInfo& vi : parts.inputs) {
    entry.insert(vi.name);
    sh->declared.emplace(vi.name, std::move(vi));
  }
  Result<std::unique_ptr<Graph>> built =
      build_graph(sh->model->graph(), *sh, entry, 0, nullptr, std::move(parts.initializers), {});
  if (!built.is_ok()) return built.status().with_prefix(sh->name + ": ");
  std::shared_ptr<const Graph> graph = std::move(*built);
  auto runner = std::make_shared<runtime::StagedRunner>();
  runner->run = [sh, graph](const runtime::ValueMap& inputs,
                            const runtime::RunOptions& ro) -> Result<runtime::ValueMap> {
    const auto start = std::chrono::steady_clock::now();
    Values vt;
    for (const auto& [name, v] : inputs) vt.set(name, v, false);
    for (const auto& [name, vi] : sh->declared) {
      if (vi.optional && inputs.count(name) == 0) vt.set(name, runtime::Value::none(), false);
    }
    Status st = run_graph(*graph, *sh, vt, ro);
    if (!st.is_ok()) return st.with_prefix(sh->name + ": ");
    if (ro.profile != nullptr) {
      ro.profile->add_run(std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count());
    }
    runtime::ValueMap out;
    for (size_t k = 0; k < graph->outputs.size(); ++k) {
      const std::string& o = graph->outputs[k];
      FRAME_ASSIGN_OR_RETURN(runtime::Value v, any_value_of(vt, *graph, o));
      // The value must be of the kind the graph declares for the output.
      const ValueKind declared = graph->output_kinds[k];
      const bool fits =
          v.is_none()
              ? (declared == ValueKind::kOptionalTensor || declared == ValueKind::kOptionalSequence)
          : v.is_sequence()
              ? (declared == ValueKind::kSequence || declared == ValueKind::kOptionalSequence)
              : (declared == ValueKind::kTensor || declared == ValueKind::kOptionalTensor);
      if (!fits) {
        return invalid_argument("{}: output '{}' is declared {}, the graph computed {}", sh->name,
                                o, kind_name(declared), v.to_string());
      }
      // A tensor a compiled stage allocated for this run is the caller's; any other may share
      // storage with the model's constants (or the caller's inputs): a copy.
      if (v.is_tensor() && vt.fresh.count(o) == 0) v.tensor = v.tensor.clone();
      for (Tensor& e : v.sequence) e = e.clone();
      out.emplace(o, std::move(v));
    }
    return out;
  };
  runner->stats = [graph]() {
    runtime::CacheStats total;
    add_stats(*graph, total);
    return total;
  };
  runner->describe = [graph]() {
    std::vector<std::string> out;
    describe(*graph, "", out);
    return out;
  };
  return runner;
}

}  // namespace frame::onnx::detail
