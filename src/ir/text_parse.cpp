// Parser of the IR text form (grammar: docs/architecture/ir-design.md §3). Errors carry the
// line and column of the offending token. Value references may point forward (so cyclic graphs
// can be written down for verify tests); they are resolved when the graph's `}` is reached.

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "frame/ir/text.h"
#include "ir/ir_internal.h"

namespace frame::ir {

namespace {

using detail::is_bare_name_char;
using detail::is_ident_char;
using detail::is_ident_start;

// Nested graph attributes recurse; bound the depth so hostile input cannot exhaust the stack.
constexpr int kMaxGraphDepth = 64;

enum class Tok { kIdent, kValue, kNode, kString, kInt, kFloat, kPunct, kEnd };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  // identifier, decoded name/string, number text, or the punctuation char
  int line = 1;
  int col = 1;
};

std::string describe(const Token& t) {
  switch (t.kind) {
    case Tok::kEnd:
      return "end of input";
    case Tok::kValue:
      return fmt::format("'%{}'", t.text);
    case Tok::kNode:
      return fmt::format("'@{}'", t.text);
    case Tok::kString:
      return fmt::format("string \"{}\"", t.text);
    default:
      return fmt::format("'{}'", t.text);
  }
}

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  Result<Token> next() {
    skip_space();
    Token t;
    t.line = line_;
    t.col = col_;
    if (pos_ >= text_.size()) return t;
    const char c = text_[pos_];
    if (c == '%' || c == '@') {
      advance();
      t.kind = c == '%' ? Tok::kValue : Tok::kNode;
      if (pos_ < text_.size() && text_[pos_] == '"') {
        FRAME_ASSIGN_OR_RETURN(t.text, quoted());
      } else {
        while (pos_ < text_.size() && is_bare_name_char(text_[pos_])) t.text += advance();
        if (t.text.empty()) return error(t, fmt::format("expected a name after '{}'", c));
      }
      return t;
    }
    if (c == '"') {
      t.kind = Tok::kString;
      FRAME_ASSIGN_OR_RETURN(t.text, quoted());
      return t;
    }
    if (is_ident_start(c)) {
      t.kind = Tok::kIdent;
      while (pos_ < text_.size() && is_ident_char(text_[pos_])) t.text += advance();
      return t;
    }
    if ((c >= '0' && c <= '9') || c == '-') return number(t);
    if (std::string_view("(){}[]<>,=:?").find(c) != std::string_view::npos) {
      t.kind = Tok::kPunct;
      t.text = std::string(1, advance());
      return t;
    }
    return error(t, fmt::format("unexpected character '{}'", c));
  }

  static Status error(const Token& at, std::string_view msg) {
    return invalid_argument("line {}:{}: {}", at.line, at.col, msg);
  }

 private:
  char advance() {
    const char c = text_[pos_++];
    if (c == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    return c;
  }
  bool at_digit() const { return pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; }

  void skip_space() {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') advance();
      } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else {
        break;
      }
    }
  }

  // -?(inf|nan|digits[.digits][(e|E)[+-]digits])
  Result<Token> number(Token t) {
    if (text_[pos_] == '-') t.text += advance();
    const std::string_view rest = text_.substr(pos_);
    for (std::string_view word : {"inf", "nan"}) {
      if (rest.starts_with(word) && (rest.size() == 3 || !is_ident_char(rest[3]))) {
        for (int i = 0; i < 3; ++i) t.text += advance();
        t.kind = Tok::kFloat;
        return t;
      }
    }
    if (!at_digit()) return error(t, "expected a number after '-'");
    t.kind = Tok::kInt;
    while (at_digit()) t.text += advance();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      t.kind = Tok::kFloat;
      t.text += advance();
      while (at_digit()) t.text += advance();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      t.kind = Tok::kFloat;
      t.text += advance();
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) t.text += advance();
      if (!at_digit()) return error(t, "malformed exponent in number");
      while (at_digit()) t.text += advance();
    }
    return t;
  }

  Result<std::string> quoted() {
    Token start;
    start.line = line_;
    start.col = col_;
    advance();  // opening quote
    std::string s;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = advance();
      if (c != '\\') {
        s += c;
        continue;
      }
      if (pos_ >= text_.size()) break;
      const char e = advance();
      switch (e) {
        case 'n':
          s += '\n';
          break;
        case 't':
          s += '\t';
          break;
        case 'r':
          s += '\r';
          break;
        case '"':
        case '\\':
          s += e;
          break;
        case 'x': {
          unsigned value = 0;
          if (pos_ + 2 > text_.size() ||
              std::from_chars(text_.data() + pos_, text_.data() + pos_ + 2, value, 16).ptr !=
                  text_.data() + pos_ + 2) {
            return error(start, "bad \\x escape in string (expected two hex digits)");
          }
          advance();
          advance();
          s += static_cast<char>(value);
          break;
        }
        default:
          return error(start, fmt::format("unknown escape '\\{}' in string", e));
      }
    }
    if (pos_ >= text_.size()) return error(start, "unterminated string");
    advance();  // closing quote
    return s;
  }

  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

// A value reference waiting for the end of its graph (forward references are legal).
struct PendingRef {
  Token tok;     // kValue, or kIdent "_" for an absent optional input
  NodeId node;   // -1 for the graph output list
  size_t index;  // input / output position
};

class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options) : lex_(text), options_(options) {}

  Result<Graph> parse_top() {
    FRAME_RETURN_IF_ERROR(bump());
    FRAME_ASSIGN_OR_RETURN(Graph g, graph(0));
    if (cur_.kind != Tok::kEnd) return err("expected end of input after the graph");
    return g;
  }

 private:
  Status bump() {
    FRAME_ASSIGN_OR_RETURN(cur_, lex_.next());
    return Status();
  }
  Status err(std::string_view what) const {
    return Lexer::error(cur_, fmt::format("{} but found {}", what, describe(cur_)));
  }
  bool is_punct(char c) const { return cur_.kind == Tok::kPunct && cur_.text[0] == c; }
  bool is_ident(std::string_view w) const { return cur_.kind == Tok::kIdent && cur_.text == w; }
  Status expect_punct(char c) {
    if (!is_punct(c)) return err(fmt::format("expected '{}'", c));
    return bump();
  }
  // Re-anchors a semantic error (from Graph or core) at a token.
  static Status at(const Token& t, const Status& s) { return Lexer::error(t, s.message()); }

  Result<Graph> graph(int depth) {
    if (depth > kMaxGraphDepth) return err("graph attributes nested too deeply");
    if (!is_ident("graph")) return err("expected 'graph'");
    FRAME_RETURN_IF_ERROR(bump());
    if (cur_.kind != Tok::kIdent && cur_.kind != Tok::kString) return err("expected a graph name");
    Graph g(cur_.text);
    FRAME_RETURN_IF_ERROR(bump());
    FRAME_RETURN_IF_ERROR(expect_punct('{'));
    std::vector<PendingRef> refs;
    bool have_outputs = false;
    while (!is_punct('}')) {
      if (cur_.kind == Tok::kEnd) return err("expected '}' closing graph '" + g.name() + "'");
      if (is_ident(kGraphOutputMarker)) {
        if (have_outputs) return err("second graph_output list");
        have_outputs = true;
        FRAME_RETURN_IF_ERROR(output_list(refs));
      } else {
        FRAME_RETURN_IF_ERROR(statement(g, refs, depth));
      }
    }
    FRAME_RETURN_IF_ERROR(bump());
    std::vector<ValueId> outputs;
    for (const PendingRef& r : refs) {
      ValueId v = kNoValue;
      if (r.tok.kind == Tok::kValue) {
        v = g.find_value(r.tok.text);
        if (v == kNoValue) {
          return Lexer::error(
              r.tok, fmt::format("undefined value '%{}' in graph '{}'", r.tok.text, g.name()));
        }
      }
      if (r.node < 0) {
        outputs.push_back(v);
      } else {
        g.node(r.node).inputs[r.index] = v;
      }
    }
    g.set_outputs(std::move(outputs));
    return g;
  }

  Status output_list(std::vector<PendingRef>& refs) {
    FRAME_RETURN_IF_ERROR(bump());
    FRAME_RETURN_IF_ERROR(expect_punct('('));
    size_t i = 0;
    while (!is_punct(')')) {
      if (i > 0) FRAME_RETURN_IF_ERROR(expect_punct(','));
      if (cur_.kind != Tok::kValue) return err("expected a value like '%y' in graph_output");
      refs.push_back({cur_, -1, i++});
      FRAME_RETURN_IF_ERROR(bump());
    }
    return bump();
  }

  Status statement(Graph& g, std::vector<PendingRef>& refs, int depth) {
    std::vector<Token> lhs;
    if (cur_.kind == Tok::kValue) {
      for (;;) {
        if (cur_.kind != Tok::kValue) return err("expected a value name like '%y'");
        lhs.push_back(cur_);
        FRAME_RETURN_IF_ERROR(bump());
        if (!is_punct(',')) break;
        FRAME_RETURN_IF_ERROR(bump());
      }
      FRAME_RETURN_IF_ERROR(expect_punct('='));
    }
    if (cur_.kind != Tok::kIdent) return err("expected an op name, 'graph_input' or 'const'");
    const Token op = cur_;
    FRAME_RETURN_IF_ERROR(bump());
    const bool keyword = !lhs.empty() && !is_punct('(');
    if (op.text == kGraphInputOp || (op.text == "const" && keyword)) {
      if (lhs.size() != 1) return Lexer::error(op, op.text + " defines exactly one value");
      if (g.find_value(lhs[0].text) != kNoValue) {
        return Lexer::error(lhs[0], fmt::format("duplicate value name '%{}'", lhs[0].text));
      }
      return op.text == "const" ? constant(g, lhs[0]) : graph_input(g, lhs[0]);
    }
    return node(g, op, lhs, refs, depth);
  }

  Status graph_input(Graph& g, const Token& name) {
    FRAME_RETURN_IF_ERROR(expect_punct('('));
    FRAME_RETURN_IF_ERROR(expect_punct(')'));
    ValueId v = g.add_input(name.text, TensorType{});
    g.value(v).type.reset();
    if (is_punct(':')) {
      FRAME_RETURN_IF_ERROR(bump());
      FRAME_ASSIGN_OR_RETURN(g.value(v).type, optional_type());
    }
    return Status();
  }

  Status constant(Graph& g, const Token& name) {
    FRAME_ASSIGN_OR_RETURN(Tensor t, tensor());
    ValueId v = g.add_constant(name.text, std::move(t));
    if (is_punct(':')) {
      FRAME_RETURN_IF_ERROR(bump());
      FRAME_ASSIGN_OR_RETURN(g.value(v).type, optional_type());
    }
    return Status();
  }

  Status node(Graph& g, const Token& op, const std::vector<Token>& lhs,
              std::vector<PendingRef>& refs, int depth) {
    FRAME_RETURN_IF_ERROR(expect_punct('('));
    std::vector<Token> args;
    while (!is_punct(')')) {
      if (!args.empty()) FRAME_RETURN_IF_ERROR(expect_punct(','));
      if (cur_.kind != Tok::kValue && !is_ident("_")) {
        return err("expected an input like '%x' or '_' for an absent optional input");
      }
      args.push_back(cur_);
      FRAME_RETURN_IF_ERROR(bump());
    }
    FRAME_RETURN_IF_ERROR(bump());
    AttrMap attrs;
    if (is_punct('{')) FRAME_RETURN_IF_ERROR(attr_map(attrs, depth));
    std::vector<std::optional<TensorType>> types(lhs.size());
    if (is_punct(':')) {
      const Token colon = cur_;
      FRAME_RETURN_IF_ERROR(bump());
      for (size_t i = 0; i < lhs.size(); ++i) {
        if (i > 0) FRAME_RETURN_IF_ERROR(expect_punct(','));
        FRAME_ASSIGN_OR_RETURN(types[i], optional_type());
      }
      if (lhs.empty()) return Lexer::error(colon, "a node without outputs takes no types");
      if (is_punct(','))
        return err(fmt::format("node has {} outputs, more types given", lhs.size()));
    }
    std::string name;
    if (cur_.kind == Tok::kNode) {
      name = cur_.text;
      FRAME_RETURN_IF_ERROR(bump());
    }
    std::vector<std::string> out_names;
    for (const Token& t : lhs) out_names.push_back(t.text);
    Result<NodeId> id = g.create_node(op.text, name, std::vector<ValueId>(args.size(), kNoValue),
                                      static_cast<int>(lhs.size()), std::move(attrs), out_names);
    if (!id.is_ok()) return at(op, id.status());
    for (size_t i = 0; i < lhs.size(); ++i) g.value(g.node(*id).outputs[i]).type = types[i];
    for (size_t i = 0; i < args.size(); ++i) refs.push_back({args[i], *id, i});
    return Status();
  }

  Result<std::optional<TensorType>> optional_type() {
    if (is_punct('?')) {
      FRAME_RETURN_IF_ERROR(bump());
      return std::optional<TensorType>();
    }
    FRAME_ASSIGN_OR_RETURN(TensorType t, type());
    return std::optional<TensorType>(std::move(t));
  }

  // dtype '[' [int (',' int)*] ']'
  Result<TensorType> type() {
    if (cur_.kind != Tok::kIdent) return err("expected a type like f32[1,3]");
    Result<DTypeCode> dt = parse_dtype(cur_.text);
    if (!dt.is_ok())
      return err("expected a dtype (f32, f64, f16, bf16, i8, i16, i32, i64, u8, bool)");
    TensorType t{*dt, {}};
    FRAME_RETURN_IF_ERROR(bump());
    FRAME_RETURN_IF_ERROR(expect_punct('['));
    while (!is_punct(']')) {
      if (!t.shape.empty()) FRAME_RETURN_IF_ERROR(expect_punct(','));
      FRAME_ASSIGN_OR_RETURN(int64_t d, integer());
      t.shape.push_back(d);
    }
    FRAME_RETURN_IF_ERROR(bump());
    return t;
  }

  Result<int64_t> integer() {
    if (cur_.kind != Tok::kInt) return err("expected an integer");
    int64_t v = 0;
    auto [p, ec] = std::from_chars(cur_.text.data(), cur_.text.data() + cur_.text.size(), v);
    if (ec != std::errc() || p != cur_.text.data() + cur_.text.size()) {
      return err("integer out of int64 range");
    }
    FRAME_RETURN_IF_ERROR(bump());
    return v;
  }

  Status attr_map(AttrMap& attrs, int depth) {
    FRAME_RETURN_IF_ERROR(bump());
    while (!is_punct('}')) {
      if (!attrs.empty()) FRAME_RETURN_IF_ERROR(expect_punct(','));
      if (cur_.kind != Tok::kIdent && cur_.kind != Tok::kString)
        return err("expected an attribute name");
      const Token key = cur_;
      FRAME_RETURN_IF_ERROR(bump());
      FRAME_RETURN_IF_ERROR(expect_punct('='));
      FRAME_ASSIGN_OR_RETURN(AttrValue v, attr_value(depth));
      if (!attrs.emplace(key.text, std::move(v)).second) {
        return Lexer::error(key, fmt::format("duplicate attribute '{}'", key.text));
      }
    }
    return bump();
  }

  Result<AttrValue> attr_value(int depth) {
    if (cur_.kind == Tok::kInt) {
      FRAME_ASSIGN_OR_RETURN(int64_t v, integer());
      return AttrValue(v);
    }
    if (cur_.kind == Tok::kFloat || is_ident("inf") || is_ident("nan")) {
      FRAME_ASSIGN_OR_RETURN(double v, float_of<double>(cur_));
      FRAME_RETURN_IF_ERROR(bump());
      return AttrValue(v);
    }
    if (cur_.kind == Tok::kString) {
      std::string s = cur_.text;
      FRAME_RETURN_IF_ERROR(bump());
      return AttrValue(std::move(s));
    }
    if (is_ident("tensor")) {
      FRAME_ASSIGN_OR_RETURN(Tensor t, tensor());
      return AttrValue(std::move(t));
    }
    if (is_ident("graph")) {
      FRAME_ASSIGN_OR_RETURN(Graph g, graph(depth + 1));
      return AttrValue(std::shared_ptr<const Graph>(std::make_shared<Graph>(std::move(g))));
    }
    std::string hint;
    if (is_ident("ints") || is_ident("floats") || is_ident("strings")) {
      hint = cur_.text;
      FRAME_RETURN_IF_ERROR(bump());
    }
    if (is_punct('[')) return list(hint);
    return err("expected an attribute value");
  }

  // '[' elements ']' with an optional leading type word; untyped lists infer their kind.
  Result<AttrValue> list(const std::string& hint) {
    const Token open = cur_;
    FRAME_RETURN_IF_ERROR(bump());
    std::vector<Token> items;
    while (!is_punct(']')) {
      if (!items.empty()) FRAME_RETURN_IF_ERROR(expect_punct(','));
      const bool scalar = cur_.kind == Tok::kInt || cur_.kind == Tok::kFloat ||
                          cur_.kind == Tok::kString || is_ident("inf") || is_ident("nan");
      if (!scalar) return err("expected a number or a string in the list");
      items.push_back(cur_);
      FRAME_RETURN_IF_ERROR(bump());
    }
    FRAME_RETURN_IF_ERROR(bump());
    std::string kind = hint;
    if (kind.empty()) {
      if (items.empty()) {
        return Lexer::error(open, "an empty list needs its type: ints[], floats[] or strings[]");
      }
      bool any_string = false, any_float = false, all_string = true;
      for (const Token& t : items) {
        any_string |= t.kind == Tok::kString;
        all_string &= t.kind == Tok::kString;
        any_float |= t.kind == Tok::kFloat || t.kind == Tok::kIdent;
      }
      if (any_string && !all_string) return Lexer::error(open, "list mixes strings and numbers");
      kind = all_string ? "strings" : any_float ? "floats" : "ints";
    }
    std::vector<int64_t> ints;
    std::vector<double> floats;
    std::vector<std::string> strings;
    for (const Token& t : items) {
      if (kind == "strings") {
        if (t.kind != Tok::kString) return Lexer::error(t, "expected a string in a strings list");
        strings.push_back(t.text);
      } else if (kind == "ints") {
        if (t.kind != Tok::kInt) return Lexer::error(t, "expected an integer in an ints list");
        FRAME_ASSIGN_OR_RETURN(int64_t v, int_of(t));
        ints.push_back(v);
      } else {
        if (t.kind == Tok::kString) return Lexer::error(t, "expected a number in a floats list");
        FRAME_ASSIGN_OR_RETURN(double v, float_of<double>(t));
        floats.push_back(v);
      }
    }
    if (kind == "strings") return AttrValue(std::move(strings));
    if (kind == "ints") return AttrValue(std::move(ints));
    return AttrValue(std::move(floats));
  }

  Result<int64_t> int_of(const Token& t) const {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size()) {
      return Lexer::error(t, "integer out of int64 range");
    }
    return v;
  }

  template <typename F>
  Result<F> float_of(const Token& t) const {
    F v{};
    auto [p, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec != std::errc() || p != t.text.data() + t.text.size()) {
      return Lexer::error(t, fmt::format("number '{}' out of range", t.text));
    }
    return v;
  }

  Result<Tensor> tensor();

  Lexer lex_;
  const ParseOptions& options_;
  Token cur_;
};

// tensor '<' type '>' '[' elements ']': elements in row-major order.
Result<Tensor> Parser::tensor() {
  FRAME_RETURN_IF_ERROR(bump());
  FRAME_RETURN_IF_ERROR(expect_punct('<'));
  const Token type_tok = cur_;
  FRAME_ASSIGN_OR_RETURN(TensorType type, this->type());
  FRAME_RETURN_IF_ERROR(expect_punct('>'));
  if (is_ident("ref")) {
    const Token ref = cur_;
    FRAME_RETURN_IF_ERROR(bump());
    if (cur_.kind != Tok::kString) return err("expected the tensor's id string after 'ref'");
    const Token id = cur_;
    FRAME_RETURN_IF_ERROR(bump());
    if (!options_.resolve_tensor) {
      return Lexer::error(ref, fmt::format("tensor ref \"{}\" needs a resolver "
                                           "(ParseOptions::resolve_tensor)",
                                           id.text));
    }
    Result<Tensor> t = options_.resolve_tensor(id.text, type);
    if (!t.is_ok()) return at(id, t.status());
    if (t->dtype() != type.dtype || t->shape() != type.shape) {
      return Lexer::error(
          id, fmt::format("tensor ref \"{}\" resolved to {}, declared {}", id.text,
                          TensorType{t->dtype(), t->shape()}.to_string(), type.to_string()));
    }
    return std::move(t).value();
  }
  if (is_punct('<')) {
    return err(
        "expected '[' with the tensor data (text printed without constant data cannot be "
        "parsed)");
  }
  const Token open = cur_;
  FRAME_RETURN_IF_ERROR(expect_punct('['));
  std::vector<Token> items;
  while (!is_punct(']')) {
    if (!items.empty()) FRAME_RETURN_IF_ERROR(expect_punct(','));
    const bool ok = cur_.kind == Tok::kInt || cur_.kind == Tok::kFloat || is_ident("inf") ||
                    is_ident("nan") || is_ident("true") || is_ident("false");
    if (!ok) return err("expected a tensor element");
    items.push_back(cur_);
    FRAME_RETURN_IF_ERROR(bump());
  }
  FRAME_RETURN_IF_ERROR(bump());
  // Count before allocating, so a huge declared shape cannot trigger a huge allocation.
  Result<int64_t> numel = checked_numel(type.shape);
  if (!numel.is_ok()) return at(type_tok, numel.status());
  if (*numel != static_cast<int64_t>(items.size())) {
    return Lexer::error(open, fmt::format("tensor<{}> needs {} elements, got {}", type.to_string(),
                                          *numel, items.size()));
  }
  Result<Tensor> made = Tensor::empty(type.dtype, type.shape);
  if (!made.is_ok()) return at(type_tok, made.status());
  Tensor t = std::move(made).value();
  Status st = dispatch_dtype(type.dtype, [&]<typename T>() -> Status {
    T* out = t.data<T>();
    for (size_t i = 0; i < items.size(); ++i) {
      const Token& e = items[i];
      if constexpr (std::is_same_v<T, bool>) {
        if (e.text == "true" || e.text == "1") {
          out[i] = true;
        } else if (e.text == "false" || e.text == "0") {
          out[i] = false;
        } else {
          return Lexer::error(e, fmt::format("expected true or false, got '{}'", e.text));
        }
      } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
        if (e.kind == Tok::kIdent && e.text != "inf" && e.text != "nan") {
          return Lexer::error(e, fmt::format("expected a number, got '{}'", e.text));
        }
        FRAME_ASSIGN_OR_RETURN(float f, float_of<float>(e));
        out[i] = T(f);
      } else if constexpr (std::is_floating_point_v<T>) {
        if (e.kind == Tok::kIdent && e.text != "inf" && e.text != "nan") {
          return Lexer::error(e, fmt::format("expected a number, got '{}'", e.text));
        }
        FRAME_ASSIGN_OR_RETURN(T f, float_of<T>(e));
        out[i] = f;
      } else {
        if (e.kind != Tok::kInt) {
          return Lexer::error(e, fmt::format("expected an integer for {}, got '{}'",
                                             dtype_name(type.dtype), e.text));
        }
        FRAME_ASSIGN_OR_RETURN(int64_t v, int_of(e));
        if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
            v > static_cast<int64_t>(std::numeric_limits<T>::max())) {
          return Lexer::error(e,
                              fmt::format("{} is out of range for {}", v, dtype_name(type.dtype)));
        }
        out[i] = static_cast<T>(v);
      }
    }
    return Status();
  });
  FRAME_RETURN_IF_ERROR(st);
  return t;
}

}  // namespace

Result<Graph> parse_text(std::string_view text) { return parse_text(text, ParseOptions{}); }

Result<Graph> parse_text(std::string_view text, const ParseOptions& options) {
  return Parser(text, options).parse_top();
}

}  // namespace frame::ir
