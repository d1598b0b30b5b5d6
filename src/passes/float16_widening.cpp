// float16-widening: a float16 node the preferred backend has no f16 kernel for is computed in
// float32 — f16 inputs converted on the way in (constants once, here), outputs converted back
// only where an f16 reader or a graph output needs them — so an f16 model runs on the
// preferred backend's f32 kernels instead of the cpu reference kernels. Values passed between
// two widened nodes stay f32 (docs/architecture/compiler-passes.md "float16-widening").
//
// The decision reads the kernel table only (KernelRegistry::find, KernelDef::dtypes) and the
// schemas (OpSchema::infer with the f32 types, decompose_fn), never an op name (ARCH-043).

#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "frame/ops/kernel_registry.h"
#include "frame/ops/op_registry.h"
#include "passes/pass_factories.h"
#include "passes/pass_util.h"

namespace frame::passes {

namespace {

constexpr int64_t kOnnxFloat = 1;     // TensorProto FLOAT: cast's `to` (the IR keeps ONNX's code)
constexpr int64_t kOnnxFloat16 = 10;  // TensorProto FLOAT16

bool is_f16(const ir::Graph& g, ir::ValueId v) {
  if (v == ir::kNoValue) return false;
  const auto& t = g.value(v).type;
  return t && t->dtype == DTypeCode::kFloat16;
}

ir::TensorType as_f32(ir::TensorType t) {
  t.dtype = DTypeCode::kFloat32;
  return t;
}

// An f16 constant converted to f32 once, at compile time (exact: every f16 is an f32).
Tensor widen_constant(const Tensor& t) {
  Result<Tensor> out = Tensor::zeros(DTypeCode::kFloat32, t.shape());
  const Half* src = t.data<Half>();
  float* dst = out->data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) dst[i] = static_cast<float>(src[i]);
  return std::move(*out);
}

class Float16WideningPass final : public Pass {
 public:
  std::string_view name() const override { return "float16-widening"; }

  Status run(ir::Graph& g, PassContext& ctx) override {
    const std::string backend = ctx.backends.empty() ? "cpu" : ctx.backends.front();
    std::vector<std::string> chain = ctx.backends;
    chain.push_back("cpu");  // lowering's last resort (cpu-fallback)
    FRAME_ASSIGN_OR_RETURN(std::vector<ir::NodeId> order, g.topological_order());
    // Phase 1: which nodes to widen, in topological order (a producer is decided first).
    std::vector<bool> widen(g.num_node_slots(), false);
    std::vector<ir::NodeId> chosen;
    for (ir::NodeId id : order) {
      if (decide(g, g.node(id), backend, chain, widen)) {
        widen[static_cast<size_t>(id)] = true;
        chosen.push_back(id);
      }
    }
    if (chosen.empty()) return Status();
    // Phase 2: rewrite. `twin` maps an f16 value to its f32 form.
    const std::vector<std::vector<ir::NodeId>> readers = g.use_lists();
    std::unordered_map<ir::ValueId, ir::ValueId> twin;
    std::vector<ir::ValueId> old_outputs;  // f16 outputs of the removed nodes
    UseIndex uses(g);
    for (ir::NodeId id : chosen) {
      const ir::Node n = g.node(id);  // a copy: creating nodes may move the storage
      std::vector<ir::ValueId> ins = n.inputs;
      for (ir::ValueId& v : ins) {
        if (!is_f16(g, v)) continue;
        auto it = twin.find(v);
        if (it == twin.end()) {
          FRAME_ASSIGN_OR_RETURN(ir::ValueId w, to_f32(g, v, uses));
          it = twin.emplace(v, w).first;
        }
        v = it->second;
      }
      std::vector<std::string> names;
      for (ir::ValueId o : n.outputs) {
        names.push_back(is_f16(g, o) ? g.unique_value_name(g.value(o).name + "/f32")
                                     : std::string());
      }
      g.remove_node(id);  // releases the node's name and its output names
      for (size_t i = 0; i < names.size(); ++i) {
        if (names[i].empty()) names[i] = g.value(n.outputs[i]).name;
      }
      FRAME_ASSIGN_OR_RETURN(
          ir::NodeId nid,
          g.create_node(n.op, n.name, ins, static_cast<int>(n.outputs.size()), n.attrs, names));
      uses.add_node(g, nid);
      const std::vector<ir::ValueId> outs = g.node(nid).outputs;
      for (size_t i = 0; i < outs.size(); ++i) {
        const ir::ValueId o = n.outputs[i];
        if (is_f16(g, o)) {
          g.value(outs[i]).type = as_f32(*g.value(o).type);
          twin.emplace(o, outs[i]);
          old_outputs.push_back(o);
        } else {
          g.value(outs[i]).type = g.value(o).type;
          uses.replace(g, o, outs[i]);
        }
      }
    }
    // f16 outputs still read by an f16 node or returned by the graph get a cast back, under
    // the original name (so graph outputs keep their names and dtypes).
    for (ir::ValueId o : old_outputs) {
      bool needed = g.is_output(o);
      for (ir::NodeId r : readers[static_cast<size_t>(o)]) {
        needed = needed || !widen[static_cast<size_t>(r)];
      }
      if (!needed) continue;
      // The removed node released the name, so the cast's output takes it over.
      const std::string name = g.value(o).name;
      FRAME_ASSIGN_OR_RETURN(
          ir::NodeId c, g.create_node("cast", g.unique_node_name(name + "/to_f16"), {twin.at(o)}, 1,
                                      {{"to", ir::AttrValue(kOnnxFloat16)}}, {name}));
      uses.add_node(g, c);
      const ir::ValueId cv = g.node(c).outputs[0];
      g.value(cv).type = g.value(o).type;
      uses.replace(g, o, cv);
    }
    g.compact();
    return Status();
  }

 private:
  // True when node `n` is to be computed in f32 (see the file comment).
  static bool decide(const ir::Graph& g, const ir::Node& n, const std::string& backend,
                     const std::vector<std::string>& backends, const std::vector<bool>& widen) {
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n.op);
    if (schema == nullptr) return false;
    for (const auto& [k, a] : n.attrs) {
      if (ir::attr_type_of(a) == ir::AttrType::kGraph) return false;  // bodies keep their own types
    }
    bool f16_out = false, f16_in = false, all_free = true, any_twin = false;
    for (ir::ValueId v : n.outputs) f16_out = f16_out || is_f16(g, v);
    for (ir::ValueId v : n.inputs) {
      if (!is_f16(g, v)) continue;
      f16_in = true;
      const ir::Value& val = g.value(v);
      const bool twin = val.producer >= 0 && widen[static_cast<size_t>(val.producer)];
      any_twin = any_twin || twin;
      all_free = all_free && (twin || val.is_constant());
    }
    if (!f16_in && !f16_out) return false;
    const ops::KernelDef* k = ops::KernelRegistry::global().find(n.op, backend);
    const bool pref_f16 = k != nullptr && k->dtypes.contains(DTypeCode::kFloat16);
    // The preferred backend runs it in f32 with a kernel, or through the decomposition.
    const bool pref_f32 =
        k != nullptr ? k->dtypes.contains(DTypeCode::kFloat32) : schema->decompose_fn() != nullptr;
    bool any_f32 = pref_f32;
    for (const std::string& b : backends) {
      const ops::KernelDef* kb = ops::KernelRegistry::global().find(n.op, b);
      any_f32 = any_f32 || (kb != nullptr && kb->dtypes.contains(DTypeCode::kFloat32));
    }
    if (!any_f32) return false;
    // A node with f16 outputs is widened when the preferred backend runs it in f32 only, or
    // when an input already exists in f32 (so a widened region is not cut by casts, whichever
    // backend then runs it); one with no f16 output (a comparison, argmax) only when that
    // costs no conversion.
    if (f16_out ? !((!pref_f16 && pref_f32) || any_twin) : !all_free) return false;
    // The schema must accept the f32 types and give the same outputs in f32.
    ops::NodeContext c = ops::make_node_context(g, n, schema);
    std::vector<Tensor> widened_constants;
    widened_constants.reserve(n.inputs.size());
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!is_f16(g, n.inputs[i])) continue;
      c.input_types[i] = as_f32(c.input_types[i]);
      if (c.input_constants[i] != nullptr) {
        widened_constants.push_back(widen_constant(*c.input_constants[i]));
        c.input_constants[i] = &widened_constants.back();
      }
    }
    Result<std::vector<ir::TensorType>> out = schema->infer(c);
    if (!out.is_ok() || out->size() != n.outputs.size()) return false;
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      const auto& t = g.value(n.outputs[i]).type;
      if (!t || (*out)[i] != (is_f16(g, n.outputs[i]) ? as_f32(*t) : *t)) return false;
    }
    return true;
  }

  // The f32 form of f16 value `v`: a converted constant, or a cast node.
  static Result<ir::ValueId> to_f32(ir::Graph& g, ir::ValueId v, UseIndex& uses) {
    const std::string base = g.value(v).name + "/f32";
    if (g.value(v).is_constant()) {
      return g.add_constant(g.unique_value_name(base), widen_constant(*g.value(v).constant));
    }
    FRAME_ASSIGN_OR_RETURN(ir::NodeId c, g.create_node("cast", g.unique_node_name(base), {v}, 1,
                                                       {{"to", ir::AttrValue(kOnnxFloat)}},
                                                       {g.unique_value_name(base)}));
    uses.add_node(g, c);
    const ir::ValueId out = g.node(c).outputs[0];
    g.value(out).type = as_f32(*g.value(v).type);
    return out;
  }
};

}  // namespace

std::unique_ptr<Pass> make_float16_widening_pass() {
  return std::make_unique<Float16WideningPass>();
}

}  // namespace frame::passes
