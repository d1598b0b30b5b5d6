#pragma once
// Prometheus metrics of `frame serve` (docs/serving.md, "Metrics"), on prometheus-cpp.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/serve/protocol.h"
#include "frame/serve/repository.h"

namespace prometheus {
class Registry;
}

namespace frame::serve {

/// Request counters, latency and batch-size histograms per model, and each model's
/// specialization-cache counters (read at every scrape). Thread-safe.
class Metrics {
 public:
  Metrics();
  ~Metrics();
  /// Records one finished inference request of `model` over `protocol` ("rest", "grpc"):
  /// `result` says success or the failure's reason (the status code's name); `total_us` is the
  /// time from the request read to the response ready, microseconds.
  void record(std::string_view model, std::string_view protocol,
              const Result<InferResponse>& result, double total_us);
  /// The Prometheus text exposition (version 0.0.4); `models` are the ready models whose cache
  /// counters are exported.
  std::string text(const std::vector<std::shared_ptr<Model>>& models);

 private:
  struct Families;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<Families> f_;
  std::mutex mu_;
  // Cache counters already exported, per model version, to add only the growth at a scrape.
  std::map<std::string, std::pair<const Model*, runtime::CacheStats>> exported_;
};

}  // namespace frame::serve
