// libFuzzer target: the gRPC request path of `frame serve` on arbitrary bytes (docs/fuzzing.md,
// docs/serving.md "Security"): the bytes are parsed as a ModelInferRequest, as gRPC would, and
// decoded; a message may declare any shape and any contents, and nothing may be allocated from a
// size before it is checked against the message.

#include <cstddef>
#include <cstdint>

#include "serve/grpc_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  inference::ModelInferRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)frame::serve::detail::decode_grpc_infer_request(request);
  return 0;
}
