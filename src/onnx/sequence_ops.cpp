// The sequence and optional ops of ONNX on run-time values (docs/adr/0008-data-dependent-
// shapes.md, "Sequences and optionals"). Elements are whole tensors: the ops move handles,
// and only SplitToSequence and ConcatFromSequence copy bytes (contiguous row blocks, no
// per-element arithmetic).

#include "sequence_ops.h"

#include <cstring>
#include <string_view>
#include <utility>

#include "onnx_internal.h"

namespace frame::onnx::detail {
namespace {

using runtime::Value;

bool default_domain(const std::string& d) { return d.empty() || d == "ai.onnx"; }

const ::onnx::AttributeProto* find_attr(const ::onnx::NodeProto& n, std::string_view name) {
  for (const ::onnx::AttributeProto& a : n.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t int_attr(const ::onnx::NodeProto& n, std::string_view name, int64_t fallback) {
  const ::onnx::AttributeProto* a = find_attr(n, name);
  return a != nullptr ? a->i() : fallback;
}

struct OpError {
  const ::onnx::NodeProto& n;
  template <typename... Args>
  Status operator()(fmt::format_string<Args...> f, Args&&... args) const {
    if (n.name().empty()) {
      return invalid_argument("{}: {}", n.op_type(), fmt::format(f, std::forward<Args>(args)...));
    }
    return invalid_argument("node '{}' ({}): {}", n.name(), n.op_type(),
                            fmt::format(f, std::forward<Args>(args)...));
  }
};

// Input `i` as a sequence (an error naming it otherwise).
Result<const Value*> sequence_input(const std::vector<std::optional<Value>>& in, size_t i,
                                    const OpError& err) {
  if (i >= in.size() || !in[i]) return err("input {} (a sequence) is missing", i);
  if (!in[i]->is_sequence())
    return err("input {} must be a sequence, got {}", i, in[i]->to_string());
  return &*in[i];
}

Result<const Tensor*> tensor_input(const std::vector<std::optional<Value>>& in, size_t i,
                                   const OpError& err) {
  if (i >= in.size() || !in[i]) return err("input {} (a tensor) is missing", i);
  if (!in[i]->is_tensor()) return err("input {} must be a tensor, got {}", i, in[i]->to_string());
  return &in[i]->tensor;
}

// An optional position input (a scalar of int32 or int64): nullopt when omitted.
Result<std::optional<int64_t>> position_input(const std::vector<std::optional<Value>>& in, size_t i,
                                              const OpError& err) {
  if (i >= in.size() || !in[i]) return std::optional<int64_t>();
  FRAME_ASSIGN_OR_RETURN(const Tensor* t, tensor_input(in, i, err));
  if (t->numel() != 1 || (t->dtype() != DTypeCode::kInt64 && t->dtype() != DTypeCode::kInt32)) {
    return err("input {} (position) must be one int32 or int64 value, got {}{}", i,
               dtype_name(t->dtype()), shape_to_string(t->shape()));
  }
  return std::optional<int64_t>(t->element_as_int64(0));
}

// Rows before `axis`, bytes of one index along `axis` (everything after it).
std::pair<int64_t, size_t> outer_inner(const Shape& s, int64_t axis, DTypeCode dt) {
  int64_t outer = 1;
  size_t inner = dtype_size(dt);
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) {
    if (d < axis) outer *= s[static_cast<size_t>(d)];
    if (d > axis) inner *= static_cast<size_t>(s[static_cast<size_t>(d)]);
  }
  return {outer, inner};
}

// Concatenates `parts` along `axis` (already normalized): equal dtype, rank and every other dim.
Result<Tensor> concat(const std::vector<Tensor>& parts, int64_t axis, const OpError& err) {
  const Tensor& first = parts.front();
  Shape out_shape = first.shape();
  int64_t total = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    const Tensor& p = parts[k];
    bool same = p.dtype() == first.dtype() && p.rank() == first.rank();
    for (int64_t d = 0; same && d < p.rank(); ++d) {
      same = d == axis || p.dim(d) == first.dim(d);
    }
    if (!same) {
      return err("element {} is {}{}, element 0 is {}{}: they differ outside axis {}", k,
                 dtype_name(p.dtype()), shape_to_string(p.shape()), dtype_name(first.dtype()),
                 shape_to_string(first.shape()), axis);
    }
    total += p.dim(axis);
  }
  out_shape[static_cast<size_t>(axis)] = total;
  FRAME_ASSIGN_OR_RETURN(Tensor out, Tensor::empty(first.dtype(), out_shape));
  const auto [outer, inner] = outer_inner(out_shape, axis, first.dtype());
  auto* dst = static_cast<char*>(out.raw_data());
  const size_t out_row = static_cast<size_t>(total) * inner;
  size_t offset = 0;
  for (const Tensor& p : parts) {
    const size_t row = static_cast<size_t>(p.dim(axis)) * inner;
    const auto* src = static_cast<const char*>(p.raw_data());
    for (int64_t o = 0; o < outer && row > 0; ++o) {
      std::memcpy(dst + static_cast<size_t>(o) * out_row + offset,
                  src + static_cast<size_t>(o) * row, row);
    }
    offset += row;
  }
  return out;
}

// Inserts a dim of size 1 at `axis` (0..rank).
Result<Tensor> unsqueezed(const Tensor& t, int64_t axis) {
  Shape s = t.shape();
  s.insert(s.begin() + axis, 1);
  return t.reshaped(std::move(s));
}

Result<std::vector<Value>> split_to_sequence(const ::onnx::NodeProto& n,
                                             const std::vector<std::optional<Value>>& in,
                                             const OpError& err) {
  FRAME_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(in, 0, err));
  if (x->rank() == 0) return err("input 0 must have rank >= 1");
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < -x->rank() || axis >= x->rank()) {
    return err("axis {} is out of range for rank {}", axis, x->rank());
  }
  if (axis < 0) axis += x->rank();
  const int64_t len = x->dim(axis);
  std::vector<int64_t> lengths;
  bool keep = true;
  if (in.size() > 1 && in[1]) {
    FRAME_ASSIGN_OR_RETURN(const Tensor* split, tensor_input(in, 1, err));
    if (split->dtype() != DTypeCode::kInt64 && split->dtype() != DTypeCode::kInt32) {
      return err("input 1 (split) must be int32 or int64, got {}", dtype_name(split->dtype()));
    }
    if (split->rank() == 0) {
      const int64_t chunk = split->element_as_int64(0);
      if (chunk <= 0) return err("input 1 (split) must be positive, got {}", chunk);
      for (int64_t at = 0; at < len; at += chunk) lengths.push_back(std::min(chunk, len - at));
    } else if (split->rank() == 1) {
      lengths = split->to_int64_vector();
      int64_t sum = 0;
      for (int64_t l : lengths) {
        if (l < 0) return err("input 1 (split) has a negative length {}", l);
        sum += l;
      }
      if (sum != len) {
        return err("input 1 (split) sums to {}, the axis {} has length {}", sum, axis, len);
      }
    } else {
      return err("input 1 (split) must be a scalar or 1-D, got shape {}",
                 shape_to_string(split->shape()));
    }
  } else {
    lengths.assign(static_cast<size_t>(len), 1);
    keep = int_attr(n, "keepdims", 1) != 0;
  }
  const auto [outer, inner] = outer_inner(x->shape(), axis, x->dtype());
  const auto* src = static_cast<const char*>(x->raw_data());
  const size_t in_row = static_cast<size_t>(len) * inner;
  std::vector<Tensor> parts;
  size_t offset = 0;
  for (int64_t l : lengths) {
    Shape s = x->shape();
    s[static_cast<size_t>(axis)] = l;
    FRAME_ASSIGN_OR_RETURN(Tensor part, Tensor::empty(x->dtype(), s));
    const size_t row = static_cast<size_t>(l) * inner;
    auto* dst = static_cast<char*>(part.raw_data());
    for (int64_t o = 0; o < outer && row > 0; ++o) {
      std::memcpy(dst + static_cast<size_t>(o) * row,
                  src + static_cast<size_t>(o) * in_row + offset, row);
    }
    offset += row;
    if (!keep) {
      s.erase(s.begin() + axis);
      FRAME_ASSIGN_OR_RETURN(part, part.reshaped(std::move(s)));
    }
    parts.push_back(std::move(part));
  }
  return std::vector<Value>{Value::of_sequence(std::move(parts), x->dtype())};
}

Result<std::vector<Value>> concat_from_sequence(const ::onnx::NodeProto& n,
                                                const std::vector<std::optional<Value>>& in,
                                                const OpError& err) {
  FRAME_ASSIGN_OR_RETURN(const Value* seq, sequence_input(in, 0, err));
  if (find_attr(n, "axis") == nullptr) return err("attribute 'axis' is required");
  if (seq->sequence.empty()) return err("input 0 is an empty sequence: nothing to concatenate");
  const bool new_axis = int_attr(n, "new_axis", 0) != 0;
  const int64_t rank = seq->sequence.front().rank() + (new_axis ? 1 : 0);
  int64_t axis = int_attr(n, "axis", 0);
  if (axis < -rank || axis >= rank || rank == 0) {
    return err("axis {} is out of range for {} elements of rank {}", axis,
               new_axis ? "stacked" : "concatenated", seq->sequence.front().rank());
  }
  if (axis < 0) axis += rank;
  std::vector<Tensor> parts;
  parts.reserve(seq->sequence.size());
  for (const Tensor& t : seq->sequence) {
    if (new_axis) {
      FRAME_ASSIGN_OR_RETURN(Tensor u, unsqueezed(t, axis));
      parts.push_back(std::move(u));
    } else {
      parts.push_back(t);
    }
  }
  FRAME_ASSIGN_OR_RETURN(Tensor out, concat(parts, axis, err));
  return std::vector<Value>{Value::of(std::move(out))};
}

}  // namespace

ValueKind kind_of_type(const ::onnx::TypeProto& t) {
  if (t.has_sequence_type()) return ValueKind::kSequence;
  if (t.has_optional_type()) {
    return t.optional_type().elem_type().has_sequence_type() ? ValueKind::kOptionalSequence
                                                             : ValueKind::kOptionalTensor;
  }
  return ValueKind::kTensor;
}

bool is_value_op(const ::onnx::NodeProto& n) {
  if (!default_domain(n.domain())) return false;
  static const char* const kOps[] = {"SequenceConstruct",  "SequenceEmpty",      "SequenceInsert",
                                     "SequenceErase",      "SequenceAt",         "SequenceLength",
                                     "SplitToSequence",    "ConcatFromSequence", "Optional",
                                     "OptionalHasElement", "OptionalGetElement", "Identity"};
  for (const char* op : kOps) {
    if (n.op_type() == op) return true;
  }
  return false;
}

ValueKind value_op_output_kind(const ::onnx::NodeProto& n, const std::vector<ValueKind>& inputs) {
  const std::string& t = n.op_type();
  const ValueKind first = inputs.empty() ? ValueKind::kTensor : inputs.front();
  if (t == "SequenceConstruct" || t == "SequenceEmpty" || t == "SequenceInsert" ||
      t == "SequenceErase" || t == "SplitToSequence") {
    return ValueKind::kSequence;
  }
  if (t == "Identity") return first;
  if (t == "Optional") {
    if (n.input_size() > 0 && !n.input(0).empty()) {
      return first == ValueKind::kSequence ? ValueKind::kOptionalSequence
                                           : ValueKind::kOptionalTensor;
    }
    const ::onnx::AttributeProto* a = find_attr(n, "type");
    return a != nullptr && a->tp().has_sequence_type() ? ValueKind::kOptionalSequence
                                                       : ValueKind::kOptionalTensor;
  }
  if (t == "OptionalGetElement") {
    return first == ValueKind::kOptionalSequence || first == ValueKind::kSequence
               ? ValueKind::kSequence
               : ValueKind::kTensor;
  }
  return ValueKind::kTensor;  // SequenceAt, SequenceLength, ConcatFromSequence, OptionalHas...
}

Result<std::vector<Value>> run_value_op(const ::onnx::NodeProto& n,
                                        const std::vector<std::optional<Value>>& in) {
  const OpError err{n};
  const std::string& t = n.op_type();
  if (t == "Identity") {
    if (in.empty() || !in[0]) return err("input 0 is missing");
    return std::vector<Value>{*in[0]};
  }
  if (t == "SequenceEmpty") {
    DTypeCode dt = DTypeCode::kFloat32;
    if (const ::onnx::AttributeProto* a = find_attr(n, "dtype")) {
      Result<DTypeCode> d = dtype_from_onnx(static_cast<int32_t>(a->i()));
      if (!d.is_ok()) return err("attribute 'dtype': {}", d.status().message());
      dt = *d;
    }
    return std::vector<Value>{Value::of_sequence({}, dt)};
  }
  if (t == "SequenceConstruct") {
    std::vector<Tensor> elements;
    for (size_t i = 0; i < in.size(); ++i) {
      FRAME_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(in, i, err));
      if (!elements.empty() && x->dtype() != elements.front().dtype()) {
        return err("input {} is {}, input 0 is {}: a sequence holds one dtype", i,
                   dtype_name(x->dtype()), dtype_name(elements.front().dtype()));
      }
      elements.push_back(*x);
    }
    if (elements.empty()) return err("at least one input is required");
    const DTypeCode dt = elements.front().dtype();
    return std::vector<Value>{Value::of_sequence(std::move(elements), dt)};
  }
  if (t == "SequenceLength") {
    FRAME_ASSIGN_OR_RETURN(const Value* seq, sequence_input(in, 0, err));
    return std::vector<Value>{
        Value::of(Tensor::scalar<int64_t>(static_cast<int64_t>(seq->sequence.size())))};
  }
  if (t == "SequenceAt" || t == "SequenceErase" || t == "SequenceInsert") {
    FRAME_ASSIGN_OR_RETURN(const Value* seq, sequence_input(in, 0, err));
    const int64_t size = static_cast<int64_t>(seq->sequence.size());
    const size_t pos_input = t == "SequenceInsert" ? 2 : 1;
    FRAME_ASSIGN_OR_RETURN(std::optional<int64_t> pos, position_input(in, pos_input, err));
    if (t == "SequenceAt" && !pos) return err("input 1 (position) is required");
    // SequenceInsert: [-n, n], default n (append); SequenceAt, SequenceErase: [-n, n-1],
    // SequenceErase's default -1 (the last).
    const int64_t hi = t == "SequenceInsert" ? size : size - 1;
    int64_t p = pos ? *pos : (t == "SequenceInsert" ? size : -1);
    if (p < -size || p > hi) {
      return err("position {} is out of range [{}, {}] for a sequence of {} elements", p, -size, hi,
                 size);
    }
    if (p < 0) p += size;
    if (t == "SequenceAt")
      return std::vector<Value>{Value::of(seq->sequence[static_cast<size_t>(p)])};
    std::vector<Tensor> elements = seq->sequence;
    if (t == "SequenceErase") {
      elements.erase(elements.begin() + p);
    } else {
      FRAME_ASSIGN_OR_RETURN(const Tensor* x, tensor_input(in, 1, err));
      if (x->dtype() != seq->elem_dtype) {
        return err("input 1 is {}, the sequence holds {}", dtype_name(x->dtype()),
                   dtype_name(seq->elem_dtype));
      }
      elements.insert(elements.begin() + p, *x);
    }
    return std::vector<Value>{Value::of_sequence(std::move(elements), seq->elem_dtype)};
  }
  if (t == "SplitToSequence") return split_to_sequence(n, in, err);
  if (t == "ConcatFromSequence") return concat_from_sequence(n, in, err);
  if (t == "Optional") {
    if (in.empty() || !in[0]) return std::vector<Value>{Value::none()};
    return std::vector<Value>{*in[0]};
  }
  if (t == "OptionalHasElement") {
    const bool has = !in.empty() && in[0] && !in[0]->is_none();
    return std::vector<Value>{Value::of(Tensor::scalar<bool>(has))};
  }
  if (t == "OptionalGetElement") {
    if (in.empty() || !in[0] || in[0]->is_none()) {
      return err("input 0 is an empty optional: there is no element to get");
    }
    return std::vector<Value>{*in[0]};
  }
  return err("not a sequence or optional op");
}

Result<Tensor> stack_tensors(const std::vector<Tensor>& elements, DTypeCode dtype,
                             const std::optional<Shape>& element_shape, const std::string& what) {
  if (elements.empty()) {
    Shape s{0};
    if (element_shape) s.insert(s.end(), element_shape->begin(), element_shape->end());
    return Tensor::empty(dtype, s);
  }
  std::vector<Tensor> parts;
  parts.reserve(elements.size());
  for (const Tensor& e : elements) {
    FRAME_ASSIGN_OR_RETURN(Tensor u, unsqueezed(e, 0));
    parts.push_back(std::move(u));
  }
  ::onnx::NodeProto named;
  named.set_op_type("Loop " + what);
  return concat(parts, 0, OpError{named});
}

}  // namespace frame::onnx::detail
