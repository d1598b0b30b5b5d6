// Session: input validation, the specialization key, the bounded LRU cache and the
// compile-outside-the-lock miss path (ADR 0006 decisions 3, 4, 6).

#include "frame/runtime/session.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <omp.h>
#include <pthread.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "frame/core/digest.h"
#include "frame/core/dtype.h"
#include "frame/passes/pass.h"
#include "frame/passes/shape_determining.h"
#include "frame/runtime/backend.h"
#include "frame/runtime/threads.h"
#include "runtime/compile_internal.h"
#include "runtime/disk_cache.h"
#include "runtime/interpreter.h"

namespace frame::runtime {

std::string ValueInfo::to_string() const {
  std::string t;
  if (!has_shape) {
    t = fmt::format("{}[?...]", dtype_name(dtype));
  } else {
    std::vector<std::string> d;
    for (const Dim& x : dims) {
      d.push_back(x.is_concrete() ? std::to_string(x.value) : (x.param.empty() ? "?" : x.param));
    }
    t = fmt::format("{}[{}]", dtype_name(dtype), fmt::join(d, ","));
  }
  if (sequence) t = "seq(" + t + ")";
  if (optional) t = "optional(" + t + ")";
  return t;
}

std::string Value::to_string() const {
  switch (kind) {
    case Kind::kTensor:
      return fmt::format("{}{}", dtype_name(tensor.dtype()), shape_to_string(tensor.shape()));
    case Kind::kSequence:
      return fmt::format("seq({} x {})", sequence.size(), dtype_name(elem_dtype));
    case Kind::kNone:
      return "none";
  }
  return "?";
}

namespace {

// The specialization key as 64-bit words: per declared input its dtype, rank and dims, then
// per shape-determining input its byte count and bytes. Hashed once when built; equality
// compares the words.
struct Key {
  std::vector<uint64_t> words;
  size_t hash = 0;
  bool operator==(const Key& o) const { return hash == o.hash && words == o.words; }
};

struct KeyHash {
  size_t operator()(const Key& k) const { return k.hash; }
};

size_t hash_words(const std::vector<uint64_t>& w) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ w.size();
  for (uint64_t x : w) {
    h = (h ^ x) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  return static_cast<size_t>(h);
}

// A compiled specialization and which declared inputs its executable takes.

struct Compiled {
  Executable exe;
  double specialize_ms = 0;     // the session's import of the model for this key
  bool from_disk = false;       // read from the compile cache on disk: no import ran
  bool shape_agnostic = false;  // a first-seen key's tier: compiled again when it recurs
  // Of the first-seen tier: microseconds its specialize + compile took, and microseconds its
  // runs have taken so far; the key is compiled in full once the second reaches the first.
  int64_t compile_us = 0;
  mutable std::atomic<int64_t> run_us{0};
  std::vector<size_t> feed;  // indices into SessionImpl::slots_
};

// The executable's report with the session's `specialize` stage first
// (CompileReport::stage_times_ms).
CompileReport report_of(const Compiled& c) {
  CompileReport r = c.exe.report();
  if (!c.from_disk) {
    r.stage_times_ms.insert(r.stage_times_ms.begin(), {"specialize", c.specialize_ms});
  }
  return r;
}

// Specializations the LRU dropped, released when this goes out of scope: after the caller
// unlocks, since freeing an executable (its plan, graph and arena) takes long enough that other
// runs should not wait for it. Then the heap pages freed are returned to the system
// (malloc_trim): glibc serves arenas below its adaptive mmap threshold (up to 32 MiB) from the
// heap, and a stream of sizes left their freed pages resident, so RSS grew pass after pass with
// the held bytes flat (DeepLab, 100 image sizes: 629 -> 744 MiB over two more passes; 660-713
// over four with the trim). An eviction follows a compile, so the trim's cost (0.5-5 ms here,
// with a 500 MiB heap) is paid per compile, never per run.
struct Retired {
  std::vector<std::shared_ptr<const Compiled>> entries;
  Retired() = default;
  Retired(const Retired&) = delete;
  Retired& operator=(const Retired&) = delete;
  ~Retired() {
    if (entries.empty()) return;
    entries.clear();
#ifdef __GLIBC__
    malloc_trim(0);
#endif
  }
};

struct Entry {
  Key key;
  std::shared_ptr<const Compiled> compiled;
  size_t bytes = 0;
  uint64_t hits = 0;  // runs it served since it was inserted
};

}  // namespace

namespace detail {

extern thread_local bool t_background_compile;  // threads.cpp: in_background_compile()

namespace {

// The background compiles running in this process (SessionImpl::compile_in_background), and
// the fork() guard: a pthread_atfork prepare handler stops new ones from starting, waits until
// none runs and keeps the count locked until fork() returns, so a child never inherits a lock
// a background compile held (the session's, a registry's, oneDNN's caches). A fork() waits at
// most for the compiles in progress (one per session). The handler is registered at the first
// background compile, after an OpenMP call: handlers registered later run their prepare step
// first, and LLVM's libomp (the sanitizer builds') registers one at its initialization that
// holds the locks a new thread's first OpenMP call needs, which a background compile waited
// for would then never get.
struct BackgroundCompiles {
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;
  bool forking = false;  // a fork() waits for the running ones: no new one starts
};

// Never destroyed: a thread may end after static destructors have run.
BackgroundCompiles& background_compiles() {
  static auto* b = new BackgroundCompiles;
  return *b;
}

void fork_prepare() {
  BackgroundCompiles& b = background_compiles();
  std::unique_lock lock(b.mu);
  b.forking = true;
  b.cv.wait(lock, [&] { return b.running == 0; });
  (void)lock.release();  // held across fork(): unlocked by fork_release
}

void fork_release() {
  BackgroundCompiles& b = background_compiles();
  b.forking = false;
  b.mu.unlock();
}

}  // namespace

bool background_compile_starts() {
  static const int registered = [] {
    (void)omp_get_max_threads();  // the OpenMP runtime's own handlers first (see above)
    return pthread_atfork(&fork_prepare, &fork_release, &fork_release);
  }();
  (void)registered;
  BackgroundCompiles& b = background_compiles();
  std::lock_guard lock(b.mu);
  if (b.forking) return false;
  ++b.running;
  return true;
}

void background_compile_done() {
  BackgroundCompiles& b = background_compiles();
  std::lock_guard lock(b.mu);
  --b.running;
  b.cv.notify_all();
}

// Counts one background compile (background_compile_starts) until it is handed to its thread
// (release()) or this goes out of scope.
class BackgroundCount {
 public:
  BackgroundCount() : counted_(background_compile_starts()) {}
  ~BackgroundCount() {
    if (counted_) background_compile_done();
  }
  BackgroundCount(const BackgroundCount&) = delete;
  BackgroundCount& operator=(const BackgroundCount&) = delete;
  bool counted() const { return counted_; }
  void release() { counted_ = false; }  // the thread calls background_compile_done()

 private:
  bool counted_;
};

}  // namespace detail

class SessionImpl {
 public:
  SessionImpl(ModelSource s, SessionOptions o) : source_(std::move(s)), options_(std::move(o)) {
    options_.compile.use_cache = false;
    options_.max_specializations = std::max<size_t>(options_.max_specializations, 1);
    slots_ = source_.inputs;
    if (!source_.staged) {
      slots_.insert(slots_.end(), source_.overridable.begin(), source_.overridable.end());
    }
    for (size_t i = 0; i < slots_.size(); ++i) {
      const bool sd = std::find(source_.shape_determining.begin(), source_.shape_determining.end(),
                                slots_[i].name) != source_.shape_determining.end();
      if (sd) sd_index_.push_back(i);
    }
    add_shared(source_.shared_constants);
    if (!options_.cache_dir.empty()) {
      disk_ = std::make_unique<detail::DiskCache>(options_.cache_dir, options_.max_cache_dir_bytes);
    }
    // Tiers only where a run can bring a key other than the first one's.
    bool varies = !sd_index_.empty();
    for (const ValueInfo& vi : source_.inputs) {
      varies = varies || !vi.has_shape ||
               std::any_of(vi.dims.begin(), vi.dims.end(),
                           [](const Dim& d) { return !d.is_concrete(); });
    }
    tiered_ = options_.tiered_compile && varies && !disk_;
    interpret_ = tiered_ && options_.interpret_first_seen;
    const bool thread_ok = tiered_ && options_.background_compile && background_generation_ == 0;
    background_ = thread_ok && usable_threads(options_.compile.num_threads) < available_cores();
    background_probes_ = thread_ok && available_cores() >= 2;
  }

  // Waits for a background compile in progress (it uses this object), unless this is a fork()ed
  // child, where the thread does not exist: the handle is then left unjoined on purpose.
  ~SessionImpl() {
    if (fork_generation() != background_generation_) {
      // A fork()ed child: no thread of the parent's is here, and thread_mu_ may have been
      // copied locked by one. Destroying a joinable std::thread would terminate.
      (void)background_thread_.release();
      return;
    }
    std::lock_guard thread_lock(thread_mu_);
    if (background_thread_ && background_thread_->joinable()) background_thread_->join();
  }

  SessionImpl(const SessionImpl&) = delete;
  SessionImpl& operator=(const SessionImpl&) = delete;

  // The compile cache on disk's key of one specialization: the model's fingerprint, every
  // input's dtype and shape, a digest of every bound (shape-determining) value, and every
  // compile option (backends and threads resolved). The build and CPU are checked by the
  // entry's header instead, so an entry of another build is found, reported and replaced.
  std::string disk_key(const std::vector<const Tensor*>& by_index) const {
    std::string k = fmt::format("model {}\n", source_.fingerprint);
    for (size_t i = 0; i < by_index.size(); ++i) {
      if (by_index[i] == nullptr) continue;  // an overridable initializer not fed
      k += fmt::format("input {} {}{}\n", slots_[i].name, dtype_name(by_index[i]->dtype()),
                       shape_to_string(by_index[i]->shape()));
    }
    for (size_t i : sd_index_) {
      if (by_index[i] == nullptr) continue;
      k += fmt::format("bound {} {}\n", slots_[i].name, tensor_digest(*by_index[i]));
    }
    return k + "--options--\n" + detail::options_fingerprint(resolved_);
  }

  // The caller's tensor for each declared input, in model order, after checking names, dtypes,
  // ranks and concrete dims.
  // Checks tensor `t`, input `vi.name` (or element `element` of that sequence), against the
  // declared dtype and dims.
  Status check_tensor(const ValueInfo& vi, const Tensor& t, int64_t element = -1) const {
    const std::string what = element < 0 ? fmt::format("input '{}'", vi.name)
                                         : fmt::format("input '{}' element {}", vi.name, element);
    if (!t.defined()) {
      return invalid_argument("{}: {} is an undefined tensor (expected {})", source_.name, what,
                              vi.to_string());
    }
    if (t.dtype() != vi.dtype) {
      return invalid_argument("{}: {} is {}, the model expects {} ({})", source_.name, what,
                              dtype_name(t.dtype()), dtype_name(vi.dtype), vi.to_string());
    }
    if (vi.has_shape) {
      if (t.rank() != static_cast<int64_t>(vi.dims.size())) {
        return invalid_argument("{}: {} has rank {} (shape {}), the model expects rank {} ({})",
                                source_.name, what, t.rank(), shape_to_string(t.shape()),
                                vi.dims.size(), vi.to_string());
      }
      for (size_t d = 0; d < vi.dims.size(); ++d) {
        if (vi.dims[d].is_concrete() && vi.dims[d].value != t.shape()[d]) {
          return invalid_argument("{}: {} has shape {}, the model fixes dim {} to {} ({})",
                                  source_.name, what, shape_to_string(t.shape()), d,
                                  vi.dims[d].value, vi.to_string());
        }
      }
    }
    return Status();
  }

  // The names in `inputs` that are not declared inputs: an error naming the first.
  template <typename Map>
  Status check_unknown(const Map& inputs, size_t found) const {
    if (found == inputs.size()) return Status();
    std::vector<std::string> declared;
    for (const ValueInfo& vi : slots_) declared.push_back(vi.name);
    for (const auto& [name, t] : inputs) {
      if (std::find(declared.begin(), declared.end(), name) == declared.end()) {
        declared.resize(source_.inputs.size());
        std::string overridable;
        if (const size_t n = slots_.size() - declared.size(); n > 8) {
          // A model that lists every weight among its inputs (ONNX IR 3) has hundreds.
          overridable = fmt::format("; {} overridable initializers", n);
        } else if (n > 0) {
          std::vector<std::string> names;
          for (size_t i = declared.size(); i < slots_.size(); ++i) names.push_back(slots_[i].name);
          overridable = fmt::format("; overridable initializers: {}", fmt::join(names, ", "));
        }
        return invalid_argument("{}: unknown input '{}' (the model's inputs: {}{})", source_.name,
                                name, fmt::join(declared, ", "), overridable);
      }
    }
    return Status();
  }

  // run_values(): every declared input present, of its declared kind, dtype and dims.
  Status validate_values(const ValueMap& inputs) const {
    size_t found = 0;
    for (const ValueInfo& vi : source_.inputs) {
      auto it = inputs.find(vi.name);
      if (it == inputs.end() && vi.optional) continue;  // absent (the runner reads none)
      if (it == inputs.end()) {
        return invalid_argument("{}: missing input '{}' (expected {})", source_.name, vi.name,
                                vi.to_string());
      }
      ++found;
      const Value& v = it->second;
      if (v.is_none()) {
        if (!vi.optional) {
          return invalid_argument("{}: input '{}' is none, the model expects {}", source_.name,
                                  vi.name, vi.to_string());
        }
        continue;
      }
      if (v.is_sequence() != vi.sequence) {
        return invalid_argument("{}: input '{}' is {}, the model expects {}", source_.name, vi.name,
                                v.is_sequence() ? "a sequence" : "a tensor", vi.to_string());
      }
      if (v.is_tensor()) {
        FRAME_RETURN_IF_ERROR(check_tensor(vi, v.tensor));
        continue;
      }
      if (v.elem_dtype != vi.dtype) {
        return invalid_argument("{}: input '{}' is a sequence of {}, the model expects {}",
                                source_.name, vi.name, dtype_name(v.elem_dtype), vi.to_string());
      }
      for (size_t k = 0; k < v.sequence.size(); ++k) {
        FRAME_RETURN_IF_ERROR(check_tensor(vi, v.sequence[k], static_cast<int64_t>(k)));
      }
    }
    return check_unknown(inputs, found);
  }

  // The sequence or optional input or output of a model run() cannot take or return.
  Status tensors_only() const {
    for (const auto* list : {&source_.inputs, &source_.outputs}) {
      for (const ValueInfo& vi : *list) {
        if (vi.sequence || vi.optional) {
          return invalid_argument(
              "{}: {} '{}' is {}: run the model with run_values() (Python: lists and None)",
              source_.name, list == &source_.inputs ? "input" : "output", vi.name, vi.to_string());
        }
      }
    }
    return Status();
  }

  Status validate(const TensorMap& inputs, std::vector<const Tensor*>& by_index) const {
    by_index.assign(slots_.size(), nullptr);
    size_t found = 0;
    for (size_t i = 0; i < slots_.size(); ++i) {
      const ValueInfo& vi = slots_[i];
      auto it = inputs.find(vi.name);
      if (it == inputs.end() && i >= source_.inputs.size()) continue;  // keeps its initializer
      if (it == inputs.end()) {
        return invalid_argument("{}: missing input '{}' (expected {})", source_.name, vi.name,
                                vi.to_string());
      }
      ++found;
      const Tensor& t = it->second;
      FRAME_RETURN_IF_ERROR(check_tensor(vi, t));
      by_index[i] = &t;
    }
    return check_unknown(inputs, found);
  }

  void make_key(const std::vector<const Tensor*>& by_index, Key& key) const {
    key.words.clear();
    for (const Tensor* t : by_index) {
      if (t == nullptr) {  // an overridable initializer not fed
        key.words.push_back(UINT64_MAX);
        continue;
      }
      key.words.push_back(static_cast<uint64_t>(t->dtype()));
      key.words.push_back(static_cast<uint64_t>(t->rank()));
      for (int64_t d : t->shape()) key.words.push_back(static_cast<uint64_t>(d));
    }
    for (size_t i : sd_index_) {
      if (by_index[i] == nullptr) continue;
      const Tensor& t = *by_index[i];
      const size_t n = t.nbytes();
      key.words.push_back(n);
      const size_t first = key.words.size();
      key.words.resize(first + (n + 7) / 8, 0);
      if (n > 0) std::memcpy(key.words.data() + first, t.raw_data(), n);
    }
    key.hash = hash_words(key.words);
  }

  // "x: f32[2,3], shape = [3,2]" for messages about one specialization.
  std::string describe(const std::vector<const Tensor*>& by_index) const {
    std::vector<std::string> parts;
    for (size_t i = 0; i < by_index.size(); ++i) {
      if (by_index[i] == nullptr) continue;
      parts.push_back(fmt::format("{}: {}{}", slots_[i].name, dtype_name(by_index[i]->dtype()),
                                  shape_to_string(by_index[i]->shape())));
    }
    for (size_t i : sd_index_) {
      if (by_index[i] == nullptr) continue;
      const Tensor& t = *by_index[i];
      std::vector<std::string> vals;
      // Integers exactly (a key of 2^62 + 1 must not print like 2^62), floats in shortest form.
      (void)dispatch_dtype(t.dtype(), [&]<typename T>() {
        const T* p = t.data<T>();
        for (int64_t k = 0; k < t.numel() && k < 16; ++k) {
          if constexpr (std::is_integral_v<T>) {
            vals.push_back(fmt::format("{}", static_cast<int64_t>(p[k])));
          } else {
            vals.push_back(fmt::format("{}", t.element_as_double(k)));
          }
        }
      });
      std::string v = t.numel() <= 16 ? fmt::format("{}", fmt::join(vals, ","))
                                      : fmt::format("{} values", t.numel());
      if (t.rank() > 0) v = "[" + v + "]";
      parts.push_back(fmt::format("{} = {}", slots_[i].name, v));
    }
    return fmt::format("{}", fmt::join(parts, ", "));
  }

  // Counts `constants` as the model's (shared by every specialization). Caller holds mu_
  // once the session is shared.
  void add_shared(const std::vector<Tensor>& constants) const {
    for (const Tensor& t : constants) {
      const auto b = reinterpret_cast<uintptr_t>(t.raw_data());
      if (t.nbytes() > 0) shared_ranges_.emplace_back(b, b + t.nbytes());
    }
    std::sort(shared_ranges_.begin(), shared_ranges_.end());
  }

  // Bytes of the compiled graph's constants that are not views into the model's constants.
  // Caller holds mu_.
  size_t owned_constant_bytes(const ir::Graph& g) const {
    size_t bytes = 0;
    for (size_t v = 0; v < g.num_values(); ++v) {
      const ir::Value& val = g.value(static_cast<ir::ValueId>(v));
      if (!val.constant || val.constant->nbytes() == 0) continue;
      const auto p = reinterpret_cast<uintptr_t>(val.constant->raw_data());
      auto it = std::upper_bound(shared_ranges_.begin(), shared_ranges_.end(),
                                 std::make_pair(p, UINTPTR_MAX));
      const bool shared =
          it != shared_ranges_.begin() && p + val.constant->nbytes() <= std::prev(it)->second;
      if (!shared) bytes += val.constant->nbytes();
    }
    return bytes;
  }

  // `shape_agnostic`: the first-seen tier (CompileOptions::shape_agnostic_kernels).
  // What source_.specialize() gets for the validated inputs `by_index`.
  Specialization make_spec(const std::vector<const Tensor*>& by_index) const {
    Specialization spec;
    for (size_t i = 0; i < by_index.size(); ++i) {
      if (by_index[i] != nullptr) spec.input_shapes.emplace(slots_[i].name, by_index[i]->shape());
    }
    // A copy: the caller may overwrite its input tensor for a later run (IoBinding style),
    // and the cached specialization must keep the value its key records.
    for (size_t i : sd_index_) {
      if (by_index[i] != nullptr)
        spec.constant_inputs.emplace(slots_[i].name, by_index[i]->clone());
    }
    return spec;
  }

  Result<std::shared_ptr<const Compiled>> compile_for(const std::vector<const Tensor*>& by_index,
                                                      bool shape_agnostic) const {
    return compile_spec(
        make_spec(by_index), [&] { return describe(by_index); },
        disk_ ? disk_key(by_index) : std::string(), shape_agnostic);
  }

  // compile_for() of the specialization `spec`: `what` describes its inputs for errors
  // (describe()), `disk_key` is its key in the compile cache on disk (empty without one). Reads
  // no caller tensor, so a background compile (compile_in_background) runs it after the run
  // that asked has returned.
  template <typename Describe>
  Result<std::shared_ptr<const Compiled>> compile_spec(const Specialization& spec, Describe&& what,
                                                       const std::string& disk_key,
                                                       bool shape_agnostic) const {
    auto c = std::make_shared<Compiled>();
    if (disk_) {
      if (std::optional<Executable> hit = disk_->load(disk_key, resolved_)) {
        c->exe = std::move(*hit);
        c->from_disk = true;
        return finish(std::move(c));
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    Result<ir::Graph> g = source_.specialize(spec);
    if (!g.is_ok()) {
      return g.status().with_prefix(fmt::format("specializing for ({}): ", what()));
    }
    const std::chrono::duration<double, std::milli> specialize =
        std::chrono::steady_clock::now() - t0;
    if (source_.late_shared_constants) {
      std::lock_guard lock(mu_);
      if (!late_shared_added_) {
        std::vector<Tensor> late = source_.late_shared_constants();
        late_shared_added_ = !late.empty();
        add_shared(late);
      }
    }
    CompileOptions copts = disk_ ? resolved_ : options_.compile;
    copts.shape_agnostic_kernels = shape_agnostic;
    if (shape_agnostic) {
      // The first-seen tier also skips the passes that cost ~40% of the pipeline and change
      // a run by a few percent (measured on a BERT-style encoder: 0.2-2.4 ms runs within 5%);
      // the full compile of a recurring key runs them (ADR 0007).
      for (std::string_view p : {"cse", "operator-fusion"}) {
        if (std::find(copts.disabled_passes.begin(), copts.disabled_passes.end(), p) ==
            copts.disabled_passes.end()) {
          copts.disabled_passes.emplace_back(p);
        }
      }
    }
    Result<Executable> exe = compile(*g, copts);
    if (!exe.is_ok()) {
      return exe.status().with_prefix(fmt::format("compiling for ({}): ", what()));
    }
    c->exe = std::move(*exe);
    c->specialize_ms = specialize.count();
    c->compile_us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    c->shape_agnostic = shape_agnostic;
    if (disk_) disk_->store(disk_key, c->exe);
    return finish(std::move(c));
  }

  // Which declared inputs (and fed overridable initializers) the executable takes.
  std::shared_ptr<const Compiled> finish(std::shared_ptr<Compiled> c) const {
    for (size_t i = 0; i < slots_.size(); ++i) {
      for (const auto& [name, type] : c->exe.input_signature()) {
        if (name == slots_[i].name) c->feed.push_back(i);
      }
    }
    return c;
  }

  // The specialization for the validated inputs: a held one (an LRU touch), one another run
  // is compiling (waited for), or a new one compiled outside the lock and inserted.
  Result<std::shared_ptr<const Compiled>> get(const std::vector<const Tensor*>& inputs,
                                              bool full) const {
    thread_local Key scratch;
    make_key(inputs, scratch);
    std::promise<Result<std::shared_ptr<const Compiled>>> promise;
    // What a compile reads are copies: a compile may run another session on this thread (a
    // custom op folded at compile time), which reuses the per-thread key and input buffers.
    std::optional<Key> key;
    {
      std::unique_lock lock(mu_);
      if (const int generation = fork_generation(); generation != fork_generation_) {
        // In a forked child: entries compiled before the fork may use more threads than the
        // child can (usable_threads), and compiles in flight belonged to threads the child
        // does not have. Compile again, with one thread.
        lru_.clear();
        index_.clear();
        inflight_.clear();
        tiering_.clear();
        stats_.bytes = 0;
        fork_generation_ = generation;
      }
      if (auto it = index_.find(scratch); it != index_.end()) {
        lru_.splice(lru_.begin(), lru_, it->second);
        ++stats_.hits;
        ++it->second->hits;
        std::shared_ptr<const Compiled> held = it->second->compiled;
        // A key of the first-seen tier is compiled in full once its runs have taken as long as
        // its first compile did (at once for prepare()): a key that recurs a few times does
        // not pay a second compile it would not earn back. Concurrent runs meanwhile use the
        // held entry; a failed full compile is not retried.
        const bool hot = full || held->run_us.load(std::memory_order_relaxed) >= held->compile_us;
        if (!held->shape_agnostic || !hot) return held;
        // prepare() wants the full compile now, even while the background thread makes one.
        if (!tiering_.insert(scratch).second && !full) return held;
        lock.unlock();
        if (!full) {
          // Off the run's path where a core is spare: this run and the next ones use the held
          // entry meanwhile.
          switch (compile_in_background(scratch, inputs, true)) {
            case Background::kStarted:
              return held;
            case Background::kBusy: {
              std::lock_guard relock(mu_);
              tiering_.erase(scratch);  // a later run tries again
              return held;
            }
            case Background::kRefused:
              break;
          }
        }
        return tier_up(scratch, inputs, held);
      }
      if (auto it = inflight_.find(scratch); it != inflight_.end()) {
        // Concurrent runs of a new key compile it once.
        std::shared_future<Result<std::shared_ptr<const Compiled>>> pending = it->second;
        ++stats_.hits;
        lock.unlock();
        return pending.get();
      }
      ++stats_.misses;
      key = scratch;
      inflight_.emplace(*key, promise.get_future().share());
      // A key whose first-seen tier was too large to keep goes straight to the full compile.
      full = full || untiered_.count(*key) > 0;
    }
    const std::vector<const Tensor*> by_index = inputs;
    Result<std::shared_ptr<const Compiled>> compiled = compile_for(by_index, tiered_ && !full);
    if (tiered_ && !full) {
      // The first-seen tier can fail where the full compile succeeds (its unfused graph over a
      // memory limit, or strict mode without the fusion that gave a node a kernel) or be too
      // large to keep where the full one is not: then the key is compiled in full.
      bool keep = false;
      if (compiled.is_ok()) {
        std::lock_guard lock(mu_);
        keep = entry_bytes(*key, **compiled) <= options_.max_cache_bytes;
        if (!keep) {
          if (untiered_.size() >= kMaxUntiered) untiered_.clear();
          untiered_.insert(*key);
        }
      }
      if (!keep) compiled = compile_for(by_index, false);
    }
    Retired retired;  // declared before the lock: released after the unlock
    {
      std::lock_guard lock(mu_);
      inflight_.erase(*key);
      if (compiled.is_ok()) {
        insert(*key, *compiled, retired);
        if ((*compiled)->shape_agnostic) {
          compile_us_sum_ += (*compiled)->compile_us;
          ++compiles_timed_;
        }
      }
    }
    promise.set_value(compiled);
    return compiled;
  }

  // The interpreted tier (ADR 0007 stage C). A key the session holds no specialization for
  // runs node by node on its specialized graph (detail::interpret) instead of compiling, until
  // the key's interpreted runs have cost as much as one compile of this session's first-seen
  // tier (specialize included in both); then nullopt, and the caller compiles. A key seen for
  // the first time goes to whichever way has cost less per first-seen key in this session:
  // interpreted, or the first-seen tier's compile plus its first run (convolution networks,
  // whose compile is mostly JIT the interpreter pays too, run faster compiled); the first
  // three are interpreted, the fourth probes the compile (the first run is not a sample), and
  // now and then a first-seen key goes the other way, so both costs stay measured: the more
  // the other way costs, the rarer (detail::reprobe_interval). For
  // those compiles `time_compile` is set: the caller times lookup + run and reports it
  // (first_seen_compiled). Also nullopt where the key is held or being compiled, or the
  // interpreter falls back (the compile then reports the model's own errors): after a graph
  // it does not run the session stops interpreting; after a kernel's error
  // `check_interpreter` is set, and the session stops only if the compiled run succeeds
  // (stop_interpreting: the error was the interpreter's, not the data's); sizes near the
  // limits only compile that key. Errors: the validation's, and RunOptions::terminate's.
  // `validated`: the inputs by declared index when they were validated and no specialization
  // ran since (this thread's buffer), so the caller's compiled lookup need not validate them
  // again; null otherwise.
  Result<std::optional<TensorMap>> interpret(const TensorMap& inputs, const RunOptions& options,
                                             bool& time_compile, bool& check_interpreter,
                                             const std::vector<const Tensor*>*& validated) const {
    time_compile = false;
    check_interpreter = false;
    validated = nullptr;
    thread_local std::vector<const Tensor*> scratch_inputs;
    FRAME_RETURN_IF_ERROR(validate(inputs, scratch_inputs));
    validated = &scratch_inputs;
    thread_local Key scratch;
    make_key(scratch_inputs, scratch);
    bool earned = false;  // the key's interpreted runs have cost one compile
    bool probe = false;   // the first-seen tier's cost is measured beside this run
    {
      std::lock_guard lock(mu_);
      if (!interpret_ || fork_generation() != fork_generation_ || index_.count(scratch) > 0 ||
          inflight_.count(scratch) > 0) {
        return std::optional<TensorMap>();
      }
      const int64_t compile_us = detail::recurring_compile_threshold_us(
          compiles_timed_ == 0 ? 0 : compile_us_sum_ / compiles_timed_, evicted_.n,
          evicted_.unused);
      if (auto it = interpreted_us_.find(scratch); it != interpreted_us_.end()) {
        earned = it->second >= compile_us;
        // Without the background thread, or where it failed for this key, this run compiles.
        if (earned && (!background_usable() || background_failed_.count(scratch) > 0)) {
          return std::optional<TensorMap>();
        }
      } else if (const detail::FirstSeenWay way = first_seen_way();
                 way == detail::FirstSeenWay::kCompile) {
        time_compile = true;  // the cheaper way for a new key: compiled, and the entry kept
        return std::optional<TensorMap>();
      } else if (way == detail::FirstSeenWay::kProbe) {
        // The probe compiles and runs on the background thread, beside this interpreted run
        // instead of on its path (a DeepLabV3 stream's probe: 110-260 ms). Without a spare
        // core the interpreted runs give one up meanwhile (yield_core below).
        if (!background_usable(true)) {
          time_compile = true;
          return std::optional<TensorMap>();
        }
        probe = true;
      }
    }
    // Copies: specialize may run another session on this thread (a custom op folded at
    // import), which reuses the per-thread scratch.
    const Key key = scratch;
    const std::vector<const Tensor*> by_index = scratch_inputs;
    validated = nullptr;  // the buffer may be reused from here on: the caller validates again
    // The key is compiled beside this run (and the next ones, until it is held); when the
    // thread is busy with another key, a later run of this one asks again.
    if (earned && compile_in_background(key, by_index, false) == Background::kRefused) {
      return std::optional<TensorMap>();  // held or being compiled meanwhile, or no thread
    }
    if (probe) {
      auto copies = std::make_shared<TensorMap>();
      for (const auto& [name, t] : inputs) copies->emplace(name, t.clone());
      if (compile_in_background(key, by_index, false, std::move(copies)) != Background::kStarted) {
        time_compile = true;  // the thread is busy: the probe runs on this run's path
        return std::optional<TensorMap>();
      }
    }
    const auto t0 = std::chrono::steady_clock::now();
    Specialization spec = make_spec(by_index);
    spec.compact = false;  // walked in topological order: dead nodes are skipped anyway
    // The graph an earlier interpreted run gave back: re-typing assigns over its storage, or
    // re-types it in place where it has exactly the fusions this session replays (no copy of
    // the model's graph and no fusion again; ADR 0007 stage B, in place).
    SpareGraph spare;
    std::shared_ptr<const detail::InterpretedFusions> fusions;
    // With more than one thread: this run's nodes all on one thread, or each on what it earns.
    const bool choose_threads = resolved_.num_threads > 1;
    bool serial = false;
    bool yield_core = false;
    {
      std::lock_guard lock(mu_);
      if (!spare_graphs_.empty()) {
        spare = std::move(spare_graphs_.back());
        spare_graphs_.pop_back();
      }
      fusions = fusions_;
      // A probe in flight on a session whose threads take every core: this run keeps to one
      // thread, so the probe's compile has a core of its own (ADR 0007, "Revisited
      // (2026-12-07, later)"); not a sample of either way.
      yield_core = choose_threads && probe_in_flight_ && !background_;
      if (choose_threads && !yield_core) serial = thread_modes_.next_serial();
      serial = serial || yield_core;
    }
    // `spare.fusions` is the fusion object its graph has (null: none known).
    const bool derived = spare.fusions != nullptr && spare.fusions == fusions && fusions->rewrite;
    bool in_place = false;
    spec.reuse = &spare.graph;
    spec.reuse_derived = derived;
    spec.in_place = &in_place;
    Result<ir::Graph> g = source_.specialize(spec);
    if (!g.is_ok()) return std::optional<TensorMap>();  // the compile reports it
    if (in_place && !detail::rewrite_constants_fit(*g, *fusions->rewrite)) {
      // A constant the fusions read changed at this key: re-typed again, then fused as below.
      in_place = false;
      spec.reuse = &*g;
      spec.reuse_derived = false;
      g = source_.specialize(spec);
      if (!g.is_ok()) return std::optional<TensorMap>();
    }
    // The shape-independent fusions (layer norm, attention, matmul epilogues): matched on the
    // first interpreted key, replayed on the next ones (detail::fuse_interpreted).
    bool replayed = in_place;
    if (!in_place) {
      Result<std::optional<detail::InterpretedFusions>> learned =
          detail::fuse_interpreted(*g, resolved_.backends, fusions.get(), &replayed);
      if (!learned.is_ok()) return std::optional<TensorMap>();  // the compile reports it
      if (learned->has_value()) {
        // Learned on this graph: it has exactly that rewrite, if the session keeps this one.
        std::lock_guard lock(mu_);
        const bool kept = fusions_ == nullptr;
        if (kept) {
          fusions_ = std::make_shared<const detail::InterpretedFusions>(std::move(**learned));
        }
        replayed = replayed && kept;
        fusions = fusions_;
      }
    }
    const auto t1 = std::chrono::steady_clock::now();
    // Re-typed in place, the graph has the nodes, attributes and constant inputs the states
    // were prepared for; only types and folded shape arithmetic changed.
    detail::Interpreted r =
        detail::interpret(*g, inputs, serial ? serial_options_ : resolved_, options.terminate,
                          pool_.get(), in_place ? &spare.states : nullptr);
    const auto t2 = std::chrono::steady_clock::now();
    const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(t2 - t0).count();
    std::lock_guard lock(mu_);
    if (spare_graphs_.size() < kSpareGraphs) {
      spare_graphs_.push_back(
          {std::move(*g), replayed ? fusions : nullptr, std::move(r.node_states)});
    }
    if (!r.status.is_ok()) {
      if (r.failure == detail::InterpretFailure::kTerminated) return r.status;
      // Sizes near the limits are this key's; a kernel error is checked by the compiled run
      // (check_interpreter); anything else stops interpreting.
      if (r.failure == detail::InterpretFailure::kFallback) interpret_ = false;
      check_interpreter = r.failure == detail::InterpretFailure::kKernelError;
      return std::optional<TensorMap>();
    }
    // Held for the next kHeldRuns interpreted runs (the oldest released after this unlock, as
    // `r` goes).
    r.states = held_states_.hold(std::move(r.states));
    if (interpreted_us_.size() >= kMaxInterpreted) interpreted_us_.clear();
    int64_t& key_us = interpreted_us_[key];
    // The session's first run also pays one-time setup (kernel libraries, first touches of
    // the weights): not a sample of what the next key costs.
    if (key_us == 0 && ++interpreted_keys_ > 1) first_seen_interpreted_.add(us);
    if (choose_threads && !yield_core && interpreted_keys_ > 1) {
      thread_modes_.add(serial,
                        std::chrono::duration_cast<std::chrono::microseconds>(t2 - t1).count(),
                        r.estimated_ns);
    }
    key_us += us;
    ++stats_.interpreted;
    if (in_place) ++stats_.retyped_in_place;
    return std::optional<TensorMap>(std::move(r.outputs));
  }

  // How a key seen for the first time runs (interpret(); detail::first_seen_way). Interpreted
  // while a probe is in flight. Caller holds mu_.
  detail::FirstSeenWay first_seen_way() const {
    if (probe_in_flight_) return detail::FirstSeenWay::kInterpret;
    const int64_t interpreted = first_seen_interpreted_.mean();
    const int64_t compiled = first_seen_compiled_.mean();
    bool reprobe = false;
    if (first_seen_interpreted_.n >= 2 && first_seen_compiled_.n > 0) {
      reprobe = ++keys_since_probe_ >= detail::reprobe_interval(std::min(interpreted, compiled),
                                                                std::max(interpreted, compiled));
      if (reprobe) keys_since_probe_ = 0;
    }
    return detail::first_seen_way(first_seen_interpreted_.n, first_seen_compiled_.n, interpreted,
                                  compiled, reprobe);
  }

  // After a compiled run that succeeded where the interpreter's kernel failed (interpret()).
  void stop_interpreting() const {
    std::lock_guard lock(mu_);
    interpret_ = false;
  }

  // What a first-seen key cost that interpret() sent to the compile: lookup + run, in
  // microseconds.
  void first_seen_compiled(int64_t us) const {
    std::lock_guard lock(mu_);
    first_seen_compiled_.add(us);
  }

  // The full compile of `key` (copied, with its inputs: see get()), whose held entry `held` is of
  // the first-seen tier: replaces the key's entry, whichever it is by then; `held` when the
  // full compile fails.
  std::shared_ptr<const Compiled> tier_up(Key key, std::vector<const Tensor*> by_index,
                                          const std::shared_ptr<const Compiled>& held) const {
    Result<std::shared_ptr<const Compiled>> full = compile_for(by_index, false);
    Retired retired;  // declared before the lock: released after the unlock
    std::lock_guard lock(mu_);
    if (!full.is_ok()) return held;  // stays in tiering_: never retried
    tiering_.erase(key);
    ++stats_.tier_ups;
    insert(key, *full, retired);
    return *full;
  }

  // What compile_in_background() did.
  enum class Background {
    kStarted,  // the thread compiles the key
    kBusy,     // the thread is compiling another key (or this one): a later run asks again
    kRefused,  // not here (no spare core, a fork()ed child), the key is held or being
               // compiled on a run's path, or its background compile failed before, or no
               // thread could start: the caller compiles on the run's path
  };

  // Starts the full compile of `key` (copied, with its validated inputs `by_index`, read
  // before this returns) on the session's background thread (SessionOptions::
  // background_compile): a recurring interpreted key, or the tier-up of a held first-seen-tier
  // entry (`tier_up`: the caller put the key in tiering_; a held key is then not a refusal).
  // The thread inserts the result, replacing whatever entry the key has by then; a failed
  // compile, or a result too large to keep, puts the key in background_failed_ (and a tier-up
  // leaves tiering_), so its next run compiles on its own path and reports the error. Caller
  // does not hold mu_.
  Background compile_in_background(const Key& key, const std::vector<const Tensor*>& by_index,
                                   bool tier_up,
                                   std::shared_ptr<const TensorMap> probe = nullptr) const {
    if (!background_usable(probe != nullptr)) return Background::kRefused;
    // Counted before any lock is taken: a fork() waits for counted compiles, and one waiting
    // here holds nothing a child could inherit locked. Not counted while a fork() waits.
    detail::BackgroundCount count;
    if (!count.counted()) return Background::kRefused;
    {
      std::lock_guard lock(mu_);
      if (background_failed_.count(key) > 0 || (!tier_up && index_.count(key) > 0) ||
          inflight_.count(key) > 0) {
        return Background::kRefused;
      }
      if (background_key_) return Background::kBusy;
      try {
        background_key_ = key;
      } catch (const std::exception&) {
        return Background::kRefused;
      }
      probe_in_flight_ = probe != nullptr;
    }
    // The slot is taken: what the thread reads is built only now (a busy thread costs a run
    // nothing), and any throw from here on gives the slot back.
    try {
      // The handle is joined and replaced under thread_mu_: a run that takes the key next (once
      // this thread has cleared it) may get here before this run has stored the handle.
      std::lock_guard thread_lock(thread_mu_);
      if (background_thread_ && background_thread_->joinable()) background_thread_->join();
      auto run = [this, key, tier_up, probe, spec = make_spec(by_index),
                  what = describe(by_index)] {
        detail::t_background_compile = true;
        try {
          if (probe != nullptr) {
            run_probe(spec, what, *probe);
          } else {
            Result<std::shared_ptr<const Compiled>> c = compile_spec(
                spec, [&] { return what; }, std::string(), false);
            Retired retired;  // declared before the lock: released after the unlock
            std::lock_guard lock(mu_);
            if (c.is_ok()) insert(key, *c, retired);
            if (!c.is_ok() || index_.count(key) == 0) {
              if (background_failed_.size() >= kMaxUntiered) background_failed_.clear();
              background_failed_.insert(key);
              if (tier_up) tiering_.erase(key);  // its next hot run tiers up on its own path
            } else if (tier_up) {
              tiering_.erase(key);
              ++stats_.tier_ups;
              ++stats_.background_tier_ups;
            } else {
              ++stats_.background_compiles;
            }
          }
        } catch (...) {  // std::bad_alloc and the like: the key's next run compiles it
          std::lock_guard lock(mu_);
          if (probe == nullptr) {
            try {
              background_failed_.insert(key);
            } catch (...) {  // then it may be compiled here again: only time lost
            }
            if (tier_up) tiering_.erase(key);
          }
        }
        // Last, after the evicted entries are freed: the next start joins this thread.
        {
          std::lock_guard lock(mu_);
          background_key_.reset();
          probe_in_flight_ = false;
        }
        detail::background_compile_done();
      };
      background_thread_ = std::make_unique<std::thread>(std::move(run));
      count.release();  // the thread calls background_compile_done()
    } catch (...) {     // no thread: the caller compiles as without one
      std::lock_guard lock(mu_);
      background_key_.reset();
      probe_in_flight_ = false;
      return Background::kRefused;
    }
    return Background::kStarted;
  }

  // A probe of the first-seen tier's cost (first_seen_way) on the background thread: the
  // compile of `spec` with shape-agnostic kernels and one run on `inputs` (copies), timed as
  // Session::run times the probe it makes on a run's path, into first_seen_compiled_, and the
  // compile's own time into what a recurring key must earn (compile_us_sum_), as get() records
  // a first-seen-tier compile. Its entry is not kept: a stream of new shapes does not come back
  // to it. A failure records nothing (the next probe asks again).
  void run_probe(const Specialization& spec, const std::string& what,
                 const TensorMap& inputs) const {
    const auto t0 = std::chrono::steady_clock::now();
    Result<std::shared_ptr<const Compiled>> c = compile_spec(
        spec, [&] { return what; }, std::string(), true);
    if (!c.is_ok()) return;
    TensorMap scratch;
    if (!(*c)->exe.run(feeds(**c, inputs, scratch), RunOptions()).is_ok()) return;
    const auto us =
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    std::lock_guard lock(mu_);
    first_seen_compiled_.add(us);
    // What a recurring key's interpreted runs must have cost to earn a compile, as a probe's
    // first-seen-tier compile on a run's path records it (get()).
    compile_us_sum_ += (*c)->compile_us;
    ++compiles_timed_;
    ++stats_.background_probes;
  }

  // Whether compiles go to the background thread (background_; for a first-seen probe,
  // `probe`: background_probes_): not in a fork()ed child of the process that created the
  // session (a thread started there is not in the child).
  bool background_usable(bool probe = false) const {
    return (probe ? background_probes_ : background_) &&
           fork_generation() == background_generation_;
  }

  // What an entry keeps alive, in bytes: its arena, the constants it owns (folded values,
  // bound inputs), the last run's inputs and outputs its run slot still references until the
  // next run (Executable run slots reuse their tensor slots so steady-state runs do not
  // allocate), and the key, stored in the LRU list and in the index. Caller holds mu_.
  size_t entry_bytes(const Key& key, const Compiled& c) const {
    size_t io_bytes = 0;
    for (const auto* sig : {&c.exe.input_signature(), &c.exe.output_signature()}) {
      for (const auto& [name, type] : *sig) {
        io_bytes += static_cast<size_t>(std::max<int64_t>(numel_of(type.shape), 0)) *
                    dtype_size(type.dtype);
      }
    }
    // A specialization read from disk views its weights in blob mappings every entry of the
    // model shares (docs/architecture/execution-model.md, "Compile cache on disk").
    const size_t constants = c.from_disk ? 0 : owned_constant_bytes(c.exe.compiled_graph());
    return c.exe.report().peak_arena_bytes + constants + io_bytes +
           2 * key.words.size() * sizeof(uint64_t);
  }

  // Adds a compiled specialization (replacing the key's entry, if one is held) and evicts
  // least recently used entries beyond the bounds. The entries it drops go to `retired`, for
  // the caller to release after it unlocks: freeing an executable (its plan, graph and arena)
  // takes long enough that other runs should not wait for it. Caller holds mu_.
  void insert(const Key& key, const std::shared_ptr<const Compiled>& c, Retired& retired) const {
    last_report_ = report_of(*c);
    if (auto it = index_.find(key); it != index_.end()) {
      stats_.bytes -= it->second->bytes;
      retired.entries.push_back(std::move(it->second->compiled));
      lru_.erase(it->second);
      index_.erase(it);
    }
    const size_t bytes = entry_bytes(key, *c);
    if (bytes > options_.max_cache_bytes) {
      ++stats_.evictions;  // run once, not kept
      return;
    }
    lru_.push_front(Entry{key, c, bytes});
    index_.emplace(key, lru_.begin());
    stats_.bytes += bytes;
    while (lru_.size() > options_.max_specializations || stats_.bytes > options_.max_cache_bytes) {
      Entry& last = lru_.back();
      stats_.bytes -= last.bytes;
      evicted_.add(last.hits == 0);
      retired.entries.push_back(std::move(last.compiled));
      index_.erase(last.key);
      lru_.pop_back();
      ++stats_.evictions;
    }
  }

  // `full`: a first-seen key is compiled in full, and a held first-seen-tier entry is tiered up
  // (Session::prepare: the caller compiles ahead of its runs).
  Result<std::shared_ptr<const Compiled>> lookup(const TensorMap& inputs, bool full = false) const {
    thread_local std::vector<const Tensor*> by_index;
    FRAME_RETURN_IF_ERROR(validate(inputs, by_index));
    return get(by_index, full);
  }

  // The executable's inputs: the caller's map when it takes every value the caller fed (the
  // map was validated: it names only slots), else the non-bound ones.
  const TensorMap& feeds(const Compiled& c, const TensorMap& inputs, TensorMap& scratch) const {
    if (c.feed.size() == inputs.size()) return inputs;
    scratch.clear();
    for (size_t i : c.feed) scratch.emplace(slots_[i].name, inputs.at(slots_[i].name));
    return scratch;
  }

  ModelSource source_;
  SessionOptions options_;
  // What a run may feed: the declared inputs, then the overridable initializers (absent from a
  // run's by_index as nullptr). sd_index_ indexes it.
  std::vector<ValueInfo> slots_;
  std::vector<size_t> sd_index_;
  mutable std::vector<std::pair<uintptr_t, uintptr_t>> shared_ranges_;  // guarded by mu_
  mutable bool late_shared_added_ = false;                              // guarded by mu_
  // The compile cache on disk and the options its keys and loads use (backends, threads
  // resolved once at creation); null without SessionOptions::cache_dir.
  std::unique_ptr<detail::DiskCache> disk_;
  CompileOptions resolved_;

  mutable std::mutex mu_;
  mutable int fork_generation_ = fork_generation();  // guarded by mu_
  mutable std::list<Entry> lru_;                     // most recently used first
  mutable std::unordered_map<Key, std::list<Entry>::iterator, KeyHash> index_;
  // Keys being compiled, so concurrent runs of one new key wait instead of compiling again.
  mutable std::unordered_map<Key, std::shared_future<Result<std::shared_ptr<const Compiled>>>,
                             KeyHash>
      inflight_;
  mutable CacheStats stats_;
  // SessionOptions::tiered_compile in effect, and the keys being compiled in full (or whose
  // full compile failed) after a first-seen-tier compile.
  bool tiered_ = false;
  mutable std::unordered_set<Key, KeyHash> tiering_;
  // Keys whose first-seen-tier entry was too large to keep (max_cache_bytes): compiled in full
  // at their next miss. Cleared when it reaches kMaxUntiered keys.
  static constexpr size_t kMaxUntiered = 1024;
  mutable std::unordered_set<Key, KeyHash> untiered_;
  mutable std::optional<CompileReport> last_report_;
  // The interpreted tier (SessionOptions::interpret_first_seen, with tiered_): on until the
  // interpreter first falls back; per key not held, microseconds its interpreted runs took
  // (cleared at kMaxInterpreted keys); the first-seen tier's compiles, timed, for the
  // estimate of what one costs. Guarded by mu_.
  mutable bool interpret_ = false;
  // The prepared kernel states of the last kHeldRuns interpreted runs (detail::HeldStates).
  static constexpr size_t kHeldRuns = 32;
  mutable detail::HeldStates held_states_{kHeldRuns};
  // Graphs interpreted runs gave back, for the next re-typing to build in (Specialization::
  // reuse): one per run that may be in flight at once, up to kSpareGraphs.
  static constexpr size_t kSpareGraphs = 4;
  // A graph an interpreted run gave back, and the fusions it has exactly (the session's
  // fusions_ at the time, replayed or learned on it), or null where it may have others.
  struct SpareGraph {
    ir::Graph graph;
    std::shared_ptr<const detail::InterpretedFusions> fusions;
    // The kernels' states of the run that gave it back (Interpreted::node_states): the next run
    // re-typing it in place may take them again (detail::interpret's `prior`).
    std::vector<detail::NodeState> states;
  };
  mutable std::vector<SpareGraph> spare_graphs_;
  // What the interpreted tier's lowering patterns did to the session's first interpreted key,
  // replayed on the next ones (detail::fuse_interpreted); null before it.
  mutable std::shared_ptr<const detail::InterpretedFusions> fusions_;
  // With more than one thread, whether an interpreted run puts every node on one thread
  // (detail::ThreadModeChoice; guarded by mu_), and the options such a run uses (resolved_ with
  // one thread; set with resolved_).
  mutable detail::ThreadModeChoice thread_modes_;
  CompileOptions serial_options_;
  // The interpreter's values: recycled, at most min(max_cache_bytes, 256 MiB) held free.
  std::shared_ptr<detail::BufferPool> pool_ =
      std::make_shared<detail::BufferPool>(std::min(options_.max_cache_bytes, size_t{256} << 20));
  static constexpr size_t kMaxInterpreted = 4096;
  mutable std::unordered_map<Key, int64_t, KeyHash> interpreted_us_;
  mutable int64_t compile_us_sum_ = 0;
  mutable int64_t compiles_timed_ = 0;
  // Cost of a first-seen key, in microseconds, each way (first_seen_way()): a moving
  // average (weight 1/4 for the newest sample), so it follows a stream whose sizes drift.
  struct Mean {
    int64_t avg = 0;
    int64_t n = 0;
    void add(int64_t us) {
      avg = n == 0 ? us : avg + (us - avg) / 4;
      ++n;
    }
    int64_t mean() const { return avg; }
  };
  mutable Mean first_seen_interpreted_;
  mutable Mean first_seen_compiled_;
  // First-seen keys since the last one sent the other way (detail::reprobe_interval).
  mutable int64_t keys_since_probe_ = 0;
  // A probe of the first-seen tier runs on the background thread (run_probe): no other key
  // probes meanwhile.
  mutable bool probe_in_flight_ = false;
  mutable int64_t interpreted_keys_ = 0;
  // Evicted entries, and how many of them served no run (interpret()): halved past 256, so
  // the share follows the stream.
  struct Evicted {
    int64_t n = 0;
    int64_t unused = 0;
    void add(bool was_unused) {
      if (n >= 256) {
        n /= 2;
        unused /= 2;
      }
      ++n;
      unused += was_unused ? 1 : 0;
    }
  };
  mutable Evicted evicted_;
  // The background compile (compile_in_background): on where SessionOptions::background_compile
  // and tiered compiles are, and the session's threads leave a core spare. The key being
  // compiled, if any, and keys whose background compile failed or was not kept (cleared at
  // kMaxUntiered keys): guarded by mu_. The thread, and the fork generation it was started in
  // (a fork()ed child has no such thread: its destructor does not join it).
  bool background_ = false;
  // The first-seen probes (run_probe) also go to that thread where no core is spare, as long
  // as the process has two: the session's interpreted runs keep to one thread meanwhile.
  bool background_probes_ = false;
  mutable std::optional<Key> background_key_;
  mutable std::unordered_set<Key, KeyHash> background_failed_;
  mutable std::unique_ptr<std::thread> background_thread_;  // guarded by thread_mu_
  mutable std::mutex thread_mu_;
  int background_generation_ = fork_generation();
};

Result<Session> Session::create(ModelSource source, SessionOptions options) {
  if (!source.specialize && !source.staged) {
    return invalid_argument("session for '{}': the model source has no specialize function",
                            source.name);
  }
  // Options are checked now, not at the first run's compile, so a typo fails where it is made.
  if (options.compile.num_threads < 0) {
    return invalid_argument("session for '{}': num_threads is {}; expected 0 (all cores) or more",
                            source.name, options.compile.num_threads);
  }
  if (Result<std::vector<std::string>> b = resolve_backends(options.compile.backends); !b.is_ok()) {
    return b.status().with_prefix(fmt::format("session for '{}': ", source.name));
  }
  if (!options.cache_dir.empty() && source.fingerprint.empty() && !source.staged) {
    return invalid_argument(
        "session for '{}': cache_dir '{}' given, but the model source has no fingerprint to key "
        "the cache by (ModelSource::fingerprint)",
        source.name, options.cache_dir);
  }
  for (const std::string& p : options.compile.disabled_passes) {
    if (Result<std::unique_ptr<passes::Pass>> pass = passes::make_pass(p); !pass.is_ok()) {
      return pass.status().with_prefix(
          fmt::format("session for '{}': disabled pass: ", source.name));
    }
  }
  if (source.staged) source.overridable.clear();  // a staged model's stages own its values
  std::set<std::string> names;
  for (const auto* list : {&source.inputs, &source.overridable}) {
    for (const ValueInfo& vi : *list) {
      if (!names.insert(vi.name).second) {
        return invalid_argument("session for '{}': input '{}' is declared twice", source.name,
                                vi.name);
      }
    }
  }
  for (const std::string& sd : source.shape_determining) {
    if (names.count(sd) == 0) {
      return invalid_argument(
          "session for '{}': shape-determining input '{}' is not a declared input", source.name,
          sd);
    }
  }
  // Inputs in model order, then overridable initializers in model order.
  std::vector<std::string> in_model_order;
  for (const auto* list : {&source.inputs, &source.overridable}) {
    for (const ValueInfo& vi : *list) {
      if (std::find(source.shape_determining.begin(), source.shape_determining.end(), vi.name) !=
          source.shape_determining.end()) {
        in_model_order.push_back(vi.name);
      }
    }
  }
  source.shape_determining = std::move(in_model_order);
  auto impl = std::make_shared<SessionImpl>(std::move(source), std::move(options));
  FRAME_ASSIGN_OR_RETURN(impl->resolved_, detail::resolve_options(impl->options_.compile));
  impl->serial_options_ = impl->resolved_;
  impl->serial_options_.num_threads = 1;
  return Session(std::move(impl));
}

Result<Session> Session::from_graph(ir::Graph graph, SessionOptions options) {
  ModelSource src;
  src.name = graph.name().empty() ? "graph" : "graph '" + graph.name() + "'";
  for (ir::ValueId v : graph.inputs()) {
    const ir::Value& val = graph.value(v);
    if (!val.type) {
      return invalid_argument("{}: graph input '{}' has no type (ARCH-044)", src.name, val.name);
    }
    ValueInfo vi{val.name, val.type->dtype, {}, true};
    for (int64_t d : val.type->shape) vi.dims.push_back(Dim{d, ""});
    src.inputs.push_back(std::move(vi));
  }
  for (ir::ValueId v : graph.outputs()) {
    const ir::Value& val = graph.value(v);
    ValueInfo vi{
        val.name, val.type ? val.type->dtype : DTypeCode::kFloat32, {}, val.type.has_value()};
    if (val.type) {
      for (int64_t d : val.type->shape) vi.dims.push_back(Dim{d, ""});
    }
    src.outputs.push_back(std::move(vi));
  }
  for (const passes::ShapeDeterminingInput& sd : passes::shape_determining_inputs(graph)) {
    src.shape_determining.push_back(sd.name);
  }
  for (size_t v = 0; v < graph.num_values(); ++v) {
    const ir::Value& val = graph.value(static_cast<ir::ValueId>(v));
    if (val.constant) src.shared_constants.push_back(*val.constant);
  }
  if (!options.cache_dir.empty()) {
    const std::string text = detail::graph_fingerprint(graph);
    src.fingerprint = "graph " + digest_hex(text.data(), text.size());
  }
  auto shared = std::make_shared<const ir::Graph>(std::move(graph));
  src.specialize = [shared](const Specialization& spec) -> Result<ir::Graph> {
    ir::Graph g = *shared;  // constants are shared: copying a Tensor shares its storage
    for (const auto& [name, value] : spec.constant_inputs) {
      FRAME_RETURN_IF_ERROR(g.bind_input(g.find_value(name), value));
    }
    return g;
  };
  return create(std::move(src), std::move(options));
}

Session::Session(std::shared_ptr<SessionImpl> impl) : impl_(std::move(impl)) {}
Session::Session(const Session&) = default;
Session& Session::operator=(const Session&) = default;
Session::Session(Session&&) noexcept = default;
Session& Session::operator=(Session&&) noexcept = default;
Session::~Session() = default;

namespace {

// Runs `run` and, for a first-seen-tier entry, adds its wall time to the entry's run_us.
template <typename Run>
auto timed_run(const Compiled& c, Run&& run) {
  if (!c.shape_agnostic) return run();
  const auto t0 = std::chrono::steady_clock::now();
  auto result = run();
  c.run_us.fetch_add(
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
          .count(),
      std::memory_order_relaxed);
  return result;
}

}  // namespace

Result<TensorMap> Session::run(const TensorMap& inputs, const RunOptions& options) const {
  if (impl_->source_.staged) {
    FRAME_RETURN_IF_ERROR(impl_->tensors_only());
    std::vector<const Tensor*> by_index;
    FRAME_RETURN_IF_ERROR(impl_->validate(inputs, by_index));
    ValueMap in;
    for (const auto& [name, t] : inputs) in.emplace(name, Value::of(t));
    FRAME_ASSIGN_OR_RETURN(ValueMap out, impl_->source_.staged->run(in, options));
    TensorMap tensors;
    for (auto& [name, v] : out) tensors.emplace(name, std::move(v.tensor));
    return tensors;
  }
  bool time_compile = false;
  bool check_interpreter = false;
  const std::vector<const Tensor*>* validated = nullptr;
  if (options.profile == nullptr && options.observer == nullptr) {
    // A profile or an observer reports a compiled plan's steps: those runs compile.
    FRAME_ASSIGN_OR_RETURN(
        std::optional<TensorMap> out,
        impl_->interpret(inputs, options, time_compile, check_interpreter, validated));
    if (out) return std::move(*out);
  }
  const auto t0 = std::chrono::steady_clock::now();
  // A compiled hit validates the inputs once: interpret() did, when it ran.
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<const Compiled> c, validated != nullptr
                                                                ? impl_->get(*validated, false)
                                                                : impl_->lookup(inputs));
  TensorMap scratch;
  Result<TensorMap> out =
      timed_run(*c, [&] { return c->exe.run(impl_->feeds(*c, inputs, scratch), options); });
  if (check_interpreter && out.is_ok()) impl_->stop_interpreting();
  if (time_compile && out.is_ok()) {
    impl_->first_seen_compiled(
        std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0)
            .count());
  }
  return out;
}

Result<ValueMap> Session::run_values(const ValueMap& inputs, const RunOptions& options) const {
  FRAME_RETURN_IF_ERROR(impl_->validate_values(inputs));
  if (impl_->source_.staged) return impl_->source_.staged->run(inputs, options);
  TensorMap tensors;
  for (const auto& [name, v] : inputs) tensors.emplace(name, v.tensor);
  FRAME_ASSIGN_OR_RETURN(TensorMap out, run(tensors, options));
  ValueMap values;
  for (auto& [name, t] : out) values.emplace(name, Value::of(std::move(t)));
  return values;
}

Status Session::run(const TensorMap& inputs, TensorMap& outputs, const RunOptions& options) const {
  if (impl_->source_.staged) {
    FRAME_ASSIGN_OR_RETURN(TensorMap out, run(inputs, options));
    for (auto& [name, t] : out) outputs[name] = std::move(t);
    return Status();
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<const Compiled> c, impl_->lookup(inputs));
  TensorMap scratch;
  return timed_run(*c,
                   [&] { return c->exe.run(impl_->feeds(*c, inputs, scratch), outputs, options); });
}

Result<Executable> Session::prepare(const TensorMap& inputs) const {
  if (impl_->source_.staged) {
    return make_error(StatusCode::kFailedPrecondition,
                      "{}: the model has data-dependent shapes and runs as stages "
                      "(docs/adr/0008-data-dependent-shapes.md); there is no single executable "
                      "to prepare: use run()",
                      impl_->source_.name);
  }
  FRAME_ASSIGN_OR_RETURN(std::shared_ptr<const Compiled> c, impl_->lookup(inputs, true));
  return c->exe;
}

const std::vector<ValueInfo>& Session::inputs() const { return impl_->source_.inputs; }
const std::vector<ValueInfo>& Session::overridable_inputs() const {
  return impl_->source_.overridable;
}
const std::vector<ValueInfo>& Session::outputs() const { return impl_->source_.outputs; }
const std::vector<std::string>& Session::shape_determining_inputs() const {
  return impl_->source_.shape_determining;
}
const SessionOptions& Session::options() const { return impl_->options_; }

bool Session::is_staged() const { return impl_->source_.staged != nullptr; }

std::vector<std::string> Session::stages() const {
  return impl_->source_.staged ? impl_->source_.staged->describe() : std::vector<std::string>{};
}

CacheStats Session::cache_stats() const {
  if (impl_->source_.staged) return impl_->source_.staged->stats();
  std::lock_guard lock(impl_->mu_);
  CacheStats s = impl_->stats_;
  s.entries = impl_->lru_.size();
  if (impl_->disk_) {
    const detail::DiskCacheCounters d = impl_->disk_->counters();
    s.disk_hits = d.hits;
    s.disk_misses = d.misses;
    s.disk_writes = d.writes;
    s.disk_rejected = d.rejected;
  }
  return s;
}

std::optional<CompileReport> Session::last_report() const {
  std::lock_guard lock(impl_->mu_);
  return impl_->last_report_;
}

Result<std::optional<CompileReport>> Session::report_for(const TensorMap& inputs) const {
  std::vector<const Tensor*> by_index;
  FRAME_RETURN_IF_ERROR(impl_->validate(inputs, by_index));
  if (impl_->source_.staged) return std::optional<CompileReport>();
  Key key;
  impl_->make_key(by_index, key);
  std::lock_guard lock(impl_->mu_);
  auto it = impl_->index_.find(key);
  if (it == impl_->index_.end()) return std::optional<CompileReport>();
  return std::optional<CompileReport>(report_of(*it->second->compiled));
}

}  // namespace frame::runtime
