// The REST encoding of the Open Inference Protocol (src/serve/json_codec.h).
#include "json_codec.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <type_traits>

#include "common.h"

namespace frame::serve::detail {
namespace {

using nlohmann::json;
using simdjson::dom::element;
using simdjson::dom::element_type;

// Deepest nesting of objects and arrays in a JSON text, strings skipped; stops counting past
// `limit` (refused before the parser sees it).
size_t json_depth(std::string_view s, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > deepest) deepest = depth;
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

// The elements of an array value (copied out of the result, whose storage a range-for over it
// would leave dangling).
simdjson::dom::array array_of(const element& v) {
  simdjson::dom::array a;
  if (v.get_array().get(a) != simdjson::SUCCESS) return {};  // callers checked the type
  return a;
}

// A JSON value's text for messages (short).
std::string brief(const element& v) {
  std::string text = simdjson::minify(v);
  if (text.size() > 40) text = text.substr(0, 37) + "...";
  return text;
}

// Reads JSON number or boolean `v` as T; false when it is not one or out of T's range (a finite
// number too large for a float type is out of range, not infinity).
template <typename T>
bool json_to(const element& v, T& out) {
  const element_type type = v.type();
  if constexpr (std::is_same_v<T, bool>) {
    if (type == element_type::BOOL) {
      out = v.get_bool().value_unsafe();
      return true;
    }
    if (type == element_type::INT64 || type == element_type::UINT64) {
      const uint64_t x = type == element_type::INT64
                             ? static_cast<uint64_t>(v.get_int64().value_unsafe())
                             : v.get_uint64().value_unsafe();
      if (x > 1) return false;
      out = x == 1;
      return true;
    }
    return false;
  } else if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                       std::is_same_v<T, BFloat16>) {
    double x = 0;
    if (type == element_type::DOUBLE) {
      x = v.get_double().value_unsafe();
    } else if (type == element_type::INT64) {
      x = static_cast<double>(v.get_int64().value_unsafe());
    } else if (type == element_type::UINT64) {
      x = static_cast<double>(v.get_uint64().value_unsafe());
    } else {
      return false;
    }
    if constexpr (std::is_same_v<T, double>) {
      out = x;
      return true;
    } else if constexpr (std::is_same_v<T, float>) {
      out = static_cast<float>(x);
      return std::isfinite(out);
    } else {
      out = T(static_cast<float>(x));
      return std::isfinite(static_cast<float>(out));
    }
  } else {
    if (type == element_type::UINT64) {
      const uint64_t x = v.get_uint64().value_unsafe();
      if (x > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
      out = static_cast<T>(x);
      return true;
    }
    if (type == element_type::INT64) {
      const int64_t x = v.get_int64().value_unsafe();
      if constexpr (std::is_unsigned_v<T>) {
        if (x < 0 ||
            static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
          return false;
        }
      } else {
        if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
            x > static_cast<int64_t>(std::numeric_limits<T>::max())) {
          return false;
        }
      }
      out = static_cast<T>(x);
      return true;
    }
    return false;
  }
}

// Flattens `data` (flat or nested arrays, row-major) into dst[0..n); `count` is the number of
// elements written so far. Errors name the input and the first bad element.
template <typename T>
Status flatten(const element& data, const std::string& input, T* dst, int64_t n, int64_t& count) {
  for (element v : array_of(data)) {
    if (v.type() == element_type::ARRAY) {
      FRAME_RETURN_IF_ERROR(flatten(v, input, dst, n, count));
      continue;
    }
    if (count >= n) {
      return invalid_argument("input '{}': 'data' has more elements than its shape's {}", input, n);
    }
    if (!json_to(v, dst[count])) {
      return invalid_argument("input '{}': element {} ({}) is not a {} value in range", input,
                              count, brief(v), dtype_name(kDTypeOf<T>));
    }
    ++count;
  }
  return Status::ok();
}

Result<size_t> parse_size(std::string_view s, const char* what) {
  size_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) {
    return invalid_argument("{} '{}' is not a non-negative integer", what, s);
  }
  return v;
}

// Field `key` of object `obj`, or nullopt when absent.
std::optional<element> field(const element& obj, std::string_view key) {
  element v;
  if (obj.get_object().value_unsafe()[key].get(v) != simdjson::SUCCESS) return std::nullopt;
  return v;
}

bool is_uint(const element& v) {
  return v.type() == element_type::UINT64 ||
         (v.type() == element_type::INT64 && v.get_int64().value_unsafe() >= 0);
}

uint64_t as_uint(const element& v) {
  return v.type() == element_type::UINT64 ? v.get_uint64().value_unsafe()
                                          : static_cast<uint64_t>(v.get_int64().value_unsafe());
}

// The shape of an input: a list of non-negative integers.
Status read_shape(const element& in, const std::string& name, Shape& shape) {
  std::optional<element> dims = field(in, "shape");
  if (!dims || dims->type() != element_type::ARRAY) {
    return invalid_argument("input '{}': 'shape' must be a list of dims", name);
  }
  for (element d : array_of(*dims)) {
    if (!is_uint(d) || as_uint(d) > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return invalid_argument("input '{}': dim {} of 'shape' is not a non-negative integer", name,
                              brief(d));
    }
    shape.push_back(static_cast<int64_t>(as_uint(d)));
  }
  return Status::ok();
}

// One parser per thread: it keeps its buffers between requests.
simdjson::dom::parser& thread_parser() {
  thread_local simdjson::dom::parser parser;
  return parser;
}

}  // namespace

Result<InferRequest> decode_infer_request(std::string_view body,
                                          std::optional<std::string_view> header_length,
                                          std::string model_name, std::string model_version) {
  std::string_view header = body;
  std::string_view binary;
  if (header_length) {
    FRAME_ASSIGN_OR_RETURN(size_t n, parse_size(*header_length, "Inference-Header-Content-Length"));
    if (n > body.size()) {
      return invalid_argument("Inference-Header-Content-Length {} exceeds the body's {} bytes", n,
                              body.size());
    }
    header = body.substr(0, n);
    binary = body.substr(n);
  }
  if (json_depth(header, kMaxJsonDepth) > kMaxJsonDepth) {
    return invalid_argument("request JSON nests deeper than {} levels", kMaxJsonDepth);
  }
  element doc;
  if (auto err = thread_parser().parse(header.data(), header.size()).get(doc);
      err != simdjson::SUCCESS) {
    return invalid_argument("malformed JSON in the request body: {}", simdjson::error_message(err));
  }
  if (doc.type() != element_type::OBJECT) {
    return invalid_argument("the request body must be a JSON object");
  }

  InferRequest r;
  r.model_name = std::move(model_name);
  r.model_version = std::move(model_version);
  if (auto id = field(doc, "id")) {
    if (id->type() != element_type::STRING) return invalid_argument("'id' must be a string");
    r.id = std::string(id->get_string().value_unsafe());
  }
  if (auto p = field(doc, "parameters")) {
    if (p->type() != element_type::OBJECT)
      return invalid_argument("'parameters' must be an object");
    if (auto b = field(*p, "binary_data_output")) {
      if (b->type() != element_type::BOOL) {
        return invalid_argument("'binary_data_output' must be a boolean");
      }
      r.binary_data_output = b->get_bool().value_unsafe();
    }
    if (auto t = field(*p, "timeout")) {
      if (!is_uint(*t)) {
        return invalid_argument("'timeout' must be a non-negative integer (microseconds)");
      }
      r.deadline = deadline_after_us(static_cast<int64_t>(
          std::min<uint64_t>(as_uint(*t), std::numeric_limits<int64_t>::max())));
    }
  }
  std::optional<element> inputs = field(doc, "inputs");
  if (!inputs || inputs->type() != element_type::ARRAY) {
    return invalid_argument("the request needs an 'inputs' list");
  }
  size_t binary_used = 0;
  for (element in : array_of(*inputs)) {
    if (in.type() != element_type::OBJECT) {
      return invalid_argument("each of 'inputs' must be an object");
    }
    std::optional<element> nm = field(in, "name");
    if (!nm || nm->type() != element_type::STRING)
      return invalid_argument("an input has no 'name'");
    NamedTensor t;
    t.name = std::string(nm->get_string().value_unsafe());
    std::optional<element> dt = field(in, "datatype");
    if (!dt || dt->type() != element_type::STRING) {
      return invalid_argument("input '{}' has no 'datatype'", t.name);
    }
    Result<DTypeCode> dtype = parse_datatype(dt->get_string().value_unsafe());
    if (!dtype.is_ok()) return dtype.status().with_prefix("input '" + t.name + "': ");
    Shape shape;
    FRAME_RETURN_IF_ERROR(read_shape(in, t.name, shape));
    Result<size_t> nbytes = checked_nbytes(*dtype, shape);
    if (!nbytes.is_ok()) return nbytes.status().with_prefix("input '" + t.name + "': ");
    std::optional<uint64_t> binary_size;
    if (auto p = field(in, "parameters")) {
      if (p->type() != element_type::OBJECT) {
        return invalid_argument("input '{}': 'parameters' must be an object", t.name);
      }
      if (auto b = field(*p, "binary_data_size")) {
        if (!is_uint(*b)) {
          return invalid_argument("input '{}': 'binary_data_size' must be a non-negative integer",
                                  t.name);
        }
        binary_size = as_uint(*b);
      }
    }
    std::optional<element> data = field(in, "data");
    if (binary_size) {
      if (data) return invalid_argument("input '{}' has both 'data' and binary_data_size", t.name);
      if (!header_length) {
        return invalid_argument(
            "input '{}' has binary_data_size but the request has no "
            "Inference-Header-Content-Length",
            t.name);
      }
      if (*binary_size != *nbytes) {
        return invalid_argument("input '{}': binary_data_size {} differs from {} bytes of {}{}",
                                t.name, *binary_size, *nbytes, datatype_name(*dtype),
                                shape_to_string(shape));
      }
      if (binary.size() - binary_used < *binary_size) {
        return invalid_argument("input '{}': binary_data_size {} runs past the body's end", t.name,
                                *binary_size);
      }
      FRAME_ASSIGN_OR_RETURN(t.tensor, Tensor::empty(*dtype, shape));
      if (*nbytes > 0) std::memcpy(t.tensor.raw_data(), binary.data() + binary_used, *nbytes);
      normalize_bools(t.tensor);
      binary_used += *binary_size;
    } else {
      if (!data) return invalid_argument("input '{}' has no 'data'", t.name);
      if (data->type() != element_type::ARRAY) {
        return invalid_argument("input '{}': 'data' must be a list", t.name);
      }
      // Every JSON element takes at least one byte of the header: a shape with more elements
      // than that cannot match its data, so it is refused before anything is allocated.
      if (static_cast<size_t>(numel_of(shape)) > header.size()) {
        return invalid_argument("input '{}': shape {} has more elements than 'data' can hold",
                                t.name, shape_to_string(shape));
      }
      FRAME_ASSIGN_OR_RETURN(t.tensor, Tensor::empty(*dtype, shape));
      const int64_t n = t.tensor.numel();
      int64_t count = 0;
      FRAME_RETURN_IF_ERROR(dispatch_dtype(*dtype, [&]<typename T>() -> Status {
        return flatten(*data, t.name, t.tensor.data<T>(), n, count);
      }));
      if (count != n) {
        return invalid_argument("input '{}': 'data' has {} elements, shape {} needs {}", t.name,
                                count, shape_to_string(shape), n);
      }
    }
    r.inputs.push_back(std::move(t));
  }
  if (binary_used != binary.size()) {
    return invalid_argument(
        "the body has {} bytes of binary data, the inputs' binary_data_size "
        "add up to {}",
        binary.size(), binary_used);
  }
  if (auto outs = field(doc, "outputs")) {
    if (outs->type() != element_type::ARRAY) return invalid_argument("'outputs' must be a list");
    for (element o : array_of(*outs)) {
      if (o.type() != element_type::OBJECT) {
        return invalid_argument("each of 'outputs' must be an object");
      }
      std::optional<element> nm = field(o, "name");
      if (!nm || nm->type() != element_type::STRING)
        return invalid_argument("an output has no 'name'");
      RequestedOutput ro;
      ro.name = std::string(nm->get_string().value_unsafe());
      if (auto p = field(o, "parameters")) {
        if (p->type() != element_type::OBJECT) {
          return invalid_argument("output '{}': 'parameters' must be an object", ro.name);
        }
        if (auto b = field(*p, "binary_data")) {
          if (b->type() != element_type::BOOL) {
            return invalid_argument("output '{}': 'binary_data' must be a boolean", ro.name);
          }
          ro.binary_data = b->get_bool().value_unsafe();
        }
        if (field(*p, "classification")) {
          return unimplemented("output '{}': the classification extension is not supported",
                               ro.name);
        }
      }
      r.outputs.push_back(std::move(ro));
    }
  }
  return r;
}

namespace {

// Appends the elements of `t` as a flat JSON array.
void append_data(std::string& out, const Tensor& t) {
  out += '[';
  auto body = [&]<typename T>() {
    const T* p = t.data<T>();
    const int64_t n = t.numel();
    for (int64_t i = 0; i < n; ++i) {
      if (i) out += ',';
      if constexpr (std::is_same_v<T, bool>) {
        out += p[i] ? "true" : "false";
      } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                           std::is_floating_point_v<T>) {
        const auto v =
            static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(p[i]);
        if (std::isfinite(v)) {
          fmt::format_to(std::back_inserter(out), "{}", v);
        } else {
          out += "null";
        }
      } else {
        fmt::format_to(std::back_inserter(out), "{}", p[i]);
      }
    }
  };
  (void)dispatch_dtype(t.dtype(), body);
  out += ']';
}

std::string shape_json(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

}  // namespace

EncodedBody encode_infer_response(const InferResponse& r) {
  EncodedBody e;
  std::string& out = e.body;
  out +=
      "{\"model_name\":" + json(r.model_name).dump(-1, ' ', false, json::error_handler_t::replace);
  out += ",\"model_version\":" +
         json(r.model_version).dump(-1, ' ', false, json::error_handler_t::replace);
  if (!r.id.empty())
    out += ",\"id\":" + json(r.id).dump(-1, ' ', false, json::error_handler_t::replace);
  out += ",\"outputs\":[";
  size_t binary_bytes = 0;
  for (size_t i = 0; i < r.outputs.size(); ++i) {
    const Tensor& t = r.outputs[i].tensor;
    if (i) out += ',';
    out +=
        "{\"name\":" + json(r.outputs[i].name).dump(-1, ' ', false, json::error_handler_t::replace);
    out += ",\"datatype\":\"" + std::string(datatype_name(t.dtype())) + "\"";
    out += ",\"shape\":" + shape_json(t.shape());
    if (i < r.binary_data.size() && r.binary_data[i]) {
      out += fmt::format(",\"parameters\":{{\"binary_data_size\":{}}}}}", t.nbytes());
      binary_bytes += t.nbytes();
    } else {
      out += ",\"data\":";
      append_data(out, t);
      out += '}';
    }
  }
  out += "]}";
  if (binary_bytes > 0 ||
      std::find(r.binary_data.begin(), r.binary_data.end(), true) != r.binary_data.end()) {
    e.header_length = out.size();
    out.reserve(out.size() + binary_bytes);
    for (size_t i = 0; i < r.outputs.size(); ++i) {
      if (i < r.binary_data.size() && r.binary_data[i]) {
        const Tensor& t = r.outputs[i].tensor;
        out.append(static_cast<const char*>(t.raw_data()), t.nbytes());
      }
    }
  }
  return e;
}

std::string encode_server_metadata(const ServerMetadata& m) {
  return json{{"name", m.name}, {"version", m.version}, {"extensions", m.extensions}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
}

std::string encode_model_metadata(const ModelMetadata& m) {
  auto tensors = [](const std::vector<TensorMetadata>& ts) {
    json a = json::array();
    for (const TensorMetadata& t : ts) {
      a.push_back({{"name", t.name}, {"datatype", t.datatype}, {"shape", t.shape}});
    }
    return a;
  };
  return json{{"name", m.name},
              {"versions", m.versions},
              {"platform", m.platform},
              {"inputs", tensors(m.inputs)},
              {"outputs", tensors(m.outputs)}}
      .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_index(const std::vector<IndexEntry>& index) {
  json a = json::array();
  for (const IndexEntry& e : index) {
    json row = {{"name", e.name}, {"state", e.state}};
    if (!e.version.empty()) row["version"] = e.version;
    if (!e.reason.empty()) row["reason"] = e.reason;
    a.push_back(std::move(row));
  }
  return a.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string encode_error(std::string_view message) {
  return json{{"error", std::string(message)}}.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace frame::serve::detail
