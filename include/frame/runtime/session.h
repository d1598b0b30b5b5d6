#pragma once
/// \file
/// Inference sessions with run-time specialization (docs/adr/0006-run-time-specialization.md,
/// docs/architecture/execution-model.md "Sessions and run-time specialization"). A `Session`
/// owns a model whose input shapes or shape-determining input values are known only when a
/// run supplies its tensors. Each run reads them, fetches or compiles the fully static graph
/// for them (ARCH-044 holds for every compiled graph) and runs it. Compiled specializations are
/// kept in a bounded LRU cache keyed by (dtype and shape of every input, bytes of every
/// shape-determining input).
///
/// The runtime does not know model formats: a `ModelSource` describes the model and produces
/// the static graph of a specialization (the ONNX frontend builds one in
/// frame/onnx/session.h); `Session::from_graph` wraps a graph built in C++.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/dtype.h"
#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/runtime/compile.h"

namespace frame::runtime {

/// One declared dimension of a model input or output (ONNX Runtime style): a concrete size, or
/// a symbolic one (ONNX `dim_param`, e.g. "batch") or unknown, settled per run by the tensor
/// supplied.
struct Dim {
  int64_t value = -1;  ///< the size; -1 when symbolic or unknown
  std::string param;   ///< the symbolic name; empty when concrete or unknown
  /// True when the dim has a fixed size (`value`).
  bool is_concrete() const { return value >= 0; }
};

/// A declared model input or output: name, element type and dims. ONNX also types values as
/// sequences of tensors and as optionals (ONNX IR spec, "Types"; ONNX operator spec,
/// Sequence* and Optional* ops): then `dtype` and `dims` describe the tensor inside.
struct ValueInfo {
  std::string name;
  DTypeCode dtype = DTypeCode::kFloat32;
  /// Declared dims; meaningful only when `has_shape` (ONNX allows a value without a shape,
  /// whose rank is then free).
  std::vector<Dim> dims;
  bool has_shape = true;
  /// A sequence of tensors (`dtype`, `dims`: each element's; elements' shapes may differ).
  bool sequence = false;
  /// An optional: the value (a tensor, or a sequence when `sequence`) may be absent.
  bool optional = false;
  /// "f32[batch,3,224,224]"; "?" for an unknown dim, "f32[?...]" without a shape;
  /// "seq(f32[?])", "optional(f32[4])", "optional(seq(i64[?...]))".
  std::string to_string() const;
};

/// One value a run takes or returns (docs/adr/0008-data-dependent-shapes.md, "Sequences and
/// optionals"): a tensor, a sequence of tensors of one dtype (ONNX `seq(tensor(T))`), or an
/// absent optional (ONNX `optional(...)` without an element; a present optional is its
/// element). Copies share tensor storage as Tensor copies do.
struct Value {
  enum class Kind { kTensor, kSequence, kNone };
  Kind kind = Kind::kTensor;
  Tensor tensor;                 ///< kTensor
  std::vector<Tensor> sequence;  ///< kSequence: the elements, in order
  /// kSequence: the element dtype (an empty sequence keeps it; ONNX SequenceEmpty `dtype`).
  DTypeCode elem_dtype = DTypeCode::kFloat32;

  static Value of(Tensor t) {
    Value v;
    v.kind = Kind::kTensor;
    v.tensor = std::move(t);
    return v;
  }
  static Value of_sequence(std::vector<Tensor> elements, DTypeCode elem_dtype) {
    Value v;
    v.kind = Kind::kSequence;
    v.sequence = std::move(elements);
    v.elem_dtype = elem_dtype;
    return v;
  }
  static Value none() {
    Value v;
    v.kind = Kind::kNone;
    return v;
  }
  bool is_tensor() const { return kind == Kind::kTensor; }
  bool is_sequence() const { return kind == Kind::kSequence; }
  bool is_none() const { return kind == Kind::kNone; }
  /// "f32[2,3]", "seq(3 x f32)", "none": for messages.
  std::string to_string() const;
};

/// A run's values by name.
using ValueMap = std::map<std::string, Value>;

/// A model with data-dependent shapes, run as stages (defined below).
struct StagedRunner;

/// What a specialization fixes: the shape of every model input and the value of every
/// shape-determining input (ADR 0006 decision 3).
struct Specialization {
  /// Concrete shape of every model input, by name; also of every overridable initializer
  /// (ModelSource::overridable) the run feeds, which is then a graph input of this
  /// specialization instead of a constant.
  std::map<std::string, Shape> input_shapes;
  /// Values of the shape-determining inputs, to be bound as constants, by name; also of a fed
  /// overridable initializer that is shape-determining (its value replaces the initializer's).
  std::map<std::string, Tensor> constant_inputs;
  /// False where the graph is only run node by node (the interpreted tier, ADR 0007 stage C):
  /// the source may then leave dead nodes and unused values in it (no compaction); compile()
  /// gets compact graphs (true).
  bool compact = true;
  /// Storage the source may build its result in, or null: a graph an earlier interpreted run
  /// gave back (its nodes, values, strings and maps are overwritten in place, so a re-typed
  /// graph of the same model costs no allocation; ADR 0007). The source may move from it or
  /// ignore it; the result must not depend on what it held.
  ir::Graph* reuse = nullptr;
  /// With `reuse` and `in_place`: the graph in `reuse` is one this source returned for an
  /// earlier Specialization (same inputs, other shapes), changed since only by removing nodes
  /// and appending nodes and values (the interpreted tier's fusions). The source may re-type
  /// it in place at these shapes, keeping those changes, instead of building the graph again
  /// (ADR 0007 stage B, in place); it sets `*in_place` to whether it did. A source that cannot
  /// leaves `*in_place` false and builds the graph as without it.
  bool reuse_derived = false;
  /// Where the source reports an in-place re-typing (see reuse_derived), or null.
  bool* in_place = nullptr;
};

/// A model as the session sees it. The runtime never parses a model format: `specialize`
/// produces the static graph for one specialization.
struct ModelSource {
  /// Model name for messages (e.g. the file path).
  std::string name;
  /// Declared inputs, in model order. Every run must supply exactly these.
  std::vector<ValueInfo> inputs;
  /// Declared outputs, in model order.
  std::vector<ValueInfo> outputs;
  /// Initializers that are also declared graph inputs (ONNX IR spec, "Graphs": the
  /// initializer is the input's default value; ONNX Runtime calls them overridable
  /// initializers), with the declared type. A run may feed any of them; one it does not feed
  /// keeps the initializer. Whether each is fed, and its shape, are part of the cache key. Not
  /// used by a staged source.
  std::vector<ValueInfo> overridable;
  /// Names of the inputs whose values decide output shapes (passes::shape_determining_inputs);
  /// their values are part of the cache key and bound as constants in each specialization.
  /// May name overridable initializers: bound likewise when a run feeds them.
  std::vector<std::string> shape_determining;
  /// Produces the static graph for a specialization: every input of `inputs` not in
  /// `Specialization::constant_inputs` stays a graph input with the given shape; the bound ones
  /// are constants. Called outside the session's lock, possibly from several threads at once.
  std::function<Result<ir::Graph>(const Specialization&)> specialize;
  /// The model's constant tensors that specializations share (not copy): their bytes are not
  /// counted in a cache entry's size. May be empty (then every constant counts).
  std::vector<Tensor> shared_constants;
  /// Identifies what `specialize` produces, for the compile cache on disk
  /// (SessionOptions::cache_dir): two sources with equal fingerprints must specialize every
  /// key to the same graph (e.g. a digest of the model's bytes and of the load options that
  /// change the import). Empty: the source cannot use a cache directory (Session::create
  /// refuses a cache_dir).
  std::string fingerprint;
  /// For a source that reads its model only when `specialize` first needs it (a warm start
  /// from the compile cache on disk: onnx::open_session): after each specialize the session
  /// calls this until it returns a non-empty list, and counts those tensors as shared, like
  /// `shared_constants`. Empty function: not used.
  std::function<std::vector<Tensor>()> late_shared_constants;
  /// Set for a model with data-dependent shapes: runs go to it, `specialize` is not used (may
  /// be empty) and no cache_dir applies to the source itself (its stages' sessions use it).
  std::shared_ptr<const StagedRunner> staged;
};

/// A small keyed record in a compile cache directory (SessionOptions::cache_dir), for model
/// frontends that keep what opening a model found (declared inputs, fingerprint) so a later
/// process can open it without parsing it: DIR/records/<digest of key>.record, holding the
/// key, the value, this frame build's fingerprint and a digest of both. Returns nullopt when
/// there is none, or when it is damaged, truncated or of another build (the record is then
/// ignored; the caller opens the model in full and writes the record again).
std::optional<std::string> read_cache_record(const std::string& dir, const std::string& key);

/// Writes a record (through a temporary file and rename(), so concurrent writers both
/// succeed). Returns false when the directory cannot be created or written; the caller goes
/// on without the record (the compile cache itself warns about an unwritable directory).
bool write_cache_record(const std::string& dir, const std::string& key, std::string_view value);

/// Options of a Session.
struct SessionOptions {
  /// How each specialization is compiled (backends, threads, passes). `use_cache` is ignored:
  /// the session keeps its own bounded cache instead of the process-wide compile cache.
  CompileOptions compile;
  /// Most specializations kept (LRU; ADR 0006 decision 4). At least 1.
  size_t max_specializations = 32;
  /// Most bytes kept, estimated per entry as its arena (CompileReport::peak_arena_bytes) plus
  /// the constants it owns that are not the model's (folded values, bound inputs). Backend
  /// prepared state is not counted: oneDNN's packed weights are shared by every
  /// specialization (one copy per constant and layout), primitives are small. A
  /// specialization larger than this on its own is still run, but not kept.
  size_t max_cache_bytes = size_t{1} << 30;
  /// Directory of the compile cache on disk (docs/architecture/execution-model.md, "Compile
  /// cache on disk"); empty (the default): none. A specialization not in the session's own
  /// cache is read from there when a process compiled it before (no import, no pass runs),
  /// and written there after it is compiled. Created when first written. A directory that
  /// cannot be written (a path under a regular file, a full disk, a file-size limit) gives
  /// one warning on stderr and the session runs uncached; an entry that is damaged,
  /// truncated, or written by another frame build or on a CPU with other features is
  /// ignored with a warning and replaced.
  std::string cache_dir;
  /// Most bytes the cache directory holds (entries plus shared tensor blobs); the least
  /// recently used entries are removed first. An entry larger than this is not written.
  size_t max_cache_dir_bytes = size_t{4} << 30;
  /// Tiered compiles (docs/adr/0007-first-seen-shapes.md): where runs can bring different
  /// keys (a symbolic or unknown input dim, or a shape-determining input), a key seen for the
  /// first time is compiled with CompileOptions::shape_agnostic_kernels (kernels re-use
  /// prepared state across shapes: a cheaper compile, runs up to ~15% slower on those nodes)
  /// and without the cse and operator-fusion passes, and compiled again in full, replacing
  /// the entry, once the key's runs have taken as long as its first compile did: a recurring
  /// key reaches steady-state speed after a few runs, a key seen only a few times is compiled
  /// once. Off, or with a cache_dir (the directory keeps full compiles), every key is
  /// compiled in full the first time. Outputs agree within rounding, not bit for bit: the
  /// first tier runs without fusions, so a recurring key's outputs may change in the last bits
  /// when it tiers up (4e-6 on ResNet-18's logits); turn it off, or prepare() the key, for
  /// bit-stable outputs.
  bool tiered_compile = true;
  /// The interpreted tier (docs/adr/0007-first-seen-shapes.md, stage C), with tiered_compile:
  /// Session::run(inputs, options) of a key the session holds no specialization for runs the
  /// specialized graph node by node (each node static when it runs: no pass pipeline, memory
  /// plan or compiled plan) instead of compiling it, until that key's interpreted runs have
  /// taken as long as one of the session's first-seen-tier compiles; then the key is compiled
  /// as tiered_compile says. A stream of new shapes then pays no compile per shape. Runs with
  /// a profile or an observer, the run(inputs, outputs) overload and prepare() always compile
  /// (run_values() goes through run()). Graphs with control-flow bodies and device backends are
  /// compiled; after any fallback (a node no kernel supports, a kernel error) the session stops
  /// interpreting. Outputs agree with the compiled tiers within rounding (no fusions), not bit for
  /// bit.
  bool interpret_first_seen = true;
  /// Compiles off the runs' path (docs/adr/0007-first-seen-shapes.md, "Compiles in the
  /// background"), with tiered_compile, where the session leaves a core spare: its compute
  /// threads (CompileOptions::num_threads, 0 = all) fewer than available_cores(), in the
  /// process that created it (not a fork()ed child). Then a recurring key whose interpreted runs
  /// have earned its compile (interpret_first_seen) is compiled in full on a thread of the
  /// session's own while its runs go on interpreted, and a first-seen-tier entry's full compile
  /// runs there while its runs go on with the held entry; the finished specialization replaces them
  /// for the runs after it. At most one such compile per session at a time; a key whose background
  /// compile fails, or is too large to keep, is compiled by its next run (which reports the
  /// error); so is a model with an op that refuses that thread (a Python op: in_background_
  /// compile()). Destroying the session waits for a compile in progress, and so does fork().
  /// Off, or without a spare
  /// core, the run that needs a compile does it before it runs, as before. Which run is the
  /// first compiled one depends on timing, so a key's outputs may change within rounding at a
  /// run that differs from process to process (as with tiered_compile).
  bool background_compile = true;
};

/// Counters of a Session's specialization cache.
struct CacheStats {
  size_t entries = 0;  ///< specializations held now
  size_t bytes = 0;    ///< their estimated bytes (SessionOptions::max_cache_bytes)
  /// Runs served without compiling: by a held specialization, or by one another run was
  /// compiling for the same key at the time (concurrent runs of a new key compile it once).
  uint64_t hits = 0;
  uint64_t misses = 0;     ///< runs that compiled a specialization
  uint64_t evictions = 0;  ///< entries dropped by a bound, plus ones too large to keep
  /// Compile cache on disk (SessionOptions::cache_dir; all 0 without one): misses of the
  /// session's own cache served from the directory (no import, no pass), lookups that found no
  /// usable entry, entries written, and entries found but ignored (damaged, truncated, another
  /// build or CPU; counted in disk_misses too).
  uint64_t disk_hits = 0;
  uint64_t disk_misses = 0;
  uint64_t disk_writes = 0;
  uint64_t disk_rejected = 0;
  /// Keys compiled again in full when they recurred after a shape-agnostic first compile
  /// (SessionOptions::tiered_compile); not counted in misses.
  uint64_t tier_ups = 0;
  /// Runs served by the interpreted tier (SessionOptions::interpret_first_seen): no compile,
  /// not counted in hits or misses.
  uint64_t interpreted = 0;
  /// Keys the interpreted tier served that the session's background thread compiled and
  /// inserted (SessionOptions::background_compile); not counted in misses. A tier-up done there
  /// counts in tier_ups only, so misses + tier_ups + background_compiles counts every compile.
  uint64_t background_compiles = 0;
  /// Of tier_ups, those the background thread did while runs went on with the held entry.
  uint64_t background_tier_ups = 0;
  /// Probes of what a first-seen key costs compiled (ADR 0007 stage C: the first-seen tier's
  /// compile and one run, timed against the interpreted runs) that the background thread ran
  /// beside an interpreted run instead of on a run's path; their entries are not kept.
  uint64_t background_probes = 0;
  /// Of the interpreted runs, those whose graph was an earlier interpreted run's, re-typed in
  /// place at the new shapes with its fusions kept (Specialization::reuse_derived; ADR 0007
  /// stage B): no copy of the model's graph and no fusion pass on that run.
  uint64_t retyped_in_place = 0;
};

/// A model whose shapes depend on computed data (docs/adr/0008-data-dependent-shapes.md): the
/// frontend splits it into static stages, each run through a Session of its own (so each stage
/// is specialized on the shapes at its boundary), and eager nodes between them (NonZero,
/// NonMaxSuppression, ...: run with every input known, outside any compiled graph, so
/// ARCH-044 holds for every compiled graph). The runtime validates a run's inputs and hands
/// them to `run`.
struct StagedRunner {
  /// Runs the model. `inputs` holds every declared input, validated against the declared
  /// kinds, dtypes and dims (Session::run_values). Thread-safe. Errors: a stage's or eager
  /// node's, naming it.
  std::function<Result<ValueMap>(const ValueMap& inputs, const RunOptions& options)> run;
  /// The specialization-cache counters of every stage, summed.
  std::function<CacheStats()> stats;
  /// One line per step (stage or eager node) in run order, for `frame inspect` and reports,
  /// e.g. "stage 1: 412 nodes" or "eager NonMaxSuppression 'nms_3'".
  std::function<std::vector<std::string>()> describe;
};

/// The shared state of a Session (src/runtime/session.cpp).
class SessionImpl;

/// An inference session (ADR 0006 decisions 3, 4, 6). Copies share the model and the cache.
/// All methods are thread-safe; concurrent runs with different shapes are correct.
class Session {
 public:
  /// Wraps a model source. Errors: kInvalidArgument when `specialize` is empty (and no
  /// `staged` runner is given), a
  /// shape-determining name is not a declared input, names repeat, num_threads < 0, or a
  /// cache_dir is given for a source without a fingerprint;
  /// kNotFound for an unknown backend or disabled pass name (checked here, not at the first
  /// run).
  static Result<Session> create(ModelSource source, SessionOptions options = {});
  /// A session over a graph built in C++: its inputs have static types (runs must match them
  /// exactly); its shape-determining inputs (passes::shape_determining_inputs) are bound as
  /// constants per run, so one graph serves every value of them. Constants are shared.
  static Result<Session> from_graph(ir::Graph graph, SessionOptions options = {});

  /// Copies and moves share the model and the cache (a handle).
  Session(const Session&);
  Session& operator=(const Session&);
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;
  ~Session();

  /// Runs the model. `inputs` must name every declared input exactly once; each tensor must
  /// have the declared dtype and rank and agree with every concrete declared dim. A run with a
  /// key seen before costs one hash lookup before Executable::run; a new key specializes and
  /// compiles first (with SessionOptions::tiered_compile, as the first-seen tier; a later run
  /// of the key compiles it again in full, see tiered_compile). Errors: kInvalidArgument naming the
  /// input and expected vs actual (missing input, unknown name, dtype, rank or dim mismatch);
  /// specialization and compile errors (e.g. a Reshape target the input cannot take) prefixed with
  /// the key's shapes; kernel errors naming node and op; for a model with a sequence or
  /// optional input or output, kInvalidArgument naming it (use run_values()).
  Result<TensorMap> run(const TensorMap& inputs, const RunOptions& options = {}) const;
  /// Like run(), writing into caller-provided outputs (Executable::run's IoBinding form):
  /// `outputs` must hold every output with the dtype and shape this key produces. For a staged
  /// model (is_staged()), output shapes depend on the data: each output is replaced by the
  /// run's tensor.
  Status run(const TensorMap& inputs, TensorMap& outputs, const RunOptions& options = {}) const;
  /// Runs a model whose inputs or outputs may be sequences or optionals (ValueInfo::sequence,
  /// ValueInfo::optional; ONNX Runtime's Python API takes and returns lists and None for them):
  /// a sequence input takes a Value of kSequence whose elements each have the declared dtype
  /// and agree with the declared element dims; an optional input may be Value::none() or left
  /// out (absent). Returns
  /// every declared output: a tensor, a sequence, or none for an absent optional. For a model
  /// of tensors only, the same as run(). Errors: as run(), and kInvalidArgument naming the
  /// input for a kind mismatch (a tensor for a sequence, none for a non-optional input) or an
  /// element of the wrong dtype or rank; kInvalidArgument naming an output whose computed value
  /// is not of its declared kind.
  Result<ValueMap> run_values(const ValueMap& inputs, const RunOptions& options = {}) const;
  /// Fetches or compiles the specialization `inputs` select, without running it (e.g. to time
  /// the compile apart from the run). Always the full compile: a key prepared ahead of its
  /// runs skips the first-seen tier (SessionOptions::tiered_compile), and a held first-seen
  /// tier entry is compiled again in full. Same validation and errors as run().
  /// A staged model (is_staged()) has no single executable: kFailedPrecondition.
  Result<Executable> prepare(const TensorMap& inputs) const;

  /// True for a model with data-dependent shapes, run as stages and eager nodes
  /// (StagedRunner; docs/adr/0008-data-dependent-shapes.md).
  bool is_staged() const;
  /// The steps of a staged model, in run order (StagedRunner::describe); empty otherwise.
  std::vector<std::string> stages() const;

  /// Declared inputs, in model order.
  const std::vector<ValueInfo>& inputs() const;
  /// Initializers a run may feed in place of their stored value (ModelSource::overridable), in
  /// model order; not among inputs().
  const std::vector<ValueInfo>& overridable_inputs() const;
  /// Declared outputs, in model order.
  const std::vector<ValueInfo>& outputs() const;
  /// Names of the shape-determining inputs, in model order; shape-determining overridable
  /// initializers follow, in model order.
  const std::vector<std::string>& shape_determining_inputs() const;
  /// The options the session was created with.
  const SessionOptions& options() const;
  /// A snapshot of the cache counters.
  CacheStats cache_stats() const;
  /// The compile report of the most recent specialization compiled; nullopt before the first
  /// and for a staged model.
  std::optional<CompileReport> last_report() const;
  /// The compile report of the cached specialization `inputs` select; nullopt when it is not
  /// cached (nothing is compiled). Errors: as run()'s input validation.
  Result<std::optional<CompileReport>> report_for(const TensorMap& inputs) const;

 private:
  explicit Session(std::shared_ptr<SessionImpl> impl);
  std::shared_ptr<SessionImpl> impl_;
};

}  // namespace frame::runtime
