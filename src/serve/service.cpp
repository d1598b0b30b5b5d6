// The transport-free protocol service (frame/serve/server.h, InferenceService).
#include <chrono>

#include "frame/serve/server.h"
#include "metrics.h"

namespace frame::serve {

InferenceService::InferenceService(std::shared_ptr<ModelRepository> repository,
                                   std::shared_ptr<Metrics> metrics)
    : repository_(std::move(repository)), metrics_(std::move(metrics)) {}

bool InferenceService::live() const { return true; }

bool InferenceService::ready() const { return !stopping_.load(); }

ServerMetadata InferenceService::server_metadata() const {
  ServerMetadata m;
  m.version = FRAME_VERSION;
  m.extensions = {"model_repository", "binary_tensor_data", "metrics"};
  return m;
}

Result<ModelMetadata> InferenceService::model_metadata(std::string_view name,
                                                       std::string_view version) const {
  return repository_->metadata(name, version);
}

Result<bool> InferenceService::model_ready(std::string_view name, std::string_view version) const {
  Result<std::shared_ptr<Model>> m = repository_->find(name, version);
  if (m.is_ok()) return !stopping_.load();
  if (m.status().code() == StatusCode::kFailedPrecondition) return false;
  return m.status();
}

Result<InferResponse> InferenceService::infer(InferRequest request, std::string_view protocol) {
  const auto start = std::chrono::steady_clock::now();
  const std::string model = request.model_name;
  {
    std::lock_guard lock(mu_);
    ++in_flight_;
  }
  Result<InferResponse> r = [&]() -> Result<InferResponse> {
    if (stopping_.load()) {
      return Status(StatusCode::kFailedPrecondition, "the server is shutting down");
    }
    FRAME_ASSIGN_OR_RETURN(std::shared_ptr<Model> m,
                           repository_->find(request.model_name, request.model_version));
    // A reload swaps in the new version while requests may hold the old one: a request the old
    // one refuses because it is draining goes to the new one (tensors are shared, not copied).
    Result<InferResponse> r = m->infer(request);
    if (!r.is_ok() && m->draining()) {
      Result<std::shared_ptr<Model>> now =
          repository_->find(request.model_name, request.model_version);
      if (now.is_ok() && *now != m) return (*now)->infer(std::move(request));
    }
    return r;
  }();
  const double total_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  // Unknown model names share one label value, so clients cannot grow the series without bound.
  metrics_->record(r.status().code() == StatusCode::kNotFound ? "" : model, protocol, r, total_us);
  {
    std::lock_guard lock(mu_);
    if (--in_flight_ == 0) idle_.notify_all();
  }
  return r;
}

void InferenceService::record_rejected(const std::string& model, std::string_view protocol,
                                       const Status& status) {
  const bool known = repository_->find(model, "").status().code() != StatusCode::kNotFound;
  metrics_->record(known ? model : "", protocol, Result<InferResponse>(status), 0);
}

std::vector<IndexEntry> InferenceService::repository_index() const { return repository_->index(); }

Status InferenceService::load_model(const std::string& name) { return repository_->load(name); }

Status InferenceService::unload_model(const std::string& name) { return repository_->unload(name); }

void InferenceService::begin_shutdown() { stopping_.store(true); }

bool InferenceService::wait_idle(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  return idle_.wait_until(lock, deadline, [&] { return in_flight_ == 0; });
}

std::string InferenceService::metrics_text() const {
  return metrics_->text(repository_->ready_models());
}

}  // namespace frame::serve
