#pragma once
/// \file
/// The Open Inference Protocol (KServe v2) as frame's serving layer sees it, independent of the
/// transport: datatypes, inference requests and responses, model and server metadata, and how
/// frame's error codes map to the protocol's HTTP statuses and gRPC codes (docs/serving.md).
/// Both the REST and the gRPC front end decode into these types and call one
/// `InferenceService` (frame/serve/server.h), so every rule (validation, batching, metrics)
/// is written once.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"

namespace frame::serve {

/// The protocol's name of an element type: "BOOL", "UINT8".."UINT64", "INT8".."INT64", "FP16",
/// "BF16", "FP32", "FP64" (Open Inference Protocol, "Tensor Data Types").
std::string_view datatype_name(DTypeCode dtype);

/// The element type of a protocol datatype name. Errors: kUnimplemented for "BYTES" (frame has
/// no string tensors yet); kInvalidArgument naming any other unknown name.
Result<DTypeCode> parse_datatype(std::string_view name);

/// One named tensor of a request or a response.
struct NamedTensor {
  std::string name;
  Tensor tensor;
};

/// What a request asks of one output (`outputs` of the request).
struct RequestedOutput {
  std::string name;
  /// REST binary tensor data extension: whether this output travels as raw bytes after the
  /// JSON header (`parameters.binary_data`); unset: the request's `binary_data_output`. gRPC
  /// always returns raw contents.
  std::optional<bool> binary_data;
};

/// A decoded inference request (`POST /v2/models/{m}[/versions/{v}]/infer`, gRPC ModelInfer).
struct InferRequest {
  std::string model_name;
  /// Empty: the highest ready version.
  std::string model_version;
  /// Echoed in the response.
  std::string id;
  /// Every input of the model, each once, in any order.
  std::vector<NamedTensor> inputs;
  /// The outputs to return; empty: every output of the model, in model order.
  std::vector<RequestedOutput> outputs;
  /// REST: `parameters.binary_data_output`: every output as raw bytes unless its own
  /// `binary_data` says otherwise (as Triton reads the two).
  bool binary_data_output = false;
  /// Time by which the request must have started computing; a request still queued then gets
  /// kFailedPrecondition (503 / UNAVAILABLE). time_point::max(): the model's default timeout.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

/// The result of one request.
struct InferResponse {
  std::string model_name;
  std::string model_version;
  std::string id;
  /// The requested outputs, in request order (model order when none were named).
  std::vector<NamedTensor> outputs;
  /// Per output: send as raw bytes (REST binary extension).
  std::vector<bool> binary_data;
  /// Microseconds spent waiting for an instance or a batch, and computing (the batch's run).
  double queue_us = 0;
  double compute_us = 0;
  /// Rows of the batch the request ran in (dynamic batching); 0 when it ran alone.
  int64_t batch_size = 0;
  /// True for exactly one request of each batch (metrics count batches, not requests).
  bool batch_leader = false;
};

/// A declared input or output in model metadata: dims that vary per request are -1.
struct TensorMetadata {
  std::string name;
  std::string datatype;
  std::vector<int64_t> shape;
};

/// `GET /v2/models/{m}[/versions/{v}]` and gRPC ModelMetadata.
struct ModelMetadata {
  std::string name;
  /// The versions of the model that are ready, ascending.
  std::vector<std::string> versions;
  std::string platform = "onnx";
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
};

/// `GET /v2` and gRPC ServerMetadata.
struct ServerMetadata {
  std::string name = "frame";
  std::string version;
  std::vector<std::string> extensions;
};

/// One row of the repository index (`POST /v2/repository/index`): a model version and its
/// state, "READY", "UNAVAILABLE" (failed to load or unloaded; `reason` says why) or "LOADING".
struct IndexEntry {
  std::string name;
  std::string version;
  std::string state;
  std::string reason;
};

/// How frame's errors map to the protocol (docs/serving.md, "Errors"):
/// kInvalidArgument, kOutOfRange and kUnimplemented -> 400 / INVALID_ARGUMENT (a bad request);
/// kNotFound -> 404 / NOT_FOUND (unknown model or version); kFailedPrecondition -> 503 /
/// UNAVAILABLE (model not ready, queue full, request timed out in the queue, server stopping);
/// anything else -> 500 / INTERNAL.
int http_status_of(const Status& status);

}  // namespace frame::serve
