// Prometheus metrics of `frame serve` (src/serve/metrics.h).
#include "metrics.h"

#include <prometheus/counter.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

namespace frame::serve {
namespace {

// Latency buckets from 50 us to 10 s, about x2.5 apart.
const prometheus::Histogram::BucketBoundaries kLatencyBuckets = {
    50,     100,    250,     500,     1'000,   2'500,     5'000,     10'000,
    25'000, 50'000, 100'000, 250'000, 500'000, 1'000'000, 2'500'000, 10'000'000};
const prometheus::Histogram::BucketBoundaries kBatchBuckets = {1, 2, 4, 8, 16, 32, 64, 128, 256};

}  // namespace

struct Metrics::Families {
  explicit Families(prometheus::Registry& r)
      : requests(prometheus::BuildCounter()
                     .Name("frame_serve_requests_total")
                     .Help("Inference requests received, by model and protocol")
                     .Register(r)),
        successes(prometheus::BuildCounter()
                      .Name("frame_serve_request_successes_total")
                      .Help("Inference requests answered with outputs")
                      .Register(r)),
        failures(prometheus::BuildCounter()
                     .Name("frame_serve_request_failures_total")
                     .Help("Inference requests refused or failed, by reason (status code)")
                     .Register(r)),
        queue(prometheus::BuildHistogram()
                  .Name("frame_serve_queue_duration_us")
                  .Help("Time a request waited for an instance or a batch, microseconds")
                  .Register(r)),
        compute(prometheus::BuildHistogram()
                    .Name("frame_serve_compute_duration_us")
                    .Help("Time of the run (the batch's run) serving a request, microseconds")
                    .Register(r)),
        total(prometheus::BuildHistogram()
                  .Name("frame_serve_request_duration_us")
                  .Help("Time from the request read to the response ready, microseconds")
                  .Register(r)),
        batch(prometheus::BuildHistogram()
                  .Name("frame_serve_batch_size")
                  .Help("Rows of the batches run by dynamic batching")
                  .Register(r)),
        cache_hits(prometheus::BuildCounter()
                       .Name("frame_serve_cache_hits_total")
                       .Help("Runs served by a compiled specialization held in the cache")
                       .Register(r)),
        cache_misses(prometheus::BuildCounter()
                         .Name("frame_serve_cache_misses_total")
                         .Help("Runs that compiled a specialization (a new shape key)")
                         .Register(r)),
        compilations(prometheus::BuildCounter()
                         .Name("frame_serve_compilations_total")
                         .Help("Specializations compiled: misses, tier-ups and background compiles")
                         .Register(r)),
        interpreted(prometheus::BuildCounter()
                        .Name("frame_serve_interpreted_runs_total")
                        .Help("Runs of a shape not compiled, run node by node (ADR 0007)")
                        .Register(r)) {}
  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Counter>& successes;
  prometheus::Family<prometheus::Counter>& failures;
  prometheus::Family<prometheus::Histogram>& queue;
  prometheus::Family<prometheus::Histogram>& compute;
  prometheus::Family<prometheus::Histogram>& total;
  prometheus::Family<prometheus::Histogram>& batch;
  prometheus::Family<prometheus::Counter>& cache_hits;
  prometheus::Family<prometheus::Counter>& cache_misses;
  prometheus::Family<prometheus::Counter>& compilations;
  prometheus::Family<prometheus::Counter>& interpreted;
};

Metrics::Metrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      f_(std::make_unique<Families>(*registry_)) {}

Metrics::~Metrics() = default;

void Metrics::record(std::string_view model, std::string_view protocol,
                     const Result<InferResponse>& result, double total_us) {
  const std::string m(model);
  f_->requests.Add({{"model", m}, {"protocol", std::string(protocol)}}).Increment();
  if (!result.is_ok()) {
    const std::string reason(status_code_name(result.status().code()));
    f_->failures.Add({{"model", m}, {"reason", reason}}).Increment();
    return;
  }
  f_->successes.Add({{"model", m}}).Increment();
  f_->queue.Add({{"model", m}}, kLatencyBuckets).Observe(result->queue_us);
  f_->compute.Add({{"model", m}}, kLatencyBuckets).Observe(result->compute_us);
  f_->total.Add({{"model", m}}, kLatencyBuckets).Observe(total_us);
  if (result->batch_leader) {
    f_->batch.Add({{"model", m}}, kBatchBuckets).Observe(static_cast<double>(result->batch_size));
  }
}

std::string Metrics::text(const std::vector<std::shared_ptr<Model>>& models) {
  {
    std::lock_guard lock(mu_);
    for (const std::shared_ptr<Model>& model : models) {
      const runtime::CacheStats now = model->cache_stats();
      auto& [owner, last] = exported_[model->name() + "/" + model->version()];
      // A reloaded model starts its counters again at 0.
      if (owner != model.get()) last = runtime::CacheStats{};
      owner = model.get();
      const prometheus::Labels labels = {{"model", model->name()}, {"version", model->version()}};
      auto grow = [&](prometheus::Family<prometheus::Counter>& fam, uint64_t before,
                      uint64_t after) {
        if (after > before)
          fam.Add(labels).Increment(static_cast<double>(after - before));
        else
          fam.Add(labels);  // the series exists from the first scrape on
      };
      grow(f_->cache_hits, last.hits, now.hits);
      grow(f_->cache_misses, last.misses, now.misses);
      grow(f_->compilations, last.misses + last.tier_ups + last.background_compiles,
           now.misses + now.tier_ups + now.background_compiles);
      grow(f_->interpreted, last.interpreted, now.interpreted);
      last = now;
    }
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace frame::serve
