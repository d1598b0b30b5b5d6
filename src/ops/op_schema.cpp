#include "frame/ops/op_schema.h"

#include <algorithm>
#include <exception>

#include "frame/ops/op_registry.h"
#include "frame/ops/registration_batch.h"

namespace frame::ops {

std::string_view op_trait_name(OpTrait t) {
  switch (t) {
    case OpTrait::kElementwise:
      return "elementwise";
    case OpTrait::kFusable:
      return "fusable";
    case OpTrait::kHasSideEffect:
      return "has_side_effect";
    case OpTrait::kCommutative:
      return "commutative";
  }
  return "unknown";
}

NodeContext make_node_context(const ir::Graph& g, const ir::Node& n, const OpSchema* schema) {
  NodeContext ctx;
  fill_node_context(g, n, schema, ctx);
  return ctx;
}

void fill_node_context(const ir::Graph& g, const ir::Node& n, const OpSchema* schema,
                       NodeContext& ctx) {
  ctx.op = n.op;
  ctx.node_name = n.name;
  ctx.attrs = &n.attrs;
  ctx.schema = schema;
  ctx.num_outputs = n.outputs.size();
  ctx.prefer_shape_agnostic = false;
  ctx.run_once = false;
  ctx.accepted_state = nullptr;
  const size_t count = n.inputs.size();
  ctx.input_types.resize(count);
  ctx.input_present.assign(count, false);
  ctx.input_constants.assign(count, nullptr);
  for (size_t i = 0; i < count; ++i) {
    const ir::ValueId v = n.inputs[i];
    if (v == ir::kNoValue) {
      ctx.input_types[i].dtype = DTypeCode::kFloat32;
      ctx.input_types[i].shape.clear();
      continue;
    }
    const ir::Value& val = g.value(v);
    ctx.input_present[i] = true;
    if (val.type) {
      ctx.input_types[i] = *val.type;  // assigns into the element's shape storage
    } else {
      ctx.input_types[i].dtype = DTypeCode::kFloat32;
      ctx.input_types[i].shape.clear();
    }
    if (val.constant) ctx.input_constants[i] = &*val.constant;
  }
}

int OpSchema::min_input_count() const {
  int n = 0;
  for (const ArgSpec& a : inputs_) n += a.optional ? 0 : 1;
  return n + (variadic_ ? variadic_min_ : 0);
}

int OpSchema::max_input_count() const { return variadic_ ? -1 : static_cast<int>(inputs_.size()); }

int OpSchema::min_output_count() const {
  int n = 0;
  for (const ArgSpec& a : outputs_) n += a.optional ? 0 : 1;
  return n;
}

const ArgSpec* OpSchema::input_spec(size_t i) const {
  if (i < inputs_.size()) return &inputs_[i];
  return variadic_ ? &*variadic_ : nullptr;
}

bool OpSchema::is_shape_determining(size_t i) const {
  const ArgSpec* spec = input_spec(i);
  return spec != nullptr && spec->shape_determining;
}

bool OpSchema::decides_shape(const NodeContext& ctx, size_t i) const {
  if (!is_shape_determining(i)) return false;
  return shape_determining_fn_ == nullptr || shape_determining_fn_(ctx, i);
}

const AttrSpec* OpSchema::find_attr(std::string_view name) const {
  for (const AttrSpec& a : attrs_) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::vector<OpTrait> OpSchema::traits() const {
  std::vector<OpTrait> out;
  for (int i = 0; i < kNumOpTraits; ++i) {
    if (traits_.test(static_cast<size_t>(i))) out.push_back(static_cast<OpTrait>(i));
  }
  return out;
}

namespace {
std::string plural(int n, std::string_view word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}
}  // namespace

Status OpSchema::check_node(const ir::Node& node) const {
  auto where = [&] { return fmt::format("node '{}' ({})", node.name, name_); };
  const int n_in = static_cast<int>(node.inputs.size());
  const int min_in = min_input_count();
  const int max_in = max_input_count();
  if (n_in < min_in || (max_in >= 0 && n_in > max_in)) {
    std::string expect = max_in < 0         ? fmt::format("at least {}", plural(min_in, "input"))
                         : min_in == max_in ? plural(min_in, "input")
                                            : fmt::format("{} to {} inputs", min_in, max_in);
    return invalid_argument("{}: expects {}, got {}", where(), expect, n_in);
  }
  for (int i = 0; i < n_in; ++i) {
    const ArgSpec* spec = input_spec(static_cast<size_t>(i));
    if (node.inputs[static_cast<size_t>(i)] == ir::kNoValue && !(spec && spec->optional)) {
      return invalid_argument("{}: input {} ({}) is required but absent", where(), i,
                              spec ? spec->name : "?");
    }
  }
  const int n_out = static_cast<int>(node.outputs.size());
  const int min_out = min_output_count(), max_out = static_cast<int>(outputs_.size());
  if (n_out < min_out || n_out > max_out) {
    std::string expect = min_out == max_out ? plural(min_out, "output")
                                            : fmt::format("{} to {} outputs", min_out, max_out);
    return invalid_argument("{}: expects {}, got {}", where(), expect, n_out);
  }
  for (const AttrSpec& a : attrs_) {
    auto it = node.attrs.find(a.name);
    if (it == node.attrs.end()) {
      if (a.required) {
        return invalid_argument("{}: required attribute '{}' ({}) is missing", where(), a.name,
                                ir::attr_type_name(a.type));
      }
      continue;
    }
    if (ir::attr_type_of(it->second) != a.type) {
      return invalid_argument("{}: attribute '{}' expects type {}, got {}", where(), a.name,
                              ir::attr_type_name(a.type),
                              ir::attr_type_name(ir::attr_type_of(it->second)));
    }
  }
  // Report undeclared attributes in name order so the message is deterministic.
  std::vector<std::string> unknown;
  for (const auto& [k, v] : node.attrs) {
    if (find_attr(k) == nullptr) unknown.push_back(k);
  }
  if (!unknown.empty()) {
    std::sort(unknown.begin(), unknown.end());
    return invalid_argument("{}: undeclared attribute '{}'", where(), unknown.front());
  }
  return Status();
}

Status OpSchema::check_input_types(const NodeContext& ctx) const {
  // type_var -> (input index, dtype) of the first present arg carrying it.
  std::vector<std::pair<const ArgSpec*, size_t>> first_of_var;
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    const ArgSpec* spec = input_spec(i);
    if (spec == nullptr) continue;
    DTypeCode d = ctx.input_types[i].dtype;
    if (!spec->dtypes.contains(d)) {
      return ctx.error("input {} ({}) has dtype {}, expected one of {}", i, spec->name,
                       dtype_name(d), dtype_set_to_string(spec->dtypes));
    }
    if (spec->type_var.empty()) continue;
    auto it = std::find_if(first_of_var.begin(), first_of_var.end(),
                           [&](const auto& p) { return p.first->type_var == spec->type_var; });
    if (it == first_of_var.end()) {
      first_of_var.emplace_back(spec, i);
    } else if (ctx.input_types[it->second].dtype != d) {
      return ctx.error("input {} ({}) has dtype {}, expected {} like input {} ({})", i, spec->name,
                       dtype_name(d), dtype_name(ctx.input_types[it->second].dtype), it->second,
                       it->first->name);
    }
  }
  return Status();
}

namespace {
// The output types a shape function returned: each declared output's dtype is in its allowed
// set and agrees with its type variable (the inputs and earlier outputs carrying it).
Status check_output_types(const OpSchema& op, const NodeContext& ctx,
                          const std::vector<ir::TensorType>& out) {
  const std::vector<ArgSpec>& outputs = op.outputs();
  // A shape function (a plugin's, say) must not give an output a dtype its schema forbids:
  // kernels size and type their writes by the declared dtypes.
  for (size_t i = 0; i < out.size() && i < outputs.size(); ++i) {
    const ArgSpec& spec = outputs[i];
    const DTypeCode d = out[i].dtype;
    if (!spec.dtypes.contains(d)) {
      return ctx.error("the shape function gives output {} ({}) dtype {}, but the schema allows {}",
                       i, spec.name, dtype_name(d), dtype_set_to_string(spec.dtypes));
    }
    if (spec.type_var.empty()) continue;
    for (size_t k = 0; k < ctx.num_inputs(); ++k) {
      const ArgSpec* in = op.input_spec(k);
      if (!ctx.has_input(k) || in == nullptr || in->type_var != spec.type_var) continue;
      if (ctx.input_types[k].dtype != d) {
        return ctx.error(
            "the shape function gives output {} ({}) dtype {}, but type {} is {} (input {}, {})", i,
            spec.name, dtype_name(d), spec.type_var, dtype_name(ctx.input_types[k].dtype), k,
            in->name);
      }
      break;
    }
    for (size_t j = 0; j < i; ++j) {
      if (outputs[j].type_var == spec.type_var && out[j].dtype != d) {
        return ctx.error(
            "the shape function gives output {} ({}) dtype {}, but type {} is {} (output {}, {})",
            i, spec.name, dtype_name(d), spec.type_var, dtype_name(out[j].dtype), j,
            outputs[j].name);
      }
    }
  }
  return Status();
}
}  // namespace

Result<std::vector<ir::TensorType>> OpSchema::infer(const NodeContext& ctx) const {
  FRAME_RETURN_IF_ERROR(check_input_types(ctx));
  if (shape_fn_ == nullptr) return ctx.error("op has no shape function (ARCH-041)");
  // Shape functions may come from plugins; an exception must not cross frame's API.
  Result<std::vector<ir::TensorType>> inferred = [&]() -> Result<std::vector<ir::TensorType>> {
    try {
      return shape_fn_(ctx);
    } catch (const std::exception& e) {
      return ctx.error("the shape function threw an exception: {}", e.what());
    } catch (...) {
      return ctx.error("the shape function threw an exception");
    }
  }();
  FRAME_ASSIGN_OR_RETURN(std::vector<ir::TensorType> out, std::move(inferred));
  if (out.size() != ctx.num_outputs) {
    return internal_error("node '{}' ({}): shape function returned {} types for {} outputs",
                          ctx.node_name, name_, out.size(), ctx.num_outputs);
  }
  FRAME_RETURN_IF_ERROR(check_output_types(*this, ctx, out));
  for (size_t i = 0; i < out.size(); ++i) {
    Result<size_t> bytes = checked_nbytes(out[i].dtype, out[i].shape);
    if (!bytes.is_ok() && bytes.status().code() == StatusCode::kOutOfRange) {
      return ctx.error("output {} {}{} is too large: {}", i, dtype_name(out[i].dtype),
                       shape_to_string(out[i].shape), bytes.status().message());
    }
    for (int64_t d : out[i].shape) {
      if (d < 0) {
        return ctx.error(
            "output {} has undetermined dim in shape {} (ARCH-044: shapes must be "
            "static)",
            i, shape_to_string(out[i].shape));
      }
    }
  }
  return out;
}

OpSchemaBuilder::OpSchemaBuilder(std::string name, const char* file, int line) {
  schema_.name_ = std::move(name);
  schema_.file_ = file;
  schema_.line_ = line;
}

void OpSchemaBuilder::fail(std::string_view violation) const {
  if (RegistrationBatch* batch = collecting_batch()) {  // a plugin: an error, not an abort
    if (batch->fault.empty()) {
      batch->fault = fmt::format("op '{}': {} (registered at {}:{})", schema_.name_, violation,
                                 schema_.file_, schema_.line_);
    }
    return;
  }
  registration_fatal("op", schema_.name_, violation, schema_.file_, schema_.line_);
}

OpSchemaBuilder& OpSchemaBuilder::doc(std::string d) {
  schema_.doc_ = std::move(d);
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::input(std::string name, std::string doc, DTypeSet dtypes,
                                        std::string type_var) {
  if (schema_.variadic_) {
    fail(
        fmt::format("input '{}' declared after the variadic input group '{}' (M9: the variadic "
                    "group must follow every fixed input)",
                    name, schema_.variadic_->name));
  }
  if (!schema_.inputs_.empty() && schema_.inputs_.back().optional) {
    fail(fmt::format("required input '{}' declared after optional input '{}'", name,
                     schema_.inputs_.back().name));
  }
  schema_.inputs_.push_back(
      {std::move(name), std::move(doc), dtypes, std::move(type_var), false, false});
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::optional_input(std::string name, std::string doc, DTypeSet dtypes,
                                                 std::string type_var) {
  if (schema_.variadic_) {
    fail(
        fmt::format("input '{}' declared after the variadic input group '{}' (M9: the variadic "
                    "group must follow every fixed input)",
                    name, schema_.variadic_->name));
  }
  schema_.inputs_.push_back(
      {std::move(name), std::move(doc), dtypes, std::move(type_var), true, false});
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::variadic_input(std::string name, std::string doc, int min_count,
                                                 DTypeSet dtypes, std::string type_var) {
  if (schema_.variadic_) {
    fail(
        fmt::format("second variadic input group '{}' (M9: at most one variadic group; first "
                    "is '{}')",
                    name, schema_.variadic_->name));
  }
  if (min_count < 0) {
    fail(fmt::format("variadic input group '{}' has min_count {} (M9: min_count must be >= 0)",
                     name, min_count));
  }
  for (const ArgSpec& a : schema_.inputs_) {
    if (a.optional) {
      fail(
          fmt::format("variadic input group '{}' combined with optional input '{}' (M9: "
                      "ambiguous arity)",
                      name, a.name));
    }
  }
  schema_.variadic_ =
      ArgSpec{std::move(name), std::move(doc), dtypes, std::move(type_var), false, false};
  schema_.variadic_min_ = min_count;
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::output(std::string name, std::string doc, DTypeSet dtypes,
                                         std::string type_var) {
  if (!schema_.outputs_.empty() && schema_.outputs_.back().optional) {
    fail(fmt::format("required output '{}' declared after optional output '{}'", name,
                     schema_.outputs_.back().name));
  }
  schema_.outputs_.push_back(
      {std::move(name), std::move(doc), dtypes, std::move(type_var), false, false});
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::optional_output(std::string name, std::string doc,
                                                  DTypeSet dtypes, std::string type_var) {
  schema_.outputs_.push_back(
      {std::move(name), std::move(doc), dtypes, std::move(type_var), true, false});
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::attr(std::string name, ir::AttrType type, std::string doc,
                                       ir::AttrValue default_value) {
  if (ir::attr_type_of(default_value) != type) {
    fail(fmt::format("attribute '{}' declared as {} with a default of type {}", name,
                     ir::attr_type_name(type),
                     ir::attr_type_name(ir::attr_type_of(default_value))));
  }
  if (schema_.find_attr(name)) fail(fmt::format("attribute '{}' declared twice", name));
  schema_.attrs_.push_back(
      {std::move(name), type, std::move(doc), false, std::move(default_value)});
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::optional_attr(std::string name, ir::AttrType type,
                                                std::string doc) {
  if (schema_.find_attr(name)) fail(fmt::format("attribute '{}' declared twice", name));
  schema_.attrs_.push_back({std::move(name), type, std::move(doc), false, std::nullopt});
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::required_attr(std::string name, ir::AttrType type,
                                                std::string doc) {
  if (schema_.find_attr(name)) fail(fmt::format("attribute '{}' declared twice", name));
  schema_.attrs_.push_back({std::move(name), type, std::move(doc), true, std::nullopt});
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::traits(std::initializer_list<OpTrait> ts) {
  for (OpTrait t : ts) schema_.traits_.set(static_cast<size_t>(t));
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::shape_infer(ShapeInferFn fn) {
  schema_.shape_fn_ = fn;
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::decomposition(DecomposeFn fn) {
  schema_.decompose_fn_ = fn;
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::shape_determining() {
  if (!schema_.outputs_.empty()) {
    fail("shape_determining() must directly follow the input it marks, not an output");
  }
  if (schema_.variadic_) {
    schema_.variadic_->shape_determining = true;
  } else if (!schema_.inputs_.empty()) {
    schema_.inputs_.back().shape_determining = true;
  } else {
    fail("shape_determining() called before any input was declared");
  }
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::shape_determining_when(ShapeDeterminingFn fn) {
  schema_.shape_determining_fn_ = fn;
  return *this;
}

OpSchemaBuilder& OpSchemaBuilder::view_of_input(int input) {
  schema_.view_of_input_ = input;
  return *this;
}

OpSchema OpSchemaBuilder::build() {
  const int v = schema_.view_of_input_;
  if (v != -1 &&
      (v < 0 || static_cast<size_t>(v) >= schema_.inputs_.size() || schema_.outputs_.size() != 1)) {
    fail("view_of_input needs a declared fixed input and exactly one output");
  }
  return std::move(schema_);
}

// While a plugin loads, static registrations are collected and committed together
// (registration_batch.h); otherwise they apply at once and a fault is fatal (ARCH-040).
OpRegistration::OpRegistration(OpSchemaBuilder& b) {
  if (RegistrationBatch* batch = collecting_batch()) {
    batch->ops.push_back(b.build());
  } else {
    OpRegistry::global().register_op(b.build());
  }
}
OpRegistration::OpRegistration(OpSchemaBuilder&& b) : OpRegistration(b) {}

}  // namespace frame::ops
