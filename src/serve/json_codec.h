#pragma once
// The REST encoding of the Open Inference Protocol (docs/serving.md, "REST"): JSON tensors
// (flat or nested `data`, row-major) and the binary tensor data extension
// (`Inference-Header-Content-Length`, per-tensor `binary_data_size`, per-output `binary_data`,
// request-level `binary_data_output`). Request bodies are untrusted input: sizes, counts and
// nesting are checked before anything is allocated from them (tests/fuzz/serve_http_request).
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "frame/core/status.h"
#include "frame/serve/protocol.h"

namespace frame::serve::detail {

/// Deepest JSON nesting a request may have (objects and arrays).
inline constexpr size_t kMaxJsonDepth = 64;

/// Decodes the body of `POST /v2/models/{model}[/versions/{version}]/infer`. `header_length` is
/// the `Inference-Header-Content-Length` header's value (empty: no binary data, the whole body
/// is JSON). Errors: kInvalidArgument naming what is wrong: malformed JSON (with the byte
/// offset), nesting deeper than kMaxJsonDepth, a missing or mistyped field, a negative dim or
/// too many elements, `data` whose element count differs from the shape's, a value out of the
/// datatype's range, binary sizes that do not match the shape or the body's length;
/// kUnimplemented for BYTES.
Result<InferRequest> decode_infer_request(std::string_view body,
                                          std::optional<std::string_view> header_length,
                                          std::string model_name, std::string model_version);

/// An encoded response body; `header_length` is set when binary outputs follow the JSON (then
/// the response carries `Inference-Header-Content-Length` and is application/octet-stream).
struct EncodedBody {
  std::string body;
  std::optional<size_t> header_length;
};

/// Encodes an inference response: outputs marked binary as raw bytes after the JSON header,
/// the others as flat `data` arrays (floats in their shortest round-trip form; a NaN or
/// infinity, which JSON cannot hold, as null).
EncodedBody encode_infer_response(const InferResponse& response);

std::string encode_server_metadata(const ServerMetadata& metadata);
std::string encode_model_metadata(const ModelMetadata& metadata);
std::string encode_index(const std::vector<IndexEntry>& index);
/// `{"error": "<message>"}`.
std::string encode_error(std::string_view message);

}  // namespace frame::serve::detail
