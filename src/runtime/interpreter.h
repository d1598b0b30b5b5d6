#pragma once
/// \file
/// The interpreted tier of a Session (private to src/runtime; docs/adr/0007-first-seen-shapes.md,
/// "Implemented: stage C"): a specialized graph run node by node, each node static when it runs
/// (ARCH-044), without the pass pipeline, a memory plan or a compiled plan.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "frame/core/status.h"
#include "frame/ir/graph.h"
#include "frame/runtime/compile.h"

namespace frame::ops {
struct KernelDef;
}  // namespace frame::ops

namespace frame::runtime::detail {

/// Why an interpretation did not produce outputs, so the compiled path runs instead: kFallback
/// where the graph or a node is outside what the interpreter runs; kKernelError where a
/// kernel failed (a data error, such as an index out of range, fails the compiled run the
/// same way and is reported by it; a compiled run that succeeds means the interpreter cannot
/// run this model); kOverLimits where the key's sizes are near compile()'s limits (the compile
/// decides, with its message). kTerminated: RunOptions::terminate asked the run to stop (its
/// error is the run's; nothing compiles).
enum class InterpretFailure : uint8_t { kFallback, kKernelError, kOverLimits, kTerminated };

/// Buffers the interpreter's values are allocated from, recycled across nodes and runs: a
/// value's storage returns here when its last Tensor is dropped (by the interpreter after the
/// value's last reader, or by the caller for an output), so steady streams do not map and
/// first-touch fresh pages for every large value (which made interpreted convolution networks
/// slower than compiled ones, whose arena is reused). Sizes are rounded up to one of four
/// classes per power of two, and a request takes the smallest free buffer of at least its class
/// and at most twice it (in a stream of new shapes few sizes recur exactly, and a fresh buffer
/// faults its pages in on first write); at most `max_free_bytes` are kept free, the rest are
/// released, and interpret() ends each run with end_run(), which releases buffers no request took
/// for a few runs, so a stream whose sizes change does not keep buffers of every size it has seen.
/// Thread-safe; held by shared_ptr, which every allocated Tensor keeps alive.
class BufferPool : public std::enable_shared_from_this<BufferPool> {
 public:
  explicit BufferPool(size_t max_free_bytes) : max_free_bytes_(max_free_bytes) {}
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;
  /// An uninitialised tensor of `dtype` and `shape`, 64-byte aligned. Errors: size overflow,
  /// allocation failure (kOutOfRange).
  Result<Tensor> empty(DTypeCode dtype, const Shape& shape);
  /// Bytes held free now.
  size_t free_bytes() const;
  /// Releases free buffers, largest first, until at most `keep` bytes are held free.
  void trim(size_t keep);
  /// Ends a run: releases the free buffers that no request took during the last
  /// `kIdleRuns` runs (sizes the stream has stopped bringing). Releasing by size instead (to
  /// what the run allocated) handed back buffers the next shape needed: a small BERT-style
  /// encoder's stream then faulted fresh pages in at ~25 per run, a fifth of its time here.
  void end_run();
  static constexpr uint64_t kIdleRuns = 64;

 private:
  struct Free {
    void* p;
    uint64_t run;  // the run in which it was released
  };
  void release(void* p, size_t bytes);
  const size_t max_free_bytes_;
  mutable std::mutex mu_;
  std::multimap<size_t, Free> free_;  // by capacity
  size_t free_bytes_ = 0;
  uint64_t run_ = 0;
};

/// A node's kernel and the state its prepare built in an interpreted run, kept for the next
/// run of the same graph re-typed in place (interpret()'s `prior`), where the kernel's
/// KernelDef::reuse_state may take it again instead of choosing and preparing anew.
struct NodeState {
  const ops::KernelDef* kernel = nullptr;
  std::shared_ptr<void> state;
};

/// The result of interpret(): outputs, or the failure and its message.
struct Interpreted {
  TensorMap outputs;
  /// The kernels' prepared states (KernelDef::prepare): a Session holds those of its last few
  /// runs (HeldStates), so what kernels share process-wide while one holds it (oneDNN weights
  /// packed into a blocked layout, pack_weights) is found again instead of rebuilt every run.
  std::vector<std::shared_ptr<void>> states;
  /// By node id (the graph's node slots): the kernel and state of each node whose kernel
  /// declares KernelDef::reuse_state, for the next run of this graph (interpret()'s `prior`).
  std::vector<NodeState> node_states;
  Status status;  ///< OK, or why there are no outputs
  InterpretFailure failure = InterpretFailure::kFallback;
  /// The run's estimated one-core time: node_cost_ns summed over the nodes that ran a kernel.
  double estimated_ns = 0;
};

/// The prepared kernel states (Interpreted::states) of a Session's last few interpreted runs:
/// what kernels share process-wide while a state holds it (oneDNN weights packed into a blocked
/// layout, the shape-agnostic conv's weights restricted to the taps an image size keeps) is
/// found again by a later run instead of being rebuilt. Holding only the last run's re-packed
/// DeepLabV3's ASPP weights in most runs of a stream of image sizes, whose tap sets alternate
/// (a sixth of its interpreted run). Not thread-safe (the Session holds its lock).
class HeldStates {
 public:
  /// Holds the states of up to `runs` runs (at least 1).
  explicit HeldStates(size_t runs) : runs_(std::max<size_t>(runs, 1)) {}
  /// Holds one run's states and returns those of the run that no longer fits (empty while
  /// fewer than `runs` are held): the caller releases them, outside its lock.
  std::vector<std::shared_ptr<void>> hold(std::vector<std::shared_ptr<void>> states) {
    held_.push_back(std::move(states));
    std::vector<std::shared_ptr<void>> out;
    if (held_.size() > runs_) {
      out = std::move(held_.front());
      held_.pop_front();
    }
    return out;
  }
  /// Runs held now.
  size_t size() const { return held_.size(); }

 private:
  size_t runs_;
  std::deque<std::vector<std::shared_ptr<void>>> held_;
};

/// The net change the interpreted patterns (LoweringPattern::interpreted, applied by
/// passes::apply_lowering_patterns as for one run) made to one key's
/// re-typed graph, so later keys of the same template replay it instead of matching again
/// (matching cost about an eighth of a BERT-style encoder's interpreted run): the nodes
/// removed, as they were; the constants they read (a decision a pattern read from one, such as
/// an epsilon or a scale, holds only while it is unchanged: weights by their storage,
/// constants of up to 256 bytes by value); the nodes added (their values' ids at or past
/// `value_slots` are the rewrite's own; their types are inferred again per key); and every
/// input of a kept node and graph output that now reads another value.
struct PatternRewrite {
  size_t value_slots = 0;  ///< the graph's value slots before the patterns ran
  struct Removed {
    ir::NodeId id = -1;
    std::string op;
    std::vector<ir::ValueId> inputs, outputs;
  };
  std::vector<Removed> removed;
  struct Checked {
    ir::ValueId v = ir::kNoValue;
    /// The constant as recorded; holding it keeps its storage from being freed and reused by
    /// another constant, so equal storage means an unchanged value.
    Tensor tensor;
    std::vector<std::byte> bytes;  ///< empty where compared by storage
  };
  std::vector<Checked> constants;
  struct Added {
    std::string op, name;
    ir::AttrMap attrs;
    std::vector<ir::ValueId> inputs, outputs;
    std::vector<std::string> output_names;
  };
  std::vector<Added> added;
  struct Use {
    ir::NodeId node = -1;  ///< a kept node, or -1 for the graph outputs
    size_t k = 0;
    ir::ValueId from = ir::kNoValue, to = ir::kNoValue;
  };
  std::vector<Use> uses;
};

/// What the interpreted tier keeps from its first key's fusions: the rewrite to replay (absent
/// where the patterns added a constant, which may depend on the key) and where patterns fired,
/// for keys whose graph the rewrite does not fit.
struct InterpretedFusions {
  std::optional<PatternRewrite> rewrite;
  std::vector<ir::NodeId> sites;
};

/// The interpreted tier's fusions for `g` (a key's re-typed graph): the lowering patterns marked
/// LoweringPattern::interpreted (the onednn backend's fuse_layer_norm, fuse_attention and
/// fuse_post_ops at matmul, gemm and conv), each tried where its backend's kernel would run the
/// anchor, asked as the interpreter asks (prefer_shape_agnostic, run_once;
/// passes::apply_lowering_patterns). With `known` null, matches everywhere, to a fixed point,
/// and returns what the next keys use; with `known`,
/// replays its rewrite where `g` has the recorded structure (the removed nodes live with the same
/// ops, inputs and outputs, the rewired uses still reading the recorded values, the checked
/// constants unchanged), else matches at its sites (node ids of a re-typed graph are the
/// template's; results never depend on the sites: a rewrite missed is only a fusion missed),
/// and returns nullopt. Errors: a pattern's, prefixed with its name, or
/// a replayed node the graph refuses (`g` may then be half rewritten: the caller compiles the key
/// instead of interpreting it). `replayed`, when not null, is set to whether `g` now has exactly
/// `known`'s rewrite (replayed) or, with `known` null, exactly the rewrite returned.
Result<std::optional<InterpretedFusions>> fuse_interpreted(ir::Graph& g,
                                                           const std::vector<std::string>& backends,
                                                           const InterpretedFusions* known,
                                                           bool* replayed = nullptr);

/// Whether the constants `r` checks (those its removed nodes read: by value up to 256 bytes,
/// else by storage) are unchanged in `g`, a graph that has `r` applied already and was re-typed
/// in place at another key (Specialization::reuse_derived): where one changed, the fusion may
/// not hold at this key and the graph must be re-typed and fused again.
bool rewrite_constants_fit(const ir::Graph& g, const PatternRewrite& r);

/// Runs `g` (typed at every live value, as a specialization's import gives it; the ONNX
/// importer's re-typing or a full import) on `inputs` (by graph input name; dtypes and shapes
/// equal to the graph's input types, as the Session validated them) and returns every graph
/// output, each a tensor of its own (an output that is a constant or a graph input is copied).
///
/// Only the nodes some graph output needs run, in topological order. Each runs on the kernel of
/// the first backend of `options.backends` (resolved: no "auto") that has one and supports the
/// node (KernelDef::supports with NodeContext::prefer_shape_agnostic, so oneDNN matmuls share
/// one primitive across sizes), else on its "cpu" kernel (ARCH-041 gives every op one). The
/// kernel prepares for this node and runs into freshly allocated outputs (a view op's output,
/// unless it is a graph output, shares its input's storage and runs no kernel); a value is
/// released after its last reader.
///
/// Falls back (InterpretFailure::kFallback) for options.strict, a custom pipeline or IR
/// printing (those are compile settings), a graph with a control-flow body or an untyped live
/// value, a backend that keeps values in device memory and a node no kernel supports;
/// kKernelError for a kernel's error. kOverLimits where compile()'s limits (docs/security.md)
/// might refuse this key: the compiled graph can hold more than this one (float16 widened to
/// float32, decompositions with intermediates of their own, 64-byte arena slots), so the
/// interpreter runs a key only well inside them: every value, twice over, within
/// options.max_tensor_bytes, and all values together (each rounded up to 64 bytes), four times
/// over, within options.max_memory_bytes. `terminate` (RunOptions::terminate) is read before
/// each node. Values are allocated from `pool` (Tensor::empty when null). `prior`, where
/// given, is the node_states of an earlier run of this same graph (same nodes, attributes and
/// constant inputs; only types and folded constants re-typed in place): a node whose kernel
/// says its state there still serves it (KernelDef::reuse_state) runs that state on that
/// kernel without choosing or preparing again (a BERT-style encoder's matmuls, whose own
/// loops do not depend on the row count). Thread-safe: holds no state between calls (`prior`'s
/// states must not run elsewhere meanwhile).
Interpreted interpret(const ir::Graph& g, const TensorMap& inputs, const CompileOptions& options,
                      const std::atomic<bool>* terminate, BufferPool* pool = nullptr,
                      const std::vector<NodeState>* prior = nullptr);

/// How long (microseconds) a Session runs a recurring key interpreted before it compiles it:
/// ski rental, the price of one compile (`compile_us`, the mean of the session's first-seen
/// compiles) over the share of compiled entries that served a run before they were evicted
/// (`evicted` entries evicted lately, `unused` of them having served none), that share taken
/// as at least 1/8. Where more keys recur than the cache holds, a compiled entry is evicted
/// before it earns its compile back, so the key runs interpreted up to 8 times longer first;
/// with no evictions it is the price of one compile.
inline int64_t recurring_compile_threshold_us(int64_t compile_us, int64_t evicted, int64_t unused) {
  if (evicted <= 0) return compile_us;
  const int64_t used = evicted - std::min(unused, evicted);
  return compile_us * 8 * evicted / std::max(8 * used, evicted);
}

/// How many first-seen keys a Session sends the cheaper way between two probes of the other way
/// (ADR 0007 stage C: a key it has not seen is interpreted or compiled, whichever has cost less
/// per first-seen key, `winner_us` against `loser_us`, both in microseconds). A probe costs
/// loser - winner more than a key sent the winner's way, so probes come every
/// ceil(32 * (loser - winner) / winner) keys, keeping them within about 1/32 of the stream's
/// time, and never more often than every 64th key nor less often than every 4096th (the costs
/// drift with the stream's sizes and oneDNN's caches). DeepLabV3-MobileNetV3's image sizes, 12
/// ms interpreted against 200 ms for the first-seen tier's compile and run: every 502nd key,
/// where a fixed 64 spent a sixth of the interpreted time on probes. `winner_us` <= 0 (no
/// measurable time) probes every 64th key.
inline int64_t reprobe_interval(int64_t winner_us, int64_t loser_us) {
  constexpr int64_t kMin = 64, kMax = 4096, kShare = 32;
  if (winner_us <= 0) return kMin;
  const int64_t extra = std::max<int64_t>(loser_us - winner_us, 0);
  // Capped before multiplying (a compile may cost 1000x a run): the result is capped anyway.
  const int64_t capped = std::min<int64_t>(extra, kMax * winner_us);
  const int64_t keys = (capped * kShare + winner_us - 1) / winner_us;
  return std::clamp<int64_t>(keys, kMin, kMax);
}

/// How a Session runs a key it has not seen (ADR 0007 stage C).
enum class FirstSeenWay {
  kInterpret,  ///< run it interpreted
  kProbe,      ///< also time the compiled way (compile + one run): its first measurement, or
               ///< the interpreted way winning and this key the one reprobe_interval sends over
  kCompile,    ///< compile it and run the plan: the compiled way has cost less per key
};

/// The way for a first-seen key from what each way has cost per first-seen key so far:
/// `interpreted_n` and `compiled_n` samples, means `interpreted_us` and `compiled_us`
/// (microseconds), `reprobe` true for the key reprobe_interval sends the losing way. Interpreted
/// until two interpreted samples exist; then one probe of the compiled way; then the cheaper
/// way, and the other where `reprobe`. Only a measurement of the compiled way is a probe (a
/// Session may run it beside the key's interpreted run and drop its entry); where the compiled
/// way wins, the key compiles and the entry serves it.
inline FirstSeenWay first_seen_way(int64_t interpreted_n, int64_t compiled_n,
                                   int64_t interpreted_us, int64_t compiled_us, bool reprobe) {
  if (interpreted_n < 2) return FirstSeenWay::kInterpret;
  if (compiled_n == 0) return FirstSeenWay::kProbe;
  if (interpreted_us <= compiled_us) {
    return reprobe ? FirstSeenWay::kProbe : FirstSeenWay::kInterpret;
  }
  return reprobe ? FirstSeenWay::kInterpret : FirstSeenWay::kCompile;
}

/// Whether the next interpreted run of a session with more than one thread runs every node on
/// one thread (serial) or each on the threads its estimated cost earns (node_threads), chosen
/// by what each way has cost this session: microseconds per estimated microsecond of work
/// (Interpreted::estimated_ns), so keys of different sizes compare; per way the median of its
/// last kWindow runs, since a session's first runs cost several times a later one (kernels
/// prepared, buffers grown: 2-9 ms against 0.8 on the BERT-style stream) and a mean kept them for
/// hundreds of runs. Each way's first run is not a sample (it prepares kernels for its thread
/// count). Runs alternate until each way has kMinSamples samples; then the cheaper way runs,
/// and the other every kProbeEvery-th run, so both stay measured (a probe costs the difference,
/// ~10-25% of a run, every 16th run). Why measured: the bound that sends small nodes to one
/// thread is one for all models, while what waking the other threads costs depends on how many
/// small nodes a run has in a row: the BERT-style encoder's interpreted runs at 2 threads took
/// 0.89-0.97 ms against 0.77-0.81 with every node on one thread, where DeepLabV3's took 12%
/// longer on one thread. Not thread-safe (the Session holds its lock).
class ThreadModeChoice {
 public:
  static constexpr size_t kWindow = 8;
  static constexpr size_t kMinSamples = 3;
  static constexpr int64_t kProbeEvery = 16;

  /// The way of the next run: true for serial.
  bool next_serial() {
    if (serial_.n < kMinSamples || parallel_.n < kMinSamples) return serial_.n < parallel_.n;
    const bool serial_wins = serial_.median() <= parallel_.median();
    const bool probe = ++runs_since_probe_ >= kProbeEvery;
    if (probe) runs_since_probe_ = 0;
    return serial_wins != probe;
  }
  /// What a run of that way took: `us` wall microseconds for `estimated_ns` of estimated work
  /// (ignored where that is not positive).
  void add(bool serial, int64_t us, double estimated_ns) {
    if (estimated_ns <= 0) return;
    (serial ? serial_ : parallel_).add(static_cast<double>(us) * 1000.0 / estimated_ns);
  }

 private:
  struct Window {
    double last[kWindow] = {};
    size_t n = 0;       // samples so far (the window holds the last min(n, kWindow))
    bool warm = false;  // the first run came: the ones after it are samples
    void add(double x) {
      if (!warm) {
        warm = true;
        return;
      }
      last[n++ % kWindow] = x;
    }
    double median() const {
      double v[kWindow];
      const size_t k = std::min(n, kWindow);
      std::copy(last, last + k, v);
      std::nth_element(v, v + k / 2, v + k);
      return v[k / 2];
    }
  };
  Window serial_, parallel_;
  int64_t runs_since_probe_ = 0;
};

}  // namespace frame::runtime::detail
