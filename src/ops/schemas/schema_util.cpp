#include "ops/schemas/schema_util.h"

#include <algorithm>
#include <utility>

#include "frame/ops/op_registry.h"

namespace frame::ops {

Result<int64_t> normalize_axis(const NodeContext& ctx, int64_t axis, int64_t rank,
                               std::string_view what) {
  if (rank == 0) {
    return ctx.error("{} {} cannot apply to a rank-0 (scalar) input: it has no axes", what, axis);
  }
  if (axis < -rank || axis >= rank) {
    return ctx.error("{} {} is out of range for rank {} (expected [{}, {}])", what, axis, rank,
                     -rank, rank - 1);
  }
  return axis < 0 ? axis + rank : axis;
}

Result<std::vector<int64_t>> normalize_axes(const NodeContext& ctx, std::span<const int64_t> axes,
                                            int64_t rank, std::string_view what) {
  std::vector<int64_t> out;
  out.reserve(axes.size());
  for (int64_t a : axes) {
    FRAME_ASSIGN_OR_RETURN(int64_t n, normalize_axis(ctx, a, rank, what));
    if (std::find(out.begin(), out.end(), n) != out.end()) {
      return ctx.error("{} names axis {} twice", what, n);
    }
    out.push_back(n);
  }
  return out;
}

Result<Shape> broadcast_inputs(const NodeContext& ctx, std::span<const size_t> inputs) {
  Shape out;
  bool first = true;
  for (size_t i : inputs) {
    if (!ctx.has_input(i)) continue;
    const Shape& s = ctx.input_types[i].shape;
    if (first) {
      out = s;
      first = false;
      continue;
    }
    Result<Shape> b = broadcast_shapes(out, s);
    if (!b.is_ok()) {
      return ctx.error("input {} with shape {} does not broadcast with {} (numpy broadcasting)", i,
                       shape_to_string(s), shape_to_string(out));
    }
    out = std::move(b).value();
  }
  return out;
}

Result<Shape> broadcast_present_inputs(const NodeContext& ctx) {
  std::vector<size_t> all(ctx.num_inputs());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return broadcast_inputs(ctx, all);
}

bool unidirectional_broadcastable(std::span<const int64_t> from, std::span<const int64_t> to) {
  if (from.size() > to.size()) return false;
  const size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] != 1 && from[i] != to[off + i]) return false;
  }
  return true;
}

Result<std::vector<int64_t>> constant_ints(const NodeContext& ctx, size_t i,
                                           std::string_view name) {
  if (!ctx.has_input(i)) return ctx.error("input {} ({}) is required but absent", i, name);
  const Tensor* t = ctx.constant_input(i);
  if (t == nullptr) {
    return ctx.error("input {} ({}) must be a constant (ARCH-044: output shape must be static)", i,
                     name);
  }
  if (!is_integral(t->dtype())) {
    return ctx.error("input {} ({}) must be an integer tensor, got {}", i, name,
                     dtype_name(t->dtype()));
  }
  return t->to_int64_vector();
}

Result<std::optional<std::vector<int64_t>>> optional_constant_ints(const NodeContext& ctx, size_t i,
                                                                   std::string_view name) {
  if (!ctx.has_input(i)) return std::optional<std::vector<int64_t>>();
  FRAME_ASSIGN_OR_RETURN(std::vector<int64_t> v, constant_ints(ctx, i, name));
  return std::optional<std::vector<int64_t>>(std::move(v));
}

std::vector<ir::TensorType> one_output(DTypeCode dtype, Shape shape) {
  return {ir::TensorType{dtype, std::move(shape)}};
}

Result<std::vector<ir::TensorType>> same_as_input(const NodeContext& ctx, size_t i) {
  if (!ctx.has_input(i)) return ctx.error("input {} is required but absent", i);
  return std::vector<ir::TensorType>{ctx.input_types[i]};
}

Status expect_rank(const NodeContext& ctx, size_t i, int64_t rank, std::string_view name) {
  const int64_t got = ctx.input_types[i].rank();
  if (got != rank)
    return ctx.error("input {} ({}) expects rank {}, got rank {}", i, name, rank, got);
  return Status();
}

Result<SoftmaxView> softmax_view(const NodeContext& ctx, std::span<const int64_t> shape) {
  const auto rank = static_cast<int64_t>(shape.size());
  FRAME_ASSIGN_OR_RETURN(int64_t axis, normalize_axis(ctx, ctx.attr_or<int64_t>("axis", -1), rank,
                                                      "attribute 'axis'"));
  const bool legacy = ctx.attr_or<int64_t>("legacy_flatten", 0) != 0;
  SoftmaxView v;
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t dim = shape[static_cast<size_t>(d)];
    if (d < axis) {
      v.outer *= dim;
    } else if (d == axis || legacy) {
      v.n *= dim;
    } else {
      v.inner *= dim;
    }
  }
  return v;
}

Result<Tensor> filled_tensor(DTypeCode dtype, Shape shape, double value) {
  FRAME_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(dtype, std::move(shape)));
  FRAME_RETURN_IF_ERROR(dispatch_dtype(dtype, [&]<typename T>() {
    T v;
    if constexpr (std::is_same_v<T, bool>) {
      v = value != 0.0;
    } else {
      v = from_compute<T>(static_cast<compute_t<T>>(value));
    }
    T* p = t.data<T>();
    for (int64_t k = 0; k < t.numel(); ++k) p[k] = v;
  }));
  return t;
}

MicroGraph::MicroGraph(const NodeContext& ctx) : ctx_(ctx), graph_(std::string(ctx.op)) {
  for (size_t i = 0; i < ctx.num_inputs(); ++i) {
    inputs_.push_back(ctx.has_input(i)
                          ? graph_.add_input(fmt::format("in{}", i), ctx.input_types[i])
                          : ir::kNoValue);
  }
}

ir::ValueId MicroGraph::input(size_t i) const {
  return i < inputs_.size() ? inputs_[i] : ir::kNoValue;
}

ir::ValueId MicroGraph::scalar(DTypeCode dtype, double value) {
  if (!status_.is_ok()) return ir::kNoValue;
  Result<Tensor> t = filled_tensor(dtype, {}, value);
  if (!t.is_ok()) {
    status_ = t.status();
    return ir::kNoValue;
  }
  return graph_.add_constant(graph_.unique_value_name("c"), std::move(t).value());
}

ir::ValueId MicroGraph::constant(Tensor t) {
  if (!status_.is_ok()) return ir::kNoValue;
  return graph_.add_constant(graph_.unique_value_name("c"), std::move(t));
}

ir::ValueId MicroGraph::add(std::string_view op, std::vector<ir::ValueId> inputs,
                            ir::AttrMap attrs) {
  if (!status_.is_ok()) return ir::kNoValue;
  const OpSchema* schema = OpRegistry::global().find(op);
  if (schema == nullptr) {
    status_ = ctx_.error("decomposition uses op '{}', which is not registered", op);
    return ir::kNoValue;
  }
  Result<ir::NodeId> id = graph_.create_node(op, "", std::move(inputs), 1, std::move(attrs));
  if (!id.is_ok()) {
    status_ = id.status();
    return ir::kNoValue;
  }
  const ir::Node& node = graph_.node(*id);
  NodeContext nctx = make_node_context(graph_, node, schema);
  Result<std::vector<ir::TensorType>> types = schema->infer(nctx);
  if (!types.is_ok()) {
    status_ = types.status().with_prefix(
        fmt::format("node '{}' ({}) decomposition: ", ctx_.node_name, ctx_.op));
    return ir::kNoValue;
  }
  const ir::ValueId out = node.outputs[0];
  graph_.value(out).type = (*types)[0];
  return out;
}

ir::TensorType MicroGraph::type_of(ir::ValueId v) const {
  if (v == ir::kNoValue) return ir::TensorType{};
  const auto& t = graph_.value(v).type;
  return t ? *t : ir::TensorType{};
}

Result<ir::Graph> MicroGraph::finish(std::vector<ir::ValueId> outputs) {
  if (!status_.is_ok()) return status_;
  for (ir::ValueId v : outputs) graph_.add_output(v);
  return std::move(graph_);
}

}  // namespace frame::ops
