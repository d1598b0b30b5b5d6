// `frame serve`'s server: the repository, the service and its transports
// (frame/serve/server.h).
#include "frame/serve/server.h"

#include <fmt/format.h>

#include <cstdio>

#include "frontend.h"
#include "metrics.h"

namespace frame::serve {
namespace {

class ServerImpl final : public Server {
 public:
  explicit ServerImpl(std::shared_ptr<ModelRepository> repository)
      : service_(std::move(repository), std::make_shared<Metrics>()) {}
  ~ServerImpl() override { stop(std::chrono::seconds(30)); }

  Status start_frontends(const ServerOptions& options) {
    if (options.http_port >= 0) {
      FRAME_ASSIGN_OR_RETURN(http_, detail::start_http(service_, options));
    }
    if (options.grpc_port >= 0) {
      FRAME_ASSIGN_OR_RETURN(grpc_, detail::start_grpc(service_, options));
    }
    return Status::ok();
  }

  int http_port() const override { return http_ ? http_->port() : -1; }
  int grpc_port() const override { return grpc_ ? grpc_->port() : -1; }

  bool stop(std::chrono::milliseconds timeout) override {
    if (stopped_) return true;
    stopped_ = true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // New requests get 503 from here on; accepted ones finish, then the transports close.
    service_.begin_shutdown();
    const bool idle = service_.wait_idle(deadline);
    if (grpc_) grpc_->shutdown(deadline);
    if (http_) http_->shutdown(deadline);
    return idle;
  }

  InferenceService& service() override { return service_; }

 private:
  InferenceService service_;
  std::unique_ptr<detail::Frontend> http_;
  std::unique_ptr<detail::Frontend> grpc_;
  bool stopped_ = false;
};

}  // namespace

Result<std::unique_ptr<Server>> Server::start(const ServerOptions& options) {
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<ModelRepository> repository,
                         ModelRepository::open(options.model_repository));
  repository->load_all();
  for (const IndexEntry& e : repository->index()) {
    if (e.state != "READY") {
      std::fprintf(stderr, "frame serve: model '%s' version %s not loaded: %s\n", e.name.c_str(),
                   e.version.c_str(), e.reason.c_str());
    }
  }
  auto server = std::make_unique<ServerImpl>(std::move(repository));
  FRAME_RETURN_IF_ERROR(server->start_frontends(options));
  return std::unique_ptr<Server>(std::move(server));
}

}  // namespace frame::serve
