#pragma once
// Helpers shared by the ir sources (not part of the public API).

#include <string>

#include "frame/ir/graph.h"

namespace frame::ir::detail {

/// "node 'conv_3' (conv)": how every ir message names a node.
std::string node_label(const Node& n);

/// True if `v` is a valid id into `g`'s value table.
inline bool valid_value(const Graph& g, ValueId v) {
  return v >= 0 && static_cast<size_t>(v) < g.num_values();
}

/// True if `v` is a valid value with a definition: a graph input, a constant, or an output of
/// a live node that still lists it.
bool is_defined(const Graph& g, ValueId v);

/// Characters a `%value` / `@node` name may hold unquoted in the text form.
inline bool is_bare_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == ':' || c == '/' || c == '-';
}

/// Start / continuation characters of a text-form identifier (keywords, ops, attr names).
inline bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
inline bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

}  // namespace frame::ir::detail
