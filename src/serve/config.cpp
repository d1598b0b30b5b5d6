// A model's config.json (frame/serve/repository.h, ModelConfig; docs/serving.md).
#include <fmt/format.h>

#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "frame/serve/repository.h"

namespace frame::serve {
namespace {

using nlohmann::json;

// Reads an integer field into `out` within [lo, hi]; the message names the file and key.
Status read_int(const json& v, const std::string& where, const std::string& key, int64_t lo,
                int64_t hi, int64_t& out) {
  if (!v.is_number_integer()) {
    return invalid_argument("{}: '{}' must be an integer, got {}", where, key, v.dump());
  }
  const int64_t x = v.get<int64_t>();
  if (x < lo || x > hi) {
    return invalid_argument("{}: '{}' must be from {} to {}, got {}", where, key, lo, hi, x);
  }
  out = x;
  return Status::ok();
}

}  // namespace

Result<ModelConfig> parse_model_config(std::string_view json_text, const std::string& where) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return invalid_argument("{}: not valid JSON", where);
  if (!doc.is_object()) return invalid_argument("{}: expected a JSON object", where);
  ModelConfig c;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  for (const auto& [key, v] : doc.items()) {
    int64_t x = 0;
    if (key == "backends") {
      // A list of names or one comma-separated string, as `frame run --backend`.
      c.backends.clear();
      if (v.is_string()) {
        std::string s = v.get<std::string>();
        size_t start = 0;
        while (start <= s.size()) {
          const size_t comma = s.find(',', start);
          const std::string name =
              s.substr(start, comma == std::string::npos ? comma : comma - start);
          if (!name.empty()) c.backends.push_back(name);
          if (comma == std::string::npos) break;
          start = comma + 1;
        }
      } else if (v.is_array()) {
        for (const json& b : v) {
          if (!b.is_string()) return invalid_argument("{}: 'backends' must hold strings", where);
          c.backends.push_back(b.get<std::string>());
        }
      } else {
        return invalid_argument("{}: 'backends' must be a string or a list of strings", where);
      }
      if (c.backends.empty()) return invalid_argument("{}: 'backends' is empty", where);
    } else if (key == "threads") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 0, 4096, x));
      c.threads = static_cast<int>(x);
    } else if (key == "instances") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 1, 1024, x));
      c.instances = static_cast<int>(x);
    } else if (key == "max_batch_size") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 0, 1 << 20, x));
      c.max_batch_size = x;
    } else if (key == "max_queue_delay_us") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 0, 60'000'000, x));
      c.max_queue_delay_us = x;
    } else if (key == "preferred_batch_sizes") {
      if (!v.is_array())
        return invalid_argument("{}: 'preferred_batch_sizes' must be a list", where);
      c.preferred_batch_sizes.clear();
      for (const json& b : v) {
        FRAME_RETURN_IF_ERROR(read_int(b, where, key, 1, 1 << 20, x));
        c.preferred_batch_sizes.push_back(x);
      }
    } else if (key == "max_queue_size") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 1, 1 << 24, x));
      c.max_queue_size = static_cast<size_t>(x);
    } else if (key == "default_timeout_us") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 0, kMax, x));
      c.default_timeout_us = x;
    } else if (key == "max_specializations") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 1, 1 << 20, x));
      c.max_specializations = static_cast<size_t>(x);
    } else if (key == "max_cache_bytes") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 0, kMax, x));
      c.max_cache_bytes = static_cast<size_t>(x);
    } else if (key == "max_memory_bytes") {
      FRAME_RETURN_IF_ERROR(read_int(v, where, key, 0, kMax, x));
      c.max_memory_bytes = static_cast<size_t>(x);
    } else {
      return invalid_argument(
          "{}: unknown key '{}' (known: backends, threads, instances, max_batch_size, "
          "max_queue_delay_us, preferred_batch_sizes, max_queue_size, default_timeout_us, "
          "max_specializations, max_cache_bytes, max_memory_bytes)",
          where, key);
    }
  }
  for (int64_t b : c.preferred_batch_sizes) {
    if (c.max_batch_size == 0 || b > c.max_batch_size) {
      return invalid_argument(
          "{}: preferred batch size {} needs max_batch_size >= {} (max_batch_size is {})", where, b,
          b, c.max_batch_size);
    }
  }
  return c;
}

}  // namespace frame::serve
