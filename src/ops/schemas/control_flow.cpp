// Control flow (ONNX operator spec "If", "Loop", "Scan"; ADR 0006 decision 5): nodes whose
// graph-valued attributes are bodies. Values a body reads from the enclosing scope are explicit
// node inputs (the trailing `num_captured` inputs) and body inputs (after the formal ones), so
// the enclosing graph's passes see every dependence. Shape inference runs each body's own
// schemas with the node's input types (ops::infer_subgraph); every shape stays static
// (ARCH-044): an If condition or a Loop trip count that decides an output shape must be a
// constant, which run-time specialization provides (ADR 0006).

#include "ops/schemas/control_flow.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "frame/ops/op_registry.h"
#include "frame/ops/op_schema.h"
#include "frame/ops/subgraph.h"
#include "ops/schemas/schema_util.h"

namespace frame::ops {
namespace {

using ir::AttrType;
using Types = Result<std::vector<ir::TensorType>>;
using GraphPtr = std::shared_ptr<const ir::Graph>;

constexpr DTypeSet kI64{DTypeCode::kInt64};

Result<const ir::Graph*> body_attr(const NodeContext& ctx, const char* name) {
  const GraphPtr* g = ctx.attr<GraphPtr>(name);
  if (g == nullptr || *g == nullptr) return ctx.error("attribute '{}' (graph) is missing", name);
  return g->get();
}

std::string types_text(const std::vector<ir::TensorType>& ts) {
  std::string s;
  for (const ir::TensorType& t : ts) s += (s.empty() ? "" : ", ") + t.to_string();
  return "(" + s + ")";
}

// Number of trailing captured inputs; at most `available`.
Result<size_t> num_captured(const NodeContext& ctx, size_t available) {
  const int64_t k = ctx.attr_or<int64_t>(cf::kNumCaptured, 0);
  if (k < 0 || static_cast<size_t>(k) > available) {
    return ctx.error("attribute '{}' is {}, but only {} inputs can be captured values",
                     cf::kNumCaptured, k, available);
  }
  return static_cast<size_t>(k);
}

// The value of a constant one-element input, or nullopt when it is not a constant.
template <typename T>
std::optional<T> constant_scalar(const NodeContext& ctx, size_t i) {
  const Tensor* t = ctx.constant_input(i);
  if (t == nullptr || t->numel() != 1) return std::nullopt;
  return *t->data<T>();
}

Status expect_one_element(const NodeContext& ctx, size_t i, std::string_view name) {
  if (ctx.input_types[i].shape.size() > 1 ||
      (ctx.input_types[i].shape.size() == 1 && ctx.input_types[i].shape[0] != 1)) {
    return ctx.error("input {} ({}) must hold one element, got {}", i, name,
                     ctx.input_types[i].to_string());
  }
  return Status();
}

// ---- if -------------------------------------------------------------------------------------

Types if_infer(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(expect_one_element(ctx, 0, "cond"));
  FRAME_ASSIGN_OR_RETURN(const ir::Graph* then_g, body_attr(ctx, "then_branch"));
  FRAME_ASSIGN_OR_RETURN(const ir::Graph* else_g, body_attr(ctx, "else_branch"));
  // Both branches must match the node's output count whatever cond is (ONNX If): checked on
  // the graphs, before inferring either.
  for (const auto& [g, name] :
       {std::pair{then_g, "then_branch"}, std::pair{else_g, "else_branch"}}) {
    if (g->outputs().size() != ctx.num_outputs) {
      return ctx.error("branch '{}' has {} outputs, the node has {}", name, g->outputs().size(),
                       ctx.num_outputs);
    }
  }
  const std::vector<ir::TensorType> captured(ctx.input_types.begin() + 1, ctx.input_types.end());
  auto branch = [&](const ir::Graph* g, const char* name) -> Types {
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out,
                           infer_subgraph(ctx, name, *g, captured));
    if (out.size() != ctx.num_outputs) {
      return ctx.error("branch '{}' yields {} outputs, the node has {}", name, out.size(),
                       ctx.num_outputs);
    }
    return out;
  };
  // A constant condition selects one branch: only its shapes matter (the other one may even
  // be ill-typed for these inputs, as ONNX allows).
  if (std::optional<bool> c = constant_scalar<bool>(ctx, 0)) {
    return *c ? branch(then_g, "then_branch") : branch(else_g, "else_branch");
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> t, branch(then_g, "then_branch"));
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> e, branch(else_g, "else_branch"));
  if (t != e) {
    return ctx.error(
        "input 0 (cond) must be a constant: the branches yield different types (then_branch "
        "{}, else_branch {}), so the condition decides the output shape (ARCH-044; run-time "
        "specialization binds it, ADR 0006)",
        types_text(t), types_text(e));
  }
  return t;
}

// cond decides a shape only when the branches yield different types (or cannot be compared).
bool if_cond_decides_shape(const NodeContext& ctx, size_t /*i*/) {
  Result<const ir::Graph*> then_g = body_attr(ctx, "then_branch");
  Result<const ir::Graph*> else_g = body_attr(ctx, "else_branch");
  if (!then_g.is_ok() || !else_g.is_ok()) return true;
  const std::vector<ir::TensorType> captured(ctx.input_types.begin() + 1, ctx.input_types.end());
  Types t = infer_subgraph(ctx, "then_branch", **then_g, captured);
  Types e = infer_subgraph(ctx, "else_branch", **else_g, captured);
  return !t.is_ok() || !e.is_ok() || *t != *e;
}

// Copy of `body` whose inputs are one fresh input of type `lead` followed by the body's own
// inputs, typed `input_types` (the node's): the If decomposition's micro-graph (inputs mirror
// the node's inputs). Every node's types are recomputed by its own schema, so the copy is
// right for the node's types even when the body was built for others.
Result<ir::Graph> with_leading_input(const NodeContext& ctx, const ir::Graph& body,
                                     const ir::TensorType& lead,
                                     const std::vector<ir::TensorType>& input_types) {
  ir::Graph m(body.name());
  std::vector<ir::ValueId> map(body.num_values(), ir::kNoValue);
  std::string lead_name = "cond";
  while (body.find_value(lead_name) != ir::kNoValue) lead_name += "_";
  m.add_input(lead_name, lead);
  for (size_t i = 0; i < body.inputs().size(); ++i) {
    const ir::ValueId v = body.inputs()[i];
    map[static_cast<size_t>(v)] = m.add_input(body.value(v).name, input_types[i]);
  }
  for (size_t v = 0; v < body.num_values(); ++v) {
    const ir::Value& val = body.value(static_cast<ir::ValueId>(v));
    if (val.is_constant() && !val.is_graph_input && val.producer < 0) {
      map[v] = m.add_constant(val.name, *val.constant);
    }
  }
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, body.topological_order());
  for (ir::NodeId id : order) {
    const ir::Node& n = body.node(id);
    std::vector<ir::ValueId> ins;
    for (ir::ValueId v : n.inputs)
      ins.push_back(v == ir::kNoValue ? v : map[static_cast<size_t>(v)]);
    std::vector<std::string> outs;
    for (ir::ValueId v : n.outputs) outs.push_back(body.value(v).name);
    FRAME_ASSIGN_OR_RETURN(ir::NodeId nid,
                           m.create_node(n.op, n.name, std::move(ins),
                                         static_cast<int>(n.outputs.size()), n.attrs, outs));
    const OpSchema* schema = OpRegistry::global().find(n.op);
    if (schema == nullptr) return ctx.error("body node '{}' has unknown op '{}'", n.name, n.op);
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> types,
                           schema->infer(make_node_context(m, m.node(nid), schema)));
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      map[static_cast<size_t>(n.outputs[k])] = m.node(nid).outputs[k];
      m.value(m.node(nid).outputs[k]).type = types[k];
    }
  }
  // A branch output that is a branch input (a captured value passed through) or repeats
  // another output gets its own value through an identity node, so the decomposition pass
  // can give it the node's output name (otherwise it would leave the node unexpanded).
  std::vector<bool> used(m.num_values(), false);
  for (ir::ValueId v : body.outputs()) {
    ir::ValueId mv = map[static_cast<size_t>(v)];
    if (m.value(mv).is_graph_input || used[static_cast<size_t>(mv)]) {
      const ir::TensorType t = *m.value(mv).type;
      FRAME_ASSIGN_OR_RETURN(
          ir::NodeId id, m.create_node("identity", m.unique_node_name("pass_through"), {mv}, 1));
      mv = m.node(id).outputs[0];
      m.value(mv).type = t;
      used.resize(m.num_values(), false);
    }
    used[static_cast<size_t>(mv)] = true;
    m.add_output(mv);
  }
  return m;
}

// ARCH-021: an If whose condition is a constant is exactly its selected branch. A run-time
// condition has no micro-graph (kUnimplemented: the node stays and its kernel runs it).
Result<ir::Graph> if_decompose(const NodeContext& ctx) {
  std::optional<bool> c = constant_scalar<bool>(ctx, 0);
  if (!c) return unimplemented("node '{}' (if): the condition is not a constant", ctx.node_name);
  FRAME_ASSIGN_OR_RETURN(const ir::Graph* g, body_attr(ctx, *c ? "then_branch" : "else_branch"));
  const std::vector<ir::TensorType> captured(ctx.input_types.begin() + 1, ctx.input_types.end());
  if (g->inputs().size() != captured.size()) {
    return ctx.error("branch has {} inputs, the node captures {} values", g->inputs().size(),
                     captured.size());
  }
  return with_leading_input(ctx, *g, ctx.input_types[0], captured);
}

// ---- loop -----------------------------------------------------------------------------------

// True when the body's condition output is provably true in every iteration: it is the
// body's condition input passed through (directly or through identity nodes), or a constant
// true. Then a constant true initial condition keeps the loop running for exactly M
// iterations.
bool body_cond_stays_true(const ir::Graph& body) {
  if (body.outputs().empty() || body.inputs().size() < 2) return false;
  ir::ValueId v = body.outputs()[0];
  for (int hops = 0; hops < 64; ++hops) {
    const ir::Value& val = body.value(v);
    if (v == body.inputs()[1]) return true;
    if (val.constant) {
      return val.constant->numel() == 1 && val.constant->dtype() == DTypeCode::kBool &&
             *val.constant->data<bool>();
    }
    if (val.producer < 0) return false;
    const ir::Node& n = body.node(val.producer);
    // identity copies its input's value (ONNX Identity); any other producer may compute false.
    if (n.op != "identity" || n.inputs.size() != 1) return false;
    v = n.inputs[0];
  }
  return false;
}

Types loop_infer(const NodeContext& ctx) {
  FRAME_RETURN_IF_ERROR(expect_one_element(ctx, 0, "M"));
  FRAME_RETURN_IF_ERROR(expect_one_element(ctx, 1, "cond"));
  FRAME_ASSIGN_OR_RETURN(const ir::Graph* body, body_attr(ctx, "body"));
  FRAME_ASSIGN_OR_RETURN(size_t k, num_captured(ctx, ctx.num_inputs() - 2));
  const size_t n_carried = ctx.num_inputs() - 2 - k;
  if (ctx.num_outputs < n_carried) {
    return ctx.error("has {} outputs, fewer than its {} loop-carried values", ctx.num_outputs,
                     n_carried);
  }
  const size_t n_scan = ctx.num_outputs - n_carried;
  std::vector<ir::TensorType> in = {ir::TensorType{DTypeCode::kInt64, {}},
                                    ir::TensorType{DTypeCode::kBool, {}}};
  in.insert(in.end(), ctx.input_types.begin() + 2, ctx.input_types.end());
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out, infer_subgraph(ctx, "body", *body, in));
  if (out.size() != 1 + ctx.num_outputs) {
    return ctx.error(
        "body '{}' yields {} outputs, expected 1 + {} (condition, {} loop-carried, "
        "{} scan outputs)",
        body->name(), out.size(), ctx.num_outputs, n_carried, n_scan);
  }
  if (out[0].dtype != DTypeCode::kBool || out[0].shape.size() > 1 ||
      (out[0].shape.size() == 1 && out[0].shape[0] != 1)) {
    return ctx.error("body '{}' output 0 (condition) must be one bool, got {}", body->name(),
                     out[0].to_string());
  }
  std::vector<ir::TensorType> result;
  for (size_t i = 0; i < n_carried; ++i) {
    if (out[1 + i] != in[2 + i]) {
      return ctx.error(
          "body '{}': loop-carried value '{}' enters iteration 1 as {} but leaves it as {} "
          "(ARCH-044: a loop-carried value must keep its shape across iterations)",
          body->name(), body->value(body->inputs()[2 + i]).name, in[2 + i].to_string(),
          out[1 + i].to_string());
    }
    result.push_back(out[1 + i]);
  }
  if (n_scan == 0) return result;
  // Scan outputs stack one slice per iteration: the iteration count is a static dim only when
  // the loop provably runs exactly M times (or not at all).
  std::optional<int64_t> m = constant_scalar<int64_t>(ctx, 0);
  std::optional<bool> c = constant_scalar<bool>(ctx, 1);
  if (!m) {
    return ctx.error(
        "input 0 (M) must be a constant: the loop has {} scan output(s) whose leading dim is "
        "the trip count (ARCH-044; run-time specialization binds it, ADR 0006)",
        n_scan);
  }
  if (!c) {
    return ctx.error(
        "input 1 (cond) must be a constant: the loop has {} scan output(s) and a false "
        "condition would end it before M iterations (ARCH-044; ADR 0006)",
        n_scan);
  }
  int64_t trips = 0;
  if (*c) {
    if (!body_cond_stays_true(*body)) {
      return ctx.error(
          "body '{}' computes the loop condition, so the number of iterations, and the leading "
          "dim of its {} scan output(s), depends on data (ARCH-044: output shapes must be "
          "static; only a loop whose body passes its condition through, or yields a constant "
          "true, has scan outputs)",
          body->name(), n_scan);
    }
    if (*m == cf::kNoTripCount) {
      return ctx.error(
          "input 0 (M) is {} (INT64_MAX, which is also what an omitted M means: no bound), so "
          "the loop never stops, yet has {} scan output(s)",
          *m, n_scan);
    }
    trips = std::max<int64_t>(0, *m);
  }
  for (size_t j = 0; j < n_scan; ++j) {
    ir::TensorType t = out[1 + n_carried + j];
    t.shape.insert(t.shape.begin(), trips);
    result.push_back(std::move(t));
  }
  return result;
}

// M and cond decide a shape only through scan outputs (their leading dim is the trip count).
bool loop_counts_decide_shape(const NodeContext& ctx, size_t /*i*/) {
  const int64_t k = ctx.attr_or<int64_t>(cf::kNumCaptured, 0);
  const auto n_carried = static_cast<int64_t>(ctx.num_inputs()) - 2 - k;
  return static_cast<int64_t>(ctx.num_outputs) > n_carried;
}

// ---- scan -----------------------------------------------------------------------------------

struct ScanLayout {
  size_t n_state = 0, n_scan_in = 0, n_captured = 0;
  bool batched = false;
  int64_t batch = 0;             // batched: dim 0 of every state and scan input
  int64_t steps = 0;             // the scanned length
  std::vector<int64_t> in_axes;  // per scan input, normalized (batched: 1)
};

Result<ScanLayout> scan_layout(const NodeContext& ctx) {
  ScanLayout l;
  const int64_t m = ctx.attr_or<int64_t>("num_scan_inputs", 0);
  FRAME_ASSIGN_OR_RETURN(l.n_captured, num_captured(ctx, ctx.num_inputs()));
  if (m < 1 || static_cast<size_t>(m) > ctx.num_inputs() - l.n_captured) {
    return ctx.error("attribute 'num_scan_inputs' is {}, expected 1..{}", m,
                     ctx.num_inputs() - l.n_captured);
  }
  l.n_scan_in = static_cast<size_t>(m);
  l.n_state = ctx.num_inputs() - l.n_captured - l.n_scan_in;
  l.batched = ctx.attr_or<int64_t>("batched", 0) != 0;
  const std::vector<int64_t> axes =
      ctx.attr_or<std::vector<int64_t>>("scan_input_axes", std::vector<int64_t>{});
  if (!axes.empty() && axes.size() != l.n_scan_in) {
    return ctx.error("attribute 'scan_input_axes' has {} entries, expected {}", axes.size(),
                     l.n_scan_in);
  }
  // Directions are 0 (forward) or 1 (reverse), one per scan input / output when given.
  for (const auto& [attr, count] :
       {std::pair{"scan_input_directions", l.n_scan_in},
        std::pair{"scan_output_directions",
                  ctx.num_outputs - std::min(ctx.num_outputs, l.n_state)}}) {
    const std::vector<int64_t> d = ctx.attr_or<std::vector<int64_t>>(attr, std::vector<int64_t>{});
    if (!d.empty() && d.size() != count) {
      return ctx.error("attribute '{}' has {} entries, expected {}", attr, d.size(), count);
    }
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] != 0 && d[i] != 1) {
        return ctx.error("attribute '{}' entry {} is {}, expected 0 (forward) or 1 (reverse)", attr,
                         i, d[i]);
      }
    }
  }
  for (size_t i = 0; i < l.n_scan_in; ++i) {
    const size_t pos = l.n_state + i;
    const int64_t rank = ctx.input_types[pos].rank();
    int64_t axis = 0;
    if (l.batched) {
      if (rank < 2)
        return ctx.error("input {} (scan input) needs rank >= 2 (batch, sequence)", pos);
      axis = 1;
    } else {
      FRAME_ASSIGN_OR_RETURN(axis, normalize_axis(ctx, axes.empty() ? 0 : axes[i], rank,
                                                  "attribute 'scan_input_axes'"));
    }
    const int64_t len = ctx.input_types[pos].shape[static_cast<size_t>(axis)];
    if (i == 0) {
      l.steps = len;
    } else if (len != l.steps) {
      return ctx.error("scan input {} has length {} along its scan axis, scan input 0 has {}", i,
                       len, l.steps);
    }
    l.in_axes.push_back(axis);
  }
  if (l.batched) {
    for (size_t pos = 0; pos < l.n_state + l.n_scan_in; ++pos) {
      if (ctx.input_types[pos].rank() < 1) return ctx.error("input {} needs a batch axis", pos);
      const int64_t b = ctx.input_types[pos].shape[0];
      if (pos == 0) l.batch = b;
      if (b != l.batch) {
        return ctx.error("input {} has batch size {}, input 0 has {}", pos, b, l.batch);
      }
    }
  }
  return l;
}

Types scan_infer(const NodeContext& ctx) {
  FRAME_ASSIGN_OR_RETURN(const ir::Graph* body, body_attr(ctx, "body"));
  FRAME_ASSIGN_OR_RETURN(ScanLayout l, scan_layout(ctx));
  std::vector<ir::TensorType> in;
  for (size_t i = 0; i < l.n_state; ++i) {
    ir::TensorType t = ctx.input_types[i];
    if (l.batched) t.shape.erase(t.shape.begin());
    in.push_back(std::move(t));
  }
  for (size_t i = 0; i < l.n_scan_in; ++i) {
    ir::TensorType t = ctx.input_types[l.n_state + i];
    t.shape.erase(t.shape.begin() + l.in_axes[i]);
    if (l.batched) t.shape.erase(t.shape.begin());
    in.push_back(std::move(t));
  }
  in.insert(in.end(), ctx.input_types.end() - static_cast<std::ptrdiff_t>(l.n_captured),
            ctx.input_types.end());
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out, infer_subgraph(ctx, "body", *body, in));
  if (out.size() != ctx.num_outputs || out.size() < l.n_state) {
    return ctx.error("body '{}' yields {} outputs, the node has {} ({} state variables)",
                     body->name(), out.size(), ctx.num_outputs, l.n_state);
  }
  std::vector<ir::TensorType> result;
  for (size_t i = 0; i < l.n_state; ++i) {
    if (out[i] != in[i]) {
      return ctx.error(
          "body '{}': state variable '{}' enters iteration 1 as {} but leaves it as {} "
          "(ARCH-044: a loop-carried value must keep its shape across iterations)",
          body->name(), body->value(body->inputs()[i]).name, in[i].to_string(), out[i].to_string());
    }
    result.push_back(ctx.input_types[i]);
  }
  const size_t n_scan_out = out.size() - l.n_state;
  const std::vector<int64_t> out_axes =
      ctx.attr_or<std::vector<int64_t>>("scan_output_axes", std::vector<int64_t>{});
  if (!out_axes.empty() && out_axes.size() != n_scan_out) {
    return ctx.error("attribute 'scan_output_axes' has {} entries, expected {}", out_axes.size(),
                     n_scan_out);
  }
  for (size_t j = 0; j < n_scan_out; ++j) {
    ir::TensorType t = out[l.n_state + j];
    if (l.batched) {
      t.shape.insert(t.shape.begin(), {l.batch, l.steps});
    } else {
      FRAME_ASSIGN_OR_RETURN(int64_t axis,
                             normalize_axis(ctx, out_axes.empty() ? 0 : out_axes[j], t.rank() + 1,
                                            "attribute 'scan_output_axes'"));
      t.shape.insert(t.shape.begin() + axis, l.steps);
    }
    result.push_back(std::move(t));
  }
  return result;
}

OpSchemaBuilder& cf_outputs(OpSchemaBuilder& b, bool first_required) {
  if (first_required) {
    b.output("outputs_0", "first output");
  } else {
    b.optional_output("outputs_0", "first output");
  }
  for (int i = 1; i < cf::kMaxOutputs; ++i) {
    b.optional_output(fmt::format("outputs_{}", i), "next output");
  }
  return b;
}

}  // namespace

[[maybe_unused]] static OpRegistration if_registration = cf_outputs(
    OpSchemaBuilder("if", __FILE__, __LINE__)
        .doc("ONNX If (opsets 1-21, operator spec 'If'): runs then_branch when cond is true, "
             "else else_branch; outputs are the branch's outputs. Both branches read the "
             "trailing captured inputs (values of the enclosing scope, explicit in frame). Both "
             "branches must yield the same types unless cond is a constant (ARCH-044); a "
             "constant cond decomposes to its branch (ARCH-021).")
        .input("cond", "one bool: which branch runs", kBoolDType)
        .shape_determining()
        .variadic_input("captured",
                        "values of the enclosing scope the branches read; each branch's graph "
                        "inputs are exactly these, in this order",
                        0)
        .required_attr("then_branch", AttrType::kGraph, "graph run when cond is true")
        .required_attr("else_branch", AttrType::kGraph, "graph run when cond is false")
        .shape_determining_when(if_cond_decides_shape)
        .shape_infer(if_infer)
        .decomposition(if_decompose),
    true);

[[maybe_unused]] static OpRegistration loop_registration = cf_outputs(
    OpSchemaBuilder("loop", __FILE__, __LINE__)
        .doc("ONNX Loop (opsets 1-21, operator spec 'Loop'): runs body while i < M and cond; "
             "outputs are the final loop-carried values, then the scan outputs stacked along a "
             "new leading axis (one slice per iteration). Body inputs: iteration number (i64 "
             "scalar), condition (bool scalar), the loop-carried values, then the captured "
             "values; body outputs: condition, carried values, scan-output slices. With scan "
             "outputs, M and cond must be constants and the body must pass its condition "
             "through (ARCH-044).")
        .input("M", "one i64: the trip count (INT64_MAX when ONNX omits it)", kI64)
        .shape_determining()
        .input("cond", "one bool: the initial condition (true when ONNX omits it)", kBoolDType)
        .shape_determining()
        .variadic_input("inputs",
                        "initial loop-carried values, then the trailing `num_captured` values "
                        "of the enclosing scope the body reads",
                        0)
        .required_attr("body", AttrType::kGraph, "the loop body")
        .attr(cf::kNumCaptured, AttrType::kInt,
              "number of trailing inputs that are captured values", int64_t{0})
        .shape_determining_when(loop_counts_decide_shape)
        .shape_infer(loop_infer),
    false);

[[maybe_unused]] static OpRegistration scan_registration = cf_outputs(
    OpSchemaBuilder("scan", __FILE__, __LINE__)
        .doc("ONNX Scan (opsets 8-21, operator spec 'Scan'): iterates body over slices of the "
             "scan inputs along their scan axes (reversed where a direction is 1), threading "
             "the state variables; outputs are the final states, then the scan outputs "
             "stacked along their scan axes. Inputs: initial states, `num_scan_inputs` scan "
             "inputs, then `num_captured` captured values; body inputs: states, one slice per "
             "scan input, captured values; body outputs: states, scan-output slices. "
             "`batched` = 1 is the opset-8 form: dim 0 of every input and output is a batch "
             "axis iterated independently, scan inputs and outputs scan along axis 1.")
        .variadic_input("inputs",
                        "initial states, scan inputs, then the captured values of the "
                        "enclosing scope",
                        1)
        .required_attr("body", AttrType::kGraph, "the scan body")
        .required_attr("num_scan_inputs", AttrType::kInt, "number of scan inputs (>= 1)")
        .optional_attr("scan_input_axes", AttrType::kInts, "per scan input, its scan axis (0)")
        .optional_attr("scan_input_directions", AttrType::kInts,
                       "per scan input, 0 = forward, 1 = reverse (0)")
        .optional_attr("scan_output_axes", AttrType::kInts,
                       "per scan output, the axis its slices stack along (0)")
        .optional_attr("scan_output_directions", AttrType::kInts,
                       "per scan output, 0 = append, 1 = prepend (0)")
        .attr("batched", AttrType::kInt, "1 = ONNX opset-8 form with a leading batch axis",
              int64_t{0})
        .attr(cf::kNumCaptured, AttrType::kInt,
              "number of trailing inputs that are captured values", int64_t{0})
        .shape_infer(scan_infer),
    false);

}  // namespace frame::ops
