// Printer of the IR text form (grammar: docs/architecture/ir-design.md §3). The output is
// deterministic (topological node order, attrs sorted by name) so it can serve as golden text.

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "frame/ir/text.h"
#include "ir/ir_internal.h"

namespace frame::ir {

namespace {

using detail::is_bare_name_char;
using detail::is_ident_char;
using detail::is_ident_start;

void append_quoted(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;  // bytes >= 0x80 (UTF-8) pass through unchanged
        }
    }
  }
  out += '"';
}

// `%name` / `@name`, quoted when the name holds characters the lexer would stop at.
void append_sigil_name(std::string& out, char sigil, std::string_view name) {
  out += sigil;
  if (!name.empty() && std::all_of(name.begin(), name.end(), is_bare_name_char)) {
    out += name;
  } else {
    append_quoted(out, name);
  }
}

// Graph names and attribute names: a bare identifier or a quoted string.
void append_ident_or_quoted(std::string& out, std::string_view name) {
  if (!name.empty() && is_ident_start(name[0]) &&
      std::all_of(name.begin(), name.end(), is_ident_char)) {
    out += name;
  } else {
    append_quoted(out, name);
  }
}

// Shortest text that parses back to the same value; inf/nan spelled out.
template <typename F>
std::string format_float(F v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  return fmt::format("{}", v);
}

// An attribute float must not look like an int, so it always carries '.', 'e', inf or nan.
std::string format_attr_float(double v) {
  std::string s = format_float(v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string format_element(const Tensor& t, int64_t i) {
  std::string s;
  Status st = dispatch_dtype(t.dtype(), [&]<typename T>() {
    const T x = t.data<T>()[i];
    if constexpr (std::is_same_v<T, bool>) {
      s = x ? "true" : "false";
    } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
      s = format_float(static_cast<float>(x));
    } else if constexpr (std::is_floating_point_v<T>) {
      s = format_float(x);
    } else {
      s = fmt::format("{}", static_cast<int64_t>(x));
    }
  });
  return st.is_ok() ? s : "?";
}

class Printer {
 public:
  explicit Printer(const PrintOptions& options) : options_(options) {}

  std::string take() { return std::move(out_); }

  void graph(const Graph& g, int indent) {
    out_ += "graph ";
    append_ident_or_quoted(out_, g.name());
    out_ += " {\n";
    const std::string pad(static_cast<size_t>(indent + 2), ' ');
    for (ValueId v : g.inputs()) {
      out_ += pad;
      value_ref(g, v);
      out_ += " = ";
      out_ += kGraphInputOp;
      out_ += "()";
      if (detail::valid_value(g, v) && g.value(v).type) {
        out_ += " : " + g.value(v).type->to_string();
      }
      out_ += '\n';
    }
    for (size_t i = 0; i < g.num_values(); ++i) {
      const Value& val = g.value(static_cast<ValueId>(i));
      if (!val.is_constant() || val.is_graph_input || val.producer >= 0) continue;
      out_ += pad;
      append_sigil_name(out_, '%', val.name);
      out_ += " = const ";
      tensor(*val.constant);
      const TensorType own{val.constant->dtype(), val.constant->shape()};
      if (!val.type) {
        out_ += " : ?";
      } else if (*val.type != own) {
        out_ += " : " + val.type->to_string();
      }
      out_ += '\n';
    }
    Result<std::vector<NodeId>> order = g.topological_order();
    for (NodeId id : order.is_ok() ? *order : g.node_ids()) {
      out_ += pad;
      node(g, g.node(id), indent + 2);
      out_ += '\n';
    }
    out_ += pad;
    out_ += kGraphOutputMarker;
    out_ += '(';
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      if (i > 0) out_ += ", ";
      value_ref(g, g.outputs()[i]);
    }
    out_ += ")\n";
    out_ += std::string(static_cast<size_t>(indent), ' ');
    out_ += '}';
  }

 private:
  void value_ref(const Graph& g, ValueId v) {
    if (v == kNoValue) {
      out_ += '_';
    } else if (!detail::valid_value(g, v)) {
      append_sigil_name(out_, '%', fmt::format("<invalid value id {}>", v));
    } else {
      append_sigil_name(out_, '%', g.value(v).name);
    }
  }

  void node(const Graph& g, const Node& n, int indent) {
    for (size_t i = 0; i < n.outputs.size(); ++i) {
      if (i > 0) out_ += ", ";
      value_ref(g, n.outputs[i]);
    }
    if (!n.outputs.empty()) out_ += " = ";
    out_ += n.op;
    out_ += '(';
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (i > 0) out_ += ", ";
      value_ref(g, n.inputs[i]);
    }
    out_ += ')';
    if (!n.attrs.empty()) {
      std::vector<const std::pair<const std::string, AttrValue>*> sorted;
      for (const auto& kv : n.attrs) sorted.push_back(&kv);
      std::sort(sorted.begin(), sorted.end(),
                [](const auto* a, const auto* b) { return a->first < b->first; });
      out_ += " {";
      for (size_t i = 0; i < sorted.size(); ++i) {
        if (i > 0) out_ += ", ";
        append_ident_or_quoted(out_, sorted[i]->first);
        out_ += " = ";
        attr(sorted[i]->second, indent);
      }
      out_ += '}';
    }
    const bool any_typed = std::any_of(n.outputs.begin(), n.outputs.end(), [&](ValueId v) {
      return detail::valid_value(g, v) && g.value(v).type.has_value();
    });
    if (any_typed) {
      out_ += " : ";
      for (size_t i = 0; i < n.outputs.size(); ++i) {
        if (i > 0) out_ += ", ";
        const ValueId v = n.outputs[i];
        out_ += detail::valid_value(g, v) && g.value(v).type ? g.value(v).type->to_string() : "?";
      }
    }
    out_ += ' ';
    append_sigil_name(out_, '@', n.name);
  }

  template <typename T, typename F>
  void list(std::string_view type_name, const std::vector<T>& xs, F&& each) {
    if (xs.empty()) {
      out_ += type_name;
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i > 0) out_ += ", ";
      each(xs[i]);
    }
    out_ += ']';
  }

  void attr(const AttrValue& a, int indent) {
    switch (attr_type_of(a)) {
      case AttrType::kInt:
        out_ += fmt::format("{}", std::get<int64_t>(a));
        break;
      case AttrType::kFloat:
        out_ += format_attr_float(std::get<double>(a));
        break;
      case AttrType::kString:
        append_quoted(out_, std::get<std::string>(a));
        break;
      case AttrType::kInts:
        list("ints", std::get<std::vector<int64_t>>(a),
             [&](int64_t x) { out_ += fmt::format("{}", x); });
        break;
      case AttrType::kFloats:
        list("floats", std::get<std::vector<double>>(a),
             [&](double x) { out_ += format_attr_float(x); });
        break;
      case AttrType::kStrings:
        list("strings", std::get<std::vector<std::string>>(a),
             [&](const std::string& x) { append_quoted(out_, x); });
        break;
      case AttrType::kTensor:
        tensor(std::get<Tensor>(a));
        break;
      case AttrType::kGraph: {
        const auto& g = std::get<std::shared_ptr<const Graph>>(a);
        if (g) {
          graph(*g, indent);
        } else {
          out_ += "graph <null>";
        }
        break;
      }
    }
  }

  void tensor(const Tensor& t) {
    out_ += "tensor<" + TensorType{t.dtype(), t.shape()}.to_string() + '>';
    if (t.raw_data() == nullptr && t.numel() > 0) {
      out_ += " <undefined>";
      return;
    }
    if (options_.tensor_ref) {
      if (std::string id = options_.tensor_ref(t); !id.empty()) {
        out_ += " ref ";
        append_quoted(out_, id);
        return;
      }
    }
    if (!options_.constant_data) {
      out_ += fmt::format(" <{} elements>", t.numel());
      return;
    }
    out_ += '[';
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (i > 0) out_ += ", ";
      out_ += format_element(t, i);
    }
    out_ += ']';
  }

  const PrintOptions& options_;
  std::string out_;
};

}  // namespace

std::string print_text(const Graph& g, const PrintOptions& options) {
  Printer p(options);
  p.graph(g, 0);
  std::string s = p.take();
  s += '\n';
  return s;
}

}  // namespace frame::ir
