#pragma once
/// \file
/// `frame serve` (docs/serving.md): the Open Inference Protocol over REST (HTTP/1.1, JSON and
/// the binary tensor data extension) and gRPC (`inference.GRPCInferenceService`), over a model
/// repository, with Prometheus metrics on the HTTP port. Layer: serve sits between the ONNX
/// frontend and the CLI (tools/cli -> serve -> onnx, runtime; docs/architecture/ir-design.md).
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "frame/core/status.h"
#include "frame/serve/protocol.h"
#include "frame/serve/repository.h"

namespace frame::serve {

/// Counters and histograms of a server, exported at `GET /metrics` in Prometheus text format
/// (src/serve/metrics.cpp).
class Metrics;

/// The protocol's operations, transport-free. The REST and gRPC front ends call only these.
/// Thread-safe.
class InferenceService {
 public:
  InferenceService(std::shared_ptr<ModelRepository> repository, std::shared_ptr<Metrics> metrics);
  /// Server liveness: true while the process serves.
  bool live() const;
  /// Readiness: accepting inference requests (false once shutdown began). A model's own
  /// readiness is model_ready().
  bool ready() const;
  ServerMetadata server_metadata() const;
  /// Errors: as ModelRepository::find.
  Result<ModelMetadata> model_metadata(std::string_view name, std::string_view version) const;
  /// True when the model version is ready; false for a known model that is not. Errors:
  /// kNotFound for an unknown model or version.
  Result<bool> model_ready(std::string_view name, std::string_view version) const;
  /// Runs one request and records it in the metrics under `protocol` ("rest" or "grpc").
  /// Errors: ModelRepository::find's, then Model::infer's.
  Result<InferResponse> infer(InferRequest request, std::string_view protocol);
  /// Records in the metrics a request a transport refused before infer() (undecodable body).
  void record_rejected(const std::string& model, std::string_view protocol, const Status& status);
  std::vector<IndexEntry> repository_index() const;
  Status load_model(const std::string& name);
  Status unload_model(const std::string& name);
  /// Refuses new requests from now on (kFailedPrecondition) and flips readiness to false.
  void begin_shutdown();
  /// Waits until no inference request is in flight or `deadline` passes; true when none is.
  bool wait_idle(std::chrono::steady_clock::time_point deadline);
  /// Prometheus text exposition of every metric (cache counters read now).
  std::string metrics_text() const;

 private:
  std::shared_ptr<ModelRepository> repository_;
  std::shared_ptr<Metrics> metrics_;
  std::atomic<bool> stopping_{false};
  std::mutex mu_;
  std::condition_variable idle_;
  int in_flight_ = 0;
};

/// Options of `frame serve` (docs/serving.md, "Command line").
struct ServerOptions {
  std::string model_repository;
  /// Interface to listen on; 127.0.0.1 unless the user says otherwise.
  std::string host = "127.0.0.1";
  /// 0: a free port chosen by the system (printed, and returned by Server::http_port); -1: off.
  int http_port = 8000;
  int grpc_port = 8001;
  /// HTTP worker threads; each serves one keep-alive connection at a time, so this bounds the
  /// concurrent REST clients served without waiting.
  int http_threads = 64;
  /// Largest request body (REST) or message (gRPC receive limit), bytes.
  size_t max_request_bytes = size_t{256} << 20;
  /// TLS for both endpoints: PEM certificate chain and private key files; both empty: plain.
  std::string tls_cert_file;
  std::string tls_key_file;
  /// When not empty, every request except liveness, readiness and metrics must carry
  /// `Authorization: Bearer <token>` (gRPC: metadata `authorization`); else 401 /
  /// UNAUTHENTICATED.
  std::string bearer_token;
  /// Seconds a connection may stay idle or a slow client take to send its request.
  int read_timeout_s = 30;
  /// One JSON line per request on stderr (time, client, method, path, status, bytes).
  bool access_log = false;
};

/// A running server. Destroying it stops it (as stop()).
class Server {
 public:
  /// Opens the repository, loads every model (failures are printed and leave the model
  /// UNAVAILABLE), binds the ports and starts serving in background threads. Errors: kNotFound
  /// for a missing repository; kIo naming the address when a port cannot be bound or the TLS
  /// files cannot be read; kUnimplemented for gRPC when this build has no gRPC.
  static Result<std::unique_ptr<Server>> start(const ServerOptions& options);
  virtual ~Server() = default;
  /// The ports bound (the system's choice where 0 was asked); -1 when off.
  virtual int http_port() const = 0;
  virtual int grpc_port() const = 0;
  /// Graceful stop: stop accepting, let in-flight requests finish for at most `timeout`, close.
  /// Returns true when every request finished in time.
  virtual bool stop(std::chrono::milliseconds timeout) = 0;
  /// The protocol service (for in-process use and tests).
  virtual InferenceService& service() = 0;
};

}  // namespace frame::serve
