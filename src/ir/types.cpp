// TensorType printing and attribute equality/hashing (used by CSE and the text form).

#include "frame/ir/types.h"

#include <bit>
#include <cmath>
#include <functional>
#include <string_view>

#include "frame/ir/text.h"

namespace frame::ir {

std::string TensorType::to_string() const {
  std::string s(dtype_name(dtype));
  s += '[';
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(shape[i]);
  }
  s += ']';
  return s;
}

std::string_view attr_type_name(AttrType t) {
  switch (t) {
    case AttrType::kInt:
      return "int";
    case AttrType::kFloat:
      return "float";
    case AttrType::kString:
      return "string";
    case AttrType::kInts:
      return "ints";
    case AttrType::kFloats:
      return "floats";
    case AttrType::kStrings:
      return "strings";
    case AttrType::kTensor:
      return "tensor";
    case AttrType::kGraph:
      return "graph";
  }
  return "unknown";
}

namespace {

// Doubles compare by bit pattern so that -0.0 and 0.0 stay distinct (1/x differs) while every
// NaN equals every other NaN; otherwise CSE could never merge nodes carrying a NaN attribute.
bool double_equal(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

size_t double_hash(double d) {
  if (std::isnan(d)) return 0x7ff8000000000000ull;
  return std::hash<uint64_t>{}(std::bit_cast<uint64_t>(d));
}

size_t combine(size_t seed, size_t h) {
  return seed ^ (h + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2));
}

bool graph_equal(const std::shared_ptr<const Graph>& a, const std::shared_ptr<const Graph>& b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return print_text(*a) == print_text(*b);
}

}  // namespace

bool attr_equal(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  switch (attr_type_of(a)) {
    case AttrType::kInt:
      return std::get<int64_t>(a) == std::get<int64_t>(b);
    case AttrType::kFloat:
      return double_equal(std::get<double>(a), std::get<double>(b));
    case AttrType::kString:
      return std::get<std::string>(a) == std::get<std::string>(b);
    case AttrType::kInts:
      return std::get<std::vector<int64_t>>(a) == std::get<std::vector<int64_t>>(b);
    case AttrType::kFloats: {
      const auto& x = std::get<std::vector<double>>(a);
      const auto& y = std::get<std::vector<double>>(b);
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i) {
        if (!double_equal(x[i], y[i])) return false;
      }
      return true;
    }
    case AttrType::kStrings:
      return std::get<std::vector<std::string>>(a) == std::get<std::vector<std::string>>(b);
    case AttrType::kTensor:
      return std::get<Tensor>(a).bitwise_equal(std::get<Tensor>(b));
    case AttrType::kGraph:
      return graph_equal(std::get<std::shared_ptr<const Graph>>(a),
                         std::get<std::shared_ptr<const Graph>>(b));
  }
  return false;
}

size_t attr_hash(const AttrValue& v) {
  size_t h = std::hash<size_t>{}(v.index());
  switch (attr_type_of(v)) {
    case AttrType::kInt:
      return combine(h, std::hash<int64_t>{}(std::get<int64_t>(v)));
    case AttrType::kFloat:
      return combine(h, double_hash(std::get<double>(v)));
    case AttrType::kString:
      return combine(h, std::hash<std::string>{}(std::get<std::string>(v)));
    case AttrType::kInts:
      for (int64_t x : std::get<std::vector<int64_t>>(v)) h = combine(h, std::hash<int64_t>{}(x));
      return h;
    case AttrType::kFloats:
      for (double x : std::get<std::vector<double>>(v)) h = combine(h, double_hash(x));
      return h;
    case AttrType::kStrings:
      for (const std::string& s : std::get<std::vector<std::string>>(v)) {
        h = combine(h, std::hash<std::string>{}(s));
      }
      return h;
    case AttrType::kTensor: {
      const Tensor& t = std::get<Tensor>(v);
      h = combine(h, static_cast<size_t>(t.dtype()));
      for (int64_t d : t.shape()) h = combine(h, std::hash<int64_t>{}(d));
      if (t.raw_data() != nullptr && t.nbytes() > 0) {
        std::string_view bytes(static_cast<const char*>(t.raw_data()), t.nbytes());
        h = combine(h, std::hash<std::string_view>{}(bytes));
      }
      return h;
    }
    case AttrType::kGraph: {
      const auto& g = std::get<std::shared_ptr<const Graph>>(v);
      return combine(h, g ? std::hash<std::string>{}(print_text(*g)) : 0);
    }
  }
  return h;
}

}  // namespace frame::ir
