// The gRPC transport of `frame serve` (docs/serving.md, "gRPC"): inference.GRPCInferenceService
// (src/serve/proto/grpc_predict_v2.proto) over gRPC's synchronous server. Each call is decoded
// into frame/serve/protocol.h's types, run by the one InferenceService and encoded back; frame
// errors become gRPC codes by protocol.h's rule. Messages are untrusted input: gRPC parses the
// protobuf and bounds its size, this file checks shapes, counts and byte sizes before anything
// is allocated from them.
#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "common.h"
#include "frontend.h"
#include "grpc_codec.h"
#include "grpc_predict_v2.grpc.pb.h"

namespace frame::serve::detail {
namespace {

using SteadyClock = std::chrono::steady_clock;

/// The gRPC status of a frame error (protocol.h: 400 -> INVALID_ARGUMENT, 404 -> NOT_FOUND,
/// 503 -> UNAVAILABLE, anything else -> INTERNAL).
grpc::Status to_grpc(const Status& status) {
  if (status.is_ok()) return grpc::Status::OK;
  switch (http_status_of(status)) {
    case 400:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, status.message());
    case 404:
      return grpc::Status(grpc::StatusCode::NOT_FOUND, status.message());
    case 503:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, status.message());
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, status.message());
  }
}

/// The whole content of a file. Errors: kIo naming the file and what it is for.
Result<std::string> read_pem(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(StatusCode::kIo, fmt::format("gRPC: cannot read {} '{}'", what, path));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Status(StatusCode::kIo, fmt::format("gRPC: cannot read {} '{}'", what, path));
  return text.str();
}

/// "host:port", with an IPv6 literal in brackets.
std::string listen_address(const std::string& host, int port) {
  if (host.find(':') != std::string::npos && !host.starts_with('[')) {
    return fmt::format("[{}]:{}", host, port);
  }
  return fmt::format("{}:{}", host, port);
}

/// The typed field of InferTensorContents that carries `dtype`; empty for FP16 and BF16,
/// which travel only as raw contents.
std::string_view contents_field_of(DTypeCode dtype) {
  switch (dtype) {
    case DTypeCode::kBool:
      return "bool_contents";
    case DTypeCode::kInt8:
    case DTypeCode::kInt16:
    case DTypeCode::kInt32:
      return "int_contents";
    case DTypeCode::kInt64:
      return "int64_contents";
    case DTypeCode::kUInt8:
    case DTypeCode::kUInt16:
    case DTypeCode::kUInt32:
      return "uint_contents";
    case DTypeCode::kUInt64:
      return "uint64_contents";
    case DTypeCode::kFloat32:
      return "fp32_contents";
    case DTypeCode::kFloat64:
      return "fp64_contents";
    default:
      return {};
  }
}

/// Element counts of every typed field of `c`, by field name.
std::array<std::pair<std::string_view, int>, 8> contents_counts(
    const inference::InferTensorContents& c) {
  return {{{"bool_contents", c.bool_contents_size()},
           {"int_contents", c.int_contents_size()},
           {"int64_contents", c.int64_contents_size()},
           {"uint_contents", c.uint_contents_size()},
           {"uint64_contents", c.uint64_contents_size()},
           {"fp32_contents", c.fp32_contents_size()},
           {"fp64_contents", c.fp64_contents_size()},
           {"bytes_contents", c.bytes_contents_size()}}};
}

/// True when `c` holds any element.
bool has_elements(const inference::InferTensorContents& c) {
  for (const auto& [field, count] : contents_counts(c)) {
    if (count > 0) return true;
  }
  return false;
}

/// Copies the typed elements `src` (field `field`, as many as `t` has) into `t`, whose element
/// type is `Dst`, checking each value's range where `Dst` is a narrower integer type.
template <typename Dst, typename Src>
Status copy_elements(const google::protobuf::RepeatedField<Src>& src, std::string_view field,
                     const std::string& name, Tensor& t) {
  Dst* dst = t.data<Dst>();
  for (int i = 0; i < src.size(); ++i) {
    const Src v = src.Get(i);
    if constexpr (std::is_integral_v<Dst> && !std::is_same_v<Dst, bool> &&
                  !std::is_same_v<Dst, Src>) {
      if (!std::in_range<Dst>(v)) {
        return invalid_argument("input '{}': {}[{}] = {} is out of {}'s range", name, field, i, v,
                                datatype_name(t.dtype()));
      }
    }
    dst[i] = static_cast<Dst>(v);
  }
  return Status::ok();
}

/// The tensor of input `name` from its typed contents. `shape` was validated (checked_nbytes);
/// the element count is checked before anything is allocated.
Result<Tensor> decode_typed(const inference::InferTensorContents& c, const std::string& name,
                            DTypeCode dtype, const Shape& shape) {
  const std::string_view field = contents_field_of(dtype);
  if (field.empty()) {
    return invalid_argument(
        "input '{}': {} data travels only as raw_input_contents (the protocol has no typed "
        "field for it)",
        name, datatype_name(dtype));
  }
  int64_t count = 0;
  for (const auto& [other, n] : contents_counts(c)) {
    if (other == field) {
      count = n;
    } else if (n > 0) {
      return invalid_argument("input '{}' is {}: its elements go in contents.{}, not contents.{}",
                              name, datatype_name(dtype), field, other);
    }
  }
  const int64_t numel = numel_of(shape);
  if (count != numel) {
    return invalid_argument("input '{}': {} has {} elements, shape {} needs {}", name, field, count,
                            shape_to_string(shape), numel);
  }
  FRAME_ASSIGN_OR_RETURN(Tensor t, Tensor::empty(dtype, shape));
  Status st;
  switch (dtype) {
    case DTypeCode::kBool:
      st = copy_elements<bool>(c.bool_contents(), field, name, t);
      break;
    case DTypeCode::kInt8:
      st = copy_elements<int8_t>(c.int_contents(), field, name, t);
      break;
    case DTypeCode::kInt16:
      st = copy_elements<int16_t>(c.int_contents(), field, name, t);
      break;
    case DTypeCode::kInt32:
      st = copy_elements<int32_t>(c.int_contents(), field, name, t);
      break;
    case DTypeCode::kInt64:
      st = copy_elements<int64_t>(c.int64_contents(), field, name, t);
      break;
    case DTypeCode::kUInt8:
      st = copy_elements<uint8_t>(c.uint_contents(), field, name, t);
      break;
    case DTypeCode::kUInt16:
      st = copy_elements<uint16_t>(c.uint_contents(), field, name, t);
      break;
    case DTypeCode::kUInt32:
      st = copy_elements<uint32_t>(c.uint_contents(), field, name, t);
      break;
    case DTypeCode::kUInt64:
      st = copy_elements<uint64_t>(c.uint64_contents(), field, name, t);
      break;
    case DTypeCode::kFloat32:
      st = copy_elements<float>(c.fp32_contents(), field, name, t);
      break;
    case DTypeCode::kFloat64:
      st = copy_elements<double>(c.fp64_contents(), field, name, t);
      break;
    default:
      st = internal_error("input '{}': no typed decoding for {}", name, datatype_name(dtype));
  }
  if (!st.is_ok()) return st;
  return t;
}

/// Refuses the parameters of the shared-memory and classification extensions, which frame
/// does not implement (`what` names the tensor, e.g. "input 'x'").
Status check_tensor_parameters(
    const google::protobuf::Map<std::string, inference::InferParameter>& parameters,
    const std::string& what) {
  for (const auto& [key, value] : parameters) {
    if (key.starts_with("shared_memory_")) {
      return unimplemented("{}: the shared-memory extension is not supported ('{}')", what, key);
    }
    if (key == "classification") {
      return unimplemented("{}: the classification extension is not supported", what);
    }
  }
  return Status::ok();
}

/// Decodes a ModelInfer request. Errors: kInvalidArgument naming the input and what is wrong
/// (datatype, shape, element count, raw byte size, a typed field that does not match the
/// datatype, contents mixed with raw contents, a bad `timeout`); kUnimplemented for BYTES and
/// unsupported extensions.
Result<InferRequest> decode_infer_request(const inference::ModelInferRequest& req) {
  InferRequest r;
  r.model_name = req.model_name();
  r.model_version = req.model_version();
  r.id = req.id();
  for (const auto& [key, value] : req.parameters()) {
    if (key == "timeout") {
      int64_t us = 0;
      if (value.parameter_choice_case() == inference::InferParameter::kInt64Param) {
        us = value.int64_param();
      } else if (value.parameter_choice_case() == inference::InferParameter::kUint64Param) {
        us = static_cast<int64_t>(
            std::min<uint64_t>(value.uint64_param(), std::numeric_limits<int64_t>::max()));
      } else {
        return invalid_argument("parameter 'timeout' must be an integer (microseconds)");
      }
      if (us < 0) return invalid_argument("parameter 'timeout' must not be negative, got {}", us);
      r.deadline = deadline_after_us(us);
    } else if (key.starts_with("shared_memory_")) {
      return unimplemented("the shared-memory extension is not supported ('{}')", key);
    }
  }

  const bool raw = req.raw_input_contents_size() > 0;
  if (raw && req.raw_input_contents_size() != req.inputs_size()) {
    return invalid_argument("raw_input_contents has {} entries for {} inputs (one per input)",
                            req.raw_input_contents_size(), req.inputs_size());
  }
  r.inputs.reserve(static_cast<size_t>(req.inputs_size()));
  for (int i = 0; i < req.inputs_size(); ++i) {
    const inference::ModelInferRequest::InferInputTensor& in = req.inputs(i);
    NamedTensor t;
    t.name = in.name();
    const std::string what = "input '" + t.name + "'";
    FRAME_RETURN_IF_ERROR(check_tensor_parameters(in.parameters(), what));
    Result<DTypeCode> dtype = parse_datatype(in.datatype());
    if (!dtype.is_ok()) return dtype.status().with_prefix(what + ": ");
    const Shape shape(in.shape().begin(), in.shape().end());
    Result<size_t> nbytes = checked_nbytes(*dtype, shape);
    if (!nbytes.is_ok()) return nbytes.status().with_prefix(what + ": ");
    if (raw) {
      if (has_elements(in.contents())) {
        return invalid_argument(
            "{} has contents but the request has raw_input_contents (then every input must "
            "come raw)",
            what);
      }
      const std::string& bytes = req.raw_input_contents(i);
      if (bytes.size() != *nbytes) {
        return invalid_argument("{}: raw_input_contents[{}] has {} bytes, {}{} needs {}", what, i,
                                bytes.size(), datatype_name(*dtype), shape_to_string(shape),
                                *nbytes);
      }
      FRAME_ASSIGN_OR_RETURN(t.tensor, Tensor::empty(*dtype, shape));
      if (*nbytes > 0) std::memcpy(t.tensor.raw_data(), bytes.data(), *nbytes);
      normalize_bools(t.tensor);
    } else {
      FRAME_ASSIGN_OR_RETURN(t.tensor, decode_typed(in.contents(), t.name, *dtype, shape));
    }
    r.inputs.push_back(std::move(t));
  }
  r.outputs.reserve(static_cast<size_t>(req.outputs_size()));
  for (const auto& out : req.outputs()) {
    FRAME_RETURN_IF_ERROR(check_tensor_parameters(out.parameters(), "output '" + out.name() + "'"));
    RequestedOutput o;
    o.name = out.name();
    o.binary_data = true;
    r.outputs.push_back(std::move(o));
  }
  return r;
}

/// Encodes an inference response; every output travels as raw_output_contents.
void encode_infer_response(const InferResponse& r, inference::ModelInferResponse* out) {
  out->set_model_name(r.model_name);
  out->set_model_version(r.model_version);
  out->set_id(r.id);
  for (const NamedTensor& t : r.outputs) {
    inference::ModelInferResponse::InferOutputTensor* o = out->add_outputs();
    o->set_name(t.name);
    o->set_datatype(std::string(datatype_name(t.tensor.dtype())));
    for (int64_t d : t.tensor.shape()) o->add_shape(d);
    std::string* bytes = out->add_raw_output_contents();
    if (t.tensor.nbytes() > 0) {
      bytes->assign(static_cast<const char*>(t.tensor.raw_data()), t.tensor.nbytes());
    }
  }
}

/// Copies frame's tensor metadata into the protocol's.
void encode_tensor_metadata(const TensorMetadata& m,
                            inference::ModelMetadataResponse::TensorMetadata* out) {
  out->set_name(m.name);
  out->set_datatype(m.datatype);
  for (int64_t d : m.shape) out->add_shape(d);
}

/// Refuses repository parameters (Triton's `config` and `file:` overrides of a load) that frame
/// does not implement; `allowed` lists the ones accepted and ignored.
Status check_repository_parameters(
    const google::protobuf::Map<std::string, inference::ModelRepositoryParameter>& parameters,
    std::string_view call, std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : parameters) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return unimplemented("{}: parameter '{}' is not supported", call, key);
    }
  }
  return Status::ok();
}

/// inference.GRPCInferenceService over an InferenceService.
class InferenceRpc final : public inference::GRPCInferenceService::Service {
 public:
  InferenceRpc(InferenceService& service, const ServerOptions& options)
      : service_(service), token_(options.bearer_token), access_log_(options.access_log) {}

  /// Liveness; needs no token.
  grpc::Status ServerLive(grpc::ServerContext* ctx, const inference::ServerLiveRequest* req,
                          inference::ServerLiveResponse* res) override {
    return call("ServerLive", ctx, false, *req, *res, [&] {
      res->set_live(service_.live());
      return grpc::Status::OK;
    });
  }

  /// Readiness; needs no token.
  grpc::Status ServerReady(grpc::ServerContext* ctx, const inference::ServerReadyRequest* req,
                           inference::ServerReadyResponse* res) override {
    return call("ServerReady", ctx, false, *req, *res, [&] {
      res->set_ready(service_.ready());
      return grpc::Status::OK;
    });
  }

  /// A model's readiness.
  grpc::Status ModelReady(grpc::ServerContext* ctx, const inference::ModelReadyRequest* req,
                          inference::ModelReadyResponse* res) override {
    return call("ModelReady", ctx, true, *req, *res, [&] {
      Result<bool> ready = service_.model_ready(req->name(), req->version());
      if (!ready.is_ok()) return to_grpc(ready.status());
      res->set_ready(*ready);
      return grpc::Status::OK;
    });
  }

  /// The server's name, version and extensions.
  grpc::Status ServerMetadata(grpc::ServerContext* ctx, const inference::ServerMetadataRequest* req,
                              inference::ServerMetadataResponse* res) override {
    return call("ServerMetadata", ctx, true, *req, *res, [&] {
      const serve::ServerMetadata m = service_.server_metadata();
      res->set_name(m.name);
      res->set_version(m.version);
      for (const std::string& e : m.extensions) res->add_extensions(e);
      return grpc::Status::OK;
    });
  }

  /// A model's versions, platform, inputs and outputs.
  grpc::Status ModelMetadata(grpc::ServerContext* ctx, const inference::ModelMetadataRequest* req,
                             inference::ModelMetadataResponse* res) override {
    return call("ModelMetadata", ctx, true, *req, *res, [&] {
      Result<serve::ModelMetadata> m = service_.model_metadata(req->name(), req->version());
      if (!m.is_ok()) return to_grpc(m.status());
      res->set_name(m->name);
      for (const std::string& v : m->versions) res->add_versions(v);
      res->set_platform(m->platform);
      for (const TensorMetadata& t : m->inputs) encode_tensor_metadata(t, res->add_inputs());
      for (const TensorMetadata& t : m->outputs) encode_tensor_metadata(t, res->add_outputs());
      return grpc::Status::OK;
    });
  }

  /// One inference request.
  grpc::Status ModelInfer(grpc::ServerContext* ctx, const inference::ModelInferRequest* req,
                          inference::ModelInferResponse* res) override {
    return call("ModelInfer", ctx, true, *req, *res, [&] {
      const auto start = SteadyClock::now();
      Result<InferRequest> request = decode_infer_request(*req);
      if (!request.is_ok()) {
        service_.record_rejected(req->model_name(), "grpc", request.status());
        return to_grpc(request.status());
      }
      Result<InferResponse> response = service_.infer(std::move(request).value(), "grpc");
      if (!response.is_ok()) return to_grpc(response.status());
      encode_infer_response(*response, res);
      // The server's own time for the call, decode to encode (REST: Frame-Server-Time-Us).
      ctx->AddTrailingMetadata(
          "frame-server-time-us",
          fmt::format(
              "{:.1f}",
              std::chrono::duration<double, std::micro>(SteadyClock::now() - start).count()));
      return grpc::Status::OK;
    });
  }

  /// Every model version of the repository and its state (`ready`: only the ready ones).
  grpc::Status RepositoryIndex(grpc::ServerContext* ctx,
                               const inference::RepositoryIndexRequest* req,
                               inference::RepositoryIndexResponse* res) override {
    return call("RepositoryIndex", ctx, true, *req, *res, [&] {
      for (const IndexEntry& e : service_.repository_index()) {
        if (req->ready() && e.state != "READY") continue;
        inference::RepositoryIndexResponse::ModelIndex* m = res->add_models();
        m->set_name(e.name);
        m->set_version(e.version);
        m->set_state(e.state);
        m->set_reason(e.reason);
      }
      return grpc::Status::OK;
    });
  }

  /// Loads or reloads a model.
  grpc::Status RepositoryModelLoad(grpc::ServerContext* ctx,
                                   const inference::RepositoryModelLoadRequest* req,
                                   inference::RepositoryModelLoadResponse* res) override {
    return call("RepositoryModelLoad", ctx, true, *req, *res, [&] {
      if (req->model_name().empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "model_name is empty");
      }
      Status st = check_repository_parameters(req->parameters(), "load", {});
      if (st.is_ok()) st = service_.load_model(req->model_name());
      return to_grpc(st);
    });
  }

  /// Unloads a model (`unload_dependents` is accepted: frame models have no dependents).
  grpc::Status RepositoryModelUnload(grpc::ServerContext* ctx,
                                     const inference::RepositoryModelUnloadRequest* req,
                                     inference::RepositoryModelUnloadResponse* res) override {
    return call("RepositoryModelUnload", ctx, true, *req, *res, [&] {
      if (req->model_name().empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "model_name is empty");
      }
      Status st = check_repository_parameters(req->parameters(), "unload", {"unload_dependents"});
      if (st.is_ok()) st = service_.unload_model(req->model_name());
      return to_grpc(st);
    });
  }

 private:
  /// True when no token is configured or the call's `authorization` metadata carries it.
  bool authorized(const grpc::ServerContext& ctx) const {
    if (token_.empty()) return true;
    const auto [first, last] = ctx.client_metadata().equal_range("authorization");
    for (auto it = first; it != last; ++it) {
      if (bearer_matches(std::string_view(it->second.data(), it->second.size()), token_)) {
        return true;
      }
    }
    return false;
  }

  /// Runs one call's body `f`: checks the token where `needs_token`, turns any exception into
  /// a status (none reaches gRPC), and writes the access-log line.
  template <typename Req, typename Res, typename F>
  grpc::Status call(std::string_view method, grpc::ServerContext* ctx, bool needs_token,
                    const Req& req, const Res& res, F&& f) noexcept {
    const SteadyClock::time_point start = SteadyClock::now();
    grpc::Status status;
    try {
      if (needs_token && !authorized(*ctx)) {
        status = grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "missing or wrong bearer token");
      } else {
        status = f();
      }
    } catch (const std::bad_alloc&) {
      status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "out of memory");
    } catch (const std::exception& e) {
      status = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
    } catch (...) {
      status = grpc::Status(grpc::StatusCode::INTERNAL, "internal error");
    }
    if (access_log_) log_call(method, *ctx, status, req.ByteSizeLong(), res.ByteSizeLong(), start);
    return status;
  }

  /// One JSON line on stderr per call, with the keys of the REST access log.
  static void log_call(std::string_view method, const grpc::ServerContext& ctx,
                       const grpc::Status& status, size_t request_bytes, size_t response_bytes,
                       SteadyClock::time_point start) noexcept {
    try {
      const auto us =
          std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - start);
      const nlohmann::json line = {
          {"time", static_cast<int64_t>(std::time(nullptr))},
          {"remote", ctx.peer()},
          {"method", "gRPC"},
          {"path", fmt::format("/inference.GRPCInferenceService/{}", method)},
          {"status", static_cast<int>(status.error_code())},
          {"request_bytes", request_bytes},
          {"response_bytes", response_bytes},
          {"us", us.count()}};
      std::fprintf(stderr, "%s\n",
                   line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } catch (...) {
      // A log line that cannot be written is dropped; the call's answer stands.
    }
  }

  InferenceService& service_;
  const std::string token_;
  const bool access_log_;
};

/// The running gRPC server.
class GrpcFrontend final : public Frontend {
 public:
  GrpcFrontend(InferenceService& service, const ServerOptions& options)
      : options_(options), rpc_(std::make_unique<InferenceRpc>(service, options)) {}

  ~GrpcFrontend() override { shutdown(SteadyClock::now()); }

  /// Builds and starts the server. Errors: kIo naming the address or the TLS file.
  Status start() {
    const std::string address = listen_address(options_.host, options_.grpc_port);
    std::shared_ptr<grpc::ServerCredentials> credentials;
    if (!options_.tls_cert_file.empty() || !options_.tls_key_file.empty()) {
      FRAME_ASSIGN_OR_RETURN(std::string cert,
                             read_pem(options_.tls_cert_file, "TLS certificate file"));
      FRAME_ASSIGN_OR_RETURN(std::string key, read_pem(options_.tls_key_file, "TLS key file"));
      grpc::SslServerCredentialsOptions ssl;
      ssl.pem_key_cert_pairs.push_back({std::move(key), std::move(cert)});
      credentials = grpc::SslServerCredentials(ssl);
    } else {
      credentials = grpc::InsecureServerCredentials();
    }
    grpc::ServerBuilder builder;
    int selected_port = 0;
    builder.AddListeningPort(address, credentials, &selected_port);
    builder.RegisterService(rpc_.get());
    builder.SetMaxReceiveMessageSize(static_cast<int>(
        std::min<size_t>(options_.max_request_bytes, std::numeric_limits<int>::max())));
    builder.SetMaxSendMessageSize(-1);
    // A port another process holds must fail here, not be shared with it.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    if (options_.read_timeout_s > 0) {
      builder.AddChannelArgument(
          GRPC_ARG_MAX_CONNECTION_IDLE_MS,
          static_cast<int>(std::min<int64_t>(int64_t{options_.read_timeout_s} * 1000, INT_MAX)));
    }
    server_ = builder.BuildAndStart();
    if (!server_ || selected_port == 0) {
      server_.reset();
      return Status(StatusCode::kIo,
                    fmt::format("gRPC: cannot listen on {}{}", address,
                                options_.tls_cert_file.empty()
                                    ? ""
                                    : " (or the TLS certificate and key are not usable)"));
    }
    port_ = selected_port;
    return Status::ok();
  }

  int port() const override { return port_; }

  void shutdown(SteadyClock::time_point deadline) override {
    std::lock_guard lock(mu_);
    if (!server_ || stopped_) return;
    stopped_ = true;
    // Calls still running at the deadline are cancelled; Wait() returns once every handler
    // has returned.
    const auto left =
        std::clamp<SteadyClock::duration>(deadline - std::min(deadline, SteadyClock::now()),
                                          SteadyClock::duration::zero(), std::chrono::hours(24));
    server_->Shutdown(std::chrono::system_clock::now() +
                      std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
    server_->Wait();
  }

 private:
  const ServerOptions options_;
  std::unique_ptr<InferenceRpc> rpc_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = -1;
  std::mutex mu_;
  bool stopped_ = false;
};

}  // namespace

Result<InferRequest> decode_grpc_infer_request(const inference::ModelInferRequest& request) {
  return decode_infer_request(request);
}

Result<std::unique_ptr<Frontend>> start_grpc(InferenceService& service,
                                             const ServerOptions& options) {
  try {
    auto f = std::make_unique<GrpcFrontend>(service, options);
    FRAME_RETURN_IF_ERROR(f->start());
    return std::unique_ptr<Frontend>(std::move(f));
  } catch (const std::exception& e) {
    return Status(StatusCode::kIo, fmt::format("gRPC: cannot start: {}", e.what()));
  }
}

}  // namespace frame::serve::detail
