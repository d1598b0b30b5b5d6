#pragma once
// Private interface between the ONNX importer (importer.cpp), the protobuf conversions
// (proto_convert.cpp) and the op table (op_table.cpp). Only src/onnx includes this header:
// ONNX names and protobuf types never leak into the public API.

#include <onnx/onnx_pb.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "frame/core/status.h"
#include "frame/core/tensor.h"
#include "frame/ir/graph.h"
#include "frame/onnx/onnx.h"

namespace frame::onnx::detail {

/// frame dtype of a TensorProto.DataType enum value. Errors: kInvalidArgument naming the
/// ONNX type (strings, complex, unsigned 16/32/64-bit, float8 have no frame dtype).
Result<DTypeCode> dtype_from_onnx(int32_t onnx_type);
/// ONNX name of a TensorProto.DataType value ("FLOAT", "UINT32", ...).
std::string_view onnx_type_name(int32_t onnx_type);
/// TensorProto.DataType value of a frame dtype (inverse of dtype_from_onnx).
int32_t onnx_type_from_dtype(DTypeCode d);

/// A file mapped read-only (the model file, external data files): the bytes are read straight
/// from the page cache, with no zero-filled buffer and no copy. A file truncated by another
/// process while mapped ends the process with SIGBUS; model files are files the caller controls
/// for the duration of a load.
class MappedFile {
 public:
  MappedFile() = default;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();
  /// The file's bytes.
  std::string_view bytes() const {
    return data_ != nullptr ? std::string_view(static_cast<const char*>(data_), size_)
                            : std::string_view(copy_);
  }
  /// Opens and maps `path` (read by pread when the file system refuses mappings). `no_follow`:
  /// a symbolic link as the last component is refused (O_NOFOLLOW). Errors: kIo naming the
  /// path (missing, not a regular file, unreadable, larger than `max_bytes`; `too_big_hint`
  /// is appended to that message).
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path, size_t max_bytes,
                                                  bool no_follow = false,
                                                  std::string_view too_big_hint = "");

 private:
  void* data_ = nullptr;  // the mapping, or null when copy_ holds the bytes
  size_t size_ = 0;
  std::string copy_;
};

/// The external data files of one model load (ONNX IR "External Tensor Data";
/// docs/security.md): each location is checked and resolved (symbolic links followed) and must
/// stay inside the resolved model directory; each file is opened and mapped once, tensors copy
/// their bytes from the mapping. Not thread-safe (one per load).
class ExternalData {
 public:
  /// `model_dir` empty: every external tensor is an error.
  explicit ExternalData(std::string model_dir) : dir_(std::move(model_dir)) {}
  /// The `nbytes` bytes of tensor `p` (data_location EXTERNAL), from its location, offset and
  /// length keys. Errors: kInvalidArgument naming the tensor and the location (no model
  /// directory; an empty location, a NUL byte, a backslash or drive letter, an absolute path,
  /// a ".." component, a path that resolves outside the model directory; a non-integer or
  /// negative offset or length, a length other than `nbytes`, a range past the end of the
  /// file), kIo (missing or unreadable file, not a regular file).
  Result<std::string_view> read(const ::onnx::TensorProto& p, size_t nbytes);

 private:
  Result<std::string> resolve(const std::string& location, const std::string& tensor);
  std::string dir_;
  std::string root_;                                          // dir_ resolved (canonical), once
  std::map<std::string, std::unique_ptr<MappedFile>> files_;  // by resolved path
};

/// Converts a TensorProto (raw_data, typed fields or external data read through `external`).
/// Errors: kInvalidArgument (bad dims, size mismatch, unsupported type, bad external data),
/// kOutOfRange (over `max_bytes`), kIo (external data file).
Result<Tensor> tensor_from_proto(const ::onnx::TensorProto& t, ExternalData& external,
                                 size_t max_bytes);

/// Converts one attribute. Graph-, sparse- and type-valued attributes are kUnimplemented; a
/// list (or string) over `limits.max_attribute_elements` is kInvalidArgument naming it.
Result<ir::AttrValue> attr_from_proto(const ::onnx::AttributeProto& a, ExternalData& external,
                                      const LoadLimits& limits);

/// Imports GRAPH attributes (control-flow bodies) with the enclosing scopes visible; the
/// Importer implements it (importer.cpp).
class BodyImporter {
 public:
  virtual ~BodyImporter() = default;
  /// Imports `body`. Its formal inputs (the GraphProto's inputs) get `formal_types` (ONNX
  /// bodies often leave them untyped; the types come from the node's inputs, ARCH-044). A
  /// name the body reads from an enclosing scope becomes a body input after the formal ones:
  /// `captures` holds the enclosing graph's values captured so far (in, created as inputs in
  /// this order first) and gains every new one (out). Constants of enclosing scopes are
  /// copied into the body instead (no input). `formal_values`, when not empty, holds one entry
  /// per formal input: a value makes that input a constant of the body (no graph input), as
  /// for an unrolled Loop iteration. Errors name the body and the failing node.
  virtual Result<std::shared_ptr<ir::Graph>> import_body(
      const ::onnx::GraphProto& body, const std::vector<ir::TensorType>& formal_types,
      std::vector<ir::ValueId>& captures,
      const std::vector<std::optional<Tensor>>& formal_values) = 0;
};

/// What an op-table converter sees for one ONNX node and how it emits frame nodes.
/// Every emitted node is shape-inferred at once (and folded when all its inputs are small
/// constants), so converters may look at the types and constant values of what they emit.
class NodeImporter {
 public:
  NodeImporter(ir::Graph& g, const ::onnx::NodeProto& proto, std::string node_name, int opset,
               std::vector<ir::ValueId> inputs, ir::AttrMap attrs)
      : g_(g),
        proto_(proto),
        name_(std::move(node_name)),
        opset_(opset),
        inputs_(std::move(inputs)),
        attrs_(std::move(attrs)) {}

  /// The graph under construction. A converter that reaches into it may read anything, so
  /// its node counts as shape-dependent for re-typing (ADR 0007 stage B).
  ir::Graph& graph() {
    shape_dependent_ = true;
    return g_;
  }
  const std::string& name() const { return name_; }
  const std::string& op_type() const { return proto_.op_type(); }
  int opset() const { return opset_; }
  /// ONNX inputs mapped to values; kNoValue for an empty (absent) input name.
  const std::vector<ir::ValueId>& inputs() const { return inputs_; }
  size_t num_inputs() const { return inputs_.size(); }
  ir::ValueId input(size_t i) const { return i < inputs_.size() ? inputs_[i] : ir::kNoValue; }
  /// Type of input i (every imported value is typed); nullptr when absent.
  /// The type of input `i`, or nullptr (absent or untyped). Reading the type of a computed
  /// value or of a shape-derived constant marks the node shape-dependent (ADR 0007 stage B).
  const ir::TensorType* input_type(size_t i) const;
  /// Constant value of input i, or nullptr.
  const Tensor* input_constant(size_t i) const;
  /// All ONNX attributes, converted (floats widened to double).
  ir::AttrMap& attrs() { return attrs_; }
  bool has_attr(std::string_view n) const { return attrs_.count(std::string(n)) > 0; }
  /// Removes attribute `n` and returns it, if present.
  std::optional<ir::AttrValue> take_attr(std::string_view n);
  /// Number of ONNX outputs (trailing omitted outputs excluded).
  size_t num_outputs() const { return outputs_.size(); }
  void set_output_names(std::vector<std::string> names) { outputs_ = std::move(names); }
  /// LoadOptions::keep_untyped: a failed shape inference leaves the outputs untyped.
  void set_keep_untyped(bool k) { keep_untyped_ = k; }
  /// LoadLimits::max_tensor_bytes: the largest constant a converter may build.
  void set_max_tensor_bytes(size_t b) { max_tensor_bytes_ = b; }
  /// Checks a constant the converter is about to build from a (model-declared) shape before it
  /// is allocated. Errors: kOutOfRange naming this node, `what`, the type and the bytes.
  Status check_constant_size(DTypeCode d, const Shape& shape, std::string_view what) const {
    Result<size_t> b = checked_nbytes(d, shape);
    if (b.is_ok() && *b <= max_tensor_bytes_) return Status();
    return Status(
        StatusCode::kOutOfRange,
        error("{} {}{} is {} bytes, over the limit of {} (max_tensor_bytes)", what, dtype_name(d),
              shape_to_string(shape),
              b.is_ok() ? fmt::format("{}", *b) : std::string("more than 2^64"), max_tensor_bytes_)
            .message());
  }
  const std::vector<std::string>& output_names() const { return outputs_; }
  /// Makes constant `t` the node's first output under its ONNX name (the Constant op).
  void add_output_constant(Tensor t) {
    if (!outputs_.empty()) g_.add_constant(outputs_[0], std::move(t));
  }
  /// Values whose content depends on input shapes (ADR 0007 stage B): indexed by value id,
  /// nonzero for a constant computed from a shape; null when the import does not track them.
  void set_shape_derived(const std::vector<char>* d) { shape_derived_ = d; }
  /// Whether the conversion read something an input shape can change: the type of a computed
  /// input or of a shape-derived constant, a shape-derived input at all, a body, or the graph.
  bool shape_dependent() const { return shape_dependent_; }
  void set_body_importer(BodyImporter* b) { bodies_ = b; }
  /// Imports GRAPH attribute `attr` (BodyImporter::import_body). Errors: the attribute is
  /// missing or not a graph, or the body fails to import.
  Result<std::shared_ptr<ir::Graph>> import_body(
      std::string_view attr, const std::vector<ir::TensorType>& formal_types,
      std::vector<ir::ValueId>& captures,
      const std::vector<std::optional<Tensor>>& formal_values = {});
  /// Appends to `body` one input per `captures[from..]` (the types and names of those values
  /// in this node's graph): a body imported before another body captured more values still
  /// lists every captured value, in the node's order.
  void add_capture_inputs(ir::Graph& body, const std::vector<ir::ValueId>& captures,
                          size_t from) const;

  /// Adds a constant named after this node.
  ir::ValueId constant(Tensor t, std::string_view suffix = "const");
  ir::ValueId const_i64(const std::vector<int64_t>& v) {
    return constant(Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
  }
  /// Emits the node that produces this ONNX node's outputs (names kept).
  Status emit(std::string_view op, std::vector<ir::ValueId> inputs, ir::AttrMap attrs);
  /// Emits an intermediate node; returns its outputs.
  Result<std::vector<ir::ValueId>> emit_tmp(std::string_view op, std::vector<ir::ValueId> inputs,
                                            ir::AttrMap attrs, int num_outputs = 1);
  /// Binds ONNX output i to an existing value (Identity-like conversions): a constant gets a
  /// renamed copy; a computed value goes through an `identity` node.
  Status bind_output(size_t i, ir::ValueId v);

  /// Error prefixed with "node '<name>' (<OpType>, opset N): ".
  template <typename... Args>
  Status error(fmt::format_string<Args...> f, Args&&... args) const {
    return Status(StatusCode::kInvalidArgument,
                  fmt::format("node '{}' ({}, opset {}): ", name_, proto_.op_type(), opset_) +
                      fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  std::string fresh_node_name();
  bool shape_derived(ir::ValueId v) const {
    return shape_derived_ != nullptr && static_cast<size_t>(v) < shape_derived_->size() &&
           (*shape_derived_)[static_cast<size_t>(v)] != 0;
  }
  Result<ir::NodeId> create(std::string_view op, std::string name, std::vector<ir::ValueId> in,
                            int num_outputs, ir::AttrMap attrs, std::vector<std::string> outs);

  ir::Graph& g_;
  const ::onnx::NodeProto& proto_;
  std::string name_;
  int opset_;
  std::vector<ir::ValueId> inputs_;
  ir::AttrMap attrs_;
  std::vector<std::string> outputs_;
  bool keep_untyped_ = false;
  size_t max_tensor_bytes_ = SIZE_MAX;
  BodyImporter* bodies_ = nullptr;
  const std::vector<char>* shape_derived_ = nullptr;
  mutable bool shape_dependent_ = false;
};

/// Shape-infers node `n` of `g` (sets its output types) and, when every input is a constant
/// and the result is small, replaces it by constants computed with the cpu kernel. Returns
/// the values now holding the node's outputs (the constants when it was folded). `schema`,
/// when given, is the node's (a re-typing's node, checked against it when first imported:
/// neither looked up nor checked again).
Result<std::vector<ir::ValueId>> infer_and_fold(ir::Graph& g, ir::NodeId n,
                                                const ops::OpSchema* schema = nullptr);

/// While alive, imports on this thread fold all-constant nodes whose outputs take up to `limit`
/// bytes (not only small ones), and a node over it is an error (kOutOfRange naming it): the
/// import of an eager node or a folded stage with every input bound computes its outputs
/// (ADR 0008) within the session's memory limits.
class EagerFoldScope {
 public:
  explicit EagerFoldScope(size_t limit);
  ~EagerFoldScope();
  EagerFoldScope(const EagerFoldScope&) = delete;
  EagerFoldScope& operator=(const EagerFoldScope&) = delete;

 private:
  size_t saved_;
};

/// Converts one ONNX node. The default (nullptr) passes inputs and attributes through.
using ConvertFn = Status (*)(NodeImporter&, std::string_view frame_op);

/// One table row (see OpTableEntry for the fields).
struct OpRow {
  std::string_view domain;
  std::string_view op_type;
  int since;
  int until;  // 0 = open-ended
  std::string_view frame_op;
  ConvertFn convert;
  std::string_view note;
};

/// Passes inputs and attributes through unchanged (the conversion of most rows).
Status convert_default(NodeImporter& n, std::string_view frame_op);

/// ADR 0007 stage B: a model imported once at some input shapes, kept so that later shapes of
/// the same input ranks are *re-typed* instead of imported again. Each ONNX node of the main
/// graph has a record of the IR nodes its conversion created, in creation order:
/// - `kClean`: the converter read nothing an input shape changes (NodeImporter::shape_dependent)
///   and no input is shape-derived, so it emitted the same IR nodes at every shape: re-typing
///   runs their shape functions (folding a node whose inputs became constants).
/// - `kReplay`: the same, except that some input is a shape-derived constant (shape arithmetic
///   and its consumers, e.g. Gather/Concat/Unsqueeze on a Shape, a Reshape target): the IR nodes
///   it emitted are the same, their values are not. Nodes that folded are computed again with
///   their cpu kernels and their results written into the same constants; the others are
///   re-typed as for kClean.
/// - `kReconvert`: the converter read an input's shape, a shape-derived value, a body or the
///   graph itself (e.g. Shape, Size): converted again at the new shapes, on the re-typed graph.
/// Input values bound by value (LoadOptions::constant_inputs: a session's shape-determining
/// inputs, ADR 0006) count as shape-derived constants; a later import binds the same inputs
/// (other values) or falls back to a full import.
/// The result is the graph a full import gives, up to the names of internal values. Any error
/// while re-typing falls back to a full import, which reports the model's own error.
struct GenericImport {
  /// kClean: no shape changes its result; kReplay: its nodes are inferred (and folded) again;
  /// kReconvert: converted again; kShapeOf: a Shape or Size, whose constant is recomputed in
  /// place from its input's type (no new values, so nothing reading it is remapped).
  enum class Kind { kClean, kReplay, kReconvert, kShapeOf };
  /// One IR node a conversion created. `folded`: it folded at import and `results` are the
  /// constants that took its outputs' place.
  struct Step {
    ir::NodeId node = -1;
    bool folded = false;
    std::vector<ir::ValueId> results;
    const ops::OpSchema* schema = nullptr;  ///< the node's op (schemas live for the process)
    const ops::KernelDef* cpu = nullptr;    ///< folded: the op's cpu kernel (null: look it up)
  };
  struct Record {
    int node = 0;  ///< index in GraphProto.node
    Kind kind = Kind::kClean;
    std::vector<Step> steps;           ///< kClean: live nodes only; else every node, in order
    std::vector<ir::ValueId> created;  ///< values its conversion added
    std::vector<ir::ValueId> outputs;  ///< by ONNX output position; kNoValue when unnamed
    /// kShapeOf: the input whose type gives the constant, ONNX Shape's start and end (as
    /// given, clamped by shape_slice), and whether it is Size (the element count) instead.
    ir::ValueId shape_input = ir::kNoValue;
    int64_t start = 0;
    int64_t end = INT64_MAX;
    bool size = false;
  };
  ir::Graph graph;                   ///< after the last node, before outputs and compact()
  std::vector<Record> records;       ///< in import order
  std::set<std::string> shape_keys;  ///< LoadOptions::input_shapes names it was imported with
  /// LoadOptions::constant_inputs it was imported with: name, and the constant's value id
  /// (shape-derived: a re-typing writes its own values there).
  std::vector<std::pair<std::string, ir::ValueId>> bound;
  std::vector<size_t> input_ranks;  ///< by graph.inputs() position
  size_t replayed = 0;              ///< records of kind kReplay
  size_t reconverted = 0;           ///< records of kind kReconvert
  size_t shapes_of = 0;             ///< records of kind kShapeOf
};

/// What importing one parsed model computes that no input shape or bound value changes: the
/// main graph's node order, known only once the op-support walk over the graph and its bodies
/// has passed, and the generic import (ADR 0007 stage B) re-typed for later shapes. A session
/// keeps one per model, so the import of each specialization skips them. Filled by the first
/// import that gets through those steps; thread-safe.
struct ImportMemo {
  std::mutex mu;
  std::shared_ptr<const std::vector<int>> order;  ///< null until known
  std::shared_ptr<const GenericImport> generic;   ///< null until known
  std::atomic<uint64_t> retyped{0};               ///< imports served by re-typing `generic`
  std::atomic<uint64_t> in_place{0};  ///< of those, re-typings of a reused graph in place
  std::atomic<uint64_t> full{0};      ///< imports that converted every node
};

/// ONNX Shape (opset 15): dims [start, end) of `s`, negative bounds counted from the end, both
/// clamped to [0, rank].
std::vector<int64_t> shape_slice(const Shape& s, int64_t start, int64_t end);

/// Imports a parsed model (what load() does after parsing). `initializers`, when not null,
/// maps the main graph's initializer names to tensors converted before (a session's re-import per
/// specialization shares them instead of converting the TensorProtos again; ADR 0006);
/// initializers missing from it are converted. `memo`, when not null, is read and filled as
/// ImportMemo says; it must only ever see this model. `reuse`, when not null, is storage a
/// re-typing builds its graph in (runtime::Specialization::reuse); a full import ignores it.
/// With `reuse_derived` and `in_place` (runtime::Specialization::reuse_derived), the graph in
/// `reuse` is re-typed in place where it is one an earlier re-typing of `memo`'s generic import
/// gave, changed since only by removed and appended nodes (ADR 0007 stage B, in place);
/// `*in_place` says whether it was (false: re-typed or imported as without it).
Result<ir::Graph> import_model(const ::onnx::ModelProto& model, const LoadOptions& options,
                               const std::string& model_dir,
                               const std::map<std::string, Tensor>* initializers = nullptr,
                               ImportMemo* memo = nullptr, ir::Graph* reuse = nullptr,
                               bool reuse_derived = false, bool* in_place = nullptr);
/// Reads and parses the model file at `path` (memory-mapped). Errors: kIo.
Status read_model(const std::string& path, size_t max_bytes, ::onnx::ModelProto& model);
/// Parses serialized ModelProto bytes. Errors: kIo (truncated or corrupt).
Status parse_model(std::string_view bytes, ::onnx::ModelProto& model);

/// Whether a converter reads input `input` of (domain, op_type) as a value at import (its
/// result is built from it: ReverseSequence sequence_lens, MaxUnpool output_shape, Scan-8
/// sequence_lens; `opset` is the model's opset for `domain`). A graph input reaching such a
/// position is shape-determining for a session (ADR 0006) although no frame schema sees it.
bool needs_constant_at_import(std::string_view domain, std::string_view op_type, int opset,
                              size_t input);

/// Whether (domain, op_type) reads its input `input` only for its type (element type and
/// shape), so its outputs do not depend on that input's values: Shape, Size, and the `*Like`
/// generators (EyeLike, RandomNormalLike, RandomUniformLike) take only the input's shape or
/// dtype (ONNX operator spec). The value-dependence walks of a session's classification stop
/// there (ADR 0006), also at a stand-in a structure-only load leaves for such a node.
bool reads_only_type_at_import(std::string_view domain, std::string_view op_type, size_t input);

/// The domain as the op table keys it: "" for ONNX's default domain (written "" or "ai.onnx"
/// in a model, ONNX IR spec "Operator Sets"), else `domain` itself.
std::string canonical_domain(std::string_view domain);

/// The opset version `model` imports per canonical domain (canonical_domain), each clamped to
/// [0, INT_MAX]; a model without opset_import (IR version < 3) imports ai.onnx opset 1.
std::map<std::string, int> opset_versions(const ::onnx::ModelProto& model);

/// The row serving (domain, op_type) at `opset`, or nullptr.
const OpRow* find_op(std::string_view domain, std::string_view op_type, int opset);
/// All rows.
const std::vector<OpRow>& op_rows();
/// Rows added by register_custom_op, in registration order.
std::vector<OpRow> custom_op_rows();

}  // namespace frame::onnx::detail
