#pragma once
/// \file
/// A model repository as `frame serve` reads it (docs/serving.md, "Model repository"): a
/// directory with one subdirectory per model, holding `model.onnx` or numbered version
/// subdirectories `1/model.onnx`, `2/model.onnx`, ..., and an optional `config.json`. Each
/// loaded version is a `Model`: one runtime::Session over the ONNX model (its specialization
/// cache shared by every request), `instances` run slots, a bounded queue and, where the config
/// sets `max_batch_size`, a dynamic batcher.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/runtime/session.h"
#include "frame/serve/protocol.h"

namespace frame::serve {

/// A model's `config.json` (every field optional; docs/serving.md lists them). Unknown keys are
/// an error naming the key, so a misspelled option never goes silently unused.
struct ModelConfig {
  /// Backend chain, e.g. {"onednn", "cpu"}; {"auto"} picks the fastest available.
  std::vector<std::string> backends = {"auto"};
  /// Compute threads per run (0: all cores).
  int threads = 0;
  /// Runs of this model computed at once (each a slot over the one shared session).
  int instances = 1;
  /// 0: no dynamic batching. Otherwise dim 0 of every input and output is the batch dim
  /// (ONNX cannot say so), requests are batched up to this many rows, and a request with more
  /// rows is refused (400).
  int64_t max_batch_size = 0;
  /// How long the batcher waits for more requests after the first of a batch, microseconds.
  int64_t max_queue_delay_us = 500;
  /// Batch sizes the batcher prefers to close a batch at (besides max_batch_size); empty: none.
  std::vector<int64_t> preferred_batch_sizes;
  /// Requests waiting for a slot or a batch at most; one more gets 503.
  size_t max_queue_size = 256;
  /// Default time a request may wait in the queue, microseconds (0: no limit); a request's own
  /// `timeout` parameter overrides it.
  int64_t default_timeout_us = 0;
  /// The session's specialization cache bounds (runtime::SessionOptions).
  size_t max_specializations = 32;
  size_t max_cache_bytes = size_t{1} << 30;
  /// Most arena bytes one compiled specialization may plan (runtime::CompileOptions); 0: the
  /// default.
  size_t max_memory_bytes = 0;
};

/// Parses a `config.json` text. `where` names the file in messages. Errors: kInvalidArgument
/// naming the file and the key (malformed JSON, unknown key, wrong type, a value out of range:
/// instances < 1, max_batch_size < 0, a preferred size outside [1, max_batch_size]).
Result<ModelConfig> parse_model_config(std::string_view json_text, const std::string& where);

/// Options of a repository.
struct RepositoryOptions {
  /// Limits applied to every model file (as `frame run` applies them).
  size_t max_model_bytes = size_t{2} << 30;
};

/// One loaded model version. Thread-safe.
class Model {
 public:
  virtual ~Model() = default;
  virtual const std::string& name() const = 0;
  virtual const std::string& version() const = 0;
  virtual const ModelConfig& config() const = 0;
  /// Declared inputs and outputs (symbolic and unknown dims as -1; with max_batch_size, dim 0
  /// too).
  virtual ModelMetadata metadata() const = 0;
  /// Validates the request against the model (every input given once, no unknown input, dtype
  /// and rank as declared, concrete dims equal, outputs known; errors kInvalidArgument naming
  /// the input or output, expected vs actual), waits for a slot or joins a batch, and runs it.
  /// Errors: as above; kFailedPrecondition when the queue is full, the deadline passes in the
  /// queue, or the model is being unloaded; a run's own error (kernel, compile), unchanged.
  virtual Result<InferResponse> infer(InferRequest request) = 0;
  /// The session's specialization-cache counters (for /metrics).
  virtual runtime::CacheStats cache_stats() const = 0;
  /// Stops accepting requests (they get kFailedPrecondition) and waits until none is in flight.
  virtual void drain() = 0;
  /// True once drain() began (the version was unloaded or replaced by a reload).
  virtual bool draining() const = 0;
};

/// Opens one model version from its ONNX file (the repository uses it; tests use it on their
/// own). `max_model_bytes` bounds the file (onnx::LoadLimits). Errors: the session's (kIo,
/// kInvalidArgument, kUnimplemented listing unsupported ops); kUnimplemented for a model with a
/// sequence or optional input or output (the protocol carries tensors).
Result<std::shared_ptr<Model>> open_model(const std::string& name, const std::string& version,
                                          const std::string& onnx_path, const ModelConfig& config,
                                          size_t max_model_bytes = size_t{2} << 30);

/// The models of a repository directory. Thread-safe: requests find models while others load
/// or unload.
class ModelRepository {
 public:
  /// Reads the directory's layout (nothing is loaded yet). Errors: kNotFound when `dir` is not a
  /// directory.
  static Result<std::shared_ptr<ModelRepository>> open(const std::string& dir,
                                                       RepositoryOptions options = {});
  virtual ~ModelRepository() = default;
  /// Loads every model of the directory. A model that fails is recorded UNAVAILABLE with its
  /// error (also printed by the caller) and does not stop the others. Returns the number loaded.
  virtual size_t load_all() = 0;
  /// Loads (or reloads) the model `name` from the directory: every version found, replacing the
  /// loaded ones once the new ones are ready. Errors: kNotFound for no such model directory;
  /// the model's own load error (it is then UNAVAILABLE).
  virtual Status load(const std::string& name) = 0;
  /// Unloads every version of `name`: it stops taking requests (kFailedPrecondition, 503),
  /// in-flight ones finish, then it is UNAVAILABLE with reason "unloaded". Errors: kNotFound for
  /// a model never seen.
  virtual Status unload(const std::string& name) = 0;
  /// Every model directory and loaded version with its state, sorted by name and version.
  virtual std::vector<IndexEntry> index() const = 0;
  /// The model version a request names; empty `version`: the highest ready one. Errors:
  /// kNotFound for an unknown model or version; kFailedPrecondition for a known one that is not
  /// ready (failed to load, unloaded), with the reason.
  virtual Result<std::shared_ptr<Model>> find(std::string_view name,
                                              std::string_view version) const = 0;
  /// Every ready model version (for /metrics and shutdown).
  virtual std::vector<std::shared_ptr<Model>> ready_models() const = 0;
  /// Metadata of `name` at `version` (empty: the highest ready), with every ready version
  /// listed. Errors: as find().
  virtual Result<ModelMetadata> metadata(std::string_view name, std::string_view version) const = 0;
};

}  // namespace frame::serve
