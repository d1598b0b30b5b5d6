// One loaded model version (frame/serve/repository.h, Model): request validation, run slots,
// the bounded queue and the dynamic batcher (docs/serving.md, "Concurrency" and "Dynamic
// batching").
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include "frame/onnx/onnx.h"
#include "frame/onnx/session.h"
#include "frame/serve/repository.h"

namespace frame::serve {
namespace {

using Clock = std::chrono::steady_clock;

double micros_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// A request of a batched model waiting for its batch.
struct Pending {
  InferRequest request;
  Clock::time_point enqueued;
  int64_t rows = 0;
  std::promise<Result<InferResponse>> done;
};

// True when two requests may share a batch: the same inputs with equal dtypes and equal dims
// past the batch dim (inputs are in model order after validation).
bool batch_compatible(const InferRequest& a, const InferRequest& b) {
  if (a.inputs.size() != b.inputs.size()) return false;
  for (size_t i = 0; i < a.inputs.size(); ++i) {
    const Tensor& x = a.inputs[i].tensor;
    const Tensor& y = b.inputs[i].tensor;
    if (x.dtype() != y.dtype() || x.rank() != y.rank()) return false;
    if (!std::equal(x.shape().begin() + 1, x.shape().end(), y.shape().begin() + 1)) return false;
  }
  return true;
}

class ModelImpl final : public Model {
 public:
  ModelImpl(std::string name, std::string version, ModelConfig config, runtime::Session session)
      : name_(std::move(name)),
        version_(std::move(version)),
        config_(std::move(config)),
        session_(std::move(session)) {
    for (const runtime::ValueInfo& v : session_.outputs()) output_index_[v.name] = true;
    // Every run happens on one of the model's `instances` threads, never on a transport's
    // thread: each thread that runs a session gets an OpenMP team of its own, and with more
    // teams than cores libgomp stops spinning between parallel regions, which made every
    // region of a run pay a futex wake-up (a small CNN's run went from 30 to 250 us).
    for (int i = 0; i < config_.instances; ++i) workers_.emplace_back([this] { batch_loop(); });
  }
  ~ModelImpl() override { drain(); }

  const std::string& name() const override { return name_; }
  const std::string& version() const override { return version_; }
  const ModelConfig& config() const override { return config_; }

  ModelMetadata metadata() const override {
    ModelMetadata m;
    m.name = name_;
    m.versions = {version_};
    auto describe = [&](const runtime::ValueInfo& v) {
      TensorMetadata t;
      t.name = v.name;
      t.datatype = std::string(datatype_name(v.dtype));
      for (size_t d = 0; d < v.dims.size(); ++d) {
        const bool batch = config_.max_batch_size > 0 && d == 0;
        t.shape.push_back(v.dims[d].is_concrete() && !batch ? v.dims[d].value : -1);
      }
      return t;
    };
    for (const runtime::ValueInfo& v : session_.inputs()) m.inputs.push_back(describe(v));
    for (const runtime::ValueInfo& v : session_.outputs()) m.outputs.push_back(describe(v));
    return m;
  }

  Result<InferResponse> infer(InferRequest request) override {
    FRAME_RETURN_IF_ERROR(validate(request));
    if (request.deadline == Clock::time_point::max() && config_.default_timeout_us > 0) {
      request.deadline = Clock::now() + std::chrono::microseconds(config_.default_timeout_us);
    }
    return enqueue(std::move(request));
  }

  runtime::CacheStats cache_stats() const override { return session_.cache_stats(); }

  bool draining() const override {
    std::lock_guard lock(mu_);
    return stopping_;
  }

  void drain() override {
    std::unique_lock lock(mu_);
    stopping_ = true;
    // Requests still queued for a batch are refused; the one being run finishes.
    for (auto& p : queue_) {
      p->done.set_value(unavailable("model '{}' is being unloaded", name_));
    }
    queue_.clear();
    cv_.notify_all();
    idle_.wait(lock, [&] { return in_flight_ == 0; });
    lock.unlock();
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
    workers_.clear();
  }

 private:
  template <typename... Args>
  static Status unavailable(fmt::format_string<Args...> f, Args&&... args) {
    return Status(StatusCode::kFailedPrecondition, fmt::format(f, std::forward<Args>(args)...));
  }

  // Checks the request against the declared inputs and outputs and puts its inputs in model
  // order. Messages name the model, the input and expected vs actual.
  Status validate(InferRequest& request) const {
    const auto& declared = session_.inputs();
    std::vector<NamedTensor> ordered(declared.size());
    std::vector<bool> seen(declared.size(), false);
    int64_t rows = -1;
    for (NamedTensor& in : request.inputs) {
      auto it = std::find_if(declared.begin(), declared.end(),
                             [&](const runtime::ValueInfo& v) { return v.name == in.name; });
      if (it == declared.end()) {
        return invalid_argument("model '{}' has no input '{}'", name_, in.name);
      }
      const size_t i = static_cast<size_t>(it - declared.begin());
      if (seen[i]) return invalid_argument("input '{}' is given twice", in.name);
      seen[i] = true;
      const Tensor& t = in.tensor;
      if (t.dtype() != it->dtype) {
        return invalid_argument("input '{}': expected datatype {}, got {}", in.name,
                                datatype_name(it->dtype), datatype_name(t.dtype()));
      }
      const std::string expected = it->to_string();
      if (it->has_shape) {
        if (t.rank() != static_cast<int64_t>(it->dims.size())) {
          return invalid_argument("input '{}': expected shape {} (rank {}), got {}", in.name,
                                  expected, it->dims.size(), shape_to_string(t.shape()));
        }
        for (size_t d = 0; d < it->dims.size(); ++d) {
          const bool batch = config_.max_batch_size > 0 && d == 0;
          if (!batch && it->dims[d].is_concrete() && it->dims[d].value != t.dim(d)) {
            return invalid_argument("input '{}': expected shape {}, got {} (dim {})", in.name,
                                    expected, shape_to_string(t.shape()), d);
          }
        }
      }
      if (config_.max_batch_size > 0) {
        if (t.rank() == 0 || t.dim(0) < 1 || t.dim(0) > config_.max_batch_size) {
          return invalid_argument(
              "input '{}': shape {} needs a batch dim 0 from 1 to max_batch_size {}", in.name,
              shape_to_string(t.shape()), config_.max_batch_size);
        }
        if (rows >= 0 && rows != t.dim(0)) {
          return invalid_argument("input '{}': batch dim {} differs from another input's {}",
                                  in.name, t.dim(0), rows);
        }
        rows = t.dim(0);
      }
      ordered[i] = std::move(in);
    }
    for (size_t i = 0; i < declared.size(); ++i) {
      if (!seen[i]) {
        return invalid_argument("missing input '{}' ({}) of model '{}'", declared[i].name,
                                declared[i].to_string(), name_);
      }
    }
    request.inputs = std::move(ordered);
    for (size_t i = 0; i < request.outputs.size(); ++i) {
      const std::string& o = request.outputs[i].name;
      if (!output_index_.count(o))
        return invalid_argument("model '{}' has no output '{}'", name_, o);
      for (size_t j = 0; j < i; ++j) {
        if (request.outputs[j].name == o)
          return invalid_argument("output '{}' is requested twice", o);
      }
    }
    return Status::ok();
  }

  // The response with the requested outputs of a run, in request order.
  Result<InferResponse> respond(const InferRequest& request, runtime::TensorMap outputs) const {
    InferResponse r;
    r.model_name = name_;
    r.model_version = version_;
    r.id = request.id;
    auto add = [&](const std::string& n, bool binary) -> Status {
      auto it = outputs.find(n);
      if (it == outputs.end()) return internal_error("output '{}' missing from the run", n);
      r.outputs.push_back({n, it->second});
      r.binary_data.push_back(binary);
      return Status::ok();
    };
    if (request.outputs.empty()) {
      for (const runtime::ValueInfo& v : session_.outputs()) {
        FRAME_RETURN_IF_ERROR(add(v.name, request.binary_data_output));
      }
    } else {
      for (const RequestedOutput& o : request.outputs) {
        FRAME_RETURN_IF_ERROR(add(o.name, o.binary_data.value_or(request.binary_data_output)));
      }
    }
    return r;
  }

  static runtime::TensorMap feed_of(const InferRequest& request) {
    runtime::TensorMap feed;
    for (const NamedTensor& in : request.inputs) feed.emplace(in.name, in.tensor);
    return feed;
  }

  // Queues a request for an instance (and, with batching, a batch) and waits for its answer.
  Result<InferResponse> enqueue(InferRequest request) {
    auto p = std::make_shared<Pending>();
    p->rows =
        config_.max_batch_size > 0 && !request.inputs.empty() ? request.inputs[0].tensor.dim(0) : 1;
    p->request = std::move(request);
    p->enqueued = Clock::now();
    std::future<Result<InferResponse>> result = p->done.get_future();
    {
      std::lock_guard lock(mu_);
      if (stopping_) return unavailable("model '{}' is being unloaded", name_);
      if (queue_.size() >= config_.max_queue_size) {
        return unavailable("model '{}': queue full ({} requests waiting)", name_, queue_.size());
      }
      queue_.push_back(std::move(p));
    }
    cv_.notify_all();
    return result.get();
  }

  // True when a batch of `rows` should be closed now rather than wait for more (without
  // batching, every request is a batch of one).
  bool batch_full(int64_t rows) const {
    if (config_.max_batch_size == 0) return rows >= 1;
    if (rows >= config_.max_batch_size) return true;
    return std::find(config_.preferred_batch_sizes.begin(), config_.preferred_batch_sizes.end(),
                     rows) != config_.preferred_batch_sizes.end();
  }

  // One instance: takes the oldest queued request and, with batching, gathers compatible ones
  // until the batch is full, at a preferred size, or the first has waited max_queue_delay_us,
  // then runs them as one batch (the session specializes per batch size).
  void batch_loop() {
    std::unique_lock lock(mu_);
    while (true) {
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      std::vector<std::shared_ptr<Pending>> batch;
      int64_t rows = 0;
      const auto window_end =
          queue_.front()->enqueued + std::chrono::microseconds(config_.max_queue_delay_us);
      while (true) {
        // Takes every compatible request that fits, oldest first.
        for (auto it = queue_.begin(); it != queue_.end() && !batch_full(rows);) {
          const bool fits = rows + (*it)->rows <= std::max<int64_t>(config_.max_batch_size, 1) &&
                            (batch.empty() || batch_compatible(batch[0]->request, (*it)->request));
          if (fits) {
            rows += (*it)->rows;
            batch.push_back(std::move(*it));
            it = queue_.erase(it);
          } else {
            ++it;
          }
        }
        if (batch_full(rows) || stopping_ || Clock::now() >= window_end) break;
        cv_.wait_until(lock, window_end);
      }
      // Requests whose deadline passed while they waited are refused, not run.
      const Clock::time_point now = Clock::now();
      std::erase_if(batch, [&](const std::shared_ptr<Pending>& p) {
        if (p->request.deadline >= now) return false;
        p->done.set_value(unavailable("model '{}': request timed out after {:.0f} us in the queue",
                                      name_, micros_between(p->enqueued, now)));
        return true;
      });
      if (batch.empty()) continue;
      ++in_flight_;
      lock.unlock();
      run_batch(batch);
      lock.lock();
      if (--in_flight_ == 0) idle_.notify_all();
      // Another worker may be waiting for requests this one left in the queue.
      if (!queue_.empty()) cv_.notify_all();
    }
  }

  // Concatenates the batch's inputs along dim 0, runs them once, and gives each request its
  // rows of every output.
  void run_batch(std::vector<std::shared_ptr<Pending>>& batch) {
    const Clock::time_point start = Clock::now();
    auto fail_all = [&](const Status& s) {
      for (auto& p : batch) p->done.set_value(s);
    };
    int64_t rows = 0;
    for (auto& p : batch) rows += p->rows;
    runtime::TensorMap feed;
    if (batch.size() == 1) {
      feed = feed_of(batch[0]->request);
    } else {
      const InferRequest& first = batch[0]->request;
      for (size_t i = 0; i < first.inputs.size(); ++i) {
        Shape shape = first.inputs[i].tensor.shape();
        shape[0] = rows;
        Result<Tensor> t = Tensor::empty(first.inputs[i].tensor.dtype(), shape);
        if (!t.is_ok()) return fail_all(t.status());
        auto* dst = static_cast<char*>(t->raw_data());
        for (auto& p : batch) {
          const Tensor& part = p->request.inputs[i].tensor;
          if (part.nbytes() > 0) std::memcpy(dst, part.raw_data(), part.nbytes());
          dst += part.nbytes();
        }
        feed.emplace(first.inputs[i].name, std::move(t).value());
      }
    }
    Result<runtime::TensorMap> out = session_.run(feed);
    const Clock::time_point end = Clock::now();
    if (!out.is_ok()) return fail_all(out.status());
    if (config_.max_batch_size > 0) {
      for (const auto& [n, t] : *out) {
        if (t.rank() == 0 || t.dim(0) != rows) {
          return fail_all(internal_error(
              "model '{}': output '{}' has shape {}, not {} rows along dim 0 as max_batch_size "
              "requires of every output",
              name_, n, shape_to_string(t.shape()), rows));
        }
      }
    }
    int64_t row = 0;
    for (auto& p : batch) {
      runtime::TensorMap mine;
      if (batch.size() == 1) {
        mine = *out;
      } else {
        for (const auto& [n, t] : *out) {
          Shape shape = t.shape();
          shape[0] = p->rows;
          Result<Tensor> part = Tensor::empty(t.dtype(), shape);
          if (!part.is_ok()) {
            p->done.set_value(part.status());
            continue;
          }
          const size_t row_bytes = t.nbytes() / static_cast<size_t>(rows);
          if (part->nbytes() > 0) {
            std::memcpy(
                part->raw_data(),
                static_cast<const char*>(t.raw_data()) + static_cast<size_t>(row) * row_bytes,
                part->nbytes());
          }
          mine.emplace(n, std::move(part).value());
        }
      }
      row += p->rows;
      Result<InferResponse> r = respond(p->request, std::move(mine));
      if (r.is_ok()) {
        r->queue_us = micros_between(p->enqueued, start);
        r->compute_us = micros_between(start, end);
        if (config_.max_batch_size > 0) {
          r->batch_size = rows;
          r->batch_leader = p == batch.front();
        }
      }
      p->done.set_value(std::move(r));
    }
  }

  const std::string name_;
  const std::string version_;
  const ModelConfig config_;
  runtime::Session session_;
  std::map<std::string, bool> output_index_;

  mutable std::mutex mu_;
  std::condition_variable cv_;    // a slot freed, a request queued, or stopping
  std::condition_variable idle_;  // in_flight_ reached 0
  bool stopping_ = false;
  int in_flight_ = 0;
  std::deque<std::shared_ptr<Pending>> queue_;
  std::vector<std::thread> workers_;
};

}  // namespace

Result<std::shared_ptr<Model>> open_model(const std::string& name, const std::string& version,
                                          const std::string& onnx_path, const ModelConfig& config,
                                          size_t max_model_bytes) {
  runtime::SessionOptions options;
  options.compile.backends = config.backends;
  options.compile.num_threads = config.threads;
  if (config.max_memory_bytes > 0) options.compile.max_memory_bytes = config.max_memory_bytes;
  options.max_specializations = config.max_specializations;
  options.max_cache_bytes = config.max_cache_bytes;
  onnx::LoadOptions load;
  load.max_model_bytes = max_model_bytes;
  // Opened on a thread of its own that ends here: the import may run kernels, and the OpenMP
  // team a thread gets then lives as long as the thread (the server's main or transport
  // thread), which would leave more teams than cores for the instances (see the constructor).
  Result<runtime::Session> session = Status(StatusCode::kInternal, "not opened");
  std::thread([&] { session = onnx::open_session(onnx_path, options, load); }).join();
  if (!session.is_ok()) return session.status();
  // The protocol carries tensors: a model with sequence or optional values cannot be served.
  for (const auto* list : {&session->inputs(), &session->outputs()}) {
    for (const runtime::ValueInfo& v : *list) {
      if (v.sequence || v.optional) {
        return unimplemented("{}: '{}' is {}; the protocol carries tensors only", onnx_path, v.name,
                             v.to_string());
      }
    }
  }
  // Batching concatenates requests along dim 0 and splits the outputs along it: that is right
  // only where dim 0 of every input and output is one and the same symbolic dim (an output
  // whose dim 0 is another dim, e.g. a reduction over the batch, would mix requests).
  if (config.max_batch_size > 0) {
    const std::string& batch = session->inputs().empty() || session->inputs()[0].dims.empty()
                                   ? std::string()
                                   : session->inputs()[0].dims[0].param;
    for (const auto* list : {&session->inputs(), &session->outputs()}) {
      for (const runtime::ValueInfo& v : *list) {
        if (!v.has_shape || v.dims.empty() || v.dims[0].param.empty() || v.dims[0].param != batch) {
          return invalid_argument(
              "{}: max_batch_size needs dim 0 of every input and output to be one symbolic "
              "batch dim{}, but '{}' is {}",
              onnx_path, batch.empty() ? std::string() : " ('" + batch + "')", v.name,
              v.to_string());
        }
      }
    }
  }
  return std::shared_ptr<Model>(
      std::make_shared<ModelImpl>(name, version, config, std::move(session).value()));
}

}  // namespace frame::serve
