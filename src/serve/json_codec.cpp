// The REST encoding of the Open Inference Protocol (src/serve/json_codec.h).
#include "json_codec.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <type_traits>

#include "common.h"

namespace frame::serve::detail {
namespace {

using nlohmann::json;

// Deepest nesting of objects and arrays in a JSON text, strings skipped; stops counting past
// `limit` (nlohmann's parser recurses per level, so a hostile depth must be refused first).
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

// Reads JSON number or boolean `v` as T; false when it is not one or out of T's range.
template <typename T>
bool json_to(const json& v, T& out) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) {
      out = v.get<bool>();
      return true;
    }
    if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
      out = v.get<int64_t>() == 1;
      return true;
    }
    return false;
  } else if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    // A finite number that does not fit the type is out of range, not infinity.
    if (!v.is_number()) return false;
    out = T(static_cast<float>(v.get<double>()));
    return std::isfinite(static_cast<float>(out));
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) return false;
    out = static_cast<T>(v.get<double>());
    return std::isfinite(out);
  } else {
    if (v.is_number_unsigned()) {
      const uint64_t x = v.get<uint64_t>();
      if (x > static_cast<uint64_t>(std::numeric_limits<T>::max())) return false;
      out = static_cast<T>(x);
      return true;
    }
    if (v.is_number_integer()) {
      const int64_t x = v.get<int64_t>();
      if constexpr (std::is_unsigned_v<T>) {
        if (x < 0) return false;
        if (static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max())) {
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
Status flatten(const json& data, const std::string& input, T* dst, int64_t n, int64_t& count) {
  for (const json& v : data) {
    if (v.is_array()) {
      FRAME_RETURN_IF_ERROR(flatten(v, input, dst, n, count));
      continue;
    }
    if (count >= n) {
      return invalid_argument("input '{}': 'data' has more elements than its shape's {}", input, n);
    }
    if (!json_to(v, dst[count])) {
      return invalid_argument("input '{}': element {} ({}) is not a {} value in range", input,
                              count, v.dump(-1, ' ', false, json::error_handler_t::replace),
                              dtype_name(kDTypeOf<T>));
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

// The shape of an input: a list of non-negative integers whose product fits.
Status read_shape(const json& in, const std::string& name, Shape& shape) {
  auto it = in.find("shape");
  if (it == in.end() || !it->is_array()) {
    return invalid_argument("input '{}': 'shape' must be a list of dims", name);
  }
  for (const json& d : *it) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return invalid_argument("input '{}': dim {} of 'shape' is not a non-negative integer", name,
                              d.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    shape.push_back(d.get<int64_t>());
  }
  return Status::ok();
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
  json doc;
  try {
    doc = json::parse(header);
  } catch (const json::parse_error& e) {
    return invalid_argument("malformed JSON in the request body at byte {}: {}", e.byte, e.what());
  } catch (const json::exception& e) {
    return invalid_argument("malformed JSON in the request body: {}", e.what());
  }
  if (!doc.is_object()) return invalid_argument("the request body must be a JSON object");

  InferRequest r;
  r.model_name = std::move(model_name);
  r.model_version = std::move(model_version);
  if (auto id = doc.find("id"); id != doc.end()) {
    if (!id->is_string()) return invalid_argument("'id' must be a string");
    r.id = id->get<std::string>();
  }
  if (auto p = doc.find("parameters"); p != doc.end()) {
    if (!p->is_object()) return invalid_argument("'parameters' must be an object");
    if (auto b = p->find("binary_data_output"); b != p->end()) {
      if (!b->is_boolean()) return invalid_argument("'binary_data_output' must be a boolean");
      r.binary_data_output = b->get<bool>();
    }
    if (auto t = p->find("timeout"); t != p->end()) {
      if (!t->is_number_unsigned()) {
        return invalid_argument("'timeout' must be a non-negative integer (microseconds)");
      }
      r.deadline = deadline_after_us(static_cast<int64_t>(
          std::min<uint64_t>(t->get<uint64_t>(), std::numeric_limits<int64_t>::max())));
    }
  }
  auto inputs = doc.find("inputs");
  if (inputs == doc.end() || !inputs->is_array()) {
    return invalid_argument("the request needs an 'inputs' list");
  }
  size_t binary_used = 0;
  for (const json& in : *inputs) {
    if (!in.is_object()) return invalid_argument("each of 'inputs' must be an object");
    auto nm = in.find("name");
    if (nm == in.end() || !nm->is_string()) return invalid_argument("an input has no 'name'");
    NamedTensor t;
    t.name = nm->get<std::string>();
    auto dt = in.find("datatype");
    if (dt == in.end() || !dt->is_string()) {
      return invalid_argument("input '{}' has no 'datatype'", t.name);
    }
    Result<DTypeCode> dtype = parse_datatype(dt->get<std::string>());
    if (!dtype.is_ok()) return dtype.status().with_prefix("input '" + t.name + "': ");
    Shape shape;
    FRAME_RETURN_IF_ERROR(read_shape(in, t.name, shape));
    Result<size_t> nbytes = checked_nbytes(*dtype, shape);
    if (!nbytes.is_ok()) return nbytes.status().with_prefix("input '" + t.name + "': ");
    std::optional<size_t> binary_size;
    if (auto p = in.find("parameters"); p != in.end()) {
      if (!p->is_object())
        return invalid_argument("input '{}': 'parameters' must be an object", t.name);
      if (auto b = p->find("binary_data_size"); b != p->end()) {
        if (!b->is_number_unsigned()) {
          return invalid_argument("input '{}': 'binary_data_size' must be a non-negative integer",
                                  t.name);
        }
        binary_size = b->get<uint64_t>();
      }
    }
    if (binary_size) {
      if (in.contains("data")) {
        return invalid_argument("input '{}' has both 'data' and binary_data_size", t.name);
      }
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
      auto data = in.find("data");
      if (data == in.end()) return invalid_argument("input '{}' has no 'data'", t.name);
      if (!data->is_array()) return invalid_argument("input '{}': 'data' must be a list", t.name);
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
  if (auto outs = doc.find("outputs"); outs != doc.end()) {
    if (!outs->is_array()) return invalid_argument("'outputs' must be a list");
    for (const json& o : *outs) {
      if (!o.is_object()) return invalid_argument("each of 'outputs' must be an object");
      auto nm = o.find("name");
      if (nm == o.end() || !nm->is_string()) return invalid_argument("an output has no 'name'");
      RequestedOutput ro;
      ro.name = nm->get<std::string>();
      if (auto p = o.find("parameters"); p != o.end()) {
        if (!p->is_object()) {
          return invalid_argument("output '{}': 'parameters' must be an object", ro.name);
        }
        for (const auto& [k, v] : p->items()) {
          if (k == "binary_data") {
            if (!v.is_boolean()) {
              return invalid_argument("output '{}': 'binary_data' must be a boolean", ro.name);
            }
            ro.binary_data = v.get<bool>();
          } else if (k == "classification") {
            return unimplemented("output '{}': the classification extension is not supported",
                                 ro.name);
          }
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
