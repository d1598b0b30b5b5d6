#pragma once
/// \file
/// Op definitions (op spec §1–3): the closed `OpTrait` enum (ARCH-043), `NodeContext`
/// (read-only view of a node for shape inference, decomposition and kernels), `OpSchema`,
/// and the `FRAME_REGISTER_OP(name)` builder.

#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/ir/types.h"

namespace frame::ops {

/// What passes may assume about an op (op spec §2). Closed: exactly these four members
/// (ARCH-043, checked by scripts/check_iron_rules.sh). Passes ask traits, never op names.
enum class OpTrait : uint8_t {
  kElementwise,    // output shape = broadcast input shape, no cross-element dependence
  kFusable,        // operator-fusion may merge it into a fused group
  kHasSideEffect,  // never removed, merged or reordered by CSE/DCE/folding
  kCommutative,    // inputs may be swapped (CSE normalisation)
};
inline constexpr int kNumOpTraits = 4;
/// "elementwise", "fusable", "has_side_effect", "commutative".
std::string_view op_trait_name(OpTrait t);

class OpSchema;

/// Read-only view of one node (op spec §3). `attrs` is borrowed and valid only during the
/// call that received the context. `attr<T>` falls back to the schema's declared default.
struct NodeContext {
  std::string_view op;
  std::string_view node_name;
  /// Per input position; entries for absent optional inputs are default-constructed.
  std::vector<ir::TensorType> input_types;
  /// Per input position: true if the input is connected (false = absent optional input).
  std::vector<bool> input_present;
  /// Per input position: the value if the input is a constant (initializer), else nullptr.
  /// Borrowed like `attrs`.
  std::vector<const Tensor*> input_constants;
  const std::unordered_map<std::string, ir::AttrValue>* attrs = nullptr;
  const OpSchema* schema = nullptr;
  /// Number of outputs the node has (ops with optional trailing outputs, e.g. split, may
  /// have fewer than declared). Shape functions return exactly this many types.
  size_t num_outputs = 1;
  /// Compile tier hint (docs/adr/0007-first-seen-shapes.md): the node is compiled for a
  /// first-seen shape key of a Session, so a kernel should prefer prepared state that serves
  /// every size of its row/batch dims (built once, reused by the next key) over the fastest
  /// state for exactly these sizes. A kernel may ignore it; results must not depend on it.
  bool prefer_shape_agnostic = false;
  /// Set where the node is prepared for one run only (a Session's interpreted tier, ADR 0007
  /// stage C; prefer_shape_agnostic is set too): a kernel may skip prepared state that only
  /// repeated runs earn back, such as JIT code for exactly these sizes (the onednn conv then
  /// builds no primitive). A kernel may ignore it; results must not depend on it.
  bool run_once = false;
  /// Set where a kernel's `accepts` is followed at once by its `prepare` on this same context
  /// (the interpreted tier, with run_once), else null. An `accepts` that has built the
  /// prepared state anyway may leave it here, and `prepare` may take it instead of building it
  /// again (the onednn matmul: its descriptor and primitive, ~3% of a small encoder's
  /// interpreted run). The caller clears it before each `accepts`; only the kernel that put it
  /// there reads it.
  std::shared_ptr<void>* accepted_state = nullptr;

  size_t num_inputs() const { return input_types.size(); }
  bool has_input(size_t i) const { return i < input_present.size() && input_present[i]; }
  const Tensor* constant_input(size_t i) const {
    return i < input_constants.size() ? input_constants[i] : nullptr;
  }
  /// Attribute `name` of type T (int64_t, double, std::string, std::vector<int64_t>,
  /// std::vector<double>, std::vector<std::string>, Tensor, std::shared_ptr<const ir::Graph>):
  /// the node's value, else the schema default, else nullptr (missing or other type).
  template <typename T>
  const T* attr(std::string_view name) const;
  /// attr<T>(name) or `fallback` when absent.
  template <typename T>
  T attr_or(std::string_view name, T fallback) const {
    const T* p = attr<T>(name);
    return p ? *p : fallback;
  }
  /// Error prefixed with "node '<name>' (<op>): " (docs/architecture/op-registration.md error
  /// policy).
  template <typename... Args>
  Status error(fmt::format_string<Args...> f, Args&&... args) const {
    return Status(StatusCode::kInvalidArgument, fmt::format("node '{}' ({}): ", node_name, op) +
                                                    fmt::format(f, std::forward<Args>(args)...));
  }
};

/// Builds a NodeContext for node `n` of `g` (types from values; constants from initializers).
/// `schema` may be null. Values without a type get a default TensorType.
NodeContext make_node_context(const ir::Graph& g, const ir::Node& n, const OpSchema* schema);
/// make_node_context into `ctx`, every field set as it sets them (hints false, no
/// accepted_state), reusing the storage of ctx's vectors: a loop over many nodes (the
/// interpreted tier, a re-typing) allocates nothing per node once warm.
void fill_node_context(const ir::Graph& g, const ir::Node& n, const OpSchema* schema,
                       NodeContext& ctx);

/// Output types of a node from its input types and attrs. Must return an error when a dim
/// cannot be determined statically (ARCH-044), never an unknown dim.
using ShapeInferFn = Result<std::vector<ir::TensorType>> (*)(const NodeContext&);
/// Equivalent pure micro-graph: graph inputs = the op's inputs in order, graph outputs = its
/// outputs in order (op spec §3, ARCH-021). Used by the decomposition pass and by the
/// runtime fallback chain (M10).
using DecomposeFn = Result<ir::Graph> (*)(const NodeContext&);
/// For a schema whose shape-determining inputs decide output shapes only in some nodes (an If
/// whose branches differ in shape, a Loop with scan outputs): true if input `i` of this node
/// decides an output shape. Must be conservative (true when unsure). ADR 0006.
using ShapeDeterminingFn = bool (*)(const NodeContext&, size_t i);

/// One declared input or output.
struct ArgSpec {
  std::string name;
  std::string doc;
  DTypeSet dtypes = kAllDTypes;  ///< allowed dtypes
  std::string type_var;          ///< inputs/outputs sharing a non-empty label share a dtype
  bool optional = false;
  /// Inputs only: the input's VALUES decide an output shape (Reshape's shape, Slice's starts,
  /// TopK's K, ...), so the shape function rejects it unless it is a constant (ARCH-044).
  /// Not an OpTrait (ARCH-043); read by the shape-determining-input classification
  /// (docs/adr/0006-run-time-specialization.md).
  bool shape_determining = false;
};

/// One declared attribute.
struct AttrSpec {
  std::string name;
  ir::AttrType type = ir::AttrType::kInt;
  std::string doc;
  bool required = false;
  std::optional<ir::AttrValue> default_value;
};

/// Definition of an op: backend independent, globally unique by name (op spec §1).
class OpSchema {
 public:
  const std::string& name() const { return name_; }
  const std::string& doc() const { return doc_; }
  const std::vector<ArgSpec>& inputs() const { return inputs_; }
  const std::vector<ArgSpec>& outputs() const { return outputs_; }
  /// The trailing variadic input group, if any (M9).
  const std::optional<ArgSpec>& variadic() const { return variadic_; }
  int variadic_min_count() const { return variadic_min_; }
  bool has_variadic_inputs() const { return variadic_.has_value(); }
  /// Required fixed inputs + the variadic group's min_count (M9).
  int min_input_count() const;
  /// Fixed inputs incl. optional ones; -1 when unbounded (variadic).
  int max_input_count() const;
  /// Spec of input position i (the variadic spec for positions past the fixed ones), or null.
  const ArgSpec* input_spec(size_t i) const;
  /// True if the values of input position `i` decide an output shape
  /// (ArgSpec::shape_determining; ADR 0006, ARCH-044). False for positions past the declared
  /// inputs.
  bool is_shape_determining(size_t i) const;
  /// is_shape_determining(i), narrowed by the schema's ShapeDeterminingFn for this node when
  /// it has one (OpSchemaBuilder::shape_determining_when). Used by the classification of
  /// shape-determining graph inputs (ADR 0006).
  bool decides_shape(const NodeContext& ctx, size_t i) const;
  const std::vector<AttrSpec>& attrs() const { return attrs_; }
  const AttrSpec* find_attr(std::string_view name) const;
  bool has_trait(OpTrait t) const { return traits_.test(static_cast<size_t>(t)); }
  std::vector<OpTrait> traits() const;
  ShapeInferFn shape_fn() const { return shape_fn_; }
  DecomposeFn decompose_fn() const { return decompose_fn_; }
  /// Input position whose bytes output 0 holds unchanged, in the same order (a view: reshape,
  /// flatten, squeeze, unsqueeze), or -1. memory-planning may then give output 0 that input's
  /// buffer when this node is the input's last reader, and the kernel copies nothing (ONNX
  /// Runtime's alias hint; an in-place hint that needs no kElementwise trait).
  int view_of_input() const { return view_of_input_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }

  /// V4 check of a node against this schema (arity, required attrs, attr types, undeclared
  /// attrs). Message without the "V4: " prefix, e.g. "node 'n' (relu): expects 1 input, got 2".
  Status check_node(const ir::Node& node) const;
  /// Checks each present input's dtype against its allowed set and type-variable agreement.
  /// Message: "node 'n' (add): input 1 (B) has dtype i64, expected f32 like input 0 (A)".
  Status check_input_types(const NodeContext& ctx) const;
  /// Required (non-optional) outputs; a node has between this and outputs().size() outputs.
  int min_output_count() const;
  /// check_input_types, then the shape function; checks it returned ctx.num_outputs types.
  Result<std::vector<ir::TensorType>> infer(const NodeContext& ctx) const;

 private:
  friend class OpSchemaBuilder;
  std::string name_;
  std::string doc_;
  std::vector<ArgSpec> inputs_;
  std::optional<ArgSpec> variadic_;
  int variadic_min_ = 0;
  std::vector<ArgSpec> outputs_;
  std::vector<AttrSpec> attrs_;
  std::bitset<kNumOpTraits> traits_;
  ShapeInferFn shape_fn_ = nullptr;
  DecomposeFn decompose_fn_ = nullptr;
  ShapeDeterminingFn shape_determining_fn_ = nullptr;
  int view_of_input_ = -1;
  std::string file_;
  int line_ = 0;
};

/// Fluent builder behind FRAME_REGISTER_OP. Misuse (variadic rules of M9, bad arg order)
/// is fatal at once, through the same exit as OpRegistry::register_op (ARCH-040).
class OpSchemaBuilder {
 public:
  OpSchemaBuilder(std::string name, const char* file, int line);
  OpSchemaBuilder& doc(std::string d);
  /// A required input. `type_var` ties dtypes of args with the same label (ONNX "T").
  OpSchemaBuilder& input(std::string name, std::string doc, DTypeSet dtypes = kAllDTypes,
                         std::string type_var = "");
  /// An optional input; all optional inputs follow all required ones.
  OpSchemaBuilder& optional_input(std::string name, std::string doc, DTypeSet dtypes = kAllDTypes,
                                  std::string type_var = "");
  /// The trailing variadic group (M9): at most one, after every fixed input, min_count >= 0,
  /// not combined with optional inputs.
  OpSchemaBuilder& variadic_input(std::string name, std::string doc, int min_count,
                                  DTypeSet dtypes = kAllDTypes, std::string type_var = "");
  /// Marks the input declared just before as shape-determining: its values decide an output
  /// shape, so the shape function requires it to be a constant (ArgSpec::shape_determining;
  /// ADR 0006, ARCH-044). E.g. `.input("shape", "...", kI64).shape_determining()`. Fatal when
  /// no input was declared yet or an output was declared after the last input.
  OpSchemaBuilder& shape_determining();
  /// Narrows the shape-determining inputs per node (ShapeDeterminingFn): e.g. an If's `cond`
  /// decides a shape only when its branches yield different types. Inputs stay marked with
  /// shape_determining(); this only says when a marked input does not matter.
  OpSchemaBuilder& shape_determining_when(ShapeDeterminingFn fn);
  OpSchemaBuilder& output(std::string name, std::string doc, DTypeSet dtypes = kAllDTypes,
                          std::string type_var = "");
  /// An optional output; all optional outputs follow all required ones. A node may omit
  /// trailing optional outputs (ONNX optional outputs, e.g. max_pool Indices, split).
  OpSchemaBuilder& optional_output(std::string name, std::string doc, DTypeSet dtypes = kAllDTypes,
                                   std::string type_var = "");
  /// An optional attribute with a default.
  OpSchemaBuilder& attr(std::string name, ir::AttrType type, std::string doc,
                        ir::AttrValue default_value);
  /// An optional attribute without a default (absent unless given).
  OpSchemaBuilder& optional_attr(std::string name, ir::AttrType type, std::string doc);
  OpSchemaBuilder& required_attr(std::string name, ir::AttrType type, std::string doc);
  OpSchemaBuilder& traits(std::initializer_list<OpTrait> ts);
  OpSchemaBuilder& shape_infer(ShapeInferFn fn);
  OpSchemaBuilder& decomposition(DecomposeFn fn);
  /// Declares output 0 a view of input `input` (OpSchema::view_of_input). Fatal unless
  /// `input` is a declared fixed input and the schema has exactly one output.
  OpSchemaBuilder& view_of_input(int input);
  /// Applies `add(*this)`: a block of declarations several schemas share (e.g. the window
  /// attributes of conv and pool) written once, in declaration order. `add` takes an
  /// OpSchemaBuilder&; its misuse is fatal like the calls it makes.
  template <typename F>
  OpSchemaBuilder& with(F&& add) {
    add(*this);
    return *this;
  }
  /// The finished schema (moves out of the builder).
  OpSchema build();
  const std::string& name() const { return schema_.name_; }

 private:
  // Fatal (ARCH-040), except while a plugin loads: then the batch records it and returns.
  void fail(std::string_view violation) const;
  OpSchema schema_;
};

/// Registers the builder's schema on construction (static-init time).
class OpRegistration {
 public:
  OpRegistration(OpSchemaBuilder& b);   // NOLINT(google-explicit-constructor)
  OpRegistration(OpSchemaBuilder&& b);  // NOLINT(google-explicit-constructor)
};

template <typename T>
const T* NodeContext::attr(std::string_view name) const {
  static_assert(ir::kAttrIndex<T> >= 0, "unsupported attribute type");
  if (attrs != nullptr) {
    auto it = attrs->find(std::string(name));
    if (it != attrs->end()) return std::get_if<T>(&it->second);
  }
  if (schema != nullptr) {
    if (const AttrSpec* spec = schema->find_attr(name); spec && spec->default_value) {
      return std::get_if<T>(&*spec->default_value);
    }
  }
  return nullptr;
}

}  // namespace frame::ops

/// Registers an op at static-init time: `FRAME_REGISTER_OP(relu).input(...).output(...)...;`
/// `name` is an identifier token; it must match ^[a-z][a-z0-9_]*$ (ARCH-040).
#define FRAME_REGISTER_OP(name)                                                             \
  [[maybe_unused]] static ::frame::ops::OpRegistration FRAME_CONCAT(frame_op_registration_, \
                                                                    __COUNTER__) =          \
      ::frame::ops::OpSchemaBuilder(#name, __FILE__, __LINE__)
