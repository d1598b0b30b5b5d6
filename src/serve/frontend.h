#pragma once
// The transports of `frame serve` (REST in http_frontend.cpp, gRPC in grpc_frontend.cpp): each
// decodes requests into frame/serve/protocol.h's types, calls the one InferenceService, and
// encodes the answer. server.cpp starts and stops them.
#include <chrono>
#include <memory>

#include "frame/core/status.h"
#include "frame/serve/server.h"

namespace frame::serve::detail {

/// A listening transport.
class Frontend {
 public:
  virtual ~Frontend() = default;
  /// The port bound (the system's choice where 0 was asked).
  virtual int port() const = 0;
  /// Stops accepting connections and requests, waits for in-flight requests until `deadline`,
  /// then closes every connection. Idempotent.
  virtual void shutdown(std::chrono::steady_clock::time_point deadline) = 0;
};

/// Binds options.host:options.http_port and serves the REST protocol and /metrics on
/// background threads. Errors: kIo naming the address (port taken, TLS files unreadable).
Result<std::unique_ptr<Frontend>> start_http(InferenceService& service,
                                             const ServerOptions& options);

/// Binds options.host:options.grpc_port and serves inference.GRPCInferenceService. Errors: kIo
/// naming the address.
Result<std::unique_ptr<Frontend>> start_grpc(InferenceService& service,
                                             const ServerOptions& options);

}  // namespace frame::serve::detail
