// libFuzzer target: an entry of the compile cache on disk (src/runtime/disk_cache.h; docs/
// fuzzing.md) treated as untrusted input, like a model. An input that starts with the entry
// magic is fed as a whole file (header parsing); any other input is an entry's payload, the
// JSON document, a NUL byte, then the binary section, to which the harness adds a header with
// this build's fingerprints and the payload's true digest, so mutations reach the JSON, graph
// text, placement and memory-plan checks instead of stopping at the digest. Blob refs point at
// a directory that does not exist. An entry that is accepted is run once on zero inputs: the
// checks must have made its memory plan safe to bind.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "frame/core/digest.h"
#include "frame/runtime/backend.h"
#include "runtime/disk_cache.h"

namespace {

frame::runtime::CompileOptions resolved() {
  frame::runtime::CompileOptions o;
  o.backends = *frame::runtime::resolve_backends({"auto"});
  o.num_threads = 1;
  o.max_memory_bytes = size_t{256} << 20;  // libFuzzer's malloc limit is 1 GiB
  o.max_tensor_bytes = size_t{64} << 20;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using frame::runtime::detail::DiskCache;
  if (size > (size_t{1} << 20)) return 0;
  static const frame::runtime::CompileOptions options = resolved();
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  std::string entry;
  std::string key;
  if (in.rfind("frame-compile-cache ", 0) == 0) {
    entry = std::string(in);
  } else {
    const size_t nul = in.find('\0');
    const std::string_view js = in.substr(0, nul);
    const std::string_view binary = nul == std::string_view::npos ? "" : in.substr(nul + 1);
    const nlohmann::json j = nlohmann::json::parse(js, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("key") && j["key"].is_string()) key = j["key"];
    const std::string payload = std::string(js) + std::string(binary);
    entry = "frame-compile-cache " + std::to_string(frame::runtime::detail::kDiskCacheFormat) +
            "\nbuild " + frame::runtime::detail::build_fingerprint() + "\ncpu " +
            frame::runtime::detail::cpu_fingerprint() + "\nblobs -\njson " +
            std::to_string(js.size()) + "\nbinary " + std::to_string(binary.size()) + "\ndigest " +
            frame::digest_hex(payload.data(), payload.size()) + "\n\n" + payload;
  }
  frame::Result<frame::runtime::Executable> exe =
      DiskCache::parse_entry(entry, key, options, "/nonexistent/frame-fuzz-blobs");
  if (!exe.is_ok()) return 0;
  frame::runtime::TensorMap inputs;
  size_t bytes = 0;
  for (const auto& [name, type] : exe->input_signature()) {
    frame::Result<frame::Tensor> t = frame::Tensor::zeros(type.dtype, type.shape);
    if (!t.is_ok()) return 0;
    bytes += t->nbytes();
    if (bytes > (size_t{16} << 20)) return 0;
    inputs.emplace(name, std::move(*t));
  }
  (void)exe->run(inputs);
  return 0;
}
