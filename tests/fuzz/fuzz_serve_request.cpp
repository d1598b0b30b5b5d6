// libFuzzer target: the REST request path of `frame serve` on arbitrary bytes (docs/fuzzing.md,
// docs/serving.md "Limits"): the infer body decoder, with and without the binary tensor data
// extension's header length, and the model config parser. Every size, count and nesting depth
// a body declares must be checked before anything is allocated from it.
//
// Input layout: byte 0 bit 0 = send Inference-Header-Content-Length, bytes 1-2 = its value
// (big-endian); the rest is the body.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "frame/serve/repository.h"
#include "serve/json_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const std::string_view body(reinterpret_cast<const char*>(data) + 3, size - 3);
  std::optional<std::string> length;
  if (data[0] & 1) length = std::to_string((size_t{data[1]} << 8) | data[2]);
  std::optional<std::string_view> header;
  if (length) header = *length;
  frame::Result<frame::serve::InferRequest> r =
      frame::serve::detail::decode_infer_request(body, header, "m", "");
  if (r.is_ok()) {
    // Whatever decodes must encode back (the response path reads the same tensors).
    frame::serve::InferResponse response;
    for (auto& in : r->inputs) {
      response.outputs.push_back(in);
      response.binary_data.push_back((data[0] & 2) != 0);
    }
    (void)frame::serve::detail::encode_infer_response(response);
  }
  (void)frame::serve::parse_model_config(body, "config.json");
  return 0;
}
