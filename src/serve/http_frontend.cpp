// The REST transport of `frame serve` (docs/serving.md, "REST"): cpp-httplib's HTTP/1.1 server
// with keep-alive, every endpoint of the Open Inference Protocol and GET /metrics.
#include <fmt/format.h>
#include <httplib.h>
#include <sys/socket.h>

#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common.h"
#include "frontend.h"
#include "json_codec.h"

namespace frame::serve::detail {
namespace {

constexpr const char* kJson = "application/json";

void reply_error(httplib::Response& res, const Status& s) {
  res.status = http_status_of(s);
  res.set_content(encode_error(s.message()), kJson);
}

// The version part of a matched path ("" when the route has none).
std::string version_of(const httplib::Request& req) {
  return req.matches.size() > 2 ? std::string(req.matches[2]) : std::string();
}

class HttpFrontend final : public Frontend {
 public:
  HttpFrontend(InferenceService& service, const ServerOptions& options)
      : service_(service), options_(options) {
    if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
      server_ = std::make_unique<httplib::SSLServer>(options.tls_cert_file.c_str(),
                                                     options.tls_key_file.c_str());
    } else {
      server_ = std::make_unique<httplib::Server>();
    }
  }

  Status start() {
    for (const std::string* f : {&options_.tls_cert_file, &options_.tls_key_file}) {
      if (!f->empty() && !std::ifstream(*f).good()) {
        return Status(StatusCode::kIo, fmt::format("HTTPS: cannot read '{}'", *f));
      }
    }
    if (!server_->is_valid()) {
      return Status(StatusCode::kIo,
                    fmt::format("HTTPS: certificate '{}' and key '{}' are not a valid PEM pair",
                                options_.tls_cert_file, options_.tls_key_file));
    }
    configure();
    const std::string address = fmt::format("{}:{}", options_.host, options_.http_port);
    if (options_.http_port == 0) {
      port_ = server_->bind_to_any_port(options_.host);
      if (port_ <= 0) return Status(StatusCode::kIo, "HTTP: cannot bind " + address);
    } else {
      if (!server_->bind_to_port(options_.host, options_.http_port)) {
        return Status(StatusCode::kIo, "HTTP: cannot bind " + address);
      }
      port_ = options_.http_port;
    }
    // cpp-httplib listens with a backlog of 5: a burst of new clients would see SYNs dropped and
    // retried a second later. listen() again on the bound socket raises it.
    if (listen_fd_ >= 0) ::listen(listen_fd_, kListenBacklog);
    thread_ = std::thread([this] { server_->listen_after_bind(); });
    return Status::ok();
  }

  ~HttpFrontend() override { shutdown(std::chrono::steady_clock::now()); }

  int port() const override { return port_; }

  void shutdown(std::chrono::steady_clock::time_point) override {
    // In-flight requests were waited for by the service; stop() closes the listening socket and
    // ends each keep-alive connection after its current request.
    server_->stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void configure() {
    httplib::Server& s = *server_;
    const int threads = options_.http_threads;
    s.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    s.set_payload_max_length(options_.max_request_bytes);
    // Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
    // the client's delayed ACK hold every response for tens of milliseconds.
    s.set_tcp_nodelay(true);
    // SO_REUSEADDR (a restart binds at once) without cpp-httplib's default SO_REUSEPORT, which
    // let a second server bind the same port and take half of its connections.
    s.set_socket_options([this](int sock) {
      int yes = 1;
      ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      listen_fd_ = sock;
    });
    s.set_keep_alive_max_count(size_t{1} << 30);
    s.set_keep_alive_timeout(options_.read_timeout_s);
    s.set_read_timeout(options_.read_timeout_s, 0);
    s.set_write_timeout(options_.read_timeout_s, 0);
    s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty()) return;
      // Statuses cpp-httplib sets before a handler runs, explained.
      std::string msg;
      const std::string type = req.get_header_value("Content-Type");
      if (res.status == 404) {
        msg = fmt::format("no endpoint {} {}", req.method, req.path);
      } else if (res.status == 413 && type.starts_with("application/x-www-form-urlencoded")) {
        msg =
            "a form-urlencoded body is limited to 8192 bytes: send the request as "
            "Content-Type: application/json (curl -d sends form-urlencoded)";
      } else if (res.status == 413) {
        msg = "request body exceeds the server's limit (--max-request-bytes)";
      } else if (res.status == 400 && req.method == "POST" && !req.has_header("Content-Length") &&
                 !req.has_header("Transfer-Encoding")) {
        msg = "a POST needs a Content-Length header (an empty body: Content-Length: 0)";
      } else {
        msg = fmt::format("HTTP status {}", res.status);
      }
      res.set_content(encode_error(msg), kJson);
    });
    s.set_exception_handler(
        [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
          std::string what = "internal error";
          try {
            if (ep) std::rethrow_exception(ep);
          } catch (const std::exception& e) {
            what = e.what();
          } catch (...) {
          }
          res.status = 500;
          res.set_content(encode_error(what), kJson);
        });
    s.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return pre_route(req, res);
    });
    if (options_.access_log) {
      s.set_logger([](const httplib::Request& req, const httplib::Response& res) {
        const nlohmann::json line = {{"time", static_cast<int64_t>(std::time(nullptr))},
                                     {"remote", req.remote_addr},
                                     {"method", req.method},
                                     {"path", req.path},
                                     {"status", res.status},
                                     {"request_bytes", req.body.size()},
                                     {"response_bytes", res.body.size()}};
        std::fprintf(stderr, "%s\n",
                     line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      });
    }

    s.Get("/v2/health/live", [this](const httplib::Request&, httplib::Response& res) {
      health(res, "live", service_.live());
    });
    s.Get("/v2/health/ready", [this](const httplib::Request&, httplib::Response& res) {
      health(res, "ready", service_.ready());
    });
    s.Get("/v2", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(encode_server_metadata(service_.server_metadata()), kJson);
    });
    const std::string model = "/v2/models/([^/]+)(?:/versions/([^/]+))?";
    s.Get(model, [this](const httplib::Request& req, httplib::Response& res) {
      Result<ModelMetadata> m =
          service_.model_metadata(std::string(req.matches[1]), version_of(req));
      if (!m.is_ok()) return reply_error(res, m.status());
      res.set_content(encode_model_metadata(*m), kJson);
    });
    s.Get(model + "/ready", [this](const httplib::Request& req, httplib::Response& res) {
      Result<bool> ready = service_.model_ready(std::string(req.matches[1]), version_of(req));
      if (!ready.is_ok()) return reply_error(res, ready.status());
      health(res, "ready", *ready);
    });
    s.Post(model + "/infer",
           [this](const httplib::Request& req, httplib::Response& res) { infer(req, res); });
    s.Post("/v2/repository/index", [this](const httplib::Request& req, httplib::Response& res) {
      bool ready_only = false;
      if (!req.body.empty()) {
        nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
        if (body.is_discarded() || !body.is_object()) {
          return reply_error(res, invalid_argument("the index request body must be a JSON object"));
        }
        if (auto r = body.find("ready"); r != body.end() && r->is_boolean()) ready_only = *r;
      }
      std::vector<IndexEntry> index = service_.repository_index();
      if (ready_only) std::erase_if(index, [](const IndexEntry& e) { return e.state != "READY"; });
      res.set_content(encode_index(index), kJson);
    });
    s.Post("/v2/repository/models/([^/]+)/load",
           [this](const httplib::Request& req, httplib::Response& res) {
             Status st = service_.load_model(std::string(req.matches[1]));
             if (!st.is_ok()) return reply_error(res, st);
             res.set_content("{}", kJson);
           });
    s.Post("/v2/repository/models/([^/]+)/unload",
           [this](const httplib::Request& req, httplib::Response& res) {
             Status st = service_.unload_model(std::string(req.matches[1]));
             if (!st.is_ok()) return reply_error(res, st);
             res.set_content("{}", kJson);
           });
    s.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(service_.metrics_text(), "text/plain; version=0.0.4");
    });
  }

  // Runs before cpp-httplib reads a body: refuses what its body reader handles badly (no
  // length: it would wait for the read timeout; chunked: it ignores the size limit; two
  // lengths: request smuggling) and checks the bearer token. A refusal closes the connection,
  // whose unread body would otherwise be taken for the next request.
  httplib::Server::HandlerResponse pre_route(const httplib::Request& req,
                                             httplib::Response& res) const {
    auto refuse = [&](int status, std::string_view msg) {
      res.status = status;
      res.set_header("Connection", "close");
      res.set_content(encode_error(msg), kJson);
      return httplib::Server::HandlerResponse::Handled;
    };
    if (req.has_header("Transfer-Encoding")) {
      return refuse(411, "chunked request bodies are not accepted: send a Content-Length");
    }
    const size_t lengths = req.get_header_value_count("Content-Length");
    if (lengths > 1) return refuse(400, "more than one Content-Length header");
    if (lengths == 1) {
      const std::string v = req.get_header_value("Content-Length");
      // An oversized length is left to cpp-httplib, which reads and drops the body before its
      // 413, so a client that sends the whole body first still reads the answer.
      size_t n = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec != std::errc() || end != v.data() + v.size() || v.empty()) {
        return refuse(400, "Content-Length is not a non-negative integer");
      }
    } else if (req.method == "POST" || req.method == "PUT") {
      return refuse(411, "a POST needs a Content-Length header (an empty body: Content-Length: 0)");
    }
    if (options_.bearer_token.empty() || req.path == "/v2/health/live" ||
        req.path == "/v2/health/ready" || req.path == "/metrics") {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (bearer_matches(req.get_header_value("Authorization"), options_.bearer_token)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content(encode_error("missing or wrong bearer token"), kJson);
    return httplib::Server::HandlerResponse::Handled;
  }

  // The protocol answers health and readiness with 200 for true and 400 for false.
  static void health(httplib::Response& res, const char* what, bool ok) {
    res.status = ok ? 200 : 400;
    res.set_content(fmt::format("{{\"{}\":{}}}", what, ok ? "true" : "false"), kJson);
  }

  void infer(const httplib::Request& req, httplib::Response& res) {
    const auto start = std::chrono::steady_clock::now();
    std::optional<std::string_view> header_length;
    std::string header_value;
    if (req.has_header("Inference-Header-Content-Length")) {
      header_value = req.get_header_value("Inference-Header-Content-Length");
      header_length = header_value;
    }
    Result<InferRequest> request =
        decode_infer_request(req.body, header_length, std::string(req.matches[1]), version_of(req));
    if (!request.is_ok()) {
      service_.record_rejected(std::string(req.matches[1]), "rest", request.status());
      return reply_error(res, request.status());
    }
    Result<InferResponse> response = service_.infer(std::move(request).value(), "rest");
    if (!response.is_ok()) return reply_error(res, response.status());
    EncodedBody body = encode_infer_response(*response);
    // The server's own time for the request, decode to encode (the load generator reads it).
    res.set_header("Frame-Server-Time-Us",
                   fmt::format("{:.1f}", std::chrono::duration<double, std::micro>(
                                             std::chrono::steady_clock::now() - start)
                                             .count()));
    if (body.header_length) {
      res.set_header("Inference-Header-Content-Length", std::to_string(*body.header_length));
      res.set_content(std::move(body.body), "application/octet-stream");
    } else {
      res.set_content(std::move(body.body), kJson);
    }
  }

  InferenceService& service_;
  const ServerOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = -1;
  int listen_fd_ = -1;  // the listening socket (socket_t is int on Linux)
  static constexpr int kListenBacklog = 1024;
};

}  // namespace

Result<std::unique_ptr<Frontend>> start_http(InferenceService& service,
                                             const ServerOptions& options) {
  auto f = std::make_unique<HttpFrontend>(service, options);
  FRAME_RETURN_IF_ERROR(f->start());
  return std::unique_ptr<Frontend>(std::move(f));
}

}  // namespace frame::serve::detail
