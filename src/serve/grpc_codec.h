#pragma once
// The gRPC request decoder of `frame serve` (src/serve/grpc_frontend.cpp), declared apart for
// the fuzz target tests/fuzz/fuzz_serve_grpc_request.cpp.
#include "frame/core/status.h"
#include "frame/serve/protocol.h"
#include "grpc_predict_v2.pb.h"

namespace frame::serve::detail {

/// Decodes a ModelInfer request: raw_input_contents (one per input, byte sizes checked) or typed
/// contents (element counts checked before anything is allocated; FP16 and BF16 only raw), the
/// `timeout` parameter, requested outputs. Errors: kInvalidArgument naming the input and what is
/// wrong; kUnimplemented for BYTES and unsupported extensions (shared memory, classification).
Result<InferRequest> decode_grpc_infer_request(const inference::ModelInferRequest& request);

}  // namespace frame::serve::detail
